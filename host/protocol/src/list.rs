//! `ListTasks`: one page of the store's listing, cut to the answer's byte limit.

use crate::call::ListParams;
use crate::error::A2aError;
use crate::scope::At;
use crate::service_state::ServiceState;
use crate::task_json::task_answer;
use crate::wire::Version;
use serde_json::{Map, Value, json};
use toolnexus_core::{ListQuery, Task, TaskPage};

impl ServiceState {
    pub(crate) async fn list(
        &self,
        at: &At,
        params: ListParams,
        version: Version,
    ) -> Result<Value, A2aError> {
        let query = ListQuery {
            context_id: params.context_id.clone(),
            state: params.state.map(|s| s.v03_name().to_owned()),
            status_timestamp_after: params.status_timestamp_after,
            page_size: params.page_size,
            page_token: params.page_token.clone(),
        };
        let page = self.capped_page(at, query).await?;
        let mut tasks = Vec::with_capacity(page.tasks.len());
        for task in page.tasks {
            let mut value = task.into_value();
            if !params.include_artifacts
                && let Some(object) = value.as_object_mut()
            {
                object.remove("artifacts");
            }
            tasks.push(task_answer(value, params.history_length, version));
        }
        let mut out = Map::new();
        out.insert("tasks".into(), Value::Array(tasks));
        out.insert(
            "nextPageToken".into(),
            json!(page.next_page_token.unwrap_or_default()),
        );
        out.insert("pageSize".into(), json!(params.page_size));
        if let Some(total) = page.total_size {
            out.insert("totalSize".into(), json!(total));
        }
        Ok(Value::Object(out))
    }

    /// The store's page for `query`, cut to what fits in `max_list_bytes`. A page token is the
    /// store's own (opaque here), so a page is cut by asking the store again for only the Tasks
    /// that fit, from the same place.
    async fn capped_page(&self, at: &At, mut query: ListQuery) -> Result<TaskPage, A2aError> {
        let max = self.config.max_list_bytes;
        loop {
            let page = at.store.list(&query).await?;
            let fit = fitting(&page.tasks, max);
            if fit == page.tasks.len() {
                return Ok(page);
            }
            let asked = query.limit();
            if fit >= asked {
                return Err(A2aError::internal(format!(
                    "the store answered {} Tasks to a list of at most {asked}",
                    page.tasks.len()
                )));
            }
            query.page_size = fit;
        }
    }
}

/// How many of `tasks`, from the first, fit in `max` bytes of JSON (commas included); at least
/// one, so that paging always moves on.
fn fitting(tasks: &[Task], max: usize) -> usize {
    let mut total = 0usize;
    for (i, task) in tasks.iter().enumerate() {
        total = total.saturating_add(task.as_json().len() + usize::from(i > 0));
        if total > max {
            return i.max(1);
        }
    }
    tasks.len()
}
