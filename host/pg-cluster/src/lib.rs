//! Throwaway PostgreSQL clusters for tests: `initdb` and `postgres` from `PATH` or
//! `/usr/lib/postgresql/*/bin`, run as the `postgres` user when we are root, on a free port of
//! 127.0.0.1, in a temp dir removed afterwards; plaintext only or also TLS (`ssl=on` with a
//! certificate the caller supplies), optionally with a Unix socket of their own.
//!
//! And the policy every PostgreSQL test follows when no server can be had: it prints
//! `SKIPPED: …` and returns ([`unavailable`]), unless `TOOLNEXUS_REQUIRE_POSTGRES=1` (CI), where
//! that is a failure.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `1`: a test that cannot get a server fails instead of skipping.
pub const REQUIRE_ENV: &str = "TOOLNEXUS_REQUIRE_POSTGRES";

/// What the server logs when it cannot listen because its port is taken.
const PORT_TAKEN: &str = "Address already in use";

/// The superuser and password of the clusters (password authentication over TCP, so wrong
/// credentials are refused as on a real server).
pub const USER: &str = "toolnexus";
pub const PASSWORD: &str = "tn-test-secret";

/// Whether a missing server is a failure (`TOOLNEXUS_REQUIRE_POSTGRES=1`).
pub fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1")
}

/// No server for this test, because of `reason`: panics if one is required, else prints
/// `SKIPPED: …` and returns `None`. `alternative` is another way to get one, offered before
/// installing PostgreSQL (e.g. "Set SOME_URL to a server").
pub fn unavailable<T>(reason: &str, alternative: Option<&str>) -> Option<T> {
    if required() {
        panic!("PostgreSQL is required ({REQUIRE_ENV}=1) but unavailable: {reason}");
    }
    let install = match alternative {
        Some(alternative) => format!("{alternative}, or install"),
        None => "Install".to_owned(),
    };
    eprintln!(
        "SKIPPED: no PostgreSQL server for this test: {reason}. {install} PostgreSQL (initdb and \
         postgres on PATH or under /usr/lib/postgresql/*/bin); set {REQUIRE_ENV}=1 to make this \
         a failure."
    );
    None
}

/// The files a cluster serves TLS with, PEM.
pub struct Tls {
    /// The CA that signed `cert`, kept at [`Cluster::ca_path`] for clients.
    pub ca: String,
    /// The server's certificate.
    pub cert: String,
    /// Its private key.
    pub key: String,
}

/// How to start a [`Cluster`]; the default is plaintext only, TCP only.
#[derive(Default)]
pub struct Options {
    /// `ssl=on` with these files; `ssl=off` without.
    pub tls: Option<Tls>,
    /// A Unix socket in the cluster's own directory ([`Cluster::socket_dir`]); none without.
    pub unix_socket: bool,
}

/// One cluster shared by the tests running at once: the first to ask starts it, the last to
/// drop its `Arc` stops it. For a `static`.
pub struct SharedCluster {
    slot: Mutex<Weak<Cluster>>,
}

impl SharedCluster {
    pub const fn new() -> Self {
        SharedCluster {
            slot: Mutex::new(Weak::new()),
        }
    }

    /// The running cluster, or one started with `start`, or why not.
    pub fn get_or_start(
        &self,
        start: impl FnOnce() -> Result<Cluster, String>,
    ) -> Result<Arc<Cluster>, String> {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cluster) = slot.upgrade() {
            return Ok(cluster);
        }
        let cluster = Arc::new(start()?);
        *slot = Arc::downgrade(&cluster);
        Ok(cluster)
    }
}

impl Default for SharedCluster {
    fn default() -> Self {
        Self::new()
    }
}

/// A throwaway PostgreSQL cluster: initdb'd in a temp dir, served on a free port of 127.0.0.1,
/// stopped and removed when dropped. If the test process dies, the server gets SIGQUIT
/// (`setpriv --pdeathsig`) and shuts down at once.
pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    tls: bool,
    unix_socket: bool,
    running: Mutex<Option<JoinHandle<std::io::Result<ExitStatus>>>>,
}

impl Cluster {
    /// initdb + start with the default [`Options`], or why not.
    pub fn start() -> Result<Cluster, String> {
        Cluster::start_with(Options::default())
    }

    /// initdb + (with `tls`) its files + start, or why not.
    pub fn start_with(options: Options) -> Result<Cluster, String> {
        let bin = find_bin_dir().ok_or(
            "initdb and postgres are not on PATH or under /usr/lib/postgresql/*/bin".to_owned(),
        )?;
        if is_root() && !user_exists("postgres") {
            return Err(
                "running as root, and there is no \"postgres\" user to run the server as".into(),
            );
        }
        let dir = tempfile::Builder::new()
            .prefix(if options.tls.is_some() {
                "toolnexus-pg-tls-"
            } else {
                "toolnexus-pg-"
            })
            .tempdir()
            .map_err(|e| format!("cannot make a temp dir: {e}"))?;
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).map_err(|e| format!("cannot write pwfile: {e}"))?;
        if let Some(tls) = &options.tls {
            write_file(&dir.path().join("ca.pem"), &tls.ca, 0o644)?;
            write_file(&dir.path().join("server.crt"), &tls.cert, 0o644)?;
            // The server refuses a key others can read.
            write_file(&dir.path().join("server.key"), &tls.key, 0o600)?;
        }
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(dir.path())
                .status()
                .map_err(|e| format!("cannot run chown: {e}"))?;
            if !status.success() {
                return Err(format!("chown postgres {} failed", dir.path().display()));
            }
        }
        let output = as_server_user(&bin.join("initdb"))
            .arg("-D")
            .arg(dir.path().join("data"))
            .args([
                "-U",
                USER,
                "--auth-host=scram-sha-256",
                "--auth-local=trust",
            ])
            .arg(format!("--pwfile={}", pwfile.display()))
            .args(["-E", "UTF8", "--no-locale", "--no-sync"])
            .output()
            .map_err(|e| format!("cannot run initdb: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        let mut cluster = Cluster {
            dir,
            bin,
            port: 0,
            tls: options.tls.is_some(),
            unix_socket: options.unix_socket,
            running: Mutex::new(None),
        };
        let mut last_error = String::new();
        // A free port can be taken between our probe and the server's bind: try a few.
        for _ in 0..5 {
            cluster.port = free_port().map_err(|e| format!("cannot find a free port: {e}"))?;
            match cluster.start_once() {
                Ok(()) => return Ok(cluster),
                Err(e) => last_error = e,
            }
        }
        Err(format!("the server would not start: {last_error}"))
    }

    /// `postgres://toolnexus:…@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        self.url_for_host("127.0.0.1")
    }

    /// The URL with `host` as the host name (connect with `hostaddr=127.0.0.1` when it does not
    /// resolve to the server).
    pub fn url_for_host(&self, host: &str) -> String {
        format!("postgres://{USER}:{PASSWORD}@{host}:{}/postgres", self.port)
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory of its Unix socket, with [`Options::unix_socket`] (local connections need
    /// no password).
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().to_owned()
    }

    /// The CA that signed the server's certificate, with [`Options::tls`].
    pub fn ca_path(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// Stops the server: `mode` is `fast` (disconnect clients, checkpoint) or `immediate`
    /// (abort at once, as a crash would; the next start recovers from the WAL).
    pub fn stop(&self, mode: &str) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(waiter) = running {
            self.pg_ctl_stop(mode);
            let _ = waiter.join();
        }
    }

    /// Starts the server again (after [`stop`](Self::stop)) on the same port and data. Clients
    /// know the server by its port, so while something else holds it (a connection of another
    /// test's can be given it as its local port while the server is down) this retries, for up
    /// to a minute.
    pub fn resume(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match self.start_once() {
                Err(e) if e.contains(PORT_TAKEN) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                result => return result,
            }
        }
    }

    /// Starts the server on its port, once, or why not (with [`PORT_TAKEN`] in the reason when
    /// the port was taken).
    fn start_once(&self) -> Result<(), String> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running.is_some() {
            return Ok(());
        }
        let log_path = self.dir.path().join("server.log");
        let log = std::fs::File::create(&log_path).map_err(|e| format!("server log: {e}"))?;
        let mut command = as_server_user_dying_with_us(&self.bin.join("postgres"));
        command
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-p", &self.port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            // A socket of its own, in its own directory (never another cluster's), or none.
            .arg("-c")
            .arg(if self.unix_socket {
                format!("unix_socket_directories={}", self.socket_dir().display())
            } else {
                "unix_socket_directories=".to_owned()
            })
            // Tests need no protection against power loss; a crash of the server itself loses
            // nothing committed with fsync off (commits still reach the OS before they return).
            .args(["-c", "fsync=off"])
            .args(["-c", "shared_buffers=16MB", "-c", "max_connections=100"]);
        if self.tls {
            command
                .args(["-c", "ssl=on"])
                .arg("-c")
                .arg(format!(
                    "ssl_cert_file={}",
                    self.dir.path().join("server.crt").display()
                ))
                .arg("-c")
                .arg(format!(
                    "ssl_key_file={}",
                    self.dir.path().join("server.key").display()
                ));
        } else {
            command.args(["-c", "ssl=off"]);
        }
        command
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log);
        // The child is spawned on a thread that lives as long as it does: the parent-death
        // signal is tied to the spawning thread.
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let mut child = match command.spawn() {
                Ok(child) => child,
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                    return Err(e);
                }
            };
            let _ = tx.send(Ok(()));
            child.wait()
        });
        rx.recv()
            .map_err(|_| "the server thread stopped".to_owned())?
            .map_err(|e| format!("cannot start postgres: {e}"))?;
        let started = Instant::now();
        loop {
            if waiter.is_finished() {
                let _ = waiter.join();
                let mut log = String::new();
                let _ = std::fs::File::open(&log_path).and_then(|mut f| f.read_to_string(&mut log));
                return Err(format!("postgres exited: {}", log.trim()));
            }
            if self.accepts_connections() {
                *running = Some(waiter);
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(60) {
                self.pg_ctl_stop("immediate");
                let _ = waiter.join();
                return Err("postgres did not accept connections within 60 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn accepts_connections(&self) -> bool {
        let isready = self.bin.join("pg_isready");
        if isready.exists() {
            return Command::new(isready)
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .args(["-U", USER, "-d", "postgres"])
                .status()
                .is_ok_and(|s| s.success());
        }
        execute(&self.url(), "SELECT 1").is_ok()
    }

    fn pg_ctl_stop(&self, mode: &str) {
        let _ = as_server_user(&self.bin.join("pg_ctl"))
            .arg("stop")
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-m", mode, "-w", "-t", "60"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop("immediate");
    }
}

/// Runs SQL statements on the server at `url` (for checks and clean-up) over a connection of
/// its own without TLS, from sync or async code; rows as text.
pub fn execute(url: &str, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async move {
            let (client, connection) =
                tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .map_err(|e| format!("{e}: {:?}", std::error::Error::source(&e)))?;
            tokio::spawn(connection);
            let messages = client
                .simple_query(&sql)
                .await
                .map_err(|e| format!("{e}: {:?}", e.as_db_error()))?;
            Ok(messages
                .into_iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                        (0..row.len())
                            .map(|i| row.get(i).map(str::to_owned))
                            .collect(),
                    ),
                    _ => None,
                })
                .collect())
        })
    })
    .join()
    .map_err(|_| "the SQL thread panicked".to_owned())?
}

/// Writes `text` to `path` with `mode`.
pub fn write_file(path: &Path, text: &str, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot chmod {}: {e}", path.display()))
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

fn user_exists(name: &str) -> bool {
    Command::new("id")
        .args(["-u", name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn has(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// `setpriv` arguments that switch to the `postgres` user.
const SETPRIV_AS_POSTGRES: [&str; 5] = [
    "--reuid",
    "postgres",
    "--regid",
    "postgres",
    "--init-groups",
];

/// `program`, run as the `postgres` user when we are root (initdb and postgres refuse root).
fn as_server_user(program: &Path) -> Command {
    if !is_root() {
        return Command::new(program);
    }
    let mut c = if has("setpriv") {
        let mut c = Command::new("setpriv");
        c.args(SETPRIV_AS_POSTGRES);
        c
    } else {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]);
        c
    };
    c.arg(program);
    c
}

/// Like [`as_server_user`], and the process gets SIGQUIT (immediate shutdown) when the thread
/// that started it dies, so a killed test run leaves no server behind.
fn as_server_user_dying_with_us(program: &Path) -> Command {
    if !has("setpriv") {
        return as_server_user(program);
    }
    let mut c = Command::new("setpriv");
    if is_root() {
        c.args(SETPRIV_AS_POSTGRES);
    }
    c.args(["--pdeathsig", "QUIT"]).arg(program);
    c
}

/// A directory holding initdb, pg_ctl and postgres: `PATH` first, then the newest
/// `/usr/lib/postgresql/<version>/bin` (Debian's layout).
fn find_bin_dir() -> Option<PathBuf> {
    let complete = |dir: &Path| {
        ["initdb", "pg_ctl", "postgres"]
            .iter()
            .all(|p| dir.join(p).is_file())
    };
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if complete(&dir) {
                return Some(dir);
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, dir)| complete(dir))
        .collect();
    versions.sort();
    versions.pop().map(|(_, dir)| dir)
}

/// A server to use instead of starting one: `postgres://user:password@host:port/db`.
pub const URL_ENV: &str = "TOOLNEXUS_TEST_POSTGRES_URL";

/// The PostgreSQL server a test uses: [`URL_ENV`]'s, or a cluster of ours that it keeps running
/// while it lives.
pub struct Server {
    url: String,
    external: bool,
    _cluster: Option<Arc<Cluster>>,
}

impl Server {
    /// `postgres://user:password@host:port/db`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL with the store's options (`table=…`) appended.
    pub fn selector(&self, options: &str) -> String {
        let sep = if self.url.contains('?') { '&' } else { '?' };
        format!("{}{sep}{options}", self.url)
    }

    /// Whether the server is the environment's (its tables outlive the test unless dropped).
    pub fn is_external(&self) -> bool {
        self.external
    }
}

/// The server in [`URL_ENV`], else a plaintext cluster shared by the tests running at once;
/// `None` (after printing why) if neither and none is required ([`REQUIRE_ENV`]).
pub fn server() -> Option<Server> {
    if let Ok(url) = std::env::var(URL_ENV)
        && !url.is_empty()
    {
        return Some(Server {
            url,
            external: true,
            _cluster: None,
        });
    }
    static SHARED: SharedCluster = SharedCluster::new();
    match SHARED.get_or_start(Cluster::start) {
        Ok(cluster) => Some(Server {
            url: cluster.url(),
            external: false,
            _cluster: Some(cluster),
        }),
        Err(reason) => unavailable(&reason, Some(&format!("Set {URL_ENV} to a server"))),
    }
}

/// A table name no other test (in this process or another) uses, within 48 bytes.
pub fn unique_table(prefix: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    let prefix: String = prefix.chars().take(16).collect();
    format!(
        "{prefix}_{:x}_{}_{nanos:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server stopped for an outage test finds its port held by something else for a while
    /// (a client's connection can be given it as its local port while it is free): `resume`
    /// waits for the port instead of failing the test that stopped it.
    #[test]
    fn resume_waits_for_its_port_to_be_free_again() {
        let cluster = match Cluster::start() {
            Ok(cluster) => cluster,
            Err(reason) => return unavailable(&reason, None).unwrap_or(()),
        };
        cluster.stop("fast");
        let squatter = std::net::TcpListener::bind(("127.0.0.1", cluster.port()))
            .expect("the stopped server's port is free");
        let released = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(2));
            drop(squatter);
        });
        cluster
            .resume()
            .expect("the server starts once its port is free");
        released.join().unwrap();
        assert_eq!(
            execute(&cluster.url(), "SELECT 1").unwrap(),
            [[Some("1".to_owned())]]
        );
    }
}
