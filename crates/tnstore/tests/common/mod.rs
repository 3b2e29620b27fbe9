//! What the process tests of `tnstore serve` share: starting it and calling it.

// Each test file compiles this module and uses part of it.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The `tnstore` binary of this package, built by cargo for these tests.
pub const TNSTORE: &str = env!("CARGO_BIN_EXE_tnstore");

/// `tnstore serve` running, with the URL it printed.
pub struct Serving {
    pub child: Child,
    pub url: String,
    /// The first line it printed (`listening on <url> with <store>`).
    pub banner: String,
}

/// Starts `tnstore <store_args> serve --addr 127.0.0.1:0 <serve_args>` (after `configure` has
/// set anything else on the command, such as its environment) and waits for its banner.
pub fn serve(
    store_args: &[&str],
    serve_args: &[&str],
    configure: impl FnOnce(&mut Command),
) -> Serving {
    let mut command = Command::new(TNSTORE);
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

/// One JSON-RPC call; the whole response.
pub async fn call(client: &reqwest::Client, url: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    client
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}
