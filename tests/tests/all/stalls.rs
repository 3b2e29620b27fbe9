//! Fault injection: a writer paused past its lease, or killed, at each step of a save and of a
//! delete, while other writers save the same Task, in each of the four implementations of the
//! file format: the native store, the Rust file-store component, and the JavaScript and Python
//! store components (both under this project's host, as `wasm:` stores).
//!
//! strace stalls (`delay_enter`) or kills (`signal=KILL`) the faulted writer `W` as it enters
//! the system call of one step on that Task's files (`-P`), and nothing else it does. While
//! `W` is stalled (or once it is dead), writers `A` and then `B` each make one compare-and-set
//! save; in a stall, a third writer `C` follows whose own flush is stalled too, so that a lock
//! is held when `W` wakes (the sequence that let a stalled rename install `C`'s unacknowledged
//! text and win a version twice). After each run:
//!
//! - no version is acknowledged twice, and each acknowledged save is one past the version it
//!   read;
//! - the Task read (natively and through the implementation) is the last acknowledged save's
//!   text at its version: every acknowledged save is the Task read or superseded by a later
//!   acknowledged one, and no unacknowledged text is read as the Task;
//! - after a delete, a Task still there is an acknowledged save's.
//!
//! A writer that waits for a live writer's lock gives up after three leases, with an error and
//! nothing written: allowed, and said in the output. The stall (2.5 leases) is chosen so that
//! the writers that wait for it do not.
//!
//! Needs `strace` (Debian: strace); without it each test prints `SKIPPED: …` and passes, unless
//! `TOOLNEXUS_REQUIRE_STRACE=1` (CI). The JavaScript and Python runs skip as their other tests
//! do (`TOOLNEXUS_REQUIRE_NODE`, `TOOLNEXUS_REQUIRE_PYTHON_STORE`).

use crate::processes::RACER;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use toolnexus::{FileTaskStore, Task, TaskStore};
use toolnexus_conformance::node::{Js, js};
use toolnexus_conformance::python_store::{PythonStore, python_store};

const REQUIRE_STRACE: &str = "TOOLNEXUS_REQUIRE_STRACE";

/// The lock lease of every writer here.
const LEASE_MS: u64 = 1000;
/// How long the faulted writer is stalled: past its lease, and within the three leases a writer
/// waiting for its lock waits.
const STALL_MS: u64 = 2500;
/// How long the third writer's flush is stalled: long enough that its lock is still held when
/// the faulted writer wakes, had that writer's lock been broken.
const THIRD_FLUSH_STALL_MS: u64 = 2000;
/// The Task every run saves, and the versions it has before the run.
const ID: &str = "t";
const SEEDED: u64 = 5;

/// Which of the Task's files a step's system call touches.
#[derive(Debug, Clone, Copy)]
enum On {
    Lock,
    Record,
    Task,
    Dir,
}

/// One step of a save or a delete: the system calls that make it, on one file.
#[derive(Debug, Clone, Copy)]
struct Step {
    name: &'static str,
    calls: &'static str,
    on: On,
}

const CREATE: &str = "openat,openat2";
const WRITE: &str = "pwrite64,write,pwritev,pwritev2";
const UNLINK: &str = "unlink,unlinkat";

const SAVE_STEPS: [Step; 6] = [
    Step {
        name: "create the lock",
        calls: CREATE,
        on: On::Lock,
    },
    Step {
        name: "write the text",
        calls: WRITE,
        on: On::Lock,
    },
    Step {
        name: "flush the text",
        calls: "fdatasync,fsync",
        on: On::Lock,
    },
    Step {
        name: "write the record",
        calls: WRITE,
        on: On::Record,
    },
    Step {
        name: "rename over the Task",
        calls: "rename,renameat,renameat2",
        on: On::Lock,
    },
    Step {
        name: "flush the directory",
        calls: "fsync",
        on: On::Dir,
    },
];

const DELETE_STEPS: [Step; 4] = [
    Step {
        name: "create the lock",
        calls: CREATE,
        on: On::Lock,
    },
    Step {
        name: "remove the Task",
        calls: UNLINK,
        on: On::Task,
    },
    Step {
        name: "remove the record",
        calls: UNLINK,
        on: On::Record,
    },
    Step {
        name: "flush the directory",
        calls: "fsync",
        on: On::Dir,
    },
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Stall,
    Kill,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Save,
    Delete,
}

/// strace, or `None` (after printing why) when the test may skip.
fn strace() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("strace"))
            .find(|candidate| candidate.is_file())
    });
    if found.is_none() {
        let reason = "strace is not installed (Debian: apt-get install strace)";
        if std::env::var(REQUIRE_STRACE).is_ok_and(|v| v == "1") {
            panic!("strace is required ({REQUIRE_STRACE}=1) but unavailable: {reason}");
        }
        eprintln!("SKIPPED: fault injection: {reason}; set {REQUIRE_STRACE}=1 to fail instead.");
    }
    found
}

/// One implementation of the format: how a writer process opens a store over a directory.
#[derive(Clone)]
struct Implementation {
    tag: &'static str,
    selector: std::sync::Arc<dyn Fn(&Path) -> String + Send + Sync>,
}

/// A finished writer: what it printed, and how it ended.
#[derive(Debug)]
struct Ended {
    tag: &'static str,
    lines: Vec<String>,
    exit: std::process::ExitStatus,
}

/// An acknowledged save: who, on which version, to which.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Win {
    writer: &'static str,
    base: u64,
    version: u64,
}

impl Ended {
    fn wins(&self) -> Vec<Win> {
        self.lines
            .iter()
            .filter_map(|line| {
                let mut words = line.split(' ');
                (words.next() == Some("win")).then(|| {
                    let mut n = || words.next().unwrap().parse::<u64>().unwrap();
                    Win {
                        writer: self.tag,
                        base: n(),
                        version: n(),
                    }
                })
            })
            .collect()
    }
}

/// A writer process: `tn-racer` making one compare-and-set save (or one delete), under strace
/// when it is faulted.
struct Writer {
    tag: &'static str,
    child: Child,
    out: BufReader<std::process::ChildStdout>,
    trace: Option<PathBuf>,
}

impl Writer {
    /// Starts the writer and waits until its store is loaded; it then waits for [`Writer::go`].
    fn start(
        tag: &'static str,
        selector: &str,
        op: Op,
        faulted: Option<(Command, PathBuf)>,
    ) -> Writer {
        let attempts = match op {
            Op::Save => "1",
            Op::Delete => "delete",
        };
        let args = [selector, ID, tag, attempts, &LEASE_MS.to_string(), "gate"];
        let (mut command, trace) = match faulted {
            Some((mut strace, trace)) => {
                strace.arg(RACER).args(args);
                (strace, Some(trace))
            }
            None => {
                let mut racer = Command::new(RACER);
                racer.args(args);
                (racer, None)
            }
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the writer starts");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut ready = String::new();
        out.read_line(&mut ready).unwrap();
        assert_eq!(ready.trim(), "ready", "writer {tag}");
        Writer {
            tag,
            child,
            out,
            trace,
        }
    }

    fn go(&mut self) {
        self.child
            .stdin
            .as_mut()
            .unwrap()
            .write_all(b"go\n")
            .unwrap();
    }

    /// Waits until strace has seen the writer enter one of `calls` (its trace holds nothing
    /// else but the end of the process).
    fn wait_until_entered(&self, calls: &str) {
        let trace = self.trace.as_ref().expect("a faulted writer");
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(trace).unwrap_or_default();
            if calls
                .split(',')
                .any(|call| text.contains(&format!(" {call}(")))
            {
                return;
            }
            assert!(
                !text.contains("+++ exited") && started.elapsed() < Duration::from_secs(60),
                "writer {} never entered {calls}: {text}",
                self.tag
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn wait(mut self) -> Ended {
        let lines = (&mut self.out).lines().map_while(Result::ok).collect();
        let exit = self.child.wait().unwrap();
        Ended {
            tag: self.tag,
            lines,
            exit,
        }
    }

    /// Runs one unfaulted writer to its end.
    fn run(tag: &'static str, selector: &str) -> Ended {
        let mut writer = Writer::start(tag, selector, Op::Save, None);
        writer.go();
        writer.wait()
    }
}

/// strace, to fault a writer at `step` on the Task's files in `dir`: stalled for `stall_ms`, or
/// killed; with the file where it traces the step's calls (and nothing else).
fn faulting(
    strace: &Path,
    dir: &Path,
    step: Step,
    fault: Fault,
    stall_ms: u64,
) -> (Command, PathBuf) {
    let (lock, record) = (".~t.l", ".~t.v");
    // By absolute path (natively, and for calls on an open file) and by the name a component's
    // host resolves beneath its directory.
    let names: Vec<String> = match step.on {
        On::Lock => vec![dir.join(lock).display().to_string(), lock.into()],
        On::Record => vec![dir.join(record).display().to_string(), record.into()],
        On::Task => vec![dir.join("t.json").display().to_string(), "t.json".into()],
        On::Dir => vec![dir.display().to_string()],
    };
    let injected = match fault {
        Fault::Stall => format!("{}:delay_enter={stall_ms}ms:when=1", step.calls),
        Fault::Kill => format!("{}:signal=KILL", step.calls),
    };
    static TRACES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = TRACES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let trace = dir.with_extension(format!("trace-{n}"));
    let mut command = Command::new(strace);
    command.args(["-f", "-qq", "-e", "signal=none", "-o"]);
    command.arg(&trace);
    for name in names {
        command.args(["-P", &name]);
    }
    command.args(["-e", &format!("trace={}", step.calls)]);
    command.args(["-e", &format!("inject={injected}")]);
    (command, trace)
}

/// Seeds the Task at version [`SEEDED`], natively.
async fn seed(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let store = FileTaskStore::new(dir).unwrap();
    for n in 1..=SEEDED {
        let task = Task::try_from(serde_json::json!({
            "id": ID, "writer": "seed", "base": n - 1, "seq": 0, "pad": "seed".repeat(1024),
        }))
        .unwrap();
        store.save(&task).await.unwrap();
    }
}

/// One run: `W` of `faulted` makes its `op` and is faulted at `step`; `A` (the same
/// implementation) and `B` (native) save meanwhile, then in a stall `C` (the same
/// implementation, its flush stalled). Checks the outcome against the promises above.
async fn run(strace: &Path, faulted: &Implementation, op: Op, step: Step, fault: Fault) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    seed(&dir).await;
    let ours = (faulted.selector)(&dir);
    let native = format!("file:{}", dir.display());
    let what = format!("{} {op:?} {fault:?} at {:?}", faulted.tag, step.name);

    let mut w = Writer::start(
        "W",
        &ours,
        op,
        Some(faulting(strace, &dir, step, fault, STALL_MS)),
    );
    w.go();
    let mut ended = Vec::new();
    let w = match fault {
        Fault::Stall => {
            w.wait_until_entered(step.calls);
            Some(w)
        }
        Fault::Kill => {
            let dead = w.wait();
            assert_eq!(
                std::os::unix::process::ExitStatusExt::signal(&dead.exit),
                Some(9),
                "{what}: W was not killed at its step: {dead:?}"
            );
            ended.push(dead);
            None
        }
    };
    ended.push(Writer::run("A", &ours));
    ended.push(Writer::run("B", &native));
    if fault == Fault::Stall {
        let flush = SAVE_STEPS[2];
        let mut c = Writer::start(
            "C",
            &ours,
            Op::Save,
            Some(faulting(
                strace,
                &dir,
                flush,
                Fault::Stall,
                THIRD_FLUSH_STALL_MS,
            )),
        );
        c.go();
        ended.push(c.wait());
    }
    if let Some(w) = w {
        ended.push(w.wait());
    }
    check(&what, &dir, &ours, op, &ended).await;
}

/// The promises, after a run whose writers `ended` so.
async fn check(what: &str, dir: &Path, ours: &str, op: Op, ended: &[Ended]) {
    for e in ended {
        eprintln!("{what}: {} {:?} {:?}", e.tag, e.exit.code(), e.lines);
    }
    let wins: Vec<Win> = ended.iter().flat_map(Ended::wins).collect();
    let mut versions = std::collections::HashSet::new();
    for win in &wins {
        assert_eq!(win.version, win.base + 1, "{what}: {win:?}");
        assert!(
            versions.insert(win.version),
            "{what}: version {} was acknowledged twice: {wins:?}",
            win.version
        );
    }
    let deleted = ended
        .iter()
        .any(|e| e.lines.iter().any(|l| l.starts_with("deleted ")));
    let native =
        std::sync::Arc::new(FileTaskStore::new(dir).unwrap()) as std::sync::Arc<dyn TaskStore>;
    let theirs = toolnexus::resolve_store(ours).unwrap();
    for store in [native, theirs] {
        let found = store.get_versioned(ID).await;
        let found = found.unwrap_or_else(|e| panic!("{what}: the Task does not read: {e}"));
        let Some((task, version)) = found else {
            assert!(
                op == Op::Delete,
                "{what}: the Task is gone, and no one deleted it"
            );
            continue;
        };
        let writer = task.get("writer").and_then(Value::as_str).unwrap_or("?");
        assert_eq!(
            task.get("pad").and_then(Value::as_str),
            Some(writer.repeat(4096 / writer.len().max(1)).as_str()),
            "{what}: torn"
        );
        match wins.iter().max_by_key(|w| w.version) {
            Some(last) if op == Op::Save => assert_eq!(
                (writer, version),
                (last.writer, last.version),
                "{what}: the Task read is not the last acknowledged save ({wins:?})"
            ),
            None if op == Op::Save => assert_eq!(
                (writer, version),
                ("seed", SEEDED),
                "{what}: no save was acknowledged, yet the Task changed"
            ),
            _ => {
                let known = writer == "seed" && !deleted
                    || wins
                        .iter()
                        .any(|w| (w.writer, w.version) == (writer, version));
                assert!(
                    known,
                    "{what}: the Task read ({writer} at {version}) is no acknowledged save ({wins:?})"
                );
            }
        }
    }
}

/// Every step of a save and of a delete, stalled and killed, for one implementation, one run
/// after another; fails at the end naming every run that broke a promise.
async fn all_faults(faulted: Implementation) {
    let Some(strace) = strace() else { return };
    let runs = [Fault::Stall, Fault::Kill].into_iter().flat_map(|fault| {
        let saves = SAVE_STEPS.map(|step| (Op::Save, step, fault));
        let deletes = DELETE_STEPS.map(|step| (Op::Delete, step, fault));
        saves.into_iter().chain(deletes)
    });
    let mut broken = Vec::new();
    for (op, step, fault) in runs {
        let (strace, faulted) = (strace.clone(), faulted.clone());
        let one = tokio::spawn(async move { run(&strace, &faulted, op, step, fault).await });
        if let Err(e) = one.await {
            let panic = e.into_panic();
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            broken.push(message);
        }
    }
    assert!(
        broken.is_empty(),
        "{} runs broke a promise:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn native_writers_stalled_or_killed_at_every_step_lose_nothing_acknowledged() {
    all_faults(Implementation {
        tag: "native",
        selector: std::sync::Arc::new(|dir| format!("file:{}", dir.display())),
    })
    .await;
}

/// The Rust component as the writer process embeds it (`wasm:builtin`).
#[tokio::test(flavor = "multi_thread")]
async fn rust_component_writers_stalled_or_killed_at_every_step_lose_nothing_acknowledged() {
    all_faults(Implementation {
        tag: "rust",
        selector: std::sync::Arc::new(|dir| format!("wasm:builtin?dir={}", dir.display())),
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn js_component_writers_stalled_or_killed_at_every_step_lose_nothing_acknowledged() {
    let Some(js) = js() else { return };
    all_faults(Implementation {
        tag: "js",
        selector: std::sync::Arc::new(|dir| Js::store(js).selector(dir)),
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_component_writers_stalled_or_killed_at_every_step_lose_nothing_acknowledged() {
    let Some(py) = python_store() else { return };
    all_faults(Implementation {
        tag: "python",
        selector: std::sync::Arc::new(|dir| PythonStore::store(py).selector(dir)),
    })
    .await;
}
