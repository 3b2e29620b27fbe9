//! CPU time used over a run, read from Linux `/proc`.

use serde_json::{Value, json};

/// CPU time so far, in clock ticks (Linux `/proc`): the whole machine's busy time, this
/// process's, and the server's when its pid is known.
#[derive(Clone, Copy, Default)]
pub struct Cpu {
    machine: u64,
    client: u64,
    server: u64,
}

impl Cpu {
    pub fn now(server: Option<u32>) -> Option<Cpu> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let fields: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
        let machine = fields.iter().take(8).sum::<u64>()
            - fields.get(3).copied().unwrap_or(0)
            - fields.get(4).copied().unwrap_or(0);
        let process = |path: &str| -> Option<u64> {
            let stat = std::fs::read_to_string(path).ok()?;
            // Fields after the `(comm)`: utime and stime are the 12th and 13th.
            let rest = &stat[stat.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        };
        Some(Cpu {
            machine,
            client: process("/proc/self/stat")?,
            server: server
                .and_then(|pid| process(&format!("/proc/{pid}/stat")))
                .unwrap_or(0),
        })
    }

    /// CPU seconds between two readings: client, server, and everything else on the machine
    /// (other work there makes the figures worth little; for `tnstore` over PostgreSQL the
    /// database server is in "other").
    pub fn report(before: Option<Cpu>, after: Option<Cpu>, server_known: bool) -> Value {
        let (Some(b), Some(a)) = (before, after) else {
            return Value::Null;
        };
        let seconds = |ticks: u64| (ticks as f64 / 100.0 * 10.0).round() / 10.0;
        let machine = a.machine.saturating_sub(b.machine);
        let client = a.client.saturating_sub(b.client);
        let server = a.server.saturating_sub(b.server);
        let mut out = json!({
            "machine": seconds(machine),
            "client": seconds(client),
            "other": seconds(machine.saturating_sub(client + server)),
        });
        if server_known {
            out["server"] = json!(seconds(server));
        }
        out
    }
}
