//! What makes an acknowledged save survive power loss, seen from outside: the order of the
//! system calls of a real `tnstore save`, recorded by strace, for the native file store and the
//! file-store component alike.
//!
//! A save at full durability must take the Task's lock (its temp file), write the Task text into
//! it and flush it; write the version record (in place, once the record exists: no second temp
//! file); then rename the lock over the Task file, which releases it; then flush the record and
//! the directory (which makes the rename durable); and only then exit 0. Nothing is removed: one
//! file created, one renamed. See `docs/on-disk-format.md`, "Saving". Each file is written on
//! the thread that then flushes it: no write is handed to another thread and back.
//! The Task file the rename replaces is held open (`O_PATH`) across the rename and closed after
//! it, so it is freed outside the directory's lock.
//!
//! Saves of several Tasks at once share their directory flushes (group commit), natively and
//! across the component's instances, and each still waits for a flush of the directory that
//! started after its own rename.
//!
//! And one thing about reads, seen the same way: the file-store component, told by this host
//! that it never opens a FIFO, socket or device (`special-files-refused`), opens a Task file
//! without looking at its name first.
//!
//! Needs `strace` (Debian: strace). Without it the test prints `SKIPPED: …` and passes, unless
//! `TOOLNEXUS_REQUIRE_STRACE=1` (CI), where that is a failure.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, TNSTORE};

const REQUIRE_ENV: &str = "TOOLNEXUS_REQUIRE_STRACE";

/// The system calls a save's durability depends on.
const TRACED: &str = "trace=openat,openat2,write,pwrite64,pwritev,pwritev2,fdatasync,fsync,\
                      rename,renameat,renameat2,unlink,unlinkat,close,fchmod,chmod,fchmodat";

/// strace, or `None` (after printing why) when the test may skip.
fn strace() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("strace"))
            .find(|candidate| candidate.is_file())
    });
    if found.is_none() {
        let reason = "strace is not installed (Debian: apt-get install strace)";
        if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
            panic!("strace is required ({REQUIRE_ENV}=1) but unavailable: {reason}");
        }
        eprintln!(
            "SKIPPED: the system-call order of a durable save: {reason}; set {REQUIRE_ENV}=1 to \
             make this a failure."
        );
    }
    found
}

/// One traced system call that matters here, with the paths strace resolved (`-y`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    Write(String),
    /// `fsync`: the file's data and all its metadata.
    Sync(String),
    /// `fdatasync`: the file's data and what reading it back needs (its length), not its
    /// times.
    SyncData(String),
    /// A change of a file's mode after its open.
    Chmod(String),
    /// An open that is not `O_PATH`.
    Open(String),
    Rename {
        from: String,
        to: String,
    },
    /// An `O_PATH` open: a handle on a file that reads and writes nothing.
    Hold(String),
    Close(String),
    Unlink(String),
}

/// The call's name and argument list, from a line of `strace -f` (`PID name(args) = result`, or
/// `PID name(args <unfinished ...>` when another thread's call came between; the resumed half is
/// not needed: the call is ordered by its start).
fn call_of(line: &str) -> Option<(&str, &str)> {
    let line = line
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    let open = line.find('(')?;
    let name = &line[..open];
    let rest = &line[open + 1..];
    let args = match rest.find(" <unfinished ...>") {
        Some(end) => &rest[..end],
        None => &rest[..rest.rfind(')')?],
    };
    Some((name, args))
}

/// The path in an fd argument strace decorated as `3</dir/file>`.
fn fd_path(arg: &str) -> Option<String> {
    let start = arg.find('<')? + 1;
    let end = arg[start..].find('>')? + start;
    Some(arg[start..end].to_owned())
}

/// A quoted path argument, `"…"`.
fn quoted(arg: &str) -> Option<String> {
    let arg = arg.trim();
    Some(arg.strip_prefix('"')?.strip_suffix('"')?.to_owned())
}

/// The path a `*at` call names: relative names under their directory fd.
fn at_path(dir: &str, name: &str) -> Option<String> {
    let name = quoted(name)?;
    if name.starts_with('/') {
        return Some(name);
    }
    Some(format!(
        "{}/{}",
        fd_path(dir)?.trim_end_matches('/'),
        name.trim_start_matches("./")
    ))
}

/// The path strace resolved for the descriptor a call returned: `= 7</dir/file>`.
fn returned_path(line: &str) -> Option<String> {
    fd_path(&line[line.rfind(" = ")?..])
}

fn parse(line: &str) -> Option<Call> {
    let (name, args) = call_of(line)?;
    let parts: Vec<&str> = args.split(", ").collect();
    match name {
        "openat" | "openat2" if args.contains("O_PATH") => Some(Call::Hold(returned_path(line)?)),
        "openat" | "openat2" => Some(Call::Open(at_path(parts.first()?, parts.get(1)?)?)),
        "close" => Some(Call::Close(fd_path(parts[0])?)),
        "fchmod" => Some(Call::Chmod(fd_path(parts[0])?)),
        "chmod" => Some(Call::Chmod(quoted(parts.first()?)?)),
        "fchmodat" => Some(Call::Chmod(at_path(parts.first()?, parts.get(1)?)?)),
        "write" | "pwrite64" | "pwritev" | "pwritev2" => Some(Call::Write(fd_path(parts[0])?)),
        "fsync" => Some(Call::Sync(fd_path(parts[0])?)),
        "fdatasync" => Some(Call::SyncData(fd_path(parts[0])?)),
        "rename" => Some(Call::Rename {
            from: quoted(parts.first()?)?,
            to: quoted(parts.get(1)?)?,
        }),
        "unlink" => Some(Call::Unlink(quoted(parts.first()?)?)),
        "unlinkat" => Some(Call::Unlink(at_path(parts.first()?, parts.get(1)?)?)),
        "renameat" | "renameat2" => Some(Call::Rename {
            from: at_path(parts.first()?, parts.get(1)?)?,
            to: at_path(parts.get(2)?, parts.get(3)?)?,
        }),
        _ => None,
    }
}

/// The call with its paths relative to the working directory made absolute.
fn absolute(call: Call, cwd: &Path) -> Call {
    let abs = |p: String| {
        if p.starts_with('/') {
            p
        } else {
            cwd.join(p.trim_start_matches("./"))
                .to_string_lossy()
                .into_owned()
        }
    };
    match call {
        Call::Write(p) => Call::Write(abs(p)),
        Call::Sync(p) => Call::Sync(abs(p)),
        Call::SyncData(p) => Call::SyncData(abs(p)),
        Call::Open(p) => Call::Open(abs(p)),
        Call::Rename { from, to } => Call::Rename {
            from: abs(from),
            to: abs(to),
        },
        Call::Hold(p) => Call::Hold(abs(p)),
        Call::Close(p) => Call::Close(abs(p)),
        Call::Chmod(p) => Call::Chmod(abs(p)),
        Call::Unlink(p) => Call::Unlink(abs(p)),
    }
}

/// The thread that made the call, from a line of `strace -f`.
fn thread_of(line: &str) -> Option<u32> {
    line.split_whitespace().next()?.parse().ok()
}

/// Runs `tnstore --store SELECTOR ARGS…` in `cwd` under `strace -e TRACE`: what it printed,
/// and strace's log (`-f -y`: every thread, descriptors with their paths).
fn traced_tnstore(
    strace: &Path,
    cwd: &Path,
    selector: &str,
    trace: &str,
    args: &[&str],
) -> (String, String) {
    let (output, log) = traced_output(strace, cwd, selector, &["-e", trace], args);
    assert!(
        output.status.success(),
        "{selector}: the traced {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (String::from_utf8(output.stdout).unwrap(), log)
}

/// Runs `tnstore --store SELECTOR ARGS…` in `cwd` under strace with the options `strace_args`
/// (besides `-f -qq -y`): how it ended, and strace's log.
fn traced_output(
    strace: &Path,
    cwd: &Path,
    selector: &str,
    strace_args: &[&str],
    args: &[&str],
) -> (std::process::Output, String) {
    let log = cwd.join("strace.log");
    let output = Command::new(strace)
        .args(["-f", "-qq", "-y"])
        .args(strace_args)
        .arg("-o")
        .arg(&log)
        .arg(TNSTORE)
        .args(["--store", selector])
        .args(args)
        .current_dir(cwd)
        .env_remove("TNSTORE_STORE")
        .env("TOOLNEXUS_CACHE_DIR", cwd.join("cache"))
        .output()
        .expect("strace starts");
    (output, fs::read_to_string(&log).unwrap())
}

/// Runs `tnstore --store SELECTOR save FILE` under strace in `cwd`: the calls of all its
/// threads in the order they started, each with the thread that made it.
fn traced_save(strace: &Path, cwd: &Path, selector: &str, task_file: &Path) -> Vec<(u32, Call)> {
    let (_, log) = traced_tnstore(
        strace,
        cwd,
        selector,
        TRACED,
        &["save", task_file.to_str().unwrap()],
    );
    let cwd = fs::canonicalize(cwd).unwrap();
    log.lines()
        .filter_map(|line| Some((thread_of(line)?, absolute(parse(line)?, &cwd))))
        .collect()
}

/// The calls `pick` picks, in order.
fn matching(calls: &[Call], pick: impl Fn(&Call) -> bool) -> Vec<&Call> {
    calls.iter().filter(|c| pick(c)).collect()
}

fn position(calls: &[Call], what: &str, found: impl Fn(&Call) -> bool) -> usize {
    calls
        .iter()
        .position(found)
        .unwrap_or_else(|| panic!("no {what} in {calls:#?}"))
}

/// The second save of a Task at full durability, traced, in the order the protocol needs.
fn assert_durable_order(strace: &Path, selector: &str, store_dir: &str) {
    let cwd = tempfile::tempdir().unwrap();
    let store_dir = cwd.path().join(store_dir);
    let task_file = cwd.path().join("t-task.json");
    fs::write(&task_file, r#"{"id":"t","status":{"state":"submitted"}}"#).unwrap();
    let first = common::tnstore_command()
        .args(["--store", selector, "save"])
        .arg(&task_file)
        .current_dir(cwd.path())
        .env_remove("TNSTORE_STORE")
        .env("TOOLNEXUS_CACHE_DIR", cwd.path().join("cache"))
        .output()
        .unwrap();
    assert!(first.status.success(), "{selector}: first save failed");
    fs::write(&task_file, r#"{"id":"t","status":{"state":"working"}}"#).unwrap();
    let traced = traced_save(strace, cwd.path(), selector, &task_file);
    let calls: Vec<Call> = traced.iter().map(|(_, call)| call.clone()).collect();
    let thread = |at: usize| traced[at].0;

    let dir = fs::canonicalize(&store_dir).unwrap();
    let dir = dir.to_str().unwrap();
    let task = format!("{dir}/t.json");
    let record = format!("{dir}/.~t.v");

    let lock = format!("{dir}/.~t.l");
    let rename = position(
        &calls,
        "rename onto the Task file",
        |c| matches!(c, Call::Rename { to, .. } if *to == task),
    );
    assert_eq!(
        calls[rename],
        Call::Rename {
            from: lock.clone(),
            to: task.clone()
        },
        "{selector}: the Task file comes from the Task's lock, which is its temp file"
    );
    let wrote_lock = position(&calls, "write of the Task text into the lock", |c| {
        *c == Call::Write(lock.clone())
    });
    let synced_lock = position(&calls, "flush of the lock", |c| {
        *c == Call::SyncData(lock.clone())
    });
    let wrote_record = position(&calls, "write of the version record", |c| {
        *c == Call::Write(record.clone())
    });
    let synced_record = position(&calls, "flush of the version record", |c| {
        *c == Call::SyncData(record.clone())
    });
    let synced_dir = position(&calls, "flush of the directory", |c| {
        *c == Call::Sync(dir.to_owned())
    });
    assert!(
        wrote_lock < synced_lock
            && synced_lock < wrote_record
            && wrote_record < rename
            && rename < synced_record
            && rename < synced_dir,
        "{selector}: the text is written into the lock and flushed, the record written, then \
         the lock renamed over the Task file, then the record and the directory flushed: \
         {calls:#?}"
    );
    // Files are flushed with `fdatasync` (found above): their data and length, which reading
    // them back needs, without a write of their times; only the directory takes `fsync`.
    assert!(
        !calls
            .iter()
            .any(|c| matches!(c, Call::Sync(p) if *p == lock || *p == record)),
        "{selector}: the lock and the record are flushed with fdatasync, not fsync: {calls:#?}"
    );
    // The lock is created once and never removed: the rename releases it. Nothing else is
    // created (no temp file besides it) or removed.
    let lock_opens = calls
        .iter()
        .filter(|c| matches!(c, Call::Open(p) | Call::Hold(p) if *p == lock))
        .count();
    assert_eq!(
        lock_opens, 1,
        "{selector}: the lock is opened once, to create it: {calls:#?}"
    );
    // Only the store's check at open that the directory keeps case apart removes a file: its
    // probe, created and removed before the save takes its lock.
    let lock_created = position(&calls, "creation of the lock", |c| {
        *c == Call::Open(lock.clone())
    });
    let unlinks: Vec<_> = calls
        .iter()
        .enumerate()
        .filter(|(at, c)| match c {
            Call::Unlink(p) => !(*at < lock_created && p.contains("/.tmp-")),
            _ => false,
        })
        .collect();
    assert!(
        unlinks.is_empty(),
        "{selector}: a save removes nothing: {unlinks:#?}"
    );
    assert!(
        !calls.iter().enumerate().any(|(at, c)| at > lock_created
            && matches!(c, Call::Open(p) if p.starts_with(&format!("{dir}/.tmp-")))),
        "{selector}: no temp file besides the lock: {calls:#?}"
    );
    // Every file a save creates is created private (0600) by its open: no mode is changed
    // after (`files.rs` checks the modes).
    let chmods = matching(&calls, |c| matches!(c, Call::Chmod(_)));
    assert!(
        chmods.is_empty(),
        "{selector}: files are created private, not made so after: {chmods:#?}"
    );
    // No write is handed to another thread and back: each file is written by the thread that
    // then flushes it (a hand-off costs two thread switches per write).
    assert!(
        thread(wrote_lock) == thread(synced_lock) && thread(wrote_record) == thread(synced_record),
        "{selector}: each file is written on the thread that flushes it: {traced:#?}"
    );
    // The file the rename replaces is freed when the last handle on it closes: held across the
    // rename, that is after it, outside the directory's lock (see `hold_for_replace` in
    // `toolnexus-format` and `hold_replaced` in `toolnexus-wasm`).
    let held = position(&calls, "O_PATH handle on the Task file", |c| {
        *c == Call::Hold(task.clone())
    });
    let released = rename
        + position(&calls[rename..], "close of the replaced Task file", |c| {
            *c == Call::Close(task.clone())
        });
    assert!(
        held < rename && rename < released,
        "{selector}: the replaced Task file is held across the rename and let go after it: \
         {calls:#?}"
    );
    assert!(
        !calls
            .iter()
            .any(|c| matches!(c, Call::Rename { to, .. } if *to == record)),
        "{selector}: an existing record is overwritten in place, not renamed over: {calls:#?}"
    );
    assert_eq!(
        calls
            .iter()
            .filter(|c| matches!(c, Call::Rename { .. }))
            .count(),
        1,
        "{selector}: one rename per save: {calls:#?}"
    );
}

#[test]
fn a_durable_save_writes_flushes_renames_and_flushes_the_directory_in_order() {
    let Some(strace) = strace() else {
        return;
    };
    assert_durable_order(&strace, "file:./files", "files");
    assert_durable_order(&strace, "wasm:builtin?dir=./component", "component");
}

/// A `get`, natively and of a component under this host: the file store opens the Task file
/// (and, when the version is asked for, its version record) by name without a `stat` of the
/// name first (natively it opens without following a link or waiting on a FIFO; a component's
/// host refuses FIFOs, sockets and devices itself and says so), looks at what it opened once
/// (a component's host looked at the name just before opening it, and does not look again), and
/// reads it in one call: the length that look saw. A plain `get` reads no version record at all
/// (a component's host asks through `lean.get-text`).
#[test]
fn a_get_opens_its_files_once_looks_at_them_once_and_reads_them_in_one_call() {
    let Some(strace) = strace() else {
        return;
    };
    assert_get_reads(&strace, "file:./native");
    assert_get_reads(&strace, "wasm:builtin?dir=./component");
}

/// [`a_get_opens_its_files_once_looks_at_them_once_and_reads_them_in_one_call`] for one store.
fn assert_get_reads(strace: &Path, selector: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let task_file = cwd.join("task.json");
    fs::write(&task_file, r#"{"id":"t","status":{"state":"working"}}"#).unwrap();
    traced_save(strace, cwd, selector, &task_file);
    for (args, read) in [
        (&["get", "t"][..], &["t.json"][..]),
        (
            &["get", "t", "--show-version"][..],
            &["t.json", ".~t.v"][..],
        ),
    ] {
        let (got, log) = traced_tnstore(
            strace,
            cwd,
            selector,
            "trace=statx,newfstatat,fstat,openat,openat2,close,read,pread64,preadv,preadv2",
            args,
        );
        assert!(got.contains(r#""id":"t""#), "{got}");
        for name in ["t.json", ".~t.v"] {
            // What names the file: a quoted argument ending in its name. Starting the store
            // looks at every file (the disk quota's count, the temp-file sweep) on threads of
            // its own; the `get` is the thread that opens the file.
            let names = |line: &&str| {
                line.contains(&format!("/{name}\"")) || line.contains(&format!("\"{name}\""))
            };
            let calls: Vec<&str> = log.lines().filter(names).collect();
            let opens: Vec<&str> = calls
                .iter()
                .copied()
                .filter(|line| {
                    call_of(line).is_some_and(|(call, args)| {
                        call.starts_with("openat") && !args.contains("O_PATH")
                    })
                })
                .collect();
            if !read.contains(&name) {
                assert!(
                    opens.is_empty(),
                    "{selector} {args:?} opens no {name}: {calls:#?}"
                );
                continue;
            }
            assert_eq!(
                opens.len(),
                1,
                "{selector} {args:?} opens {name} once: {calls:#?}"
            );
            let get = thread_of(opens[0]);
            let looked_up: Vec<&str> = calls
                .iter()
                .copied()
                .filter(|line| thread_of(line) == get)
                .filter(|line| {
                    call_of(line).is_some_and(|(call, _)| call == "statx" || call == "newfstatat")
                })
                .collect();
            assert!(
                looked_up.is_empty(),
                "{selector} {args:?} opens {name} without a stat of its name: {looked_up:#?}"
            );
            // The descriptor the open returned (`= 9</dir/t.json>`), and what the get asked
            // of it until it was closed.
            let fd = opens[0]
                .rsplit(" = ")
                .next()
                .and_then(|ret| ret.split('<').next())
                .map(|fd| format!("{fd}<"))
                .unwrap();
            let after_open: Vec<&str> = log
                .lines()
                .skip_while(|line| *line != opens[0])
                .skip(1)
                .filter(|line| thread_of(line) == get)
                .take_while(|line| {
                    !call_of(line)
                        .is_some_and(|(call, args)| call == "close" && args.starts_with(&fd))
                })
                .collect();
            let stats: Vec<&str> = after_open
                .iter()
                .copied()
                .filter(|line| {
                    call_of(line).is_some_and(|(call, args)| {
                        matches!(call, "statx" | "newfstatat" | "fstat") && args.starts_with(&fd)
                    })
                })
                .collect();
            assert_eq!(
                stats.len(),
                1,
                "{selector} {args:?} looks at the {name} it opened once: {after_open:#?}"
            );
            // Its bytes in one read: the length its `stat` saw, not one byte more to find the
            // end (the files a get reads are never written once in place).
            let reads = after_open
                .iter()
                .filter(|line| {
                    call_of(line)
                        .is_some_and(|(call, args)| call.contains("read") && args.starts_with(&fd))
                })
                .count();
            assert_eq!(
                reads, 1,
                "{selector} {args:?} reads the {name} it opened in one call: {after_open:#?}"
            );
        }
    }
}

/// A component call held in a system call past its deadline (here the file store's flush of
/// its temp file, which strace holds for 8 s; on a host, a hung disk or a flush of everything
/// the component wrote) is answered while the system call is still held, as a write whose
/// outcome is unknown (the call may have renamed its file before it was stopped): the
/// deadline stops guest code and clock waits, the caller's backstop (twice the deadline and a
/// second: 3 s here) the wait for the answer. The save did not complete: the guest met its
/// deadline when the flush let go. (The deadline is a second so that loading the component and
/// its work before the flush, each system call stopped by strace, fit in it on a loaded machine.)
#[test]
fn a_call_held_in_a_system_call_is_answered_at_its_backstop() {
    let Some(strace) = strace() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let task_file = cwd.join("task.json");
    fs::write(&task_file, r#"{"id":"t","status":{"state":"working"}}"#).unwrap();
    traced_save(&strace, cwd, "wasm:builtin?dir=./component", &task_file);
    fs::write(&task_file, r#"{"id":"t","status":{"state":"completed"}}"#).unwrap();
    let (output, log) = traced_output(
        &strace,
        cwd,
        "wasm:builtin?dir=./component&timeout=1s",
        &[
            "-s",
            "256",
            "-e",
            "trace=fdatasync,write",
            "-e",
            "inject=fdatasync:delay_enter=8000000",
        ],
        &["save", task_file.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    // A save stopped at its deadline may have renamed its file first: its outcome is unknown.
    assert!(stderr.contains("outcome unknown"), "{stderr}");
    assert!(stderr.contains("stopped at its deadline of 1s"), "{stderr}");
    let lines: Vec<&str> = log.lines().collect();
    let answered = lines
        .iter()
        .position(|line| line.contains(" write(2<") && line.contains("stopped at its deadline"))
        .unwrap_or_else(|| panic!("the error is written: {log}"));
    let let_go = lines
        .iter()
        .position(|line| line.contains("fdatasync resumed") || line.contains("(DELAYED)"))
        .unwrap_or_else(|| panic!("the flush was held: {log}"));
    assert!(
        answered < let_go,
        "answered while the flush was still held: {log}"
    );
    let (got, _) = traced_tnstore(
        &strace,
        cwd,
        "wasm:builtin?dir=./component",
        "trace=none",
        &["get", "t"],
    );
    assert!(
        got.contains("working"),
        "the timed-out save changed nothing: {got}"
    );
}

/// How many Tasks [`concurrent_saves_share_directory_flushes_and_each_waits_for_one_after_its_rename`]
/// saves at once: the component store's default number of instances.
const SAVERS: usize = 8;

/// Where each traced call ended: for the line that starts a call, the index of the line that
/// finished it (the same line, unless strace printed it `<unfinished ...>`: then the same
/// thread's `<... NAME resumed>` line).
fn ends(lines: &[&str]) -> Vec<usize> {
    let mut ends: Vec<usize> = (0..lines.len()).collect();
    let mut unfinished = std::collections::HashMap::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(thread) = thread_of(line) else {
            continue;
        };
        if line.contains(" <unfinished ...>") {
            unfinished.insert(thread, at);
        } else if line.contains(" resumed>")
            && let Some(start) = unfinished.remove(&thread)
        {
            ends[start] = at;
        }
    }
    ends
}

/// Saves of several Tasks at once (one `tnstore save` of eight files, as eight concurrent
/// saves) share their directory flushes (group commit): natively, and across the component's
/// instances, whose flushes the host shares. And each is still acknowledged only after its text
/// was flushed before its rename, and after its rename a flush of its version record and a
/// flush of the directory that *started after* the rename: what makes it survive power loss.
/// strace holds every directory flush for half a second, so saves that rename meanwhile wait
/// for the next one; without sharing, each save would make a flush of its own.
#[test]
fn concurrent_saves_share_directory_flushes_and_each_waits_for_one_after_its_rename() {
    let Some(strace) = strace() else {
        return;
    };
    for (selector, store_dir) in [
        ("file:./files", "files"),
        ("wasm:builtin?dir=./component", "component"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = fs::canonicalize(tmp.path()).unwrap();
        let files: Vec<String> = (0..SAVERS)
            .map(|k| {
                let name = format!("g-{k}.json");
                let task = format!(r#"{{"id":"g-{k}","status":{{"state":"working"}}}}"#);
                fs::write(cwd.join(&name), task).unwrap();
                name
            })
            .collect();
        let args: Vec<&str> = std::iter::once("save")
            .chain(files.iter().map(String::as_str))
            .collect();
        // The first saves (and the component's compilation) untraced: the traced ones replace
        // Task files, as most saves do.
        traced_tnstore(&strace, &cwd, selector, "trace=none", &args);
        let (output, log) = traced_output(
            &strace,
            &cwd,
            selector,
            &[
                "-s",
                "128",
                "-e",
                "trace=write,fdatasync,fsync,rename,renameat,renameat2",
                "-e",
                "inject=fsync:delay_exit=500000",
            ],
            &args,
        );
        assert!(
            output.status.success(),
            "{selector}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let lines: Vec<&str> = log.lines().collect();
        let ends = ends(&lines);
        let calls: Vec<Option<Call>> = lines
            .iter()
            .map(|line| parse(line).map(|call| absolute(call, &cwd)))
            .collect();
        let dir = format!("{}/{store_dir}", cwd.display());
        let starts = |want: &Call| -> Vec<usize> {
            (0..calls.len())
                .filter(|&at| calls[at].as_ref() == Some(want))
                .collect()
        };
        let dir_flushes = starts(&Call::Sync(dir.clone()));
        let mut first_rename = usize::MAX;
        for k in 0..SAVERS {
            let (task, lock, record) = (
                format!("{dir}/g-{k}.json"),
                format!("{dir}/.~g-{k}.l"),
                format!("{dir}/.~g-{k}.v"),
            );
            let renamed = *starts(&Call::Rename {
                from: lock.clone(),
                to: task,
            })
            .first()
            .unwrap_or_else(|| panic!("{selector}: no rename of g-{k}'s lock: {log}"));
            first_rename = first_rename.min(renamed);
            let acked = lines
                .iter()
                .position(|line| line.contains(&format!(r#"saved \"g-{k}\""#)))
                .unwrap_or_else(|| panic!("{selector}: g-{k} is not acknowledged: {log}"));
            let text_flushed = starts(&Call::SyncData(lock))
                .into_iter()
                .any(|at| ends[at] < renamed);
            let record_flushed = starts(&Call::SyncData(record))
                .into_iter()
                .any(|at| at > ends[renamed] && ends[at] < acked);
            let dir_flushed = dir_flushes
                .iter()
                .any(|&at| at > ends[renamed] && ends[at] < acked);
            assert!(
                text_flushed && record_flushed && dir_flushed,
                "{selector}: g-{k} is acknowledged after its text was flushed before its \
                 rename ({text_flushed}), and after a flush of its record ({record_flushed}) \
                 and one of the directory ({dir_flushed}) that started after it: {log}"
            );
        }
        let shared = dir_flushes.iter().filter(|&&at| at > first_rename).count();
        assert!(
            shared < SAVERS,
            "{selector}: {SAVERS} saves at once share their directory flushes ({shared} \
             flushes): {log}"
        );
    }
}
