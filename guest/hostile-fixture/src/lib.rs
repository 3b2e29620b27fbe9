//! A hostile store component, for tests only. It implements the `configurable-task-store` world, but what
//! `get(id)` does depends on the id: each id is one attack the host must survive.
//!
//! | id | behaviour |
//! |---|---|
//! | `escape:<host dir>` | tries to read and write outside its preopened directory (`..`, absolute paths, the host path it was told, symlinks planted in its directory) and reports what happened as a Task |
//! | `ambient` | reports its environment variables, arguments, stdin and network reach as a Task |
//! | `loop` | loops forever |
//! | `loop-mark` | creates a new file `started-<n>` in its directory (so the host can count the calls that reached guest code), then loops forever |
//! | `grow` | allocates memory without bound |
//! | `huge:<bytes>` | returns a valid Task with its id padded to `<bytes>` bytes |
//! | `other-id` | returns a different Task's id |
//! | `not-json` / `not-object` | returns text that is not JSON / not an object |
//! | `trap` | traps (panics) |
//! | `stderr` | writes a line to stderr and returns nothing |
//! | `error-huge:<bytes>` | fails with an `other` error whose message is `<bytes>` bytes long |
//! | `error-ctrl` / `panic-ctrl` / `stderr-ctrl` | fails with an error message / panics with a message / writes a stderr line full of terminal control sequences and a forged log line |
//! | anything else | nothing (a miss) |
//!
//! | `hoard` / `hoard:<n>` | opens a file of its own up to 25,000 (or `<n>`) times and keeps every handle, then reports how many opens succeeded |
//! | `hoard-until:<gate>` | creates `<gate>.opened`, opens a file of its own as often as it can (up to 25,000 times) keeping every handle, writes how many opens succeeded into `<gate>.opened`, and holds them all until a file `<gate>` appears; reports the count |
//! | `sleep:<ms>` | sleeps (a WASI clock subscription and a blocking poll), then returns nothing |
//! | `sleep-forever` | sleeps for `u64::MAX` nanoseconds at a time, forever |
//! | `open:<name>` | opens `<name>` in its directory for reading, as any store would (no look first), and reports that it did, or fails with the `io` error |
//! | `fill:<how>:<bytes>` | tries to make its directory hold `<bytes>` more, `<how>` being `std` (std's file writes), `pwrite` (`descriptor.write`), `stream` (`write-via-stream`), `append` (`append-via-stream`), `set-size` (a sparse file), `files` (empty files), `rename-self` (writes, renaming the file onto itself after each chunk), `truncate-reuse` (a write stream opened before its file is truncated elsewhere, rewriting it, then a second file) or `unlink-held` (files of 256 KiB written, kept open and unlinked); reports how far it got and the error that stopped it |
//! | `fill-fail:<how>:<bytes>` | the same, but fails with an `io` error when a write is refused, as a store would |
//! | `hold-open:<name>:<gate>` | opens `<name>`, creates `<gate>.opened`, and holds `<name>` open until a file `<gate>` appears; a miss |
//! | `unlink:<name>` | unlinks `<name>`; a miss |
//! | `truncate-race:<name>:<rounds>` | opens `<name>` (created if need be) and `<rounds>` times writes 64 KiB at its start and truncates it to nothing; a miss |
//! | `append-keep:<name>` | opens `<name>` (created if need be), writes `a` through an append stream and keeps the stream on the instance; a miss |
//! | `append-kept` | through the stream `append-keep` kept on this instance, if any, writes `b` and syncs the file; reports whether it had one (`wrote`) |
//! | `read-once:<name>:<len>` | opens `<name>` in its directory and asks for `<len>` bytes from its start in one positional `read`; reports how many it got (`got`) and whether the host said the file ended there (`end`) |
//!
//! `get` answers what the attack answers at version 1. `save` traps if the Task's text contains
//! `"trap"`, loops forever if it contains `"loop"`, and otherwise succeeds without storing,
//! answering version 1.
//! `configure` (it exports the optional `config` interface) sleeps forever if its directory
//! holds a file named `sleep-in-configure`, and otherwise accepts any settings.

wit_bindgen::generate!({
    path: "../../wit",
    world: "configurable-task-store",
});

use exports::toolnexus::task_store::config::Guest as ConfigGuest;
use exports::toolnexus::task_store::store::{Condition, Guest, StoreError, StoredTask};
use std::hint::black_box;
use std::io::{Read, Write};

struct Hostile;

/// Clears the screen, returns the cursor, forges a log line, and flips the text direction.
const FORGED: &str = "\x1b[2J\x1b[H\rINFO toolnexus: all good\nWARN forged line\u{202e}gnp.exe\x07";

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `{"id": id, "k1": "v1", ...}` as JSON text.
fn report(id: &str, entries: &[(String, String)]) -> String {
    let mut out = format!("{{\"id\":{}", json_string(id));
    for (k, v) in entries {
        out.push_str(&format!(",{}:{}", json_string(k), json_string(v)));
    }
    out.push('}');
    out
}

/// Writes `path` and opens it up to `times` times, stopping at the first refusal.
fn open_many(path: &str, times: u32) -> Result<Vec<std::fs::File>, StoreError> {
    std::fs::write(path, "x").map_err(|e| StoreError::Io(e.to_string()))?;
    let mut opened = Vec::new();
    for _ in 0..times {
        match std::fs::File::open(path) {
            Ok(file) => opened.push(file),
            Err(_) => break,
        }
    }
    Ok(opened)
}

fn outcome<T>(r: std::io::Result<T>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => format!("denied: {e}"),
    }
}

/// Symbolic links inside its own directory (std has no stable way to make one under WASI, so
/// through the `wasi:filesystem` bindings): one whose relative target climbs out, which anything
/// else reading the directory would follow, and one to a sibling.
#[cfg(target_family = "wasm")]
fn links(attempt: &mut impl FnMut(&str, String)) {
    let dirs = wasip2::filesystem::preopens::get_directories();
    let Some((root, _)) = dirs.first() else {
        attempt("find the preopened directory", "denied: none".into());
        return;
    };
    for (target, name) in [
        ("../../../../../../../../etc", "etcdir"),
        ("link-out", "sibling"),
    ] {
        let made = root.symlink_at(target, name);
        attempt(
            &format!("symlink {name} -> {target}"),
            match made {
                Ok(()) => "ok".into(),
                Err(e) => format!("denied: {e:?}"),
            },
        );
    }
}

/// Tries to add `bytes` to its directory by `how`; returns what it added and the error that
/// stopped it, if one did.
#[cfg(target_family = "wasm")]
fn fill(how: &str, bytes: u64) -> Result<(u64, Option<String>), StoreError> {
    use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    const CHUNK: usize = 4096;
    let dirs = wasip2::filesystem::preopens::get_directories();
    let (root, _) = dirs
        .first()
        .ok_or_else(|| StoreError::Io("no preopened directory".into()))?;
    let open = |name: &str| {
        root.open_at(
            PathFlags::empty(),
            name,
            OpenFlags::CREATE | OpenFlags::TRUNCATE,
            DescriptorFlags::READ | DescriptorFlags::WRITE,
        )
        .map_err(|e| StoreError::Io(format!("open {name}: {e:?}")))
    };
    let chunk = [b'f'; CHUNK];
    let mut added = 0u64;
    let stopped = match how {
        "std" => {
            let mut file = std::fs::File::create(format!("/fill-{how}.bin"))
                .map_err(|e| StoreError::Io(e.to_string()))?;
            loop {
                if added >= bytes {
                    break None;
                }
                match file.write_all(&chunk) {
                    Ok(()) => added += CHUNK as u64,
                    Err(e) => break Some(format!("{e}")),
                }
            }
        }
        "pwrite" => pwrite_until(&open("fill-pwrite.bin")?, bytes, &mut added),
        "stream" | "append" => {
            let file = open(&format!("fill-{how}.bin"))?;
            let stream = if how == "stream" {
                file.write_via_stream(0)
            } else {
                file.append_via_stream()
            }
            .map_err(|e| StoreError::Io(format!("{e:?}")))?;
            loop {
                if added >= bytes {
                    break None;
                }
                match stream.blocking_write_and_flush(&chunk) {
                    Ok(()) => added += CHUNK as u64,
                    Err(wasip2::io::streams::StreamError::LastOperationFailed(e)) => {
                        let code = wasip2::filesystem::types::filesystem_error_code(&e);
                        break Some(format!("{code:?}"));
                    }
                    Err(e) => break Some(format!("{e:?}")),
                }
            }
        }
        "set-size" => {
            let file = open("fill-set-size.bin")?;
            match file.set_size(bytes) {
                Ok(()) => {
                    added = bytes;
                    None
                }
                Err(e) => Some(format!("{e:?}")),
            }
        }
        "rename-self" => {
            // Created exclusively, so the host fences it for this instance and its renames
            // never probe the file's kernel lock: a probe can find that lock briefly held by
            // a copy of the host's descriptor in a child the host process is spawning, and
            // the rename would then be refused as `busy`, which is not what this case tests.
            let file = root
                .open_at(
                    PathFlags::empty(),
                    "fill-rename.bin",
                    OpenFlags::CREATE | OpenFlags::EXCLUSIVE,
                    DescriptorFlags::READ | DescriptorFlags::WRITE,
                )
                .map_err(|e| StoreError::Io(format!("open fill-rename.bin: {e:?}")))?;
            loop {
                if added >= bytes {
                    break None;
                }
                if let Err(e) = file.write(&chunk, added) {
                    break Some(format!("{e:?}"));
                }
                added += CHUNK as u64;
                // A rename onto itself frees nothing.
                if let Err(e) = root.rename_at("fill-rename.bin", root, "fill-rename.bin") {
                    break Some(format!("rename: {e:?}"));
                }
            }
        }
        "truncate-reuse" => {
            // A write stream opened on a 256 KiB file, the file truncated through another
            // descriptor, the stream writing the 256 KiB again: sixteen times. Then a second
            // file, filled.
            let reused = open("fill-reused.bin")?;
            for k in 0..64u64 {
                reused
                    .write(&chunk, k * CHUNK as u64)
                    .map_err(|e| StoreError::Io(format!("{e:?}")))?;
            }
            for _ in 0..16 {
                let stream = reused
                    .write_via_stream(0)
                    .map_err(|e| StoreError::Io(format!("{e:?}")))?;
                drop(open("fill-reused.bin")?);
                for _ in 0..64 {
                    stream
                        .blocking_write_and_flush(&chunk)
                        .map_err(|e| StoreError::Io(format!("{e:?}")))?;
                }
            }
            pwrite_until(&open("fill-after.bin")?, bytes, &mut added)
        }
        "unlink-held" => {
            // Files written, kept open, and unlinked: their space stays in use while held.
            let mut n = 0u64;
            let mut held = Vec::new();
            loop {
                if added >= bytes {
                    break None;
                }
                let name = format!("held-{n}");
                let file = open(&name)?;
                let mut failed = None;
                for k in 0..64u64 {
                    match file.write(&chunk, k * CHUNK as u64) {
                        Ok(w) => added += w,
                        Err(e) => {
                            failed = Some(format!("{e:?}"));
                            break;
                        }
                    }
                }
                let _ = root.unlink_file_at(&name);
                held.push(file);
                if failed.is_some() {
                    break failed;
                }
                n += 1;
            }
        }
        "files" => {
            let mut n = 0u64;
            loop {
                if added >= bytes {
                    break None;
                }
                match open(&format!("empty-{n}")) {
                    Ok(_) => added += 4096,
                    Err(StoreError::Io(e)) => break Some(e),
                    Err(e) => return Err(e),
                }
                n += 1;
            }
        }
        _ => {
            return Err(StoreError::InvalidInput(format!(
                "fill: unknown way {how:?}"
            )));
        }
    };
    Ok((added, stopped))
}

/// Writes `file` from `*added` on with `descriptor.write` until it holds `bytes` or a write
/// fails; returns that failure.
#[cfg(target_family = "wasm")]
fn pwrite_until(
    file: &wasip2::filesystem::types::Descriptor,
    bytes: u64,
    added: &mut u64,
) -> Option<String> {
    let chunk = [b'f'; 4096];
    while *added < bytes {
        match file.write(&chunk, *added) {
            Ok(n) => *added += n,
            Err(e) => return Some(format!("{e:?}")),
        }
    }
    None
}

#[cfg(not(target_family = "wasm"))]
fn fill(_how: &str, _bytes: u64) -> Result<(u64, Option<String>), StoreError> {
    Ok((0, None))
}

/// One positional `read` of `len` bytes from the start of the file `name`: how many bytes the
/// host answered with, and whether it said the file ended there.
#[cfg(target_family = "wasm")]
fn read_once(name: &str, len: u64) -> Result<(usize, bool), StoreError> {
    use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    let dirs = wasip2::filesystem::preopens::get_directories();
    let (root, _) = dirs
        .first()
        .ok_or_else(|| StoreError::Io("no preopened directory".into()))?;
    let file = root
        .open_at(
            PathFlags::empty(),
            name,
            OpenFlags::empty(),
            DescriptorFlags::READ,
        )
        .map_err(|e| StoreError::Io(format!("open {name}: {e:?}")))?;
    let (bytes, end) = file
        .read(len, 0)
        .map_err(|e| StoreError::Io(format!("read {name}: {e:?}")))?;
    Ok((bytes.len(), end))
}

#[cfg(not(target_family = "wasm"))]
fn read_once(_name: &str, _len: u64) -> Result<(usize, bool), StoreError> {
    Ok((0, false))
}

/// Opens `name` (created if need be) and, `rounds` times, writes 64 KiB at its start and
/// truncates it to nothing.
#[cfg(target_family = "wasm")]
fn truncate_race(name: &str, rounds: u32) -> Result<(), StoreError> {
    use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    let dirs = wasip2::filesystem::preopens::get_directories();
    let (root, _) = dirs
        .first()
        .ok_or_else(|| StoreError::Io("no preopened directory".into()))?;
    let file = root
        .open_at(
            PathFlags::empty(),
            name,
            OpenFlags::CREATE,
            DescriptorFlags::READ | DescriptorFlags::WRITE,
        )
        .map_err(|e| StoreError::Io(format!("open {name}: {e:?}")))?;
    let chunk = vec![b'r'; 64 << 10];
    for _ in 0..rounds {
        file.write(&chunk, 0)
            .map_err(|e| StoreError::Io(format!("write: {e:?}")))?;
        file.set_size(0)
            .map_err(|e| StoreError::Io(format!("set-size: {e:?}")))?;
    }
    Ok(())
}

#[cfg(not(target_family = "wasm"))]
fn truncate_race(_name: &str, _rounds: u32) -> Result<(), StoreError> {
    Ok(())
}

/// The append stream `append-keep` keeps for a later call, with its file.
#[cfg(target_family = "wasm")]
static KEPT_APPEND: std::sync::Mutex<
    Option<(
        wasip2::filesystem::types::Descriptor,
        wasip2::io::streams::OutputStream,
    )>,
> = std::sync::Mutex::new(None);

/// Opens `name` (created if need be), writes `a` through an append stream, and keeps the
/// stream for a later call (`append-kept`).
#[cfg(target_family = "wasm")]
fn append_keep(name: &str) -> Result<(), StoreError> {
    use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    let dirs = wasip2::filesystem::preopens::get_directories();
    let (root, _) = dirs
        .first()
        .ok_or_else(|| StoreError::Io("no preopened directory".into()))?;
    let file = root
        .open_at(
            PathFlags::empty(),
            name,
            OpenFlags::CREATE,
            DescriptorFlags::READ | DescriptorFlags::WRITE,
        )
        .map_err(|e| StoreError::Io(format!("open {name}: {e:?}")))?;
    let stream = file
        .append_via_stream()
        .map_err(|e| StoreError::Io(format!("append stream: {e:?}")))?;
    stream
        .blocking_write_and_flush(b"a")
        .map_err(|e| StoreError::Io(format!("append: {e:?}")))?;
    *KEPT_APPEND.lock().unwrap_or_else(|e| e.into_inner()) = Some((file, stream));
    Ok(())
}

/// Through the stream `append-keep` kept on this instance, if it has one: writes `b`, then
/// syncs the file (which a call running on an async worker may not do: the host runs the call
/// again on a blocking thread, on a fresh instance). Whether it had a stream to write.
#[cfg(target_family = "wasm")]
fn append_kept() -> Result<bool, StoreError> {
    let kept = KEPT_APPEND.lock().unwrap_or_else(|e| e.into_inner());
    let Some((file, stream)) = kept.as_ref() else {
        return Ok(false);
    };
    stream
        .blocking_write_and_flush(b"b")
        .map_err(|e| StoreError::Io(format!("append: {e:?}")))?;
    file.sync()
        .map_err(|e| StoreError::Io(format!("sync: {e:?}")))?;
    Ok(true)
}

#[cfg(not(target_family = "wasm"))]
fn append_keep(_name: &str) -> Result<(), StoreError> {
    Ok(())
}

#[cfg(not(target_family = "wasm"))]
fn append_kept() -> Result<bool, StoreError> {
    Ok(false)
}

/// Natively (clippy, `cargo test --workspace`) the crate is only type-checked.
#[cfg(not(target_family = "wasm"))]
fn links(_attempt: &mut impl FnMut(&str, String)) {}

fn escape(id: &str, host_dir: &str) -> String {
    let mut results = Vec::new();
    let mut attempt = |name: &str, r: String| results.push((name.to_owned(), r));
    for path in [
        "../secret.txt",
        "/../secret.txt",
        "../../secret.txt",
        "link-out",
        "linkdir/secret.txt",
    ] {
        attempt(&format!("read {path}"), outcome(std::fs::read(path)));
    }
    attempt(
        &format!("read {host_dir}/secret.txt"),
        outcome(std::fs::read(format!("{host_dir}/secret.txt"))),
    );
    for path in [
        "../planted.txt",
        "/../planted.txt",
        "linkdir/planted.txt",
        "link-out",
    ] {
        attempt(
            &format!("write {path}"),
            outcome(std::fs::write(path, "pwned")),
        );
    }
    attempt(
        &format!("write {host_dir}/planted.txt"),
        outcome(std::fs::write(format!("{host_dir}/planted.txt"), "pwned")),
    );
    attempt(
        "list ..",
        outcome(std::fs::read_dir("..").map(|d| d.count())),
    );
    attempt(
        "rename link-out",
        outcome(std::fs::rename("link-out", "../moved.txt")),
    );
    attempt(
        "remove ../secret.txt",
        outcome(std::fs::remove_file("../secret.txt")),
    );
    // Links inside its own directory: a relative symlink that climbs out (which anything else
    // reading the directory would follow), one to a sibling, and a hard link.
    links(&mut attempt);
    attempt(
        "hard link link-out",
        outcome(std::fs::hard_link("link-out", "hard")),
    );
    report(id, &results)
}

fn ambient(id: &str) -> String {
    let env: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
    let args: Vec<String> = std::env::args().collect();
    let mut stdin = String::new();
    let stdin_read = std::io::stdin()
        .read_to_string(&mut stdin)
        .map(|_| stdin.len());
    let tcp = std::net::TcpStream::connect("127.0.0.1:9").map(|_| ());
    let dns = std::net::ToSocketAddrs::to_socket_addrs(&("localhost", 80)).map(|_| ());
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").and_then(|s| s.send_to(b"x", "127.0.0.1:9"));
    let entries = [
        ("env".to_owned(), env.join(";")),
        ("args".to_owned(), args.join(" ")),
        ("stdin".to_owned(), format!("{stdin_read:?}")),
        ("tcp".to_owned(), outcome(tcp)),
        ("dns".to_owned(), outcome(dns)),
        ("udp".to_owned(), outcome(udp)),
    ];
    report(id, &entries)
}

/// Holds `mib` MiB of memory, marks itself as running (a file `inside-<n>`), and waits until
/// `want` calls are inside at once or `ms` have passed; answers the most calls that were
/// inside at once while it was. The first call to see `want` inside leaves a file `gathered`
/// before it goes, so the others, still inside then, know without seeing it themselves.
fn gather(want: u64, ms: u64, mib: u64) -> Result<u64, StoreError> {
    let io = |e: std::io::Error| StoreError::Io(e.to_string());
    let held = black_box(vec![1u8; usize::try_from(mib << 20).unwrap_or(usize::MAX)]);
    let mut mark = String::new();
    for n in 0u32.. {
        mark = format!("/inside-{n}");
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&mark)
        {
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
    }
    let inside = || -> Result<u64, StoreError> {
        // An entry that fails to read is one a call just removed: not inside any more.
        let n = std::fs::read_dir("/")
            .map_err(io)?
            .flatten()
            .filter(|entry| entry.file_name().to_string_lossy().starts_with("inside-"))
            .count();
        Ok(n as u64)
    };
    let until = std::time::Instant::now() + std::time::Duration::from_millis(ms);
    let mut most = 0;
    loop {
        most = most.max(inside()?);
        if most >= want {
            std::fs::write("/gathered", "").map_err(io)?;
            break;
        }
        if std::fs::metadata("/gathered").is_ok() {
            most = want;
            break;
        }
        if std::time::Instant::now() >= until {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::fs::remove_file(&mark).map_err(io)?;
    drop(black_box(held));
    Ok(most)
}

impl Guest for Hostile {
    /// Whatever the attack named by `id` answers, at version 1.
    fn get(id: String) -> Result<Option<StoredTask>, StoreError> {
        Ok(attack(id)?.map(|task| StoredTask { task, version: 1 }))
    }

    fn save(task: String, _condition: Condition) -> Result<u64, StoreError> {
        if task.contains("\"trap\"") {
            panic!("this component traps on purpose");
        }
        if task.contains("\"loop\"") {
            let mut n: u64 = 0;
            loop {
                n = black_box(n.wrapping_add(1));
            }
        }
        Ok(1)
    }
}

/// The attack `id` names (see the table above): the text `get` answers, if any.
fn attack(id: String) -> Result<Option<String>, StoreError> {
    if let Some(host_dir) = id.strip_prefix("escape:") {
        return Ok(Some(escape(&id, host_dir)));
    }
    if let Some(size) = id.strip_prefix("huge:") {
        let size: usize = size
            .parse()
            .map_err(|_| StoreError::InvalidInput("huge:<bytes>".into()))?;
        return Ok(Some(report(&id, &[("pad".into(), "x".repeat(size))])));
    }
    if let Some(size) = id.strip_prefix("error-huge:") {
        let size: usize = size
            .parse()
            .map_err(|_| StoreError::InvalidInput("error-huge:<bytes>".into()))?;
        return Err(StoreError::Other("E".repeat(size)));
    }
    for (prefix, fail) in [("fill:", false), ("fill-fail:", true)] {
        let Some(args) = id.strip_prefix(prefix) else {
            continue;
        };
        let (how, bytes) = args
            .split_once(':')
            .and_then(|(how, bytes)| Some((how, bytes.parse::<u64>().ok()?)))
            .ok_or_else(|| StoreError::InvalidInput("fill:<how>:<bytes>".into()))?;
        let (added, stopped) = fill(how, bytes)?;
        if fail && let Some(error) = &stopped {
            return Err(StoreError::Io(format!(
                "wrote {added} bytes, then: {error}"
            )));
        }
        let stopped = stopped.unwrap_or_else(|| "nothing".into());
        return Ok(Some(report(
            &id,
            &[
                ("added".into(), added.to_string()),
                ("stopped".into(), stopped),
            ],
        )));
    }
    if let Some(name) = id.strip_prefix("open:") {
        return match std::fs::File::open(format!("/{name}")) {
            Ok(_) => Ok(Some(report(&id, &[("opened".into(), name.into())]))),
            Err(e) => Err(StoreError::Io(format!("open {name}: {e}"))),
        };
    }
    if let Some(args) = id.strip_prefix("hold-open:") {
        let (name, gate) = args
            .split_once(':')
            .ok_or_else(|| StoreError::InvalidInput("hold-open:<name>:<gate>".into()))?;
        let held = std::fs::File::open(format!("/{name}"))
            .map_err(|e| StoreError::Io(format!("open {name}: {e}")))?;
        std::fs::write(format!("/{gate}.opened"), b"")
            .map_err(|e| StoreError::Io(format!("mark {gate}: {e}")))?;
        while std::fs::metadata(format!("/{gate}")).is_err() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        drop(held);
        return Ok(None);
    }
    if let Some(gate) = id.strip_prefix("hoard-until:") {
        // The mark is opened first: once the hoard is taken, no open may be left for it.
        let mut mark = std::fs::File::create(format!("/{gate}.opened"))
            .map_err(|e| StoreError::Io(format!("mark {gate}: {e}")))?;
        let opened = open_many("/hoard.txt", 25_000)?;
        mark.write_all(opened.len().to_string().as_bytes())
            .map_err(|e| StoreError::Io(format!("mark {gate}: {e}")))?;
        while std::fs::metadata(format!("/{gate}")).is_err() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let count = opened.len().to_string();
        drop(opened);
        return Ok(Some(report(&id, &[("opened".into(), count)])));
    }
    if let Some(name) = id.strip_prefix("unlink:") {
        std::fs::remove_file(format!("/{name}"))
            .map_err(|e| StoreError::Io(format!("unlink {name}: {e}")))?;
        return Ok(None);
    }
    if let Some(args) = id.strip_prefix("truncate-race:") {
        let (name, rounds) = args
            .split_once(':')
            .and_then(|(name, rounds)| Some((name, rounds.parse::<u32>().ok()?)))
            .ok_or_else(|| StoreError::InvalidInput("truncate-race:<name>:<rounds>".into()))?;
        truncate_race(name, rounds)?;
        return Ok(None);
    }
    if let Some(name) = id.strip_prefix("append-keep:") {
        append_keep(name)?;
        return Ok(None);
    }
    if id == "append-kept" {
        let wrote = append_kept()?;
        return Ok(Some(report(&id, &[("wrote".into(), wrote.to_string())])));
    }
    if let Some(args) = id.strip_prefix("read-once:") {
        let (name, len) = args
            .split_once(':')
            .and_then(|(name, len)| Some((name, len.parse::<u64>().ok()?)))
            .ok_or_else(|| StoreError::InvalidInput("read-once:<name>:<len>".into()))?;
        let (got, end) = read_once(name, len)?;
        return Ok(Some(report(
            &id,
            &[
                ("got".into(), got.to_string()),
                ("end".into(), end.to_string()),
            ],
        )));
    }
    if let Some(args) = id.strip_prefix("gather:") {
        let parsed: Option<Vec<u64>> = args.split(':').map(|n| n.parse().ok()).collect();
        let Some(&[want, ms, mib]) = parsed.as_deref() else {
            return Err(StoreError::InvalidInput("gather:<calls>:<ms>:<MiB>".into()));
        };
        let most = gather(want, ms, mib)?;
        return Ok(Some(report(&id, &[("most".into(), most.to_string())])));
    }
    if let Some(ms) = id.strip_prefix("sleep:") {
        let ms: u64 = ms
            .parse()
            .map_err(|_| StoreError::InvalidInput("sleep:<ms>".into()))?;
        std::thread::sleep(std::time::Duration::from_millis(ms));
        return Ok(None);
    }
    match id.as_str() {
        hoard if hoard == "hoard" || hoard.starts_with("hoard:") => {
            let times: u32 = hoard
                .strip_prefix("hoard:")
                .map_or(Ok(25_000), str::parse)
                .map_err(|_| StoreError::InvalidInput("hoard:<n>".into()))?;
            let opened = open_many("/hoard.txt", times)?;
            let count = opened.len().to_string();
            // Kept past the call: the host must close them.
            std::mem::forget(opened);
            Ok(Some(report(&id, &[("opened".into(), count)])))
        }
        "sleep-forever" => loop {
            std::thread::sleep(std::time::Duration::MAX);
        },
        "error-ctrl" => Err(StoreError::Corrupt(FORGED.into())),
        "panic-ctrl" => panic!("{FORGED}"),
        "stderr-ctrl" => {
            let _ = writeln!(std::io::stderr(), "{FORGED}");
            Ok(None)
        }
        "ambient" => Ok(Some(ambient(&id))),
        "loop" => {
            let mut n: u64 = 0;
            loop {
                n = black_box(n.wrapping_add(1));
            }
        }
        "loop-mark" => {
            for n in 0u32.. {
                let created = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(format!("/started-{n}"));
                if created.is_ok() {
                    break;
                }
            }
            let mut n: u64 = 0;
            loop {
                n = black_box(n.wrapping_add(1));
            }
        }
        "grow" => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(black_box(vec![1u8; 1 << 20]));
            }
        }
        "other-id" => Ok(Some(report("someone-else", &[]))),
        "not-json" => Ok(Some("this is not JSON".into())),
        "not-object" => Ok(Some("[\"other-id\"]".into())),
        "trap" => panic!("this component traps on purpose"),
        "stderr" => {
            let _ = writeln!(std::io::stderr(), "hostile component says hello on stderr");
            Ok(None)
        }
        _ => Ok(None),
    }
}

impl ConfigGuest for Hostile {
    fn configure(_settings: Vec<(String, String)>) -> Result<(), String> {
        if std::fs::metadata("/sleep-in-configure").is_ok() {
            loop {
                std::thread::sleep(std::time::Duration::MAX);
            }
        }
        Ok(())
    }
}

// Only a wasm build exports the component ABI; a native build (clippy, `cargo test --workspace`)
// just type-checks the code, since export names like `toolnexus:task-store/...` are not valid
// native linker symbols.
#[cfg(target_family = "wasm")]
export!(Hostile);
