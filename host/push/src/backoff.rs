//! How long to wait before the next attempt of a delivery: exponential, capped, with jitter so
//! that deliveries failing together (a receiver restarting) do not all come back together.

use std::time::Duration;

/// The wait before attempt `attempt` (2 for the first retry): `first` doubled for each retry
/// before it, at most `max`, then a random part taken off, keeping between half and all of it
/// ("equal jitter"). `unit` is a random number in `[0, 1)`.
pub fn delay(attempt: u32, first: Duration, max: Duration, unit: f64) -> Duration {
    let doublings = attempt.saturating_sub(2).min(30);
    let full = first.saturating_mul(1u32 << doublings).min(max);
    let unit = if unit.is_finite() {
        unit.clamp(0.0, 1.0)
    } else {
        0.0
    };
    full.mul_f64(0.5 + unit / 2.0)
}

/// A random number in `[0, 1)` from the operating system's generator (0 if it fails: no
/// jitter is still a bounded wait).
pub fn random_unit() -> f64 {
    let mut bytes = [0u8; 8];
    match getrandom::fill(&mut bytes) {
        Ok(()) => (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn doubles_from_the_first_retry_up_to_the_cap() {
        let full = |attempt| delay(attempt, 2 * S, 60 * S, 1.0);
        assert_eq!(full(2), 2 * S);
        assert_eq!(full(3), 4 * S);
        assert_eq!(full(4), 8 * S);
        assert_eq!(full(6), 32 * S);
        assert_eq!(full(7), 60 * S);
        assert_eq!(full(u32::MAX), 60 * S);
    }

    #[test]
    fn jitter_keeps_between_half_and_all() {
        assert_eq!(delay(3, 2 * S, 60 * S, 0.0), 2 * S);
        assert_eq!(delay(3, 2 * S, 60 * S, 0.5), 3 * S);
        assert_eq!(delay(3, 2 * S, 60 * S, f64::NAN), 2 * S);
        for _ in 0..100 {
            let d = delay(4, 2 * S, 60 * S, random_unit());
            assert!(d >= 4 * S && d <= 8 * S, "{d:?}");
        }
    }

    #[test]
    fn the_default_schedule_spans_about_a_minute() {
        use crate::options::*;
        let total: Duration = (2..=DEFAULT_ATTEMPTS)
            .map(|a| delay(a, DEFAULT_FIRST_BACKOFF, DEFAULT_MAX_BACKOFF, 1.0))
            .sum();
        assert_eq!(total, 62 * S);
    }
}
