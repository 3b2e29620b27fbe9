//! Owners and tenants through real processes: `tnstore serve --tokens … --tenant …` over the
//! file store and the file-store component, killed with SIGKILL mid-task and restarted; and
//! the refusal to serve a non-loopback address without authentication.

use serde_json::{Value, json};
use std::path::Path;

use crate::common;
use toolnexus_conformance::a2a_client::follow_until;

const ALICE: &str = "alice-secret-token-0001";
const BOB: &str = "bob-secret-token-000002";

/// `tnstore serve`, killed (SIGKILL) when dropped.
struct Server {
    serving: common::Serving,
    base: String,
}

impl Server {
    fn start(selector: &str, tokens: &Path, cache: &Path) -> Server {
        let serving = common::serve(
            &["--store", selector],
            &[
                "--tokens",
                tokens.to_str().unwrap(),
                "--tenant",
                "acme",
                "--tenant",
                "beta",
                "--echo-delay-ms",
                "60000",
            ],
            |c| {
                c.env("TOOLNEXUS_CACHE_DIR", cache);
            },
        );
        Server {
            base: serving.url.trim_end_matches('/').to_owned(),
            serving,
        }
    }

    fn kill(self) {
        self.serving.kill();
    }

    async fn rest(
        &self,
        token: Option<&str>,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let client = reqwest::Client::new();
        let url = format!("{}{path}", self.base);
        let mut request = if method == "GET" {
            client.get(url)
        } else {
            client.post(url)
        };
        request = request.header("A2A-Version", "1.0");
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

async fn isolation_survives_a_kill(selector: &str, dir: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let tokens = tmp.path().join("tokens");
    std::fs::write(
        &tokens,
        format!("# who may call\nalice {ALICE}\nbob {BOB}\n"),
    )
    .unwrap();
    let cache = tmp.path().join("cache");
    let first = Server::start(selector, &tokens, &cache);
    let message = json!({"message": {"role": "ROLE_USER", "messageId": "m-1",
        "parts": [{"text": "alice's work"}]}, "configuration": {"returnImmediately": true}});
    let (status, sent) = first
        .rest(Some(ALICE), "POST", "/acme/message:send", Some(message))
        .await;
    assert_eq!(status, 200, "{sent}");
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    // Bob, the same tenant: not found, not listed; nobody without a token.
    let (status, _) = first
        .rest(Some(BOB), "GET", &format!("/acme/tasks/{id}"), None)
        .await;
    assert_eq!(status, 404);
    let (_, listed) = first.rest(Some(BOB), "GET", "/acme/tasks", None).await;
    assert_eq!(listed["tasks"], json!([]), "{listed}");
    let (status, _) = first
        .rest(None, "GET", &format!("/acme/tasks/{id}"), None)
        .await;
    assert_eq!(status, 401);
    // Alice, another tenant: not there either.
    let (status, _) = first
        .rest(Some(ALICE), "GET", &format!("/beta/tasks/{id}"), None)
        .await;
    assert_eq!(status, 404);
    // Wait for the agent to start, then SIGKILL mid-task.
    let subscription = reqwest::Client::new()
        .get(format!("{}/acme/tasks/{id}:subscribe", first.base))
        .header("A2A-Version", "1.0")
        .bearer_auth(ALICE);
    assert!(
        follow_until(subscription, "TASK_STATE_WORKING").await,
        "the agent started"
    );
    first.kill();
    // The restarted server recovers every namespace it serves: Alice's Task is failed.
    let second = Server::start(selector, &tokens, &cache);
    let (status, got) = second
        .rest(Some(ALICE), "GET", &format!("/acme/tasks/{id}"), None)
        .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["status"]["state"], "TASK_STATE_FAILED", "{got}");
    assert_eq!(
        got["status"]["message"]["parts"][0]["text"],
        "interrupted: the server stopped before this task finished"
    );
    let (status, _) = second
        .rest(Some(BOB), "GET", &format!("/acme/tasks/{id}"), None)
        .await;
    assert_eq!(status, 404);
    // On disk, in Alice's namespace of tenant acme only.
    let file = dir
        .join("t.acme")
        .join("o.alice")
        .join(format!("{id}.json"));
    assert!(file.exists(), "{} exists", file.display());
    assert!(!dir.join(format!("{id}.json")).exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn owners_and_tenants_are_isolated_across_a_kill_and_restart_over_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    isolation_survives_a_kill(&format!("file:{}", dir.display()), &dir).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn owners_and_tenants_are_isolated_across_a_kill_and_restart_over_the_component() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    isolation_survives_a_kill(&format!("wasm:builtin?dir={}", dir.display()), &dir).await;
}

#[test]
fn a_public_address_without_tokens_is_refused_unless_insecure_is_asked_for() {
    let refused = common::run(
        &["--store", "memory", "serve", "--addr", "0.0.0.0:0"],
        "",
        |_| {},
    );
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("without authentication") && stderr.contains("--tokens"),
        "{stderr}"
    );
    // With the explicit flag it serves.
    use std::io::BufRead;
    let mut child = common::tnstore_command()
        .args([
            "--store",
            "memory",
            "serve",
            "--addr",
            "0.0.0.0:0",
            "--insecure-no-auth",
            "--public-url",
            "http://agent.example.com/",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut banner = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut banner)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        banner.starts_with("listening on http://0.0.0.0:"),
        "{banner}"
    );
}

#[test]
fn a_bad_tokens_file_is_refused_naming_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let tokens = tmp.path().join("tokens");
    std::fs::write(&tokens, "alice short\n").unwrap();
    let refused = common::run(
        &[
            "--store",
            "memory",
            "serve",
            "--tokens",
            tokens.to_str().unwrap(),
        ],
        "",
        |_| {},
    );
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("line 1"), "{stderr}");
    assert!(!stderr.contains("short"), "never the token: {stderr}");
}
