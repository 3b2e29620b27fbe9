//! What a save writes besides the id: the Task as jsonb can hold it (and its exact text when
//! jsonb cannot give it back equal), and the columns the listing filters and orders by.

use serde_json::{Map, Value};
use toolnexus_core::Task;
use toolnexus_core::state::normalize_state;
use toolnexus_format::query::Timestamp;

/// Numbers longer than this (or with a larger exponent) are kept in `task` as strings, so any
/// number, however large, can be saved (PostgreSQL's numeric has limits; JSON has none).
const MAX_JSONB_NUMBER: usize = 1000;

/// What a save writes besides the id and the Task's text.
pub(crate) struct SaveRow {
    /// `None` if the Task's own text is what `task` should hold (jsonb gives it back as JSON
    /// equal); else what `task` holds instead, and the Task's text goes to `exact`.
    pub(crate) jsonb: Option<String>,
    pub(crate) context_id: Option<Vec<u8>>,
    pub(crate) state: Option<String>,
    /// The status timestamp in nanoseconds since the epoch, as text for `numeric` (an RFC 3339
    /// instant can lie beyond i64's nanoseconds: year 2262).
    pub(crate) status_ts: Option<String>,
}

impl SaveRow {
    pub(crate) fn of(task: &Task) -> Self {
        let map = task.as_map();
        let jsonb = (!map_is_jsonb_exact(map)).then(|| {
            let view: Map<String, Value> = map
                .iter()
                .map(|(k, v)| (jsonb_string(k), jsonb_view(v)))
                .collect();
            serde_json::to_string(&view).unwrap_or_else(|_| "{}".to_owned())
        });
        SaveRow {
            jsonb,
            context_id: map
                .get("contextId")
                .and_then(Value::as_str)
                .map(|c| c.as_bytes().to_vec()),
            state: map
                .get("status")
                .and_then(|s| s.get("state"))
                .and_then(Value::as_str)
                .map(normalize_state),
            status_ts: Timestamp::of_task(map).map(|t| t.unix_nanos().to_string()),
        }
    }
}

impl SaveRow {
    /// The `task` and `exact` columns for `task` (the Task this row was made of).
    pub(crate) fn task_columns<'a>(&'a self, task: &'a Task) -> (&'a str, Option<&'a str>) {
        match &self.jsonb {
            Some(jsonb) => (jsonb, Some(task.as_json())),
            None => (task.as_json(), None),
        }
    }

    /// The `context_id` and `state` columns.
    pub(crate) fn filter_columns(&self) -> (Option<&[u8]>, Option<&[u8]>) {
        (
            self.context_id.as_deref(),
            self.state.as_deref().map(str::as_bytes),
        )
    }
}

fn map_is_jsonb_exact(map: &Map<String, Value>) -> bool {
    map.iter()
        .all(|(k, v)| !k.contains('\0') && is_jsonb_exact(v))
}

/// Whether jsonb gives this value back equal as JSON (numbers compare by their spelling here).
fn is_jsonb_exact(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(_) => true,
        Value::String(s) => !s.contains('\0'),
        Value::Number(n) => is_canonical_numeric(&n.to_string()),
        Value::Array(items) => items.iter().all(is_jsonb_exact),
        Value::Object(map) => map_is_jsonb_exact(map),
    }
}

/// Whether PostgreSQL's numeric prints this JSON number back the same: no exponent, no negative
/// zero, and not too long.
fn is_canonical_numeric(number: &str) -> bool {
    let digits = number.strip_prefix('-').unwrap_or(number);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let plain = !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
        && !(digits.contains('.') && frac.is_empty());
    let negative_zero = number.starts_with('-') && digits.bytes().all(|b| b == b'0' || b == b'.');
    plain && !negative_zero && number.len() <= MAX_JSONB_NUMBER
}

/// The value as jsonb can hold it: U+0000 → U+FFFD; a number numeric cannot hold → its text.
fn jsonb_view(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(jsonb_string(s)),
        Value::Number(n) => {
            let text = n.to_string();
            let exponent_ok = text
                .split_once(['e', 'E'])
                .is_none_or(|(_, e)| e.trim_start_matches(['+', '-']).len() <= 3);
            if text.len() <= MAX_JSONB_NUMBER && exponent_ok {
                value.clone()
            } else {
                Value::String(text)
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(jsonb_view).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (jsonb_string(k), jsonb_view(v)))
                .collect(),
        ),
        Value::Null | Value::Bool(_) => value.clone(),
    }
}

fn jsonb_string(s: &str) -> String {
    s.replace('\0', "\u{FFFD}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_numbers_are_the_ones_numeric_prints_back() {
        for n in [
            "0",
            "1",
            "-1",
            "0.0",
            "1.50",
            "-2.25",
            "9007199254740993",
            "0.1",
        ] {
            assert!(is_canonical_numeric(n), "{n}");
        }
        for n in ["-0", "-0.0", "-0.000", "1e3", "1E-3", "1.5e+2", "-0e0"] {
            assert!(!is_canonical_numeric(n), "{n}");
        }
        assert!(!is_canonical_numeric(&"9".repeat(MAX_JSONB_NUMBER + 1)));
    }

    #[test]
    fn tasks_jsonb_cannot_hold_keep_their_text() {
        let plain = Task::from_json(r#"{"id": "a", "n": [1, 2.5], "s": "x"}"#).unwrap();
        assert!(SaveRow::of(&plain).jsonb.is_none());
        let nul = Task::from_json(r#"{"id": "nul\u0000byte", "k\u0000": -0.0}"#).unwrap();
        let view: Value = serde_json::from_str(&SaveRow::of(&nul).jsonb.unwrap()).unwrap();
        assert_eq!(view["id"], "nul\u{FFFD}byte");
        assert_eq!(view["k\u{FFFD}"].to_string(), "-0.0");
        let huge = Task::from_json(r#"{"id": "h", "n": 1e99999}"#).unwrap();
        let view: Value = serde_json::from_str(&SaveRow::of(&huge).jsonb.unwrap()).unwrap();
        assert_eq!(
            view["n"],
            huge.get("n").unwrap().to_string(),
            "kept as text"
        );
    }

    #[test]
    fn filter_columns_follow_the_list_contract() {
        let t = Task::from_json(
            r#"{"id": "a", "contextId": "c", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}"#,
        )
        .unwrap();
        let row = SaveRow::of(&t);
        assert_eq!(row.context_id.as_deref(), Some(&b"c"[..]));
        assert_eq!(row.state.as_deref(), Some("input-required"));
        let none = SaveRow::of(&Task::from_json(r#"{"id": "a", "contextId": 3}"#).unwrap());
        assert!(none.context_id.is_none() && none.state.is_none());
    }

    #[test]
    fn a_save_keeps_the_status_timestamp_in_nanoseconds_whatever_its_year() {
        let row = |ts: &str| {
            let task = Task::from_json(&format!(
                r#"{{"id": "a", "status": {{"state": "working", "timestamp": "{ts}"}}}}"#
            ))
            .unwrap();
            SaveRow::of(&task).status_ts
        };
        assert_eq!(row("1970-01-01T00:00:01.5Z").as_deref(), Some("1500000000"));
        assert_eq!(row("1970-01-01T01:00:00+01:00").as_deref(), Some("0"));
        assert_eq!(
            row("9999-12-31T23:59:59.999999999Z").as_deref(),
            Some("253402300799999999999")
        );
        assert_eq!(row("yesterday"), None);
    }
}
