//! What only file-backed stores have: the on-disk format, shared byte for byte by the native
//! store and the component, corrupt files, temp files and crash leftovers.

use serde_json::json;
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use toolnexus::wasm::WasmTaskStore;
use toolnexus::{FileTaskStore, StoreError, TaskStore};
use toolnexus_conformance::{snapshot, task, vectors};

fn native(dir: &Path) -> Arc<dyn TaskStore> {
    Arc::new(FileTaskStore::new(dir).unwrap())
}

fn component(dir: &Path) -> Arc<dyn TaskStore> {
    Arc::new(WasmTaskStore::file_store(dir).unwrap())
}

type Open = fn(&Path) -> Arc<dyn TaskStore>;
const BOTH: [(&str, Open); 2] = [("native", native), ("component", component)];

/// The names of a [`snapshot`]'s files.
fn names(files: &[(String, Vec<u8>)]) -> Vec<&str> {
    files.iter().map(|(name, _)| name.as_str()).collect()
}

fn odd_tasks() -> Vec<toolnexus::Task> {
    let mut tasks: Vec<_> = vectors().into_iter().map(|(_, t)| t).collect();
    for id in [
        "a/b",
        "a_b",
        "a%2Fb",
        "..",
        ".hidden",
        "nul\0",
        &"z".repeat(400),
    ] {
        tasks.push(task(json!({"id": id, "status": {"state": "working"}})));
    }
    tasks
}

#[tokio::test(flavor = "multi_thread")]
async fn native_and_component_write_byte_identical_directories() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (n, c) = (native(a.path()), component(b.path()));
    for t in odd_tasks() {
        n.save(&t).await.unwrap();
        c.save(&t).await.unwrap();
    }
    let (left, right) = (snapshot(a.path()), snapshot(b.path()));
    // A Task file and its version record per Task.
    assert_eq!(left.len(), 2 * odd_tasks().len());
    assert_eq!(left, right);
}

#[tokio::test(flavor = "multi_thread")]
async fn each_reads_what_the_other_wrote() {
    for (writer_name, writer) in BOTH {
        for (reader_name, reader) in BOTH {
            let dir = tempfile::tempdir().unwrap();
            let w = writer(dir.path());
            for t in odd_tasks() {
                w.save(&t).await.unwrap();
            }
            let r = reader(dir.path());
            for t in odd_tasks() {
                let got = r.get(t.id()).await.unwrap();
                assert_eq!(
                    got.as_ref(),
                    Some(&t),
                    "{writer_name} → {reader_name}: {:?}",
                    t.id()
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn simple_ids_map_to_readable_file_names() {
    for (name, open) in BOTH {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let t = task(json!({"id": "abc-123", "status": {"state": "completed"},
            "artifacts": [{"parts": [{"kind": "text", "text": "hi"}]}]}));
        store.save(&t).await.unwrap();
        let text = fs::read_to_string(dir.path().join("abc-123.json")).unwrap();
        assert_eq!(
            text,
            t.to_json(),
            "{name}: one compact JSON file per task id"
        );
        assert_eq!(
            names(&snapshot(dir.path())),
            [".~abc-123.v", "abc-123.json"],
            "{name}: the Task file and its version record, no other file"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_written_by_another_implementation_is_read() {
    // Another implementation (the Python or JS packages) may write pretty-printed JSON.
    for (name, open) in BOTH {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("task-1.json"),
            "{\n  \"id\": \"task-1\",\n  \"status\": {\"state\": \"submitted\"}\n}\n",
        )
        .unwrap();
        let got = open(dir.path()).get("task-1").await.unwrap().unwrap();
        assert_eq!(
            got,
            json!({"id": "task-1", "status": {"state": "submitted"}}),
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn corrupt_files_are_errors_that_name_the_file() {
    let cases: [(&str, &[u8]); 5] = [
        ("not json", b"{\"id\": \"t\", \"status\": {"),
        ("not an object", b"[1, 2, 3]"),
        ("no id", b"{\"status\": {}}"),
        ("another id", b"{\"id\": \"someone-else\"}"),
        ("not utf-8", b"{\"id\": \"t\", \"x\": \"\xff\"}"),
    ];
    for (name, open) in BOTH {
        for (case, bytes) in cases {
            let dir = tempfile::tempdir().unwrap();
            let store = open(dir.path());
            fs::write(dir.path().join("t.json"), bytes).unwrap();
            let err = store.get("t").await.expect_err(case);
            let msg = err.to_string();
            assert!(
                matches!(err, StoreError::Corrupt { .. }),
                "{name}/{case}: {msg}"
            );
            assert!(
                msg.contains("t.json"),
                "{name}/{case}: the error must name the file: {msg}"
            );
            // Nothing was changed by the failed read.
            assert_eq!(fs::read(dir.path().join("t.json")).unwrap(), bytes);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn temp_and_foreign_files_are_never_read_as_tasks() {
    for (name, open) in BOTH {
        let dir = tempfile::tempdir().unwrap();
        let valid = br#"{"id":"x"}"#;
        fs::write(dir.path().join(".tmp-0123456789abcdef"), valid).unwrap();
        fs::write(dir.path().join("x.json.tmp"), valid).unwrap();
        fs::write(dir.path().join(".x.json"), valid).unwrap();
        let store = open(dir.path());
        assert_eq!(store.get("x").await.unwrap(), None, "{name}");
    }
}

/// Crash leftovers go when the native store opens its directory, and at every listing of either
/// store (a walk made anyway); a component instance that only reads never walks the directory
/// (an instance may serve a single request, and the directory grows with the Tasks).
#[tokio::test(flavor = "multi_thread")]
async fn stale_temp_files_go_at_open_natively_and_at_each_listing() {
    for (name, open) in BOTH {
        let dir = tempfile::tempdir().unwrap();
        let stale = |n: u32| dir.path().join(format!(".tmp-{n:032}"));
        let fresh = dir.path().join(".tmp-ffffffffffffffffffffffffffffffff");
        fs::write(&fresh, "{\"id\":").unwrap();
        let two_hours_ago = SystemTime::now() - Duration::from_secs(2 * 3600);
        let leave = |path: &Path| {
            fs::write(path, "{\"id\":").unwrap();
            fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(two_hours_ago)
                .unwrap();
        };
        leave(&stale(1));
        let store = open(dir.path());
        assert_eq!(store.get("anything").await.unwrap(), None);
        assert_eq!(
            !stale(1).exists(),
            name == "native",
            "{name}: swept at open natively, left by a component's get"
        );
        leave(&stale(2));
        store.list(&Default::default()).await.unwrap();
        assert!(!stale(1).exists(), "{name}: a listing sweeps");
        assert!(!stale(2).exists(), "{name}: a listing sweeps");
        assert!(
            fresh.exists(),
            "{name}: a live writer's temp file must be left alone"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn saves_leave_no_temp_files_behind() {
    for (name, open) in BOTH {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        for i in 0..50 {
            store.save(&task(json!({"id": "t", "i": i}))).await.unwrap();
        }
        assert_eq!(names(&snapshot(dir.path())), [".~t.v", "t.json"], "{name}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_save_changes_nothing_and_leaves_no_temp_file() {
    // Something that is not a Task file sits where the Task's file would go: the rename fails.
    for (name, open) in BOTH {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        fs::create_dir(dir.path().join("t.json")).unwrap();
        fs::write(dir.path().join("t.json/keep"), "mine").unwrap();
        let err = store
            .save(&task(json!({"id": "t", "v": 2})))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Io { .. }), "{name}: {err}");
        assert!(err.to_string().contains("t.json"), "{name}: {err}");
        assert_eq!(
            fs::read_to_string(dir.path().join("t.json/keep")).unwrap(),
            "mine"
        );
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "{name}: the temp file was removed"
        );
    }
}

/// What else can sit in a store's directory under a Task file's name (another program wrote
/// it, or a store component planted it): a symbolic link (to another Task, to `/dev/zero`, out
/// of the directory), a FIFO, a directory, a file too large to be a Task. Each is reported as
/// corrupt, by `get` and by `list`, and none is followed, opened for reading, or read into
/// memory: a FIFO with no writer or `/dev/zero` would make a reader wait or read forever.
#[tokio::test(flavor = "multi_thread")]
async fn links_fifos_and_oversized_files_are_corrupt_never_followed_or_read() {
    use std::os::unix::fs::symlink;
    for (name, open) in BOTH {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("tasks");
        let outside = tmp.path().join("outside.json");
        fs::write(&outside, r#"{"id":"to-outside"}"#).unwrap();
        let store = open(&dir);
        store.save(&task(json!({"id": "real"}))).await.unwrap();
        symlink(dir.join("real.json"), dir.join("to-real.json")).unwrap();
        symlink(&outside, dir.join("to-outside.json")).unwrap();
        symlink("/dev/zero", dir.join("zero.json")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.join("fifo.json"))
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo");
        fs::create_dir(dir.join("a-dir.json")).unwrap();
        let big = fs::File::create(dir.join("big.json")).unwrap();
        big.set_len(toolnexus_format::dir::MAX_TASK_FILE_BYTES + 1)
            .unwrap();
        drop(big);
        let store = open(&dir);
        for id in ["to-real", "to-outside", "zero", "fifo", "a-dir", "big"] {
            let err = tokio::time::timeout(Duration::from_secs(10), store.get(id))
                .await
                .unwrap_or_else(|_| panic!("{name}: get({id}) did not return"))
                .unwrap_err();
            assert!(
                matches!(err, StoreError::Corrupt { .. }),
                "{name}: get({id}): {err}"
            );
        }
        let err = store.list(&Default::default()).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Corrupt { .. }),
            "{name}: list: {err}"
        );
        assert_eq!(
            store.get("real").await.unwrap(),
            Some(task(json!({"id": "real"}))),
            "{name}"
        );
        assert_eq!(fs::read(&outside).unwrap(), br#"{"id":"to-outside"}"#);
    }
}

/// Task files and the directories a store creates are their owner's alone, whatever the umask
/// lets through: a world-readable default would show every Task to every local user.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn created_directories_are_0700_and_task_files_0600() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    for (name, open) in BOTH {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("new").join("tasks");
        let store = open(&dir);
        store.save(&task(json!({"id": "t1"}))).await.unwrap();
        assert_eq!(mode(&tmp.path().join("new")), 0o700, "{name}: parent");
        assert_eq!(mode(&dir), 0o700, "{name}: directory");
        assert_eq!(mode(&dir.join("t1.json")), 0o600, "{name}: Task file");
        assert_eq!(mode(&dir.join(".~t1.v")), 0o600, "{name}: version record");
    }
}

/// The native store hands its file work to Tokio's blocking pool: it reads and writes on every
/// kind of runtime a caller may use, and from every place in one (a guard for any cheaper
/// hand-off: blocking in place, for one, panics on a current-thread runtime).
#[test]
fn the_native_store_works_on_every_kind_of_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileTaskStore::new(dir.path()).unwrap();
    let round_trip = |store: FileTaskStore, id: &'static str| async move {
        let saved = task(json!({"id": id, "status": {"state": "working"}}));
        store.save(&saved).await.unwrap();
        assert_eq!(store.get(id).await.unwrap(), Some(saved.clone()));
        let (got, version) = store.get_versioned(id).await.unwrap().unwrap();
        assert_eq!((got, version), (saved, 1));
        assert_eq!(store.get("absent").await.unwrap(), None);
    };

    let current = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    current.block_on(round_trip(store.clone(), "current-thread"));
    // A LocalSet on a current-thread runtime.
    tokio::task::LocalSet::new().block_on(&current, round_trip(store.clone(), "local-set"));

    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    // On the thread that blocks on the runtime, on a worker, and on the blocking pool.
    multi.block_on(round_trip(store.clone(), "block-on"));
    let on_worker = store.clone();
    multi
        .block_on(multi.spawn(round_trip(on_worker, "worker")))
        .unwrap();
    let (handle, on_pool) = (multi.handle().clone(), store.clone());
    multi
        .block_on(multi.spawn_blocking(move || handle.block_on(round_trip(on_pool, "pool"))))
        .unwrap();
    drop(store);
}

/// A listing by the component while another writer removes files: each file that vanishes
/// between the host's directory read and its look at the entry is left out of the page, never
/// an error that fails the whole walk (recovery at start walks the store beside live writers).
#[tokio::test(flavor = "multi_thread")]
async fn a_component_lists_while_another_writer_removes_files() {
    const TASKS: usize = 1500;
    let dir = tempfile::tempdir().unwrap();
    let writer: Arc<dyn TaskStore> = Arc::new(
        FileTaskStore::with_durability(dir.path(), toolnexus::Durability::Relaxed).unwrap(),
    );
    let lister = component(dir.path());
    for round in 0..4 {
        for n in 0..TASKS {
            let id = format!("t{round}-{n}");
            writer
                .save(&task(json!({"id": id, "status": {"state": "working"}})))
                .await
                .unwrap();
        }
        // The files in the order the directory gives them: each is removed after the listing
        // has read its name, as often as not before the listing looks at it.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        let removing = std::thread::spawn(move || {
            for path in names {
                let _ = fs::remove_file(path);
            }
        });
        let mut listings = 0;
        while !removing.is_finished() || listings == 0 {
            let page = lister.list(&Default::default()).await;
            assert!(
                page.is_ok(),
                "round {round}, listing {listings}: a listing failed while files were being \
                 removed: {:?}",
                page.err()
            );
            listings += 1;
        }
        removing.join().unwrap();
        assert!(
            lister
                .list(&Default::default())
                .await
                .unwrap()
                .tasks
                .is_empty(),
            "every Task file was removed"
        );
    }
}
