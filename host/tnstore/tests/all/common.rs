//! What the tests of the `tnstore` process share: running it, starting `tnstore serve` and
//! calling it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The `tnstore` binary of this package, built by cargo for these tests.
pub const TNSTORE: &str = env!("CARGO_BIN_EXE_tnstore");

/// `tnstore serve` running, with the URL it printed; killed (SIGKILL) when dropped, so a failing
/// assertion leaves no process behind.
pub struct Serving {
    pub child: Child,
    pub url: String,
    /// The first line it printed (`listening on <url> with <store>`).
    pub banner: String,
}

impl Serving {
    /// SIGKILL, and waits for the process: no chance to save anything on the way out.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `tnstore <store_args> serve --addr 127.0.0.1:0 <serve_args>` (after `configure` has
/// set anything else on the command, such as its environment) and waits for its banner.
pub fn serve(
    store_args: &[&str],
    serve_args: &[&str],
    configure: impl FnOnce(&mut Command),
) -> Serving {
    let mut command = tnstore_command();
    command
        .args(store_args)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(serve_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    configure(&mut command);
    let mut child = command.spawn().expect("tnstore serve starts");
    let mut banner = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut banner)
        .unwrap();
    let url = banner
        .strip_prefix("listening on ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("unexpected first line: {banner:?}"))
        .to_owned();
    Serving { child, url, banner }
}

pub use toolnexus_conformance::a2a_client::{call, wait_for_state};

/// Where the servers these tests start keep pending push deliveries: under cargo's scratch
/// directory for tests, not the package directory (each process takes a slot of its own in
/// it, so servers running at once do not collide).
pub const PUSH_OUTBOX: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/push-outbox");

/// `tnstore` as these tests run it: pending push deliveries kept in [`PUSH_OUTBOX`].
pub fn tnstore_command() -> Command {
    let mut command = Command::new(TNSTORE);
    command.env("TNSTORE_PUSH_OUTBOX", PUSH_OUTBOX);
    command
}

/// Runs `tnstore <args>` to its end with `stdin` as its input (after `configure` has set
/// anything else on the command); its exit status and output.
pub fn run(
    args: &[&str],
    stdin: &str,
    configure: impl FnOnce(&mut Command),
) -> std::process::Output {
    use std::io::Write;
    let mut command = tnstore_command();
    command
        .args(args)
        .env_remove("TNSTORE_STORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    configure(&mut command);
    let mut child = command.spawn().expect("tnstore starts");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// Polls `GetTask` until `done` holds for the answer (the whole response), at most `tries`
/// times 20 ms apart; the last answer, and whether `done` held. Only for what no stream
/// announces, such as a Task deleted in the background; a Task reaching a state is waited for
/// with [`wait_for_state`].
pub async fn poll_task(
    client: &reqwest::Client,
    url: &str,
    id: &str,
    tries: usize,
    done: impl Fn(&serde_json::Value) -> bool,
) -> (serde_json::Value, bool) {
    let mut last = serde_json::Value::Null;
    for _ in 0..tries {
        last = call(client, url, "GetTask", serde_json::json!({"id": id})).await;
        if done(&last) {
            return (last, true);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    (last, false)
}
