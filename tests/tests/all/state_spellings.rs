//! One set of task-state rules, asked the same way everywhere: every spelling of a state (the
//! v0.3 name, the v1.0 enum name, `canceled`/`cancelled`) means that state in the stores' list
//! filter (native, and compiled into the file-store component), in the lifecycle-guard
//! middleware (natively and composed over the file store), and in the A2A server's cancel rule.

use serde_json::{Value, json};
use std::sync::Arc;
use toolnexus::state::TaskState;
use toolnexus::wasm::{CacheDir, ComponentSource, WasmTaskStore};
use toolnexus::wasm::{Sandboxed, SandboxedDir};
use toolnexus::{InMemoryTaskStore, ListQuery, StoreError, TaskStore};
use toolnexus_conformance::a2a_client::call;
use toolnexus_conformance::{GUARDED_FILE_STORE_COMPONENT, listing_stores, task};
use toolnexus_lifecycle_guard::{NextVersion, check_transition};

/// Every spelling of `state` that occurs in the wild.
fn spellings(state: TaskState) -> Vec<String> {
    let mut all = vec![state.v03_name().to_owned(), state.v1_name().to_owned()];
    if state == TaskState::Canceled {
        all.extend(["cancelled".to_owned(), "TASK_STATE_CANCELLED".to_owned()]);
    }
    all
}

fn with_state(id: &str, state: &str) -> Value {
    json!({"id": id, "contextId": "ctx", "status": {"state": state}})
}

#[tokio::test]
async fn the_list_filter_matches_every_spelling_of_a_state_and_no_other_state() {
    let dir = tempfile::tempdir().unwrap();
    for (name, store) in listing_stores(dir.path()) {
        // One Task per spelling of every state.
        let mut saved = Vec::new();
        for state in TaskState::ALL {
            for (i, spelling) in spellings(state).into_iter().enumerate() {
                let id = format!("{}-{i}", state.v03_name());
                store.save(&task(with_state(&id, &spelling))).await.unwrap();
                saved.push((state, id));
            }
        }
        for state in TaskState::ALL {
            let mut want: Vec<&str> = saved
                .iter()
                .filter(|(s, _)| *s == state)
                .map(|(_, id)| id.as_str())
                .collect();
            want.sort_unstable();
            for asked in spellings(state) {
                let query = ListQuery {
                    state: Some(asked.clone()),
                    page_size: 100,
                    ..Default::default()
                };
                let page = store.list(&query).await.unwrap();
                let got: Vec<&str> = page.tasks.iter().map(|t| t.id()).collect();
                assert_eq!(got, want, "{name}: listing {asked:?}");
            }
        }
    }
}

#[test]
fn the_guard_treats_every_spelling_of_a_terminal_state_as_that_state() {
    let next = |state: &str| NextVersion {
        id: "t".into(),
        state: Some(state.into()),
    };
    for from in TaskState::ALL {
        for stored in spellings(from) {
            let stored_text = with_state("t", &stored).to_string();
            for to in TaskState::ALL {
                for spelled in spellings(to) {
                    let verdict = check_transition(Some(&stored_text), &next(&spelled));
                    let allowed = !from.is_terminal() || from == to;
                    assert_eq!(
                        verdict.is_ok(),
                        allowed,
                        "{stored:?} → {spelled:?}: {verdict:?}"
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn the_composed_guard_agrees_with_the_native_rules() {
    let dir = tempfile::tempdir().unwrap();
    let guarded = WasmTaskStore::builder(ComponentSource::Bytes {
        name: "guarded-file-store".into(),
        bytes: Arc::from(GUARDED_FILE_STORE_COMPONENT),
    })
    .dir(dir.path())
    .cache(CacheDir::Off)
    .build()
    .unwrap();
    for stored in spellings(TaskState::Canceled) {
        let id = format!("t-{stored}");
        guarded.save(&task(with_state(&id, &stored))).await.unwrap();
        for again in spellings(TaskState::Canceled) {
            guarded
                .save(&task(with_state(&id, &again)))
                .await
                .unwrap_or_else(|e| panic!("{stored:?} → {again:?} refused: {e}"));
        }
        let err = guarded
            .save(&task(with_state(&id, "TASK_STATE_COMPLETED")))
            .await
            .unwrap_err();
        assert!(
            matches!(err, StoreError::Rejected { .. }),
            "{stored}: {err}"
        );
    }
}

#[tokio::test]
async fn the_server_refuses_to_cancel_a_task_terminal_in_any_spelling() {
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    // Tasks are saved behind the server's back, with no timestamps: not interrupted ones.
    tokio::spawn(toolnexus_a2a::serve(
        listener,
        Arc::clone(&store),
        toolnexus_a2a::ServerConfig {
            recovery: toolnexus_a2a::Recovery::Off,
            ..Default::default()
        },
    ));
    let client = reqwest::Client::new();
    for state in TaskState::ALL {
        for (i, spelling) in spellings(state).into_iter().enumerate() {
            let id = format!("{}-{i}", state.v03_name());
            store.save(&task(with_state(&id, &spelling))).await.unwrap();
            let body = call(&client, &url, "CancelTask", json!({"id": id})).await;
            if state.is_terminal() {
                assert_eq!(
                    body["error"]["code"],
                    toolnexus_a2a::codes::TASK_NOT_CANCELABLE,
                    "{spelling}: {body}"
                );
                let kept = store.get(&id).await.unwrap().unwrap();
                assert_eq!(toolnexus::task_state(&kept), spelling, "unchanged");
            } else {
                assert_eq!(
                    body["result"]["status"]["state"], "canceled",
                    "{spelling}: {body}"
                );
            }
        }
    }
}
