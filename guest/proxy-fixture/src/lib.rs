//! `proxy-fixture`: a `wasi:http/proxy` component (it exports `wasi:http/incoming-handler`)
//! for the tests of the host that serves such components. The request's path picks what it
//! does; files are in the one preopened directory, `/`:
//!
//! | path | does |
//! |---|---|
//! | `/hello` | answers 200 `hello` |
//! | `/echo` | answers 200 with the request's body, its method, path and each header as `x-echo-<name>` |
//! | `/stream?n=N[&gate=G]` | answers N chunks `chunk <i>\n`, each flushed on its own; with a gate, waits for the file `/<G>-<i>` before each chunk after the first |
//! | `/after?file=F[&gate=G]` | answers 200 `sent` and finishes the body, then (once the file `/<G>` exists) writes the file `/<F>` |
//! | `/hold?gate=G` | writes `/<G>.started`, waits for the file `/<G>`, then answers 200 `released` |
//! | `/spin[?after=1]` | loops forever (with `after`, once a first chunk of the answer is out) |
//! | `/hoard` | grows its memory until the host refuses, which traps |
//! | `/trap` | traps |
//! | `/write?bytes=N&file=F` | writes N bytes to `/<F>`: 200 `wrote N`, or 500 with the error |
//! | `/escape` | tries to reach or link outside its directory: one line per attempt, `<what>: refused` or `<what>: ALLOWED` |
//! | `/fetch?url=U` | GETs U through `wasi:http/outgoing-handler`: its status and body, or 502 with the error |
//!
//! Anything else answers 404. Gates are polled every few milliseconds, so a test releases the
//! component by creating a file, never by waiting a guessed time.

use std::io::Write as _;
use std::time::Duration;
use wasi::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
use wasi::http::outgoing_handler;
use wasi::http::types::{
    Fields, IncomingRequest, OutgoingBody, OutgoingRequest, OutgoingResponse, ResponseOutparam,
    Scheme,
};
use wasi::io::streams::{OutputStream, StreamError};

struct Fixture;

wasi::http::proxy::export!(Fixture);

impl wasi::exports::http::incoming_handler::Guest for Fixture {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let path_with_query = request.path_with_query().unwrap_or_default();
        let (path, query) = path_with_query
            .split_once('?')
            .unwrap_or((path_with_query.as_str(), ""));
        let param = |name: &str| {
            query.split('&').find_map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                (key == name).then(|| value.to_owned())
            })
        };
        match path {
            "/hello" => respond(out, 200, &[], b"hello"),
            "/echo" => echo(request, out),
            "/stream" => {
                let n = param("n").and_then(|n| n.parse().ok()).unwrap_or(3);
                stream(out, n, param("gate"));
            }
            "/after" => {
                respond(out, 200, &[], b"sent");
                if let Some(gate) = param("gate") {
                    wait_for(&gate);
                }
                let file = param("file").unwrap_or_else(|| "after".into());
                std::fs::write(format!("/{file}"), b"written after the response")
                    .expect("the continuation can write its file");
            }
            "/hold" => {
                let gate = param("gate").unwrap_or_else(|| "gate".into());
                std::fs::write(format!("/{gate}.started"), b"").expect("can mark the start");
                wait_for(&gate);
                respond(out, 200, &[], b"released");
            }
            "/spin" => {
                if param("after").is_some() {
                    let (body, stream) = start(out, 200, &[]);
                    write_all(&stream, b"first chunk\n").expect("the first chunk goes out");
                    // Held, never finished: the host must end this stream.
                    std::mem::forget((body, stream));
                }
                spin()
            }
            "/hoard" => hoard(),
            "/trap" => panic!("asked to trap"),
            "/write" => {
                let bytes: usize = param("bytes").and_then(|n| n.parse().ok()).unwrap_or(0);
                let file = param("file").unwrap_or_else(|| "written".into());
                match write_file(&file, bytes) {
                    Ok(()) => respond(out, 200, &[], format!("wrote {bytes}").as_bytes()),
                    Err(e) => respond(out, 500, &[], format!("error: {e}").as_bytes()),
                }
            }
            "/escape" => respond(out, 200, &[], escape().as_bytes()),
            "/fetch" => match fetch(&param("url").unwrap_or_default()) {
                Ok((status, body)) => {
                    let text = format!("{status} {}", String::from_utf8_lossy(&body));
                    respond(out, 200, &[], text.as_bytes());
                }
                Err(e) => respond(out, 502, &[], e.as_bytes()),
            },
            _ => respond(out, 404, &[], b"no such behaviour"),
        }
    }
}

/// Sets the response head and returns its body and the body's stream.
fn start(
    out: ResponseOutparam,
    status: u16,
    headers: &[(String, Vec<u8>)],
) -> (OutgoingBody, OutputStream) {
    let fields = Fields::new();
    for (name, value) in headers {
        fields
            .append(name, value)
            .expect("the fixture's headers are valid");
    }
    let response = OutgoingResponse::new(fields);
    response.set_status_code(status).expect("a valid status");
    let body = response.body().expect("the body, once");
    ResponseOutparam::set(out, Ok(response));
    let stream = body.write().expect("the body's stream, once");
    (body, stream)
}

fn finish(body: OutgoingBody, stream: OutputStream) {
    drop(stream);
    OutgoingBody::finish(body, None).expect("the body finishes");
}

fn respond(out: ResponseOutparam, status: u16, headers: &[(String, Vec<u8>)], body: &[u8]) {
    let (outgoing, stream) = start(out, status, headers);
    write_all(&stream, body).expect("the answer is written");
    finish(outgoing, stream);
}

/// Writes all of `bytes` and flushes (the blocking call takes at most 4096 bytes at a time).
fn write_all(stream: &OutputStream, bytes: &[u8]) -> Result<(), StreamError> {
    for chunk in bytes.chunks(4096) {
        stream.blocking_write_and_flush(chunk)?;
    }
    if bytes.is_empty() {
        stream.blocking_flush()?;
    }
    Ok(())
}

fn echo(request: IncomingRequest, out: ResponseOutparam) {
    let mut headers = vec![
        (
            "x-echo-method".to_owned(),
            format!("{:?}", request.method()).into_bytes(),
        ),
        (
            "x-echo-path".to_owned(),
            request.path_with_query().unwrap_or_default().into_bytes(),
        ),
    ];
    for (name, value) in request.headers().entries() {
        headers.push((format!("x-echo-{name}"), value));
    }
    let incoming = request.consume().expect("the request body, once");
    let stream = incoming.stream().expect("its stream, once");
    let mut body = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(bytes) => body.extend_from_slice(&bytes),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                drop(stream);
                return respond(out, 400, &[], e.to_debug_string().as_bytes());
            }
        }
    }
    drop(stream);
    respond(out, 200, &headers, &body);
}

fn stream(out: ResponseOutparam, n: usize, gate: Option<String>) {
    let headers = [("content-type".to_owned(), b"text/event-stream".to_vec())];
    let (body, stream) = start(out, 200, &headers);
    for i in 0..n {
        if i > 0
            && let Some(gate) = &gate
        {
            wait_for(&format!("{gate}-{i}"));
        }
        if write_all(&stream, format!("chunk {i}\n").as_bytes()).is_err() {
            // The client went away.
            return;
        }
    }
    finish(body, stream);
}

/// Waits until the file `/<name>` exists.
fn wait_for(name: &str) {
    let path = format!("/{name}");
    while std::fs::metadata(&path).is_err() {
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn spin() -> ! {
    let mut n = 0u64;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

fn hoard() -> ! {
    let mut held: Vec<Vec<u8>> = Vec::new();
    loop {
        held.push(std::hint::black_box(vec![1u8; 1 << 20]));
    }
}

fn write_file(name: &str, bytes: usize) -> std::io::Result<()> {
    let mut file = std::fs::File::create(format!("/{name}"))?;
    let block = vec![b'x'; 64 * 1024];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len());
        file.write_all(&block[..n])?;
        left -= n;
    }
    file.sync_all()
}

/// Every way out of the directory it tries, each with what happened.
fn escape() -> String {
    let mut lines = Vec::new();
    let mut note = |what: &str, result: std::io::Result<()>| {
        let outcome = match result {
            Ok(()) => "ALLOWED".to_owned(),
            Err(e) => format!("refused ({e})"),
        };
        lines.push(format!("{what}: {outcome}"));
    };
    note(
        "read ../outside.txt",
        std::fs::read("/../outside.txt").map(drop),
    );
    note(
        "read ../../etc/passwd",
        std::fs::read("../../etc/passwd").map(drop),
    );
    note(
        "create ../created.txt",
        std::fs::write("/../created.txt", b"escaped"),
    );
    // Links through the preopened directory's descriptor (std has no stable call for them).
    let preopens = wasi::filesystem::preopens::get_directories();
    match preopens.first() {
        Some((root, _)) => {
            note(
                "symlink to ..",
                root.symlink_at("..", "up-link").map_err(fs_error),
            );
            note(
                "open-at ..",
                root.open_at(
                    PathFlags::empty(),
                    "..",
                    OpenFlags::DIRECTORY,
                    DescriptorFlags::READ,
                )
                .map(drop)
                .map_err(fs_error),
            );
        }
        None => note(
            "a preopened directory",
            Err(std::io::ErrorKind::NotFound.into()),
        ),
    }
    note(
        "hard link",
        std::fs::write("/inside.txt", b"inside")
            .and_then(|()| std::fs::hard_link("/inside.txt", "/hard-link")),
    );
    lines.join("\n")
}

fn fs_error(code: wasi::filesystem::types::ErrorCode) -> std::io::Error {
    std::io::Error::other(format!("{code:?}"))
}

fn fetch(url: &str) -> Result<(u16, Vec<u8>), String> {
    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => return Err(format!("not an http(s) URL: {url:?}")),
    };
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, "/"),
    };
    let request = OutgoingRequest::new(Fields::new());
    request.set_scheme(Some(&scheme)).map_err(|()| "scheme")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| "authority")?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| "path")?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or("no response")?
        .map_err(|()| "taken twice")?
        .map_err(|e| format!("{e:?}"))?;
    let status = response.status();
    let body = response.consume().map_err(|()| "body taken twice")?;
    let stream = body.stream().map_err(|()| "stream taken twice")?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => return Err(e.to_debug_string()),
        }
    }
    Ok((status, bytes))
}
