//! Latency statistics: requests per second and nearest-rank percentiles.

use serde_json::{Value, json};

fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    // Nearest rank.
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64 / 1000.0
}

fn ms(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 100.0).round() / 100.0)
    } else {
        Value::Null
    }
}

pub fn latency_summary(mut samples: Vec<u64>, seconds: f64) -> Value {
    samples.sort_unstable();
    json!({
        "requests": samples.len(),
        "rps": (samples.len() as f64 / seconds).round(),
        "p50_ms": ms(percentile(&samples, 0.50)),
        "p99_ms": ms(percentile(&samples, 0.99)),
        "max_ms": ms(samples.last().map_or(f64::NAN, |&m| m as f64 / 1000.0)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank_in_milliseconds() {
        let micros: Vec<u64> = (1..=100).map(|i| i * 1000).collect();
        assert_eq!(percentile(&micros, 0.50), 50.0);
        assert_eq!(percentile(&micros, 0.99), 99.0);
        assert_eq!(percentile(&[7000], 0.99), 7.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn a_summary_of_no_samples_has_null_latencies() {
        let summary = latency_summary(Vec::new(), 2.0);
        assert_eq!(
            summary,
            json!({"requests": 0, "rps": 0.0, "p50_ms": null, "p99_ms": null, "max_ms": null})
        );
    }

    #[test]
    fn a_summary_sorts_its_samples_and_rounds_to_hundredths() {
        let summary = latency_summary(vec![3_333, 1_000, 2_000, 4_000], 2.0);
        assert_eq!(summary["requests"], 4);
        assert_eq!(summary["rps"], 2.0);
        assert_eq!(summary["p50_ms"], 2.0);
        assert_eq!(summary["p99_ms"], 4.0);
        assert_eq!(summary["max_ms"], 4.0);
        assert_eq!(ms(3.3333), json!(3.33));
    }
}
