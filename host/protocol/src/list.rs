//! `ListTasks`: one page of the store's listing, cut to the answer's byte limit, with the
//! number of matching Tasks (`totalSize`, REQUIRED in 1.0) counted here when the store cannot
//! tell it.

use crate::call::ListParams;
use crate::error::A2aError;
use crate::scope::At;
use crate::service_state::ServiceState;
use crate::task_json::task_answer;
use crate::wire::Version;
use serde_json::{Map, Value, json};
use toolnexus_core::{ListQuery, TaskPage};

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
        let page = self.capped_page(at, query.clone()).await?;
        let total_size = match page.total_size {
            Some(total) => total,
            None => total_size(at, &query, &page).await?,
        };
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
        out.insert("totalSize".into(), json!(total_size));
        Ok(Value::Object(out))
    }

    /// The store's page for `query`, cut to what fits in `max_list_bytes`. A page token is the
    /// store's own (opaque here), so a page is cut by asking the store again for only the Tasks
    /// that fit, from the same place.
    async fn capped_page(&self, at: &At, mut query: ListQuery) -> Result<TaskPage, A2aError> {
        let max = self.config.max_list_bytes;
        loop {
            let page = at.store.list(&query).await?;
            let fit = page.fitting(max);
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

/// How many Tasks match `query`'s filters, for a store that does not count them (a `TaskStore`
/// of an embedder's own). A first page that is also the last holds them all: its length, for free. Any
/// other page costs a walk through the whole listing with the same filters, [`COUNT_PAGE_SIZE`]
/// Tasks a page: as many store calls as that takes, each reading its Tasks in full, so an
/// answer's cost grows with the number of matching Tasks, not with its page. A count taken
/// while others write may be off by the Tasks they add or remove meanwhile, as a store's own
/// count taken beside its page may be.
async fn total_size(at: &At, query: &ListQuery, page: &TaskPage) -> Result<u64, A2aError> {
    if query.page_token.is_none() && page.next_page_token.is_none() {
        return Ok(page.tasks.len() as u64);
    }
    let mut walk = ListQuery {
        page_size: COUNT_PAGE_SIZE,
        page_token: None,
        ..query.clone()
    };
    let mut total = 0u64;
    loop {
        let page = at.store.list(&walk).await?;
        total += page.tasks.len() as u64;
        match page.next_page_token {
            None => return Ok(total),
            // A store that names a next page but gives nothing, or the same page again, would
            // keep the walk going for ever.
            Some(next) if page.tasks.is_empty() || walk.page_token.as_ref() == Some(&next) => {
                return Err(A2aError::internal(format!(
                    "the store's listing does not move on while counting Tasks (page token {next:?})"
                )));
            }
            Some(next) => walk.page_token = Some(next),
        }
    }
}

/// The page size of [`total_size`]'s walk: A2A's largest, so a counting page holds no more
/// than an answer's page can.
const COUNT_PAGE_SIZE: usize = crate::call::MAX_PAGE_SIZE;
