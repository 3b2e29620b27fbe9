//! `ListTasks` answers `totalSize` (REQUIRED in A2A 1.0) over a store that cannot count its
//! listing (a host-supplied store may answer no total): from a complete first page, or by walking the
//! listing with the query's filters; a store whose listing never moves on is an error, not a
//! request that never ends.

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use toolnexus_a2a_protocol::call::from_jsonrpc;
use toolnexus_a2a_protocol::{
    AgentLimits, Answer, EchoAgent, ErrorKind, Scope, Service, ServiceConfig, SingleStore, Spawn,
    Version,
};
use toolnexus_core::{Expect, InMemoryTaskStore, ListQuery, StoreError, Task, TaskPage, TaskStore};

struct TokioSpawn;

impl Spawn for TokioSpawn {
    fn spawn(&self, future: BoxFuture<'static, ()>) {
        tokio::spawn(future);
    }
}

/// A memory store whose listing does not count (`total_size: None`), and counts its own list
/// calls. `stuck`: pages of one Task, each after the first naming itself as the next one.
#[derive(Default)]
struct Uncounted {
    inner: InMemoryTaskStore,
    list_calls: AtomicUsize,
    stuck: bool,
}

#[async_trait::async_trait]
impl TaskStore for Uncounted {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        self.inner.get(id).await
    }

    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.inner.save(task).await
    }

    async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        self.inner.get_versioned(id).await
    }

    async fn save_versioned(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        self.inner.save_versioned(task, expect).await
    }

    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.list_calls.fetch_add(1, Ordering::SeqCst);
        if !self.stuck {
            let page = self.inner.list(query).await?;
            return Ok(TaskPage {
                total_size: None,
                ..page
            });
        }
        let one = ListQuery {
            page_size: 1,
            ..query.clone()
        };
        let page = self.inner.list(&one).await?;
        Ok(TaskPage {
            next_page_token: query.page_token.clone().or(page.next_page_token),
            tasks: page.tasks,
            total_size: None,
        })
    }

    fn describe(&self) -> String {
        "uncounted memory".into()
    }
}

/// `count` completed Tasks, the even ones in context `even`, the odd ones in `odd`.
async fn filled(count: usize, stuck: bool) -> Arc<Uncounted> {
    let store = Arc::new(Uncounted {
        stuck,
        ..Default::default()
    });
    for i in 0..count {
        let context = if i % 2 == 0 { "even" } else { "odd" };
        let task = json!({"id": format!("t-{i:04}"), "contextId": context, "kind": "task",
            "status": {"state": "completed",
                "timestamp": format!("2026-01-01T00:{:02}:{:02}Z", i / 60, i % 60)}});
        store
            .save(&Task::from_json(&task.to_string()).unwrap())
            .await
            .unwrap();
    }
    store
}

fn service(store: Arc<Uncounted>) -> Service {
    Service::new(
        Arc::new(SingleStore(store as Arc<dyn TaskStore>)),
        ServiceConfig {
            agent: Arc::new(EchoAgent {
                delay: Duration::ZERO,
            }),
            max_background_tasks: 8,
            max_list_bytes: 1 << 20,
            tenants: HashSet::new(),
            poll_interval: Duration::from_secs(30),
            output_modes: vec!["text/plain".into()],
            agent_limits: AgentLimits::default(),
            finish_read_to_write_delay: Duration::ZERO,
            push: None,
            owner_limits: Default::default(),
        },
        Arc::new(TokioSpawn),
    )
}

async fn list(service: &Service, params: Value) -> Result<Value, toolnexus_a2a_protocol::A2aError> {
    let parsed = from_jsonrpc("ListTasks", &params).expect("valid ListTasks params");
    match service
        .call(&Scope::default(), parsed.call, Version::V1_0)
        .await?
    {
        Answer::Value(value) => Ok(value),
        Answer::Stream(_) => panic!("ListTasks answers a value"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_complete_first_page_is_counted_without_another_store_call() {
    let store = filled(3, false).await;
    let service = service(Arc::clone(&store));
    let page = list(&service, json!({})).await.unwrap();
    assert_eq!(page["tasks"].as_array().unwrap().len(), 3, "{page}");
    assert_eq!(page["totalSize"], 3, "{page}");
    assert_eq!(store.list_calls.load(Ordering::SeqCst), 1);
    let empty = list(&service, json!({"contextId": "none"})).await.unwrap();
    assert_eq!(empty["totalSize"], 0, "{empty}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_page_of_a_longer_listing_carries_the_whole_count_of_its_filters() {
    let store = filled(250, false).await;
    let service = service(Arc::clone(&store));
    let first = list(&service, json!({"pageSize": 10})).await.unwrap();
    assert_eq!(first["tasks"].as_array().unwrap().len(), 10, "{first}");
    assert_eq!(first["totalSize"], 250, "{first}");
    let token = first["nextPageToken"].as_str().unwrap().to_owned();
    assert!(!token.is_empty(), "{first}");
    let second = list(&service, json!({"pageSize": 10, "pageToken": token}))
        .await
        .unwrap();
    assert_eq!(second["totalSize"], 250, "{second}");
    assert_ne!(second["tasks"][0]["id"], first["tasks"][0]["id"]);
    let even = list(&service, json!({"pageSize": 5, "contextId": "even"}))
        .await
        .unwrap();
    assert_eq!(even["totalSize"], 125, "{even}");
    // The last page of a walk: no next page, yet not the first page either.
    let mut token = None;
    let mut seen = 0;
    loop {
        let mut params = json!({"pageSize": 100});
        if let Some(token) = &token {
            params["pageToken"] = json!(token);
        }
        let page = list(&service, params).await.unwrap();
        assert_eq!(page["totalSize"], 250, "{page}");
        seen += page["tasks"].as_array().unwrap().len();
        match page["nextPageToken"].as_str() {
            Some(next) if !next.is_empty() => token = Some(next.to_owned()),
            _ => break,
        }
    }
    assert_eq!(seen, 250);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listing_that_never_moves_on_is_an_internal_error() {
    let store = filled(5, true).await;
    let service = service(Arc::clone(&store));
    let error = list(&service, json!({"pageSize": 2})).await.unwrap_err();
    // The page itself, then the walk's first page and the one that named itself again.
    assert_eq!(store.list_calls.load(Ordering::SeqCst), 3);
    assert_eq!(error.kind, ErrorKind::Internal, "{error}");
    assert!(error.detail().contains("does not move on"), "{error}");
}
