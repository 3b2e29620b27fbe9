//! Directory interchange between store implementations (Rust, JavaScript, Python): the Tasks and
//! push configs every implementation must write the same files for and read back from the
//! others, and the save, read and list steps the interchange tests share.

use crate::{task, vectors};
use serde_json::json;
use toolnexus::{ListQuery, PushConfig, Task, TaskStore};

/// The shared vectors plus Tasks whose ids are hostile as file names (escapes, dots, NUL,
/// non-ASCII, and ids long enough to get a hashed name).
pub fn interchange_tasks() -> Vec<Task> {
    let odd = [
        "..",
        ".",
        "a/b",
        "a%2Fb",
        "nul\0byte",
        ".hidden",
        ".tmp-1234",
        "x.json",
        "é/日本語/🚀",
        "\u{ff5e}",
        "~",
        "%",
    ];
    let mut tasks: Vec<Task> = vectors().into_iter().map(|(_, t)| t).collect();
    assert!(
        tasks.iter().all(|t| !odd.contains(&t.id())),
        "a vector's id collides with an odd id below"
    );
    for (i, id) in odd.into_iter().enumerate() {
        tasks.push(task(json!({"id": id, "n": i, "contextId": "odd"})));
    }
    tasks.push(task(json!({"id": "x".repeat(10_000), "n": "long"})));
    tasks.push(task(
        json!({"id": format!("{}/", "é".repeat(300)), "n": "long-escaped"}),
    ));
    tasks
}

/// Push configs whose Task and config ids are hostile as file names (escapes, dots, non-ASCII,
/// a Task id long enough for a hashed name), several per Task.
pub fn interchange_push_configs() -> Vec<(String, PushConfig)> {
    let tasks = ["t1", "a/b", "..", "é/日本語", &"x".repeat(300)].map(str::to_owned);
    let configs = ["c1", "c/1", ".", "-", "B", "日本", "~"];
    let mut all = Vec::new();
    for (i, task_id) in tasks.iter().enumerate() {
        for (j, config_id) in configs.iter().enumerate().skip(i % 3) {
            let config = json!({
                "id": config_id,
                "url": format!("https://example.com/hook/{i}/{j}"),
                "token": "secret",
                "n": 9007199254740993_u64,
            });
            all.push((task_id.clone(), PushConfig::from_value(config).unwrap()));
        }
    }
    all
}

/// The configs of `task_id` in `configs`, by config id (byte order), as a store lists them.
pub fn expected_configs(configs: &[(String, PushConfig)], task_id: &str) -> Vec<PushConfig> {
    let mut theirs: Vec<PushConfig> = configs
        .iter()
        .filter(|(t, _)| t == task_id)
        .map(|(_, c)| c.clone())
        .collect();
    theirs.sort_by(|a, b| a.id().as_bytes().cmp(b.id().as_bytes()));
    theirs
}

/// Saves every Task, in order.
pub async fn save_all(store: &dyn TaskStore, tasks: &[Task]) {
    for t in tasks {
        store
            .save(t)
            .await
            .unwrap_or_else(|e| panic!("saving {:?}: {e}", t.id()));
    }
}

/// Asserts `store` holds every Task as given.
pub async fn assert_reads_all(store: &dyn TaskStore, tasks: &[Task]) {
    for t in tasks {
        let got = store
            .get(t.id())
            .await
            .unwrap_or_else(|e| panic!("getting {:?} from {}: {e}", t.id(), store.describe()));
        assert_eq!(
            got.as_ref(),
            Some(t),
            "{:?} via {}",
            t.id(),
            store.describe()
        );
    }
}

/// Every Task, walking pages of 7.
pub async fn list_all(store: &dyn TaskStore) -> Vec<Task> {
    let mut query = ListQuery {
        page_size: 7,
        ..Default::default()
    };
    let mut all = Vec::new();
    loop {
        let page = store.list(&query).await.unwrap();
        all.extend(page.tasks);
        match page.next_page_token {
            Some(token) => query.page_token = Some(token),
            None => return all,
        }
    }
}
