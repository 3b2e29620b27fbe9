//! Listing Tasks: the query, filters and paging shared by every store that can list.
//!
//! Pages are in id order (by byte value); a page token is the last id of the previous page, so
//! a walk through the pages never returns a Task twice, whatever is saved or deleted meanwhile.

use crate::state::same_state;
use serde_json::{Map, Value};

/// The page size used when a query asks for 0.
pub const DEFAULT_PAGE_SIZE: usize = 50;
/// The largest page a store returns, whatever the query asks for.
pub const MAX_PAGE_SIZE: usize = 1000;

/// Which Tasks to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Only Tasks whose `contextId` equals this.
    pub context_id: Option<String>,
    /// Only Tasks in this state (every spelling of a state matches the others; see
    /// [`crate::state`]).
    pub state: Option<String>,
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

    /// Whether a Task with this id comes after the page token.
    pub fn after_token(&self, id: &str) -> bool {
        self.page_token.as_deref().is_none_or(|token| id > token)
    }

    /// Whether a Task matches the filters.
    pub fn matches(&self, task: &Map<String, Value>) -> bool {
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
        context_ok && state_ok
    }

    /// Whether the query filters at all (if not, Tasks need not be parsed to be listed).
    pub fn has_filters(&self) -> bool {
        self.context_id.is_some() || self.state.is_some()
    }
}

/// Sorts `(id, item)` pairs that already passed the filters and the token, and cuts one page:
/// the items and the token for the next page (`None` on the last page).
pub fn paginate<T>(mut matching: Vec<(String, T)>, query: &ListQuery) -> (Vec<T>, Option<String>) {
    matching.sort_by(|a, b| a.0.cmp(&b.0));
    let limit = query.limit();
    let next = (matching.len() > limit).then(|| matching[limit - 1].0.clone());
    matching.truncate(limit);
    (matching.into_iter().map(|(_, item)| item).collect(), next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
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
    fn pages_are_in_id_order_with_a_token_for_the_rest() {
        let q = ListQuery {
            page_size: 2,
            ..Default::default()
        };
        let items: Vec<_> = ["c", "a", "d", "b"]
            .iter()
            .map(|id| (id.to_string(), *id))
            .collect();
        let (page, next) = paginate(items, &q);
        assert_eq!(page, ["a", "b"]);
        assert_eq!(next.as_deref(), Some("b"));
        let q2 = ListQuery {
            page_token: next,
            ..q
        };
        assert!(!q2.after_token("b") && q2.after_token("c"));
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
