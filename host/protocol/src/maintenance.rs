//! Keeping a store tidy around a server: **recovery** at startup (Tasks a crash left
//! `submitted` or `working`) and **retention** (removing terminal Tasks past an age).
//!
//! Both walk the store's listing ([`TaskStore::list`], every page) and act on each Task through
//! the store ([`transition`] for recovery, [`TaskStore::delete`] for retention), so they work on
//! every store that has a catalog (memory, files, the file-store component, PostgreSQL). A store
//! without one answers [`StoreError::Unsupported`] to `list`: recovery then logs a warning and
//! does nothing, retention stops, and [`prune`] returns that error.
//!
//! The HTTP server's `serve` (crate `toolnexus-a2a`) runs both by itself (its
//! `ServerConfig::recovery` and `ServerConfig::retain`). An application that embeds its router
//! instead calls [`recover_at_startup`] before it accepts requests and spawns [`retention`].
//! Nothing here needs the HTTP server: `tnstore prune` is [`prune`] alone.
//!
//! # Recovery and replicas
//!
//! Recovery fails every `submitted` or `working` Task whose status timestamp is before this
//! server's start (in an earlier millisecond: [`fail_interrupted`]). Over a store shared by
//! several live replicas, that includes the Tasks the *other* replicas are working on right
//! now: one replica's restart fails them (their agents' final saves then find the Task
//! terminal and leave it so). Run replicas over a shared store with [`Recovery::Off`]
//! (`tnstore serve --recovery off`) and resolve interrupted Tasks another way.

pub use crate::recovery_policy::Recovery;
use crate::service::{new_id, with_status};
use crate::service_config::ServiceConfig;
use crate::{A2aError, PushNotifier};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use toolnexus_core::state::{TERMINAL_STATES, TaskState, normalize_state};
use toolnexus_core::transition::{Step, transition};
use toolnexus_core::{ListQuery, StoreError, Task, TaskStore, Timestamp, query, task_state};

/// The text of the status message recovery puts on a Task it fails.
pub const INTERRUPTED_MESSAGE: &str = "interrupted: the server stopped before this task finished";

/// The most Tasks asked for in one page of a maintenance walk (the largest page a store gives).
pub const WALK_PAGE_SIZE: usize = query::MAX_PAGE_SIZE;

/// The longest pause between two retention passes.
pub const MAX_RETENTION_INTERVAL: Duration = Duration::from_secs(3600);
/// The shortest pause between two retention passes.
pub const MIN_RETENTION_INTERVAL: Duration = Duration::from_secs(1);

/// The current time as a [`Timestamp`].
pub fn now() -> Timestamp {
    let nanos = match SystemTime::now().duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => i128::try_from(after.as_nanos()).unwrap_or(i128::MAX),
        Err(before) => -i128::try_from(before.duration().as_nanos()).unwrap_or(i128::MAX),
    };
    Timestamp::from_unix_nanos(nanos)
}

/// The instant `age` before now: Tasks with a status timestamp before it are older than `age`.
pub fn cutoff(age: Duration) -> Timestamp {
    let age = i128::try_from(age.as_nanos()).unwrap_or(i128::MAX);
    Timestamp::from_unix_nanos(now().unix_nanos().saturating_sub(age))
}

/// Runs the `recovery` policy over `store`, for a server of `service` (its agent) that started
/// at `started`: with [`Recovery::FailInterrupted`] (and an agent that cannot resume) fails
/// the interrupted Tasks ([`fail_interrupted`]). Never fails itself: what went wrong is logged
/// (target `toolnexus::server`), and a store without a catalog gets one warning. Returns how
/// many Tasks it failed.
pub async fn recover_at_startup(
    store: &dyn TaskStore,
    recovery: Recovery,
    service: &ServiceConfig,
    started: Timestamp,
) -> u64 {
    recover_namespace_at_startup(store, None, recovery, service, started).await
}

/// [`recover_at_startup`] for the store of `namespace` (as [`Scope::namespace`] names it;
/// `None`: the root store), telling [`ServiceConfig::push`] of each Task it fails, as the
/// service tells it of every save it makes (when the store keeps push configs).
///
/// [`Scope::namespace`]: crate::Scope::namespace
pub async fn recover_namespace_at_startup(
    store: &dyn TaskStore,
    namespace: Option<&str>,
    recovery: Recovery,
    service: &ServiceConfig,
    started: Timestamp,
) -> u64 {
    if recovery == Recovery::Off {
        return 0;
    }
    if service.agent.can_resume() {
        tracing::warn!(target: "toolnexus::server", store = %store.describe(),
            "recovery: the agent says it can resume interrupted tasks; leaving them as they are");
        return 0;
    }
    let push = service
        .push
        .as_deref()
        .filter(|_| store.supports_push_configs())
        .map(|notifier| (notifier, namespace));
    match fail_interrupted_telling(store, started, push).await {
        Ok(0) => {
            tracing::info!(target: "toolnexus::server", "recovery: no interrupted tasks");
            0
        }
        Ok(n) => {
            tracing::warn!(target: "toolnexus::server", resolved = n,
                "recovery: marked interrupted tasks failed");
            n
        }
        Err(StoreError::Unsupported { store, operation }) => {
            tracing::warn!(target: "toolnexus::server", %store, operation,
                "recovery skipped: the store cannot list its tasks");
            0
        }
        Err(e) => {
            tracing::warn!(target: "toolnexus::server", error = %e,
                "recovery stopped: the store failed while listing tasks");
            0
        }
    }
}

/// Marks `failed` every Task that is `submitted` or `working` (any spelling) and whose status
/// timestamp is in a millisecond before the one `started` is in (or that has none), with a
/// status message saying it was interrupted. Each change is a [`transition`]: a Task that
/// became terminal, moved on, or was touched after `started` meanwhile is left as it is.
/// Returns how many Tasks it failed; a Task whose transition fails is logged and skipped; a
/// failing `list` is the error.
///
/// Why whole milliseconds: the server stamps statuses to the millisecond, truncated, so a Task
/// stamped in the millisecond of `started` may have been saved after it (by a live replica
/// that had just acknowledged it). Leaving such a Task `working` is undone by a later `prune`;
/// failing a Task that is being worked on cannot be undone.
pub async fn fail_interrupted(
    store: &dyn TaskStore,
    started: Timestamp,
) -> Result<u64, StoreError> {
    fail_interrupted_telling(store, started, None).await
}

/// [`fail_interrupted`], telling `push` (a notifier, and the namespace of `store`) of each Task
/// it fails, with the Task as saved.
pub async fn fail_interrupted_telling(
    store: &dyn TaskStore,
    started: Timestamp,
    push: Option<(&dyn PushNotifier, Option<&str>)>,
) -> Result<u64, StoreError> {
    const NANOS_PER_MS: i128 = 1_000_000;
    let before =
        Timestamp::from_unix_nanos(started.unix_nanos().div_euclid(NANOS_PER_MS) * NANOS_PER_MS);
    let interrupted = |task: &Task| {
        let state = TaskState::parse(task_state(task));
        matches!(state, Some(TaskState::Submitted | TaskState::Working))
            && Timestamp::of_task(task.as_map()).is_none_or(|t| t < before)
    };
    let mut failed = 0;
    for state in [TaskState::Submitted, TaskState::Working] {
        let mut query = ListQuery {
            state: Some(state.v03_name().to_owned()),
            page_size: WALK_PAGE_SIZE,
            ..Default::default()
        };
        loop {
            let page = store.list(&query).await?;
            for task in page.tasks.iter().filter(|t| interrupted(t)) {
                let id = task.id();
                let decide = |current: &Task| -> Result<Step, A2aError> {
                    if !interrupted(current) {
                        // Terminal (a concurrent cancel wins), or moved on by a live writer.
                        return Ok(Step::Stop);
                    }
                    let message = json!({"kind": "message", "role": "agent", "messageId": new_id(),
                        "parts": [{"kind": "text", "text": INTERRUPTED_MESSAGE}]});
                    Ok(Step::Save(with_status(current, "failed", Some(message))?))
                };
                match transition(store, id, None, decide).await {
                    Ok(Some(saved)) => {
                        failed += 1;
                        if let Some((notifier, namespace)) = push {
                            notifier.task_saved(namespace, &saved).await;
                        }
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(target: "toolnexus::server", task_id = %id, error = %e,
                            "recovery: could not mark an interrupted task failed");
                    }
                }
            }
            match page.next_page_token {
                Some(token) => query.page_token = Some(token),
                None => break,
            }
        }
    }
    Ok(failed)
}

/// Deletes every Task whose status timestamp is before `older_than` and whose state is one of
/// `states` (any spelling; empty: every terminal state), walking every page of the store's
/// listing once per state. Tasks without a status timestamp are never deleted. A Task deleted
/// by someone else meanwhile is skipped. Returns how many Tasks this call deleted.
///
/// The walk deletes as it goes: the listing's page tokens continue after the last Task of the
/// previous page, so deleting Tasks already listed moves nothing. The check and the delete are
/// two steps: a Task re-saved with a new state between them is still deleted (for terminal
/// states, which never change, that cannot happen through the server).
pub async fn prune(
    store: &dyn TaskStore,
    older_than: Timestamp,
    states: &[String],
) -> Result<u64, StoreError> {
    prune_with_page_size(store, older_than, states, WALK_PAGE_SIZE).await
}

async fn prune_with_page_size(
    store: &dyn TaskStore,
    older_than: Timestamp,
    states: &[String],
    page_size: usize,
) -> Result<u64, StoreError> {
    let mut wanted: Vec<String> = if states.is_empty() {
        TERMINAL_STATES.iter().map(|s| (*s).to_owned()).collect()
    } else {
        states.iter().map(|s| normalize_state(s)).collect()
    };
    wanted.sort();
    wanted.dedup();
    let mut deleted = 0;
    for state in wanted {
        let mut query = ListQuery {
            state: Some(state),
            page_size,
            ..Default::default()
        };
        'pages: loop {
            let page = store.list(&query).await?;
            for task in &page.tasks {
                match Timestamp::of_task(task.as_map()) {
                    Some(t) if t < older_than => {
                        if store.delete(task.id()).await? {
                            deleted += 1;
                        }
                    }
                    Some(_) => {}
                    // Newest first, Tasks without a timestamp last: only such Tasks remain.
                    None => break 'pages,
                }
            }
            match page.next_page_token {
                Some(token) => query.page_token = Some(token),
                None => break,
            }
        }
    }
    Ok(deleted)
}

/// How long retention waits between passes: a tenth of `retain`, at most
/// [`MAX_RETENTION_INTERVAL`], at least [`MIN_RETENTION_INTERVAL`].
pub fn retention_interval(retain: Duration) -> Duration {
    (retain / 10).clamp(MIN_RETENTION_INTERVAL, MAX_RETENTION_INTERVAL)
}

/// Retention, forever: right away and then every [`retention_interval`], deletes the terminal
/// Tasks whose status timestamp is older than `retain` ([`prune`]). A failing pass is logged
/// and retried at the next one; over a store without a catalog it logs a warning once and
/// returns. Spawn it (`tokio::spawn`) and abort it to stop.
pub async fn retention(store: Arc<dyn TaskStore>, retain: Duration) {
    let interval = retention_interval(retain);
    loop {
        match prune(&*store, cutoff(retain), &[]).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(target: "toolnexus::server", deleted = n,
                    "retention: deleted terminal tasks past their age")
            }
            Err(StoreError::Unsupported { store, operation }) => {
                tracing::warn!(target: "toolnexus::server", %store, operation,
                    "retention off: the store cannot list or delete its tasks");
                return;
            }
            Err(e) => {
                tracing::warn!(target: "toolnexus::server", error = %e,
                    "retention pass failed; retrying at the next one");
            }
        }
        tokio::time::sleep(interval).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Agent;
    use serde_json::Value;
    use toolnexus_core::{InMemoryTaskStore, TaskPage};

    const OLD: &str = "2020-01-01T00:00:00.000Z";

    fn task(id: &str, state: &str, timestamp: Option<&str>) -> Task {
        let mut status = json!({"state": state});
        if let Some(t) = timestamp {
            status["timestamp"] = json!(t);
        }
        Task::try_from(json!({"id": id, "status": status})).unwrap()
    }

    fn recent() -> String {
        crate::service::now()
    }

    async fn ids(store: &InMemoryTaskStore) -> Vec<String> {
        let mut all = Vec::new();
        let mut query = ListQuery {
            page_size: 1000,
            ..Default::default()
        };
        loop {
            let page = store.list(&query).await.unwrap();
            all.extend(page.tasks.iter().map(|t| t.id().to_owned()));
            match page.next_page_token {
                Some(t) => query.page_token = Some(t),
                None => break,
            }
        }
        all.sort();
        all
    }

    /// Old terminal Tasks (every terminal state, several spellings) over many pages; the walk
    /// deletes them all as it goes, and keeps recent, old non-terminal and timestamp-less ones.
    #[tokio::test]
    async fn prune_walks_every_page_deleting_as_it_goes() {
        let store = InMemoryTaskStore::new();
        let spellings = [
            "completed",
            "TASK_STATE_COMPLETED",
            "canceled",
            "cancelled",
            "failed",
            "TASK_STATE_REJECTED",
        ];
        for i in 0..30 {
            let state = spellings[i % spellings.len()];
            // Distinct old timestamps, so the order across pages is not by id alone.
            let t = format!("2020-01-01T00:00:{i:02}.000Z");
            store
                .save(&task(&format!("old-{i:02}"), state, Some(&t)))
                .await
                .unwrap();
        }
        let now = recent();
        for i in 0..5 {
            store
                .save(&task(&format!("new-{i}"), "completed", Some(&now)))
                .await
                .unwrap();
        }
        store
            .save(&task("old-working", "working", Some(OLD)))
            .await
            .unwrap();
        store
            .save(&task("no-time", "completed", None))
            .await
            .unwrap();

        let cut = cutoff(Duration::from_secs(3600));
        let deleted = prune_with_page_size(&store, cut, &[], 4).await.unwrap();
        assert_eq!(deleted, 30);
        let mut want: Vec<String> = (0..5).map(|i| format!("new-{i}")).collect();
        want.extend(["no-time".to_owned(), "old-working".to_owned()]);
        want.sort();
        assert_eq!(ids(&store).await, want);
        // Again: nothing left to delete.
        assert_eq!(prune_with_page_size(&store, cut, &[], 4).await.unwrap(), 0);
    }

    /// More Tasks than the largest page: the public walk pages too.
    #[tokio::test]
    async fn prune_covers_more_than_one_full_page() {
        let store = InMemoryTaskStore::new();
        let n = WALK_PAGE_SIZE + 234;
        for i in 0..n {
            store
                .save(&task(&format!("t{i:05}"), "completed", Some(OLD)))
                .await
                .unwrap();
        }
        store
            .save(&task("keep", "completed", Some(&recent())))
            .await
            .unwrap();
        let deleted = prune(&store, cutoff(Duration::from_secs(60)), &[])
            .await
            .unwrap();
        assert_eq!(deleted, n as u64);
        assert_eq!(ids(&store).await, ["keep"]);
    }

    /// Given states: exactly those, in any spelling, terminal or not.
    #[tokio::test]
    async fn prune_given_states_deletes_only_those() {
        let store = InMemoryTaskStore::new();
        for (id, state) in [
            ("w1", "working"),
            ("w2", "TASK_STATE_WORKING"),
            ("c", "completed"),
            ("s", "submitted"),
        ] {
            store.save(&task(id, state, Some(OLD))).await.unwrap();
        }
        let cut = cutoff(Duration::ZERO);
        let states = ["TASK_STATE_WORKING".to_owned(), "working".to_owned()];
        assert_eq!(prune(&store, cut, &states).await.unwrap(), 2);
        assert_eq!(ids(&store).await, ["c", "s"]);
    }

    /// A store where someone else deletes each Task right after it is listed: those deletes
    /// find nothing, which is fine.
    struct DeletedBehindOurBack(InMemoryTaskStore);

    #[async_trait::async_trait]
    impl TaskStore for DeletedBehindOurBack {
        async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
            self.0.get(id).await
        }
        async fn save(&self, task: &Task) -> Result<(), StoreError> {
            self.0.save(task).await
        }
        async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
            let page = self.0.list(query).await?;
            if let Some(first) = page.tasks.first() {
                self.0.delete(first.id()).await?;
            }
            Ok(page)
        }
        async fn delete(&self, id: &str) -> Result<bool, StoreError> {
            self.0.delete(id).await
        }
        fn describe(&self) -> String {
            "deleted behind our back".into()
        }
    }

    #[tokio::test]
    async fn prune_counts_only_its_own_deletes() {
        let store = DeletedBehindOurBack(InMemoryTaskStore::new());
        for i in 0..10 {
            let t = format!("2020-01-01T00:00:{i:02}.000Z");
            store
                .save(&task(&format!("t{i}"), "failed", Some(&t)))
                .await
                .unwrap();
        }
        let deleted = prune_with_page_size(&store, cutoff(Duration::ZERO), &[], 3)
            .await
            .unwrap();
        // 4 pages (3 + 3 + 3 + 1), the first Task of each deleted by the other writer.
        assert_eq!(deleted, 6);
        assert!(store.0.is_empty());
    }

    /// Only get and save: no catalog.
    struct NoCatalog(InMemoryTaskStore);

    #[async_trait::async_trait]
    impl TaskStore for NoCatalog {
        async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
            self.0.get(id).await
        }
        async fn save(&self, task: &Task) -> Result<(), StoreError> {
            self.0.save(task).await
        }
        fn describe(&self) -> String {
            "no catalog".into()
        }
    }

    #[tokio::test]
    async fn stores_without_a_catalog_answer_unsupported_or_are_skipped() {
        let store = NoCatalog(InMemoryTaskStore::new());
        store.save(&task("w", "working", Some(OLD))).await.unwrap();
        let err = prune(&store, now(), &[]).await.unwrap_err();
        assert!(matches!(err, StoreError::Unsupported { .. }), "{err}");
        let service = ServiceConfig::default();
        assert_eq!(
            recover_at_startup(&store, Recovery::FailInterrupted, &service, now()).await,
            0
        );
        assert_eq!(
            task_state(&store.get("w").await.unwrap().unwrap()),
            "working"
        );
        // Retention ends instead of retrying forever.
        tokio::time::timeout(
            Duration::from_secs(5),
            retention(Arc::new(store), Duration::from_secs(60)),
        )
        .await
        .expect("retention returns over a store without a catalog");
    }

    fn message_text(task: &Task) -> Value {
        task.as_map()["status"]["message"]["parts"][0]["text"].clone()
    }

    #[tokio::test]
    async fn recovery_fails_interrupted_tasks_started_before_the_server() {
        let store = InMemoryTaskStore::new();
        // More than a page of each.
        let n = WALK_PAGE_SIZE + 7;
        for i in 0..n {
            store
                .save(&task(&format!("s{i}"), "submitted", Some(OLD)))
                .await
                .unwrap();
            store
                .save(&task(&format!("w{i}"), "TASK_STATE_WORKING", Some(OLD)))
                .await
                .unwrap();
        }
        store.save(&task("untimed", "working", None)).await.unwrap();
        for (id, state) in [("done", "completed"), ("asking", "input-required")] {
            store.save(&task(id, state, Some(OLD))).await.unwrap();
        }
        let started = now();
        // Saved after the start (by a live replica, say): left alone.
        let later = humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_secs(1))
            .to_string();
        store
            .save(&task("live", "working", Some(&later)))
            .await
            .unwrap();

        let failed = fail_interrupted(&store, started).await.unwrap();
        assert_eq!(failed, 2 * n as u64 + 1);
        for i in 0..n {
            for id in [format!("s{i}"), format!("w{i}")] {
                let got = store.get(&id).await.unwrap().unwrap();
                assert_eq!(task_state(&got), "failed", "{id}");
                assert_eq!(message_text(&got), INTERRUPTED_MESSAGE, "{id}");
                assert_eq!(got.as_map()["status"]["message"]["role"], "agent");
            }
        }
        let untimed = store.get("untimed").await.unwrap().unwrap();
        assert_eq!(task_state(&untimed), "failed");
        for (id, state) in [
            ("done", "completed"),
            ("asking", "input-required"),
            ("live", "working"),
        ] {
            assert_eq!(task_state(&store.get(id).await.unwrap().unwrap()), state);
        }
        // Nothing left to recover.
        assert_eq!(fail_interrupted(&store, started).await.unwrap(), 0);
    }

    /// A store where another writer cancels each listed Task right after the listing, before
    /// recovery reads it again.
    struct CanceledAfterListing(InMemoryTaskStore);

    #[async_trait::async_trait]
    impl TaskStore for CanceledAfterListing {
        fn supports_versions(&self) -> bool {
            self.0.supports_versions()
        }
        async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
            self.0.get(id).await
        }
        async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
            self.0.get_versioned(id).await
        }
        async fn save(&self, task: &Task) -> Result<(), StoreError> {
            self.0.save(task).await
        }
        async fn save_versioned(
            &self,
            task: &Task,
            expect: toolnexus_core::Expect,
        ) -> Result<u64, StoreError> {
            self.0.save_versioned(task, expect).await
        }
        async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
            let page = self.0.list(query).await?;
            for listed in &page.tasks {
                let Ok(canceled) = with_status(listed, "canceled", None) else {
                    panic!("a Task with a status")
                };
                self.0.save(&canceled).await?;
            }
            Ok(page)
        }
        fn describe(&self) -> String {
            "canceled after listing".into()
        }
    }

    /// The server stamps statuses to the millisecond, truncated: a Task stamped in the
    /// millisecond the server started in may have been saved just after the start (a live
    /// replica acknowledging it), so it is not failed; one a millisecond earlier is.
    #[tokio::test]
    async fn a_task_stamped_in_the_millisecond_of_the_start_is_left_alone() {
        let store = InMemoryTaskStore::new();
        let same = "2026-12-03T14:54:14.375Z";
        let earlier = "2026-12-03T14:54:14.374Z";
        store
            .save(&task("same", "working", Some(same)))
            .await
            .unwrap();
        store
            .save(&task("earlier", "submitted", Some(earlier)))
            .await
            .unwrap();
        let in_that_ms = Timestamp::parse("2026-12-03T14:54:14.375600Z").unwrap();
        assert_eq!(fail_interrupted(&store, in_that_ms).await.unwrap(), 1);
        let same = store.get("same").await.unwrap().unwrap();
        assert_eq!(task_state(&same), "working");
        let earlier = store.get("earlier").await.unwrap().unwrap();
        assert_eq!(task_state(&earlier), "failed");
    }

    #[tokio::test]
    async fn a_cancel_landing_during_recovery_wins() {
        let store = CanceledAfterListing(InMemoryTaskStore::new());
        store
            .0
            .save(&task("w", "working", Some(OLD)))
            .await
            .unwrap();
        assert_eq!(fail_interrupted(&store, now()).await.unwrap(), 0);
        let kept = store.0.get("w").await.unwrap().unwrap();
        assert_eq!(task_state(&kept), "canceled");
        assert!(kept.as_map()["status"].get("message").is_none());
    }

    struct Resumer;

    #[async_trait::async_trait]
    impl Agent for Resumer {
        async fn run(&self, _work: &mut crate::Work) -> Result<crate::Outcome, String> {
            Ok(crate::Outcome::Completed(None))
        }
        fn can_resume(&self) -> bool {
            true
        }
    }

    #[tokio::test]
    async fn recovery_off_or_a_resuming_agent_leaves_tasks_alone() {
        let store = InMemoryTaskStore::new();
        store.save(&task("w", "working", Some(OLD))).await.unwrap();
        let echo = ServiceConfig::default();
        assert_eq!(
            recover_at_startup(&store, Recovery::Off, &echo, now()).await,
            0
        );
        let resumer = ServiceConfig {
            agent: Arc::new(Resumer),
            ..Default::default()
        };
        let fail = Recovery::FailInterrupted;
        assert_eq!(recover_at_startup(&store, fail, &resumer, now()).await, 0);
        assert_eq!(
            task_state(&store.get("w").await.unwrap().unwrap()),
            "working"
        );
        assert_eq!(recover_at_startup(&store, fail, &echo, now()).await, 1);
        assert_eq!(
            task_state(&store.get("w").await.unwrap().unwrap()),
            "failed"
        );
    }

    #[test]
    fn retention_interval_is_a_tenth_within_bounds() {
        let s = Duration::from_secs;
        assert_eq!(retention_interval(s(3600)), s(360));
        assert_eq!(retention_interval(s(7 * 86400)), s(3600));
        assert_eq!(retention_interval(s(5)), s(1));
        assert_eq!(retention_interval(Duration::ZERO), s(1));
    }

    #[test]
    fn cutoff_is_age_before_now() {
        let before = now().unix_nanos();
        let cut = cutoff(Duration::from_secs(10)).unix_nanos();
        let after = now().unix_nanos();
        assert!(cut >= before - 10_000_000_000 && cut <= after - 10_000_000_000);
        // An absurd age does not overflow.
        let _ = cutoff(Duration::MAX);
    }
}
