//! Throwaway PostgreSQL clusters for the TLS tests, with or without `ssl=on`: `initdb` and
//! `postgres` from `PATH` or `/usr/lib/postgresql/*/bin`, run as the `postgres` user when we are
//! root, on a free port of 127.0.0.1, in a temp dir removed afterwards — as
//! `tests/src/pg.rs` does for the other PostgreSQL tests, plus a CA and a server certificate made
//! for the run (`rcgen`).
//!
//! When no cluster can be started a test prints why and returns (a skip), unless
//! `TOOLNEXUS_REQUIRE_POSTGRES=1` (CI), where that is a failure.

#![allow(dead_code)]

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// `1`: a test that cannot get a server fails instead of skipping.
pub const REQUIRE_ENV: &str = "TOOLNEXUS_REQUIRE_POSTGRES";

/// The superuser and password of the clusters (password authentication over TCP).
pub const USER: &str = "toolnexus";
pub const PASSWORD: &str = "tn-tls-test-secret";

/// The names the server's certificate is valid for (subjectAltName).
pub const CERT_NAMES: [&str; 2] = ["localhost", "127.0.0.1"];

/// A cluster serving TLS, shared by the tests running at once; `None` (after printing why) if
/// none can be started and none is required.
pub fn tls_cluster() -> Option<Arc<Cluster>> {
    static SHARED: Mutex<Weak<Cluster>> = Mutex::new(Weak::new());
    shared(&SHARED, true)
}

/// A cluster with `ssl=off`, shared likewise.
pub fn plain_cluster() -> Option<Arc<Cluster>> {
    static SHARED: Mutex<Weak<Cluster>> = Mutex::new(Weak::new());
    shared(&SHARED, false)
}

fn shared(slot: &Mutex<Weak<Cluster>>, tls: bool) -> Option<Arc<Cluster>> {
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cluster) = slot.upgrade() {
        return Some(cluster);
    }
    match Cluster::start(tls) {
        Ok(cluster) => {
            let cluster = Arc::new(cluster);
            *slot = Arc::downgrade(&cluster);
            Some(cluster)
        }
        Err(reason) => unavailable(&reason),
    }
}

fn unavailable<T>(reason: &str) -> Option<T> {
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        panic!("PostgreSQL is required ({REQUIRE_ENV}=1) but unavailable: {reason}");
    }
    eprintln!(
        "SKIPPED: no PostgreSQL server for this test: {reason}. Install PostgreSQL (initdb and \
         postgres on PATH or under /usr/lib/postgresql/*/bin); set {REQUIRE_ENV}=1 to make this \
         a failure."
    );
    None
}

/// A CA of its own (certificate and key), to sign server certificates or to be the wrong CA.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub fn new(name: &str) -> Result<Ca, String> {
        let key = KeyPair::generate().map_err(|e| format!("CA key: {e}"))?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(params, key).map_err(|e| format!("CA: {e}"))?;
        Ok(Ca { issuer })
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for `names` and its key, PEM.
    pub fn server_cert(&self, names: &[&str]) -> Result<(String, String), String> {
        let key = KeyPair::generate().map_err(|e| format!("server key: {e}"))?;
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).map_err(|e| e.to_string())?;
        params
            .distinguished_name
            .push(DnType::CommonName, "toolnexus test server");
        let cert = params
            .signed_by(&key, &*self.issuer)
            .map_err(|e| format!("server certificate: {e}"))?;
        Ok((cert.pem(), key.serialize_pem()))
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
    running: Mutex<Option<std::thread::JoinHandle<std::io::Result<ExitStatus>>>>,
}

impl Cluster {
    /// initdb + (with `tls`) a CA and a server certificate + start, or why not.
    pub fn start(tls: bool) -> Result<Cluster, String> {
        let bin = find_bin_dir().ok_or(
            "initdb and postgres are not on PATH or under /usr/lib/postgresql/*/bin".to_owned(),
        )?;
        if is_root() && !user_exists("postgres") {
            return Err(
                "running as root, and there is no \"postgres\" user to run the server as".into(),
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("toolnexus-pg-tls-")
            .tempdir()
            .map_err(|e| format!("cannot make a temp dir: {e}"))?;
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).map_err(|e| format!("cannot write pwfile: {e}"))?;
        if tls {
            let ca = Ca::new("toolnexus test CA")?;
            let (cert, key) = ca.server_cert(&CERT_NAMES)?;
            write_file(&dir.path().join("ca.pem"), &ca.pem(), 0o644)?;
            write_file(&dir.path().join("server.crt"), &cert, 0o644)?;
            // The server refuses a key others can read.
            write_file(&dir.path().join("server.key"), &key, 0o600)?;
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
            tls,
            running: Mutex::new(None),
        };
        let mut last_error = String::new();
        // A free port can be taken between our probe and the server's bind: try a few.
        for _ in 0..5 {
            cluster.port = free_port().map_err(|e| format!("cannot find a free port: {e}"))?;
            match cluster.run() {
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

    /// The directory of its Unix socket (local connections need no password).
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().to_owned()
    }

    /// The CA that signed the server's certificate (TLS clusters only).
    pub fn ca_path(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    fn run(&self) -> Result<(), String> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let log_path = self.dir.path().join("server.log");
        let log = std::fs::File::create(&log_path).map_err(|e| format!("server log: {e}"))?;
        let mut command = as_server_user_dying_with_us(&self.bin.join("postgres"));
        command
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-p", &self.port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            // A socket of its own, in its own directory: never another cluster's.
            .arg("-c")
            .arg(format!(
                "unix_socket_directories={}",
                self.socket_dir().display()
            ))
            .args(["-c", "fsync=off"])
            .args(["-c", "shared_buffers=16MB", "-c", "max_connections=50"]);
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
            if execute(&self.url(), "SELECT 1").is_ok() {
                *running = Some(waiter);
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(60) {
                self.pg_ctl_stop();
                let _ = waiter.join();
                return Err("postgres did not accept connections within 60 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn pg_ctl_stop(&self) {
        let _ = as_server_user(&self.bin.join("pg_ctl"))
            .arg("stop")
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-m", "immediate", "-w", "-t", "60"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(waiter) = running {
            self.pg_ctl_stop();
            let _ = waiter.join();
        }
    }
}

/// Runs SQL over a plaintext connection of the test's own (the clusters accept both), from
/// sync or async code; rows as text.
pub fn execute(url: &str, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async move {
            let config = format!("{url}?sslmode=disable&connect_timeout=5");
            let (client, connection) = tokio_postgres::connect(&config, tokio_postgres::NoTls)
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

/// Writes `text` to `path` with `mode` (before the directory is handed to the server user).
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
