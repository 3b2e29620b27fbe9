//! Push notifications end to end: `tnstore serve --agent tck` as a real process, a real
//! webhook receiver, and the `events:N:MS` scenario, whose every save is one delivery per
//! config: order, credentials, both protocol versions, a SIGKILL mid-delivery, an abort
//! between a save and its outbox entry, retries, the SSRF rules, HTTPS only, secrets at rest,
//! the bounds (a namespace's share refused with a log line), and a tenant's namespace.

use crate::push_support::{
    Answer, Progress, Received, Receiver, Server, assert_in_save_order, progress,
};
use serde_json::{Value, json};
use std::path::Path;

/// Saves of `events:N:MS`: submitted, working, a status and an artifact per round, completed.
fn saves(rounds: usize) -> usize {
    2 * rounds + 3
}

fn file_store(dir: &Path) -> String {
    format!("file:{}", dir.join("tasks").display())
}

fn outbox(dir: &Path) -> String {
    dir.join("outbox").display().to_string()
}

fn allow(receiver: &Receiver) -> String {
    format!("127.0.0.1:{}", receiver.port)
}

fn v1_config(url: &str) -> Value {
    json!({"url": url, "token": "tok-1", "authentication": {"scheme": "bearer", "credentials": "cred-1"}})
}

#[tokio::test(flavor = "multi_thread")]
async fn deliveries_arrive_in_save_order_with_their_credentials_in_both_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let mut receiver = Receiver::start(Vec::new()).await;
    let server = Server::start(
        &file_store(tmp.path()),
        &[
            "--push-allow",
            &allow(&receiver),
            "--push-outbox",
            &outbox(tmp.path()),
        ],
    );

    let id = server
        .send_v1("events:3:20", v1_config(&receiver.url("127.0.0.1", "/v1")))
        .await;
    let got = receiver.until_state("completed").await;
    assert_eq!(got.len(), saves(3), "{got:#?}");
    assert_in_save_order(&got);
    for delivery in &got {
        assert_eq!(delivery.path, "/v1");
        assert_eq!(
            delivery.header("content-type"),
            Some("application/a2a+json")
        );
        assert_eq!(delivery.header("authorization"), Some("Bearer cred-1"));
        assert_eq!(delivery.header("x-a2a-notification-token"), Some("tok-1"));
        assert_eq!(
            delivery.body["task"]["id"],
            id.as_str(),
            "a 1.0 StreamResponse"
        );
    }
    assert_eq!(
        got[0].body["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    assert_eq!(
        got.last().unwrap().body["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    let v03_config = json!({"url": receiver.url("127.0.0.1", "/v03"), "token": "tok-03",
        "authentication": {"schemes": ["Basic"], "credentials": "dTpw"}});
    let id = server.send_v03("events:2:20", v03_config).await;
    let got = receiver.until_state("completed").await;
    assert_eq!(got.len(), saves(2), "{got:#?}");
    assert_in_save_order(&got);
    for delivery in &got {
        assert_eq!(delivery.path, "/v03");
        assert_eq!(delivery.header("content-type"), Some("application/json"));
        assert_eq!(delivery.header("authorization"), Some("Basic dTpw"));
        assert_eq!(delivery.header("x-a2a-notification-token"), Some("tok-03"));
        assert_eq!(delivery.body["id"], id.as_str(), "a 0.3 Task");
        assert_eq!(delivery.body["kind"], "task");
    }
    assert_eq!(got.last().unwrap().body["status"]["state"], "completed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delivery_cut_by_sigkill_comes_again_after_restart_and_the_later_ones_follow() {
    let tmp = tempfile::tempdir().unwrap();
    // The third delivery is held open: the server dies while it is being received.
    let mut receiver =
        Receiver::start(vec![Answer::Status(200), Answer::Status(200), Answer::Hold]).await;
    let args = [
        "--push-allow".to_owned(),
        allow(&receiver),
        "--push-outbox".to_owned(),
        outbox(tmp.path()),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start(&file_store(tmp.path()), &args);
    let id = server
        .send_v1("events:3:0", v1_config(&receiver.url("127.0.0.1", "/hook")))
        .await;
    let before = receiver.take(3).await;
    assert_in_save_order(&before);
    // Every later save was queued (persisted) before the Task could be seen completed.
    crate::common::wait_for_state(&reqwest::Client::new(), &server.url, &id, "completed").await;
    server.kill();

    let _restarted = Server::start(&file_store(tmp.path()), &args);
    let after = receiver.until_state("completed").await;
    assert_eq!(
        progress(&after[0].body),
        progress(&before[2].body),
        "the cut delivery comes again first"
    );
    assert_in_save_order(&after);
    assert_eq!(2 + after.len(), saves(3), "{after:#?}");
}

/// What `push_args.rs` reads: abort right after saving a Task in this state, before its
/// deliveries are written (a kill -9 at the worst instant).
const ABORT_AFTER_SAVE: &str = "TNSTORE_TEST_PUSH_ABORT_AFTER_SAVE";

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_between_the_terminal_save_and_its_outbox_entry_still_delivers_it_after_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let mut receiver = Receiver::start(Vec::new()).await;
    let args = [
        "--push-allow".to_owned(),
        allow(&receiver),
        "--push-outbox".to_owned(),
        outbox(tmp.path()),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = Server::start_with_env(
        &file_store(tmp.path()),
        &args,
        &[(ABORT_AFTER_SAVE, "completed")],
    );
    let id = server
        .send_v1("events:1:0", v1_config(&receiver.url("127.0.0.1", "/hook")))
        .await;
    server.log_line(&["aborting after the save"]).await;
    let status = server.ended().await;
    assert!(!status.success(), "it aborted: {status:?}");

    // The Task is stored completed, but the delivery of that save was never written.
    let _restarted = Server::start(&file_store(tmp.path()), &args);
    let got = receiver.until_state("completed").await;
    let last = got.last().unwrap();
    assert_eq!(last.body["task"]["id"], id.as_str());
    assert_eq!(
        last.body["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{got:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_between_a_tasks_first_save_and_its_outbox_entry_still_delivers_it_after_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let mut receiver = Receiver::start(Vec::new()).await;
    // Recovery off: nothing at restart saves the Task again, so only the intent can send it.
    let args = [
        "--push-allow".to_owned(),
        allow(&receiver),
        "--push-outbox".to_owned(),
        outbox(tmp.path()),
        "--recovery".to_owned(),
        "off".to_owned(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = Server::start_with_env(
        &file_store(tmp.path()),
        &args,
        &[(ABORT_AFTER_SAVE, "submitted")],
    );
    let params = json!({"message": {"role": "ROLE_USER", "messageId": "m-first",
        "parts": [{"text": "events:1:0"}]}, "configuration": {"returnImmediately": true,
        "taskPushNotificationConfig": v1_config(&receiver.url("127.0.0.1", "/hook"))}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
    // The process aborts before it answers: the request fails, and that is all it says.
    let answered = reqwest::Client::new()
        .post(&server.url)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await;
    assert!(
        answered.is_err(),
        "no answer from a process that aborted: {answered:?}"
    );
    server.log_line(&["aborting after the save"]).await;
    assert!(!server.ended().await.success(), "it aborted");

    let _restarted = Server::start(&file_store(tmp.path()), &args);
    let got = receiver.until_state("submitted").await;
    assert_eq!(
        got.last().unwrap().body["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED",
        "{got:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_attempts_are_retried_and_later_deliveries_wait_for_them() {
    let tmp = tempfile::tempdir().unwrap();
    let mut receiver = Receiver::start(vec![Answer::Status(503), Answer::Status(503)]).await;
    let server = Server::start(
        "memory",
        &["--push-allow", &allow(&receiver), "--push-backoff", "50ms"],
    );
    let _ = tmp;
    server
        .send_v1("events:2:0", v1_config(&receiver.url("127.0.0.1", "/hook")))
        .await;
    let got = receiver.until_state("completed").await;
    assert_eq!(
        got.len(),
        2 + saves(2),
        "two failed attempts, then each save once"
    );
    let first = progress(&got[0].body);
    assert_eq!(progress(&got[1].body), first);
    assert_eq!(progress(&got[2].body), first);
    assert_eq!(first.state, "submitted");
    assert_in_save_order(&got[2..]);
}

#[tokio::test(flavor = "multi_thread")]
async fn webhooks_reach_no_internal_address_unless_the_operator_allows_it() {
    let mut receiver = Receiver::start(Vec::new()).await;
    let mut server = Server::start("memory", &["--push-backoff", "50ms"]);
    let task = server.send_v1("hello", Value::Null).await;

    // Literal internal addresses: refused when the config is created.
    for (url, class) in [
        ("http://127.0.0.1:9/hook", "loopback"),
        ("http://[::1]:9/hook", "loopback"),
        ("http://169.254.169.254/latest/meta-data", "metadata"),
        ("http://10.1.2.3/hook", "private"),
    ] {
        let answer = server
            .rpc(
                "1.0",
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task, "id": "c", "url": url}),
            )
            .await;
        let message = answer["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{url}: {answer}"));
        assert!(message.contains(class), "{url}: {message}");
    }

    // A name is accepted, and refused once it resolves to loopback: no connection is made.
    server
        .send_v1("events:1:0", v1_config(&receiver.url("localhost", "/hook")))
        .await;
    let line = server
        .log_line(&["push delivery", "refused", "loopback"])
        .await;
    assert!(line.contains("localhost"), "{line}");
    assert_eq!(receiver.requests(), 0);
    drop(server);

    // An allowed receiver that redirects to a destination not allowed: refused at the redirect.
    let mut server = Server::start("memory", &["--push-allow", &allow(&receiver)]);
    receiver.script(vec![Answer::Redirect(
        receiver.url("localhost", "/elsewhere"),
    )]);
    server
        .send_v1("events:0:0", v1_config(&receiver.url("127.0.0.1", "/hook")))
        .await;
    server
        .log_line(&["push delivery", "refused", "loopback"])
        .await;
    let first = receiver.next().await;
    assert_eq!(first.path, "/hook");
    assert_eq!(progress(&first.body).state, "submitted");
    let rest = receiver.until_state("completed").await;
    assert!(
        rest.iter().all(|r| r.path == "/hook"),
        "never at the redirect's target"
    );
    drop(server);

    // With --push-allow the same succeed: the name, and the redirect (followed without the
    // credentials, which belong to the first origin).
    let internal = format!("internal:localhost:{}", receiver.port);
    let server = Server::start(
        "memory",
        &["--push-allow", &format!("{},{internal}", allow(&receiver))],
    );
    receiver.script(vec![Answer::Redirect(
        receiver.url("localhost", "/elsewhere"),
    )]);
    server
        .send_v1("events:0:0", v1_config(&receiver.url("127.0.0.1", "/hook")))
        .await;
    let redirected = receiver.take(2).await;
    assert_eq!(redirected[0].path, "/hook");
    assert_eq!(redirected[1].path, "/elsewhere");
    assert_eq!(redirected[1].header("authorization"), None);
    assert_eq!(progress(&redirected[1].body).state, "submitted");
    let rest = receiver.until_state("completed").await;
    assert!(rest.iter().all(|r| r.path == "/hook"));
    server
        .send_v1(
            "events:0:0",
            v1_config(&receiver.url("localhost", "/by-name")),
        )
        .await;
    let by_name = receiver.until_state("completed").await;
    assert!(by_name.iter().all(|r| r.path == "/by-name"), "{by_name:#?}");
    assert_eq!(by_name[0].header("authorization"), Some("Bearer cred-1"));
}

/// Every file under `dir`, as bytes.
fn all_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(all_bytes(&path));
        } else {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_are_sealed_at_rest_and_a_wrong_key_fails_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let (key, wrong) = (tmp.path().join("key"), tmp.path().join("wrong"));
    std::fs::write(&key, "11".repeat(32)).unwrap();
    std::fs::write(&wrong, "22".repeat(32)).unwrap();
    let mut receiver = Receiver::start(Vec::new()).await;
    let store = file_store(tmp.path());
    let key_arg = key.display().to_string();
    let args = [
        "--push-allow",
        &allow(&receiver),
        "--push-outbox",
        &outbox(tmp.path()),
    ];
    let server = Server::start(
        &store,
        &[&args[..], &["--push-key-file", &key_arg]].concat(),
    );
    let config = json!({"id": "sealed", "url": receiver.url("127.0.0.1", "/hook"),
        "token": "tok-PLAINTEXT-1", "authentication": {"scheme": "Bearer", "credentials": "cred-PLAINTEXT-2"}});
    let id = server.send_v1("events:1:0", config).await;
    let got = receiver.until_state("completed").await;
    assert!(got.iter().all(
        |d| d.header("authorization") == Some("Bearer cred-PLAINTEXT-2")
            && d.header("x-a2a-notification-token") == Some("tok-PLAINTEXT-1")
    ));
    for (path, bytes) in all_bytes(tmp.path()) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("PLAINTEXT"),
            "{path} holds a secret in plain text"
        );
    }
    let read = server
        .rpc(
            "1.0",
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "sealed"}),
        )
        .await;
    assert_eq!(read["result"]["token"], "tok-PLAINTEXT-1", "{read}");
    drop(server);

    let wrong_arg = wrong.display().to_string();
    let mut server = Server::start(
        &store,
        &[&args[..], &["--push-key-file", &wrong_arg]].concat(),
    );
    let read = server
        .rpc(
            "1.0",
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "sealed"}),
        )
        .await;
    assert!(read["error"].is_object(), "{read}");
    server
        .log_line(&["token", "does not open with this server's key"])
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_that_never_answers_times_out_and_large_tasks_go_as_their_status() {
    let mut receiver = Receiver::start(vec![Answer::Hold]).await;
    let server = Server::start(
        "memory",
        &[
            "--push-allow",
            &allow(&receiver),
            "--push-timeout",
            "300ms",
            "--push-backoff",
            "50ms",
            "--push-max-payload-bytes",
            "1024",
        ],
    );
    let text = format!("big {}", "x".repeat(3000));
    server
        .send_v1(&text, v1_config(&receiver.url("127.0.0.1", "/hook")))
        .await;
    let got: Vec<Received> = receiver.until_state("completed").await;
    // The held first attempt, then the same delivery again once it timed out, then the rest
    // (the echo agent's saves differ in what the status alone does not show: only their
    // states are compared).
    let states: Vec<Progress> = got.iter().map(|d| progress(&d.body)).collect();
    assert_eq!(states[0].state, "submitted", "{states:#?}");
    assert_eq!(states[1].state, "submitted", "{states:#?}");
    assert!(
        states.windows(2).all(|w| w[0].rank <= w[1].rank),
        "{states:#?}"
    );
    for delivery in &got {
        let update = &delivery.body["statusUpdate"];
        assert!(update["taskId"].is_string(), "{}", delivery.body);
        assert!(delivery.body.get("task").is_none());
        assert!(delivery.body.to_string().len() <= 1024);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_tasks_are_delivered_from_its_own_namespace() {
    let tmp = tempfile::tempdir().unwrap();
    let mut receiver = Receiver::start(Vec::new()).await;
    let server = Server::start(
        &file_store(tmp.path()),
        &[
            "--tenant",
            "acme",
            "--push-allow",
            &allow(&receiver),
            "--push-outbox",
            &outbox(tmp.path()),
        ],
    );
    let params = json!({"tenant": "acme",
        "message": {"role": "ROLE_USER", "messageId": "m-t", "parts": [{"text": "events:1:0"}]},
        "configuration": {"returnImmediately": true,
            "taskPushNotificationConfig": v1_config(&receiver.url("127.0.0.1", "/acme"))}});
    let sent = server.rpc("1.0", "SendMessage", params).await;
    let id = sent["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sent}"));
    let got = receiver.until_state("completed").await;
    assert_eq!(got.len(), saves(1), "{got:#?}");
    assert_in_save_order(&got);
    assert!(
        got.iter()
            .all(|d| d.path == "/acme" && d.body["task"]["id"] == id)
    );
}

/// `--no-push` works whatever the environment names as the outbox (`TNSTORE_PUSH_OUTBOX`,
/// which `common::serve` sets): the server starts and its card offers no push notifications.
#[tokio::test]
async fn no_push_starts_with_an_outbox_in_the_environment_and_the_card_says_so() {
    let serving = crate::common::serve(&["--store", "memory"], &["--no-push"], |_| {});
    let card: Value = reqwest::get(format!("{}.well-known/agent-card.json", serving.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        card["capabilities"]["pushNotifications"],
        json!(false),
        "{card}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_https_required_an_http_webhook_is_refused_naming_the_flag() {
    let server = Server::start(
        "memory",
        &["--push-require-https", "--push-allow", "127.0.0.1:9"],
    );
    let task = server.send_v1("hello", Value::Null).await;
    let answer = server
        .rpc(
            "1.0",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "id": "c", "url": "http://127.0.0.1:9/hook"}),
        )
        .await;
    let message = answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    assert!(message.contains("--push-require-https"), "{message}");
    let accepted = server
        .rpc(
            "1.0",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "id": "c", "url": "https://127.0.0.1:9/hook"}),
        )
        .await;
    assert!(accepted["result"].is_object(), "{accepted}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delivery_past_its_namespaces_share_is_refused_with_a_log_line_naming_the_bound() {
    // The first delivery is held: the namespace's one queued delivery stays queued.
    let receiver = Receiver::start(vec![Answer::Hold]).await;
    let mut server = Server::start(
        "memory",
        &[
            "--push-allow",
            &allow(&receiver),
            "--push-max-queued-per-namespace",
            "1",
        ],
    );
    server
        .send_v1("events:1:0", v1_config(&receiver.url("127.0.0.1", "/hook")))
        .await;
    let line = server
        .log_line(&["push deliveries of task", "refused"])
        .await;
    assert!(line.contains("the root namespace"), "{line}");
    assert!(line.contains("--push-max-queued-per-namespace"), "{line}");
}
