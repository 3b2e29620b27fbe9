//! Listing Tasks: the query, filters, order and paging shared by every store that can list.
//!
//! Tasks are listed the way A2A 1.0 `ListTasks` asks: **newest first by status timestamp**
//! (`status.timestamp`, RFC 3339), ties broken by id (by byte value, ascending); Tasks without
//! a readable status timestamp come last, by id. A page token is opaque to callers: it encodes
//! the sort key (timestamp, id) of the last Task of the previous page, so a walk through the
//! pages never returns a Task twice while the Tasks keep their timestamps, whatever is saved or
//! deleted meanwhile.
//!
//! [`PageCollector`] cuts one page while keeping at most `page size + 1` items, so a store that
//! scans its Tasks holds one page, not the whole store.

use crate::state::same_state;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fmt;

/// The page size used when a query asks for 0.
pub const DEFAULT_PAGE_SIZE: usize = 50;
/// The largest page a store returns, whatever the query asks for.
pub const MAX_PAGE_SIZE: usize = 1000;
/// The longest page token a store decodes; anything longer is not one of ours.
pub const MAX_PAGE_TOKEN: usize = 4096;

/// An instant, in nanoseconds since the Unix epoch (UTC), parsed from RFC 3339 text such as
/// `2025-06-01T12:00:00.5Z` or `2025-06-01T14:00:00+02:00`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i128);

impl Timestamp {
    /// Parses RFC 3339 text; the error names what was wrong.
    pub fn parse(text: &str) -> Result<Self, QueryError> {
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
            .map(|t| Timestamp(t.unix_timestamp_nanos()))
            .map_err(|e| QueryError::Timestamp {
                text: shorten(text),
                reason: e.to_string(),
            })
    }

    /// As RFC 3339 text (what the contract's `status-timestamp-after` carries); the error says
    /// why it cannot be written (a time outside the years 1 to 9999).
    pub fn to_rfc3339(self) -> Result<String, String> {
        time::OffsetDateTime::from_unix_timestamp_nanos(self.0)
            .map_err(|e| e.to_string())
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .map_err(|e| e.to_string())
            })
    }

    /// Nanoseconds since the Unix epoch.
    pub fn unix_nanos(self) -> i128 {
        self.0
    }

    /// From nanoseconds since the Unix epoch.
    pub fn from_unix_nanos(nanos: i128) -> Self {
        Timestamp(nanos)
    }

    /// The status timestamp of a Task (`status.timestamp`), if it has one that parses.
    pub fn of_task(task: &Map<String, Value>) -> Option<Self> {
        task.get("status")
            .and_then(|s| s.get("timestamp"))
            .and_then(Value::as_str)
            .and_then(|t| Timestamp::parse(t).ok())
    }
}

/// Why a query cannot be run. Each names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// The page token was not made by a store of this format (or was changed).
    PageToken(String),
    /// A timestamp is not RFC 3339.
    Timestamp { text: String, reason: String },
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::PageToken(reason) => write!(f, "invalid page token: {reason}"),
            QueryError::Timestamp { text, reason } => {
                write!(
                    f,
                    "invalid timestamp {text:?} (RFC 3339 expected): {reason}"
                )
            }
        }
    }
}

impl std::error::Error for QueryError {}

fn shorten(text: &str) -> String {
    text.chars().take(64).collect()
}

/// Which Tasks to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Only Tasks whose `contextId` equals this.
    pub context_id: Option<String>,
    /// Only Tasks in this state (every spelling of a state matches the others; see
    /// [`crate::state`]).
    pub state: Option<String>,
    /// Only Tasks whose status timestamp is at or after this instant (Tasks without a status
    /// timestamp never match).
    pub status_timestamp_after: Option<Timestamp>,
    /// At most this many Tasks; 0 means [`DEFAULT_PAGE_SIZE`]; capped at [`MAX_PAGE_SIZE`].
    pub page_size: usize,
    /// Continue after the page that returned this token.
    pub page_token: Option<String>,
}

impl ListQuery {
    /// The effective page size.
    pub fn limit(&self) -> usize {
        match self.page_size {
            0 => DEFAULT_PAGE_SIZE,
            n => n.min(MAX_PAGE_SIZE),
        }
    }

    /// The position the page token stands for: `None` for the first page.
    pub fn cursor(&self) -> Result<Option<SortKey>, QueryError> {
        self.page_token.as_deref().map(SortKey::decode).transpose()
    }

    /// Whether a Task matches the filters (the page token aside).
    pub fn matches(&self, task: &Map<String, Value>) -> bool {
        self.matches_with(task, Timestamp::of_task(task))
    }

    /// [`ListQuery::matches`] for a caller that already has the Task's status timestamp.
    pub fn matches_with(&self, task: &Map<String, Value>, timestamp: Option<Timestamp>) -> bool {
        let context_ok = self
            .context_id
            .as_deref()
            .is_none_or(|want| task.get("contextId").and_then(Value::as_str) == Some(want));
        let state_ok = self.state.as_deref().is_none_or(|want| {
            task.get("status")
                .and_then(|s| s.get("state"))
                .and_then(Value::as_str)
                .is_some_and(|state| same_state(state, want))
        });
        let time_ok = self
            .status_timestamp_after
            .is_none_or(|after| timestamp.is_some_and(|t| t >= after));
        context_ok && state_ok && time_ok
    }
}

/// Where a Task stands in a listing: newest status timestamp first, then id ascending; no
/// timestamp sorts after every timestamp. `Ord` is list order (the first Task is the least).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SortKey {
    pub timestamp: Option<Timestamp>,
    pub id: String,
}

impl Ord for SortKey {
    fn cmp(&self, other: &Self) -> Ordering {
        // Newer first: a greater timestamp is less in list order; `None` is the oldest.
        other
            .timestamp
            .cmp(&self.timestamp)
            .then_with(|| self.id.cmp(&other.id))
    }
}

impl PartialOrd for SortKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl SortKey {
    /// The key of a Task with this id and parsed document.
    pub fn of(id: impl Into<String>, task: &Map<String, Value>) -> Self {
        SortKey {
            timestamp: Timestamp::of_task(task),
            id: id.into(),
        }
    }

    /// The opaque page token that continues after this key.
    pub fn encode(&self) -> String {
        let timestamp = self.timestamp.map(|t| t.0.to_string());
        let json = serde_json::to_vec(&(timestamp, &self.id)).unwrap_or_default();
        URL_SAFE_NO_PAD.encode(json)
    }

    /// Reads a page token made by [`SortKey::encode`].
    pub fn decode(token: &str) -> Result<Self, QueryError> {
        let bad = |reason: &str| QueryError::PageToken(format!("{reason} ({:?})", shorten(token)));
        if token.len() > MAX_PAGE_TOKEN {
            return Err(bad("too long"));
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| bad("not base64url"))?;
        let (timestamp, id): (Option<String>, String) =
            serde_json::from_slice(&bytes).map_err(|_| bad("not a token of this store"))?;
        let timestamp = timestamp
            .map(|t| t.parse::<i128>().map(Timestamp))
            .transpose()
            .map_err(|_| bad("bad timestamp"))?;
        if id.is_empty() {
            return Err(bad("no id"));
        }
        Ok(SortKey { timestamp, id })
    }
}

/// Cuts one page from Tasks offered in any order, keeping at most `limit + 1` of them: the
/// memory of a listing is bounded by its page, not by the store.
pub struct PageCollector<T> {
    limit: usize,
    cursor: Option<SortKey>,
    best: BinaryHeap<Entry<T>>,
    total: u64,
}

struct Entry<T>(SortKey, T);

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp(&other.0)
    }
}

/// One cut page: the items in list order, the token for the next page (`None` on the last
/// page) and how many Tasks matched the filters in all (every page, not just this one).
#[derive(Debug)]
pub struct Cut<T> {
    pub items: Vec<(SortKey, T)>,
    pub next_page_token: Option<String>,
    pub total_size: u64,
}

impl<T> PageCollector<T> {
    /// A collector for `query` (its page size and token).
    pub fn new(query: &ListQuery) -> Result<Self, QueryError> {
        Ok(PageCollector {
            limit: query.limit(),
            cursor: query.cursor()?,
            best: BinaryHeap::new(),
            total: 0,
        })
    }

    /// Whether a Task with this key would be kept (it comes after the token and before the
    /// page's current last item): lets a store skip reading a Task's text it would drop.
    pub fn wants(&self, key: &SortKey) -> bool {
        self.after_cursor(key)
            && (self.best.len() <= self.limit || self.best.peek().is_some_and(|top| *key < top.0))
    }

    fn after_cursor(&self, key: &SortKey) -> bool {
        self.cursor.as_ref().is_none_or(|c| key > c)
    }

    /// Counts a Task that matched the filters toward the total size.
    pub fn count(&mut self) {
        self.total += 1;
    }

    /// Offers a Task that matched the filters and was already [counted](Self::count).
    pub fn offer(&mut self, key: SortKey, item: T) {
        if !self.wants(&key) {
            return;
        }
        self.best.push(Entry(key, item));
        if self.best.len() > self.limit + 1 {
            self.best.pop();
        }
    }

    /// Counts and offers a Task that matched the filters.
    pub fn push(&mut self, key: SortKey, item: T) {
        self.count();
        self.offer(key, item);
    }

    /// The page.
    pub fn finish(self) -> Cut<T> {
        let mut items: Vec<(SortKey, T)> = self
            .best
            .into_sorted_vec()
            .into_iter()
            .map(|Entry(k, t)| (k, t))
            .collect();
        let next_page_token = (items.len() > self.limit).then(|| items[self.limit - 1].0.encode());
        items.truncate(self.limit);
        Cut {
            items,
            next_page_token,
            total_size: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn key(ts: Option<&str>, id: &str) -> SortKey {
        SortKey {
            timestamp: ts.map(|t| Timestamp::parse(t).unwrap()),
            id: id.into(),
        }
    }

    #[test]
    fn states_match_across_protocol_versions() {
        let q = ListQuery {
            state: Some("input-required".into()),
            ..Default::default()
        };
        assert!(q.matches(&map(
            json!({"id": "a", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}})
        )));
        assert!(q.matches(&map(
            json!({"id": "a", "status": {"state": "input-required"}})
        )));
        assert!(!q.matches(&map(json!({"id": "a", "status": {"state": "completed"}}))));
        assert!(!q.matches(&map(json!({"id": "a"}))));
    }

    #[test]
    fn context_filter_needs_an_exact_match() {
        let q = ListQuery {
            context_id: Some("c1".into()),
            ..Default::default()
        };
        assert!(q.matches(&map(json!({"id": "a", "contextId": "c1"}))));
        assert!(!q.matches(&map(json!({"id": "a", "contextId": "c10"}))));
        assert!(!q.matches(&map(json!({"id": "a"}))));
    }

    #[test]
    fn timestamp_filter_is_at_or_after_and_compares_instants_not_text() {
        let q = ListQuery {
            status_timestamp_after: Some(Timestamp::parse("2025-01-01T12:00:00Z").unwrap()),
            ..Default::default()
        };
        let at = |t: &str| map(json!({"id": "a", "status": {"state": "working", "timestamp": t}}));
        assert!(q.matches(&at("2025-01-01T12:00:00Z")));
        assert!(q.matches(&at("2025-01-01T13:00:00.000001+01:00")));
        assert!(!q.matches(&at("2025-01-01T12:59:59+01:00")));
        assert!(!q.matches(&at("not a time")));
        assert!(!q.matches(&map(json!({"id": "a"}))));
    }

    #[test]
    fn newest_first_then_id_and_untimed_last() {
        let mut keys = [
            key(None, "b"),
            key(Some("2025-01-01T00:00:00Z"), "z"),
            key(Some("2025-01-02T00:00:00Z"), "y"),
            key(None, "a"),
            key(Some("2025-01-01T00:00:00Z"), "c"),
        ];
        keys.sort();
        let ids: Vec<_> = keys.iter().map(|k| k.id.as_str()).collect();
        assert_eq!(ids, ["y", "c", "z", "a", "b"]);
    }

    #[test]
    fn a_collector_keeps_one_page_and_counts_all() {
        let q = ListQuery {
            page_size: 2,
            ..Default::default()
        };
        let keys: Vec<_> = (0..100)
            .map(|i| {
                key(
                    Some(&format!("2025-01-01T00:00:{:02}Z", i % 60)),
                    &format!("t{i:03}"),
                )
            })
            .collect();
        let mut all = keys.clone();
        all.sort();
        let mut walked = Vec::new();
        let mut token = None;
        loop {
            let q = ListQuery {
                page_token: token,
                ..q.clone()
            };
            let mut c = PageCollector::new(&q).unwrap();
            for k in keys.iter().rev() {
                c.push(k.clone(), ());
                assert!(c.best.len() <= 3);
            }
            let cut = c.finish();
            assert_eq!(cut.total_size, 100);
            walked.extend(cut.items.into_iter().map(|(k, ())| k));
            token = cut.next_page_token;
            if token.is_none() {
                break;
            }
        }
        assert_eq!(walked, all);
    }

    #[test]
    fn tokens_round_trip_and_garbage_is_refused_by_name() {
        for k in [key(None, "a/b"), key(Some("1969-12-31T23:59:59.5Z"), "ü")] {
            assert_eq!(SortKey::decode(&k.encode()).unwrap(), k);
        }
        for bad in ["", "!!", "e30", &"A".repeat(MAX_PAGE_TOKEN + 1)] {
            let err = SortKey::decode(bad).unwrap_err();
            assert!(err.to_string().starts_with("invalid page token"), "{err}");
        }
    }

    #[test]
    fn page_sizes_default_and_cap() {
        assert_eq!(ListQuery::default().limit(), DEFAULT_PAGE_SIZE);
        assert_eq!(
            ListQuery {
                page_size: 1_000_000,
                ..Default::default()
            }
            .limit(),
            MAX_PAGE_SIZE
        );
    }
}
