//! Escapes: the component reaches nothing outside its directory (files, links, the
//! environment, arguments, stdin, the network, FIFOs), a read-only directory stays unwritten,
//! and a read is bounded.

use super::*;
use toolnexus::wasm::SandboxedDir;

#[tokio::test(flavor = "multi_thread")]
async fn cannot_read_or_write_outside_its_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    let granted = tmp.path().join("granted");
    fs::create_dir_all(&outside).unwrap();
    fs::create_dir_all(&granted).unwrap();
    fs::write(outside.join("secret.txt"), "top secret").unwrap();
    fs::write(tmp.path().join("secret.txt"), "also secret").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), granted.join("link-out")).unwrap();
    std::os::unix::fs::symlink(&outside, granted.join("linkdir")).unwrap();
    let before = snapshot(tmp.path());

    let store = open(&granted);
    let id = format!("escape:{}", outside.display());
    let report = store
        .get(&id)
        .await
        .unwrap()
        .expect("the component reports its attempts");
    let attempts = report
        .as_map()
        .iter()
        .filter(|(k, _)| *k != "id")
        .collect::<Vec<_>>();
    assert!(attempts.len() >= 12, "{report}");
    for (attempt, outcome) in attempts {
        let outcome = outcome.as_str().unwrap();
        assert!(
            outcome.starts_with("denied"),
            "{attempt} was allowed: {outcome}"
        );
    }
    assert_eq!(
        snapshot(tmp.path()),
        before,
        "nothing outside (or inside) changed"
    );
    still_serves(&store).await;
}

/// Every file under `dir` (not following symlinks) with its contents or link target.
fn snapshot(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).unwrap();
        if meta.is_symlink() {
            out.push((
                path.display().to_string(),
                format!("-> {}", fs::read_link(&path).unwrap().display()),
            ));
        } else if meta.is_dir() {
            out.extend(snapshot(&path));
        } else {
            out.push((
                path.display().to_string(),
                fs::read_to_string(&path).unwrap(),
            ));
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn has_no_environment_arguments_stdin_or_network() {
    // A listener the component would reach if it had the network.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    // The host has an environment (PATH at least; nothing is set here: changing it while
    // other tests of this binary run would race them), and none of it reaches the component.
    assert!(
        std::env::vars_os().next().is_some(),
        "the host has variables"
    );
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    let report = store.get("ambient").await.unwrap().unwrap();
    let field = |k: &str| report.get(k).and_then(Value::as_str).unwrap().to_owned();
    assert_eq!(field("env"), "", "no environment variables");
    assert_eq!(field("args"), "", "no arguments");
    assert_eq!(field("stdin"), "Ok(0)", "stdin is empty");
    for net in ["tcp", "dns", "udp"] {
        assert!(field(net).starts_with("denied"), "{net}: {}", field(net));
    }
    assert!(listener.accept().is_err(), "nothing connected to the host");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_directory_can_be_read_but_not_written() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("t.json"), r#"{"id":"t","v":1}"#).unwrap();
    let store = WasmTaskStore::builder(ComponentSource::BuiltinFileStore)
        .dir(tmp.path())
        .read_only(true)
        .build()
        .unwrap();
    assert_eq!(store.get("t").await.unwrap().unwrap().get("v").unwrap(), 1);
    let err = store
        .save(&task(json!({"id": "t", "v": 2})))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Io { .. }), "{err}");
    assert_eq!(
        fs::read_to_string(tmp.path().join("t.json")).unwrap(),
        r#"{"id":"t","v":1}"#
    );
    assert_eq!(
        fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "no temp file was left"
    );
}

/// A writer that does not wait finds no reader: nothing is still opening the FIFO.
#[cfg(unix)]
fn assert_no_reader(fifo: &std::path::Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let writer = fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo);
    assert_eq!(
        writer.map(drop).map_err(|e| e.raw_os_error()),
        Err(Some(libc::ENXIO)),
        "no thread is left opening the FIFO"
    );
}

/// The open of a FIFO waits in the kernel for a writer, without bound and out of reach of any
/// deadline, holding a blocking thread all along. The host opens no FIFO, socket or device for
/// a component: the open fails at once with an error the component sees, and no thread is left
/// waiting on the FIFO's other end. (The file store never opens one; this is a component that
/// opens whatever it is told to, without looking first.)
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn a_component_opens_no_fifo() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    let fifo = tmp.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    fs::write(tmp.path().join("plain"), "x").unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), store.get("open:fifo")).await;
    // A writer that does not wait finds no reader: nothing is still opening the FIFO. (Were
    // something stuck there, this open would let it go, so the test ends either way.)
    assert_no_reader(&fifo);
    let err = answer
        .expect("the get answers")
        .expect_err("the open fails");
    assert!(
        matches!(err, StoreError::Io { .. }) && err.to_string().contains("open fifo"),
        "the component's own error, not the deadline: {err}"
    );
    // The same for a name opened without following a link, as the file store opens (the host
    // looks at a single such name with one `stat`, not through a handle): refused as not
    // permitted, and nothing is left opening the FIFO.
    let answer = tokio::time::timeout(Duration::from_secs(5), store.get("read-once:fifo:1")).await;
    let err = answer
        .expect("the get answers")
        .expect_err("the open fails");
    assert!(
        matches!(err, StoreError::Io { .. })
            && err
                .to_string()
                .contains("open fifo: ErrorCode { code: 31, name: \"not-permitted\""),
        "refused by the host: {err}"
    );
    assert_no_reader(&fifo);
    // Regular files still open, and the store keeps answering.
    let opened = store.get("open:plain").await.unwrap().unwrap();
    assert_eq!(opened.get("opened").unwrap(), "plain");
}

/// A positional `read` answers at most 1 MiB, however much a component asks for: that bounds
/// what the host allocates for one call. Below that, it answers with everything asked for up
/// to the end of the file, and says when it reached the end, so a store reads a file in one call.
#[tokio::test(flavor = "multi_thread")]
async fn a_read_answers_at_most_a_mebibyte_and_says_where_the_file_ends() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("big"), vec![b'b'; 3 << 20]).unwrap();
    fs::write(tmp.path().join("small"), b"0123456789").unwrap();
    let store = open(tmp.path());
    for (name, len, got, end) in [
        ("big", u64::MAX, 1 << 20, false),
        ("big", 5000, 5000, false),
        ("small", 11, 10, true),
        ("small", 10, 10, false),
        ("small", 4, 4, false),
    ] {
        let read = store
            .get(&format!("read-once:{name}:{len}"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (read.get("got").unwrap(), read.get("end").unwrap()),
            (&json!(got.to_string()), &json!(end.to_string())),
            "{name}, {len} bytes asked for"
        );
    }
}
