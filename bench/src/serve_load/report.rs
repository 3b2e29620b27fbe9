//! Output: one JSON line per run on stdout (and in `--json-out`), and the table of all runs.

use serde_json::Value;

pub fn table(rows: &[Value]) -> String {
    let mut out = String::from(
        "| server | store | protocol | workload | req/s | p50 ms | p99 ms | max ms | errors | note |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|---|\n",
    );
    let num = |v: &Value| match v {
        Value::Null => "-".to_owned(),
        v => v.to_string(),
    };
    for r in rows {
        let mut note = r["note"].as_str().unwrap_or("").to_owned();
        if let Some(g) = r.get("gets_per_send") {
            note = format!("{note}{}{g} tasks/get per send", sep(&note));
        }
        if let Some(by) = r.get("by_op") {
            note = format!(
                "{note}{}send p50 {} ms, get p50 {} ms",
                sep(&note),
                num(&by["send"]["p50_ms"]),
                num(&by["get"]["p50_ms"])
            );
        }
        let capacity = r["cores"].as_f64().unwrap_or(1.0) * r["measured_s"].as_f64().unwrap_or(0.0);
        if let Some(other) = r["cpu_s"]["other"].as_f64()
            && other > 0.1 * capacity
        {
            note = format!(
                "{note}{}{other} CPU s used by other processes or kernel threads",
                sep(&note)
            );
        }
        if r["reconnects"].as_u64().unwrap_or(0) > 0 {
            note = format!("{note}{}{} reconnects", sep(&note), r["reconnects"]);
        }
        if r["warmup_errors"].as_u64().unwrap_or(0) > 0 {
            note = format!("{note}{}{} warm-up errors", sep(&note), r["warmup_errors"]);
        }
        if let Some(kinds) = r["error_kinds"].as_object().filter(|k| !k.is_empty()) {
            let kinds: Vec<String> = kinds.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            note = format!("{note}{}{}", sep(&note), kinds.join(", "));
        }
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r["server"].as_str().unwrap_or(""),
            r["store"].as_str().unwrap_or(""),
            r["protocol"].as_str().unwrap_or(""),
            r["workload"].as_str().unwrap_or(""),
            num(&r["rps"]),
            num(&r["p50_ms"]),
            num(&r["p99_ms"]),
            num(&r["max_ms"]),
            num(&r["errors"]),
            note,
        ));
    }
    out
}

fn sep(s: &str) -> &'static str {
    if s.is_empty() { "" } else { "; " }
}

pub struct Output {
    pub rows: Vec<Value>,
    pub file: Option<std::fs::File>,
}

impl Output {
    pub fn emit(&mut self, record: Value) -> anyhow::Result<()> {
        use std::io::Write;
        let line = record.to_string();
        println!("{line}");
        if let Some(file) = &mut self.file {
            writeln!(file, "{line}")?;
        }
        self.rows.push(record);
        Ok(())
    }
}
