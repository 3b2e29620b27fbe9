//! Real processes sharing one directory: concurrent writers, and writers killed mid-write.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use toolnexus::wasm::FILE_STORE_COMPONENT;
use toolnexus::{FileTaskStore, TaskStore};
use toolnexus_conformance::StoreFactory;

pub(crate) const WRITER: &str = env!("CARGO_BIN_EXE_tn-writer");

pub(crate) fn spawn_writer(selector: &str, id: &str, tag: &str, count: u64) -> Child {
    Command::new(WRITER)
        .args([selector, id, tag, &count.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the writer helper starts")
}

/// Asserts the Task is exactly one version some writer saved: a known writer, its padding intact.
pub(crate) fn assert_whole_version(task: &toolnexus::Task, tags: &[&str], count: u64) {
    let writer = task
        .get("writer")
        .and_then(Value::as_str)
        .expect("writer member");
    assert!(tags.contains(&writer), "unknown writer {writer}");
    let seq = task.get("seq").and_then(Value::as_u64).expect("seq member");
    assert!(count == 0 || seq < count);
    let pad = task.get("pad").and_then(Value::as_str).expect("pad member");
    assert_eq!(pad, writer.repeat(4096 / writer.len()), "torn padding");
}

fn selectors(dir: &Path, component: &Path) -> [String; 2] {
    [
        format!("file:{}", dir.display()),
        format!("wasm:{}?dir={}", component.display(), dir.display()),
    ]
}

/// A temp directory with the file-store component written into it, the store directory to
/// share, and the native and component selectors over it.
fn shared_dir() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    [String; 2],
) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    let component = tmp.path().join("store.wasm");
    std::fs::write(&component, FILE_STORE_COMPONENT).unwrap();
    let selectors = selectors(&dir, &component);
    (tmp, dir, component, selectors)
}

pub(crate) fn no_temp_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().all(|e| {
        !e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".tmp-")
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn processes_saving_one_id_at_once_leave_one_whole_version() {
    let (_tmp, dir, _, [file_sel, wasm_sel]) = shared_dir();
    let tags = ["alpha", "bravo", "charlie", "delta"];
    // Two native and two component writers, all on the same id at the same time.
    let children: Vec<_> = tags
        .iter()
        .enumerate()
        .map(|(i, tag)| {
            spawn_writer(
                if i % 2 == 0 { &file_sel } else { &wasm_sel },
                "contested",
                tag,
                200,
            )
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a writer failed");
    }
    let store = FileTaskStore::new(&dir).unwrap();
    let task = store
        .get("contested")
        .await
        .unwrap()
        .expect("the task exists");
    assert_whole_version(&task, &tags, 200);
    assert_eq!(
        task.get("seq").and_then(Value::as_u64),
        Some(199),
        "the last write of some writer wins"
    );
    assert!(
        no_temp_files(&dir),
        "every writer cleaned up its temp files"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_writer_killed_mid_write_never_leaves_a_torn_task() {
    let (_tmp, dir, component, both) = shared_dir();
    for selector in both {
        for round in 0..5 {
            let mut child = spawn_writer(&selector, "killed", "kilo", 0);
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert_eq!(line.trim(), "ready", "{selector}");
            // Let it write for a while, at a different point each round, then SIGKILL it.
            std::thread::sleep(std::time::Duration::from_millis(3 + 7 * round));
            child.kill().unwrap();
            child.wait().unwrap();
            for reader in selectors(&dir, &component) {
                let store = toolnexus::resolve_store(reader.as_str()).unwrap();
                let task = store
                    .get("killed")
                    .await
                    .unwrap()
                    .expect("an acknowledged save survives");
                assert_whole_version(&task, &["kilo"], 0);
            }
        }
    }
}

pub(crate) const RACER: &str = env!("CARGO_BIN_EXE_tn-racer");

/// The lock lease of racers that are killed, so that a killed one blocks the others briefly.
pub(crate) const LEASE_MS: u64 = 400;
/// The lock lease of racers that are never killed: no lock of theirs is ever stale, so none
/// may be broken. (Under 400 ms, a flush slower than the lease on a loaded disk had its lock
/// broken by another racer, and its save failed as having lost the lock.)
pub(crate) const LIVE_LEASE_MS: u64 = 10_000;

pub(crate) fn spawn_racer(
    selector: &str,
    id: &str,
    tag: &str,
    attempts: u64,
    lease_ms: u64,
) -> Child {
    Command::new(RACER)
        .args([
            selector,
            id,
            tag,
            &attempts.to_string(),
            &lease_ms.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the racer helper starts")
}

/// What racers printed: acknowledged wins `(base, new, writer, seq)` and losses
/// `(base, current)`.
#[derive(Default)]
pub(crate) struct Outcomes {
    pub(crate) wins: Vec<(u64, u64, String, u64)>,
    pub(crate) losses: Vec<(u64, u64)>,
}

impl Outcomes {
    pub(crate) fn read(&mut self, tag: &str, out: impl std::io::Read) {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            let words: Vec<&str> = line.split(' ').collect();
            let n = |i: usize| words[i].parse::<u64>().unwrap();
            match words[0] {
                "win" => self.wins.push((n(1), n(2), tag.to_owned(), n(3))),
                "lose" => self.losses.push((n(1), n(2))),
                "ready" => {}
                other => panic!("unexpected racer output {other:?}"),
            }
        }
    }

    /// Every acknowledged save has a version of its own, one past the version it was based on,
    /// and every loser was told of a newer version than the one it read.
    pub(crate) fn check_chain(&self) {
        let mut versions = std::collections::HashSet::new();
        for (base, new, writer, seq) in &self.wins {
            assert_eq!(*new, base + 1, "{writer}#{seq} saved {new} over {base}");
            assert!(
                versions.insert(*new),
                "version {new} was acknowledged twice: a lost update"
            );
        }
        for (base, current) in &self.losses {
            assert!(current > base, "a conflict on {base} named {current}");
        }
    }
}

/// Races one gated `tn-racer` per `(tag, selector)` on the Task `id`, `attempts` saves each. Each
/// racer loads its store, says `ready` and waits for the go, so they race however long the
/// loading took (a native racer could otherwise be done before a component one has started). No
/// lock is ever stale: a long lease ([`LIVE_LEASE_MS`]), none broken.
///
/// Returns what they printed, once every racer exited successfully, the chain of versions held
/// ([`Outcomes::check_chain`]), there was a conflict and every racer won at least once (else
/// they did not race, and the test proves nothing).
pub(crate) fn race(racers: &[(&str, String)], id: &str, attempts: u64) -> Outcomes {
    let mut children: Vec<_> = racers
        .iter()
        .map(|(tag, selector)| {
            let mut child = Command::new(RACER)
                .args([
                    selector.as_str(),
                    id,
                    tag,
                    &attempts.to_string(),
                    &LIVE_LEASE_MS.to_string(),
                    "gate",
                ])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("the racer helper starts");
            let mut out = BufReader::new(child.stdout.take().unwrap());
            let mut ready = String::new();
            out.read_line(&mut ready).unwrap();
            assert_eq!(ready.trim(), "ready", "racer {tag}");
            (*tag, child, out)
        })
        .collect();
    for (_, child, _) in &mut children {
        child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    }
    let mut outcomes = Outcomes::default();
    for (tag, _, out) in &mut children {
        outcomes.read(tag, out);
    }
    for (tag, mut child, _) in children {
        assert!(child.wait().unwrap().success(), "racer {tag} failed");
    }
    outcomes.check_chain();
    assert!(
        !outcomes.losses.is_empty(),
        "the racers never raced (no conflicts): the test proves nothing"
    );
    for (tag, _) in racers {
        assert!(
            outcomes.wins.iter().any(|w| w.2 == *tag),
            "racer {tag} never won: it did not race"
        );
    }
    outcomes
}

/// Asserts `store` holds the Task `id` after [`race`]: every acknowledged save is one version,
/// none more, and the stored Task is the last winner's.
pub(crate) async fn assert_last_winner_stored(
    store: &dyn TaskStore,
    id: &str,
    outcomes: &Outcomes,
) {
    let (task, version) = store.get_versioned(id).await.unwrap().unwrap();
    assert_eq!(
        version,
        outcomes.wins.len() as u64,
        "every acknowledged save is one version, none more ({})",
        store.describe()
    );
    let (_, last, writer, seq) = outcomes
        .wins
        .iter()
        .max_by_key(|w| w.1)
        .expect("someone won");
    assert_eq!(
        *last, version,
        "the last acknowledged save is the stored version"
    );
    assert_eq!(task.get("writer").unwrap(), writer.as_str());
    assert_eq!(task.get("seq").unwrap(), &json!(seq));
    assert_eq!(
        task.get("base").unwrap(),
        &json!(version - 1),
        "the stored Task is the last winner's"
    );
}

/// Processes racing conditional saves of one Task over one directory across implementations:
/// the native store and the Rust component, beside `others` (tag, selector over the directory
/// given). Each acknowledged save has a version of its own, one past the version it read; the
/// stored Task is the last winner's, as the native store and `theirs` read it.
pub(crate) async fn race_across_implementations(
    others: impl FnOnce(&Path) -> Vec<(&'static str, String)>,
    theirs: &dyn StoreFactory,
) {
    let (_tmp, dir, _, [file_sel, wasm_sel]) = shared_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let mut racers = vec![("native", file_sel), ("rust", wasm_sel)];
    racers.extend(others(&dir));
    let outcomes = race(&racers, "raced", 60);
    for store in [
        theirs.open(&dir),
        Arc::new(FileTaskStore::new(&dir).unwrap()) as Arc<dyn TaskStore>,
    ] {
        assert_last_winner_stored(&*store, "raced", &outcomes).await;
    }
    assert!(no_temp_files(&dir));
}

#[tokio::test(flavor = "multi_thread")]
async fn processes_racing_conditional_saves_have_one_winner_per_version() {
    let (_tmp, dir, _, [file_sel, wasm_sel]) = shared_dir();
    // Two native and two component racers on one id, from before it exists.
    let racers: Vec<_> = ["alpha", "bravo", "charlie", "delta"]
        .into_iter()
        .enumerate()
        .map(|(i, tag)| {
            let selector = if i % 2 == 0 { &file_sel } else { &wasm_sel };
            (tag, selector.clone())
        })
        .collect();
    let outcomes = race(&racers, "raced", 150);
    let store = FileTaskStore::new(&dir).unwrap();
    assert_last_winner_stored(&store, "raced", &outcomes).await;
    assert!(no_temp_files(&dir));
}

#[tokio::test(flavor = "multi_thread")]
async fn racers_killed_mid_save_lose_nothing_acknowledged_and_block_at_most_a_lease() {
    let (_tmp, dir, component, [file_sel, wasm_sel]) = shared_dir();
    let lease = std::time::Duration::from_millis(LEASE_MS);
    let mut outcomes = Outcomes::default();
    let mut longest_wait = std::time::Duration::ZERO;
    for round in 0..12u64 {
        // One native and one component racer, killed at a different moment each round.
        let mut racers: Vec<_> = [("native", &file_sel), ("component", &wasm_sel)]
            .into_iter()
            .map(|(tag, selector)| (tag, spawn_racer(selector, "killed", tag, 0, LEASE_MS)))
            .collect();
        let mut readers = Vec::new();
        for (tag, child) in &mut racers {
            let mut out = BufReader::new(child.stdout.take().unwrap());
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            assert_eq!(line.trim(), "ready");
            let tag = tag.to_string();
            readers.push(std::thread::spawn(move || {
                let mut mine = Outcomes::default();
                mine.read(&tag, out);
                mine
            }));
        }
        std::thread::sleep(std::time::Duration::from_millis(20 + 13 * round));
        for (_, child) in &mut racers {
            child.kill().unwrap();
            child.wait().unwrap();
        }
        for reader in readers {
            let mine = reader.join().unwrap();
            outcomes.wins.extend(mine.wins);
            outcomes.losses.extend(mine.losses);
        }
        outcomes.check_chain();
        // Whole, and at least as new as every acknowledged save, through either store.
        let newest = outcomes.wins.iter().map(|w| w.1).max().unwrap_or(0);
        for reader in selectors(&dir, &component) {
            let store = toolnexus::resolve_store(reader.as_str()).unwrap();
            let (task, version) = store
                .get_versioned("killed")
                .await
                .unwrap()
                .expect("an acknowledged save survives");
            assert!(
                version >= newest,
                "version {version} < acknowledged {newest}"
            );
            let tag = task
                .get("writer")
                .and_then(Value::as_str)
                .unwrap()
                .to_owned();
            assert_eq!(
                task.get("pad").and_then(Value::as_str).unwrap(),
                tag.repeat(4096 / tag.len()),
                "torn"
            );
            if version == newest {
                let (_, _, writer, seq) = outcomes.wins.iter().find(|w| w.1 == newest).unwrap();
                assert_eq!(
                    (task.get("writer").unwrap(), task.get("seq").unwrap()),
                    (&serde_json::json!(writer), &serde_json::json!(seq)),
                    "the acknowledged save is what is stored"
                );
            }
        }
        // A kill may leave the Task's lock behind: the next conditional save still succeeds,
        // once the lease is over (the store gives up after three leases with an error).
        let store = FileTaskStore::with_options(&dir, toolnexus::Durability::Full, lease).unwrap();
        let (_, version) = store.get_versioned("killed").await.unwrap().unwrap();
        let started = std::time::Instant::now();
        let next = toolnexus::Task::try_from(serde_json::json!({
            "id": "killed", "writer": "check", "base": version, "seq": round,
            "pad": "check".repeat(4096 / 5),
        }))
        .unwrap();
        let saved = store
            .save_versioned(&next, toolnexus::Expect::Version(version))
            .await
            .expect("the Task is not blocked after the lease");
        longest_wait = longest_wait.max(started.elapsed());
        outcomes.wins.push((version, saved, "check".into(), round));
    }
    assert!(
        outcomes.wins.len() > 12,
        "the racers never saved anything: the test proves nothing"
    );
    eprintln!(
        "longest wait for a Task after a kill: {longest_wait:?} (lease {lease:?}); {} acknowledged saves",
        outcomes.wins.len()
    );
}
