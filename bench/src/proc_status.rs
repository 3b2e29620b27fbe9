//! This process's resource use, from Linux's `/proc/self`: what `tn-bomb`, `tn-list` and
//! `tn-storm` report. Elsewhere (or if unreadable) the figures are NaN or 0.

/// A memory field of `/proc/self/status` (`VmRSS`, `VmHWM`, …), in MiB to one decimal.
pub fn memory_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |kib| (kib / 1024.0 * 10.0).round() / 10.0)
}

/// How many threads this process has.
pub fn threads() -> usize {
    entries("/proc/self/task")
}

/// How many file descriptors this process has open.
pub fn descriptors() -> usize {
    entries("/proc/self/fd")
}

fn entries(dir: &str) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}
