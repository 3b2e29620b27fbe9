//! What a push config must pass when it is created: secrets that can be sent as HTTP header
//! values (both versions' shapes, and the config inside `SendMessage`), and the per-Task cap,
//! which holds under concurrent creates.

use crate::push::{Recorder, Setup, config, rpc, send, setup, task};
use futures_util::future::join_all;
use serde_json::json;
use std::sync::Arc;
use toolnexus_a2a_protocol::push::MAX_CONFIGS_PER_TASK;
use toolnexus_a2a_protocol::push_call::MAX_HEADER_SECRET_BYTES;
use toolnexus_a2a_protocol::{PushNotifier, Version};
use toolnexus_core::{Expect, InMemoryTaskStore, PushConfig, StoreError, Task, TaskStore};

/// Values no HTTP header can carry as they are, each with why.
fn bad_values() -> Vec<(&'static str, String)> {
    vec![
        ("CR LF", "abc\r\nX-Injected: yes".to_owned()),
        ("LF", "abc\ndef".to_owned()),
        ("CR", "abc\rdef".to_owned()),
        ("NUL", "abc\0def".to_owned()),
        ("tab", "abc\tdef".to_owned()),
        ("DEL", "abc\u{7f}def".to_owned()),
        ("a C1 control", "abc\u{85}def".to_owned()),
        ("a leading space", " abc".to_owned()),
        ("a trailing space", "abc ".to_owned()),
        ("too long", "x".repeat(MAX_HEADER_SECRET_BYTES + 1)),
    ]
}

/// `err` is -32602 on `field`, and its message does not repeat the secret.
fn assert_refused(err: &toolnexus_a2a_protocol::A2aError, field: &str, secret: &str, what: &str) {
    assert_eq!(err.code(), -32602, "{what}: {err}");
    assert_eq!(err.field.as_deref(), Some(field), "{what}: {err}");
    assert!(
        !err.message.contains(secret),
        "{what}: the message repeats the secret: {err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_that_cannot_be_header_values_are_refused_at_create_in_both_versions() {
    let Setup {
        service,
        store,
        recorder,
    } = setup();
    task(&store, "t").await;
    for (what, bad) in bad_values() {
        let cases = [
            (
                "CreateTaskPushNotificationConfig",
                json!({"taskId": "t", "url": "https://h/x", "token": bad}),
                Version::V1_0,
                "token",
            ),
            (
                "CreateTaskPushNotificationConfig",
                json!({"taskId": "t", "url": "https://h/x",
                    "authentication": {"scheme": "Bearer", "credentials": bad}}),
                Version::V1_0,
                "authentication.credentials",
            ),
            (
                "tasks/pushNotificationConfig/set",
                json!({"taskId": "t", "pushNotificationConfig": {"url": "https://h/x",
                    "token": bad}}),
                Version::V0_3,
                "pushNotificationConfig.token",
            ),
            (
                "tasks/pushNotificationConfig/set",
                json!({"taskId": "t", "pushNotificationConfig": {"url": "https://h/x",
                    "authentication": {"schemes": ["Basic"], "credentials": bad}}}),
                Version::V0_3,
                "pushNotificationConfig.authentication.credentials",
            ),
        ];
        for (method, params, version, field) in cases {
            let err = rpc(&service, method, params, version).await.unwrap_err();
            assert_refused(&err, field, &bad, &format!("{method} with {what}"));
        }
        // The config a SendMessage carries: refused before any Task is made.
        let sends = [
            (
                "SendMessage",
                send(
                    "x",
                    json!({"taskPushNotificationConfig": {"url": "https://h/x", "token": bad}}),
                ),
                Version::V1_0,
                "configuration.taskPushNotificationConfig.token",
            ),
            (
                "message/send",
                send(
                    "x",
                    json!({"pushNotificationConfig": {"url": "https://h/x",
                        "authentication": {"schemes": ["Bearer"], "credentials": bad}}}),
                ),
                Version::V0_3,
                "configuration.pushNotificationConfig.authentication.credentials",
            ),
        ];
        for (method, params, version, field) in sends {
            let err = rpc(&service, method, params, version).await.unwrap_err();
            assert_refused(&err, field, &bad, &format!("{method} with {what}"));
        }
    }
    // A scheme is sent in the header too: it must be an HTTP token.
    for (scheme, version, params, field) in [
        (
            "Bearer\r\nX-Injected: yes",
            Version::V1_0,
            json!({"taskId": "t", "url": "https://h/x",
                "authentication": {"scheme": "Bearer\r\nX-Injected: yes", "credentials": "c"}}),
            "authentication.scheme",
        ),
        (
            "Bea rer",
            Version::V0_3,
            json!({"taskId": "t", "pushNotificationConfig": {"url": "https://h/x",
                "authentication": {"schemes": ["Bea rer"], "credentials": "c"}}}),
            "pushNotificationConfig.authentication.schemes",
        ),
    ] {
        let method = match version {
            Version::V1_0 => "CreateTaskPushNotificationConfig",
            Version::V0_3 => "tasks/pushNotificationConfig/set",
        };
        let err = rpc(&service, method, params, version).await.unwrap_err();
        assert_eq!(
            (err.code(), err.field.as_deref()),
            (-32602, Some(field)),
            "{scheme:?}: {err}"
        );
    }
    // Nothing was stored, no Task was made by a refused SendMessage, nothing was told.
    assert!(store.list_push_configs("t").await.unwrap().is_empty());
    assert_eq!(
        store.list(&Default::default()).await.unwrap().tasks.len(),
        1
    );
    assert!(recorder.saves.lock().unwrap().is_empty());

    // What a header carries fine is kept exactly: printable ASCII, inner spaces, non-ASCII
    // text, the longest allowed.
    let longest = "y".repeat(MAX_HEADER_SECRET_BYTES);
    for (id, token) in [
        ("a", "tok-1 with spaces !#$%"),
        ("b", "jeton-été"),
        ("c", longest.as_str()),
    ] {
        let created = rpc(
            &service,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "id": id, "url": "https://h/x", "token": token,
                "authentication": {"scheme": "Bearer", "credentials": token}}),
            Version::V1_0,
        )
        .await
        .unwrap();
        assert_eq!(created["token"], token);
        assert_eq!(created["authentication"]["credentials"], token);
    }
}

/// The in-memory store, except that listing a Task's configs gives way to the other callers
/// once before answering: creates racing in one task (`join_all`) all list before any of
/// them saves, unless something orders them.
struct YieldingList(InMemoryTaskStore);

#[async_trait::async_trait]
impl TaskStore for YieldingList {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        self.0.get(id).await
    }
    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.0.save(task).await
    }
    fn supports_versions(&self) -> bool {
        self.0.supports_versions()
    }
    async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        self.0.get_versioned(id).await
    }
    async fn save_versioned(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        self.0.save_versioned(task, expect).await
    }
    fn supports_push_configs(&self) -> bool {
        true
    }
    async fn save_push_config(&self, task_id: &str, config: &PushConfig) -> Result<(), StoreError> {
        self.0.save_push_config(task_id, config).await
    }
    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushConfig>, StoreError> {
        self.0.get_push_config(task_id, config_id).await
    }
    async fn list_push_configs(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
        let listed = self.0.list_push_configs(task_id).await;
        tokio::task::yield_now().await;
        listed
    }
    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError> {
        self.0.delete_push_config(task_id, config_id).await
    }
    fn describe(&self) -> String {
        "memory, listing configs with a pause".into()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_creates_never_store_more_than_the_cap() {
    let store = Arc::new(YieldingList(InMemoryTaskStore::new()));
    let recorder = Arc::new(Recorder::default());
    let service = config(
        Arc::clone(&store) as _,
        Some(Arc::clone(&recorder) as Arc<dyn PushNotifier>),
        0,
    );
    task(&store.0, "t").await;
    let creates = 4 * MAX_CONFIGS_PER_TASK;
    let answers = join_all((0..creates).map(|i| {
        rpc(
            &service,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "id": format!("c{i:03}"), "url": "https://h/x"}),
            Version::V1_0,
        )
    }))
    .await;
    let stored = store.0.list_push_configs("t").await.unwrap();
    assert_eq!(stored.len(), MAX_CONFIGS_PER_TASK, "configs stored");
    let created = answers.iter().filter(|a| a.is_ok()).count();
    assert_eq!(
        created, MAX_CONFIGS_PER_TASK,
        "creates answered with success"
    );
    for err in answers.iter().filter_map(|a| a.as_ref().err()) {
        assert_eq!(err.code(), -32602, "{err}");
        assert!(
            err.message.contains(&MAX_CONFIGS_PER_TASK.to_string()),
            "{err}"
        );
    }
    // Each success is one that is stored.
    let stored_ids: Vec<&str> = stored.iter().map(|c| c.id()).collect();
    for answer in answers.iter().flatten() {
        assert!(
            stored_ids.contains(&answer["id"].as_str().unwrap()),
            "{answer}"
        );
    }

    // At the cap, concurrent replacements by id all pass, and new ones in SendMessage
    // continuing the Task are refused like creates.
    let replaced = join_all(stored_ids.iter().map(|id| {
        rpc(
            &service,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "id": id, "url": "https://h/replaced"}),
            Version::V1_0,
        )
    }))
    .await;
    assert!(replaced.iter().all(Result::is_ok), "{replaced:?}");
    let mut more = send(
        "x",
        json!({"taskPushNotificationConfig": {"id": "one-more", "url": "https://h/y"}}),
    );
    more["message"]["taskId"] = json!("t");
    let err = rpc(&service, "SendMessage", more, Version::V1_0)
        .await
        .unwrap_err();
    assert_eq!(err.code(), -32602, "{err}");
    let stored = store.0.list_push_configs("t").await.unwrap();
    assert_eq!(stored.len(), MAX_CONFIGS_PER_TASK);
    assert!(
        stored
            .iter()
            .all(|c| c.to_map()["url"] == "https://h/replaced")
    );
}
