//! `tnstore serve --component`: a `wasi:http` component (the `proxy-fixture` test component,
//! `guest/proxy-fixture/`) served by the real process over real HTTP; every problem with the
//! selector, the file or the component refused before serving, with its exit status and a
//! message naming it; the native server's own flags refused beside it; and SIGTERM finishing
//! the requests in flight before the process exits 0.

use crate::common;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longer than anything here should take; a test that waits this long has failed.
const PATIENCE: Duration = Duration::from_secs(60);

/// The proxy-fixture component. The `toolnexus-wasm` build script, which runs for this test's
/// build, compiles it into the workspace's component target directory (beside `tmp/`, cargo's
/// scratch directory for tests); `TOOLNEXUS_PROXY_FIXTURE_WASM` names a prebuilt one instead.
fn proxy_fixture() -> PathBuf {
    if let Some(prebuilt) = std::env::var_os("TOOLNEXUS_PROXY_FIXTURE_WASM") {
        return PathBuf::from(prebuilt);
    }
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("cargo's tmp dir is in the target dir");
    let built = target.join("wasm-components/wasm32-wasip2/release/toolnexus_proxy_fixture.wasm");
    assert!(
        built.exists(),
        "{} is missing: toolnexus-wasm's build script builds it",
        built.display()
    );
    built
}

/// `GET path` on `addr` with HTTP/1.1 (one request, then the connection closes): the status
/// and the body (chunked bodies are read as they come, the chunk sizes left in: the tests
/// look for text in them).
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn wait_for_file(path: &Path) {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < PATIENCE,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn address(serving: &common::Serving) -> String {
    serving
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned()
}

#[test]
fn a_component_is_served_over_http_with_its_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let selector = format!(
        "{}?dir={}&instances=4",
        proxy_fixture().display(),
        data.display()
    );
    let serving = common::serve(&[], &["--component", &selector], |c| {
        c.env("TOOLNEXUS_CACHE_DIR", tmp.path().join("cache"));
    });
    assert!(
        serving
            .banner
            .contains("with component toolnexus_proxy_fixture.wasm"),
        "{}",
        serving.banner
    );
    let addr = address(&serving);
    let (status, body) = get(&addr, "/hello");
    assert_eq!(status, 200);
    assert!(body.contains("hello"), "{body}");
    // What the component writes after its response lands in the directory granted.
    let (status, _) = get(&addr, "/after?file=done");
    assert_eq!(status, 200);
    wait_for_file(&data.join("done"));
    // A trap fails its request only.
    assert_eq!(get(&addr, "/trap").0, 500);
    assert_eq!(get(&addr, "/hello").0, 200);
}

#[test]
fn the_listen_flag_names_the_address_too() {
    let tmp = tempfile::tempdir().unwrap();
    let selector = format!("{}?dir={}", proxy_fixture().display(), tmp.path().display());
    let mut child = common::tnstore_command()
        .args(["serve", "--listen", "127.0.0.1:0", "--component", &selector])
        .env("TOOLNEXUS_CACHE_DIR", tmp.path().join("cache"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut banner = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut banner)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        banner.starts_with("listening on http://127.0.0.1:"),
        "{banner:?}"
    );
}

#[test]
fn problems_are_refused_before_serving_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = proxy_fixture();
    let store = tmp.path().join("store.wasm");
    let written = common::run(&["component", "--out", store.to_str().unwrap()], "", |_| {});
    assert!(written.status.success());
    let data = tmp.path().join("data");
    let with =
        |path: &Path, options: &str| format!("{}?dir={}{options}", path.display(), data.display());
    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (
            vec!["--component".into(), with(&fixture, "&colour=blue")],
            2,
            "unknown option \"colour\"",
        ),
        (
            vec!["--component".into(), with(&fixture, "&memory=lots")],
            2,
            "\"memory\" must be a size",
        ),
        (
            vec![
                "--component".into(),
                with(&tmp.path().join("none.wasm"), ""),
            ],
            3,
            "none.wasm: cannot read the file",
        ),
        (
            vec!["--component".into(), with(&store, "")],
            3,
            "does not export wasi:http/incoming-handler",
        ),
        (
            vec![
                "--component".into(),
                with(&fixture, ""),
                "--agent".into(),
                "echo".into(),
            ],
            2,
            "cannot be used with '--agent",
        ),
        (
            vec![
                "--component".into(),
                with(&fixture, ""),
                "--store".into(),
                "memory".into(),
            ],
            2,
            "--store cannot be used with --component",
        ),
        (
            vec![
                "--component".into(),
                with(&fixture, ""),
                "--tokens".into(),
                "t".into(),
            ],
            2,
            "cannot be used with '--tokens",
        ),
        (
            vec![
                "--component".into(),
                with(&fixture, ""),
                "--push-allow".into(),
                "1.2.3.4".into(),
            ],
            2,
            "cannot be used with '--push-allow",
        ),
        (
            vec![
                "--component".into(),
                with(&fixture, ""),
                "--addr".into(),
                "0.0.0.0:0".into(),
            ],
            2,
            "refusing to serve",
        ),
    ];
    for (flags, code, says) in cases {
        let mut args = vec!["serve"];
        if !flags.iter().any(|flag| flag == "--addr") {
            args.extend(["--addr", "127.0.0.1:0"]);
        }
        args.extend(flags.iter().map(String::as_str));
        let out = common::run(&args, "", |c| {
            c.env("TOOLNEXUS_CACHE_DIR", tmp.path().join("cache"));
        });
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{flags:?}: {stderr}");
        assert!(stderr.contains(says), "{flags:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{flags:?}: nothing served");
    }
}

#[test]
fn sigterm_finishes_the_requests_in_flight_then_exits_0() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let selector = format!("{}?dir={}", proxy_fixture().display(), data.display());
    let mut serving = common::serve(&[], &["--component", &selector], |c| {
        c.env("TOOLNEXUS_CACHE_DIR", tmp.path().join("cache"));
    });
    let addr = address(&serving);
    let holder = {
        let addr = addr.clone();
        std::thread::spawn(move || get(&addr, "/hold?gate=open"))
    };
    wait_for_file(&data.join("open.started"));
    let pid = serving.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    // It stops taking connections, and waits for the request in flight.
    let started = Instant::now();
    while TcpStream::connect(&addr).is_ok() {
        assert!(
            started.elapsed() < PATIENCE,
            "still accepting after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        serving.child.try_wait().unwrap().is_none(),
        "a request is in flight"
    );
    std::fs::write(data.join("open"), b"").unwrap();
    let (status, body) = holder.join().unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("released"), "{body}");
    let started = Instant::now();
    let exit = loop {
        if let Some(status) = serving.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "no exit after its last request"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(exit.code(), Some(0));
}
