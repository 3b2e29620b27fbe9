//! PostgreSQL for tests: the server named by `TOOLNEXUS_TEST_POSTGRES_URL`, or a throwaway
//! cluster of our own (`initdb` + `postgres` from `PATH` or `/usr/lib/postgresql/*/bin`, run as
//! the `postgres` user when we are root, on a free local port, in a temp dir removed afterwards).
//!
//! When neither is possible a test prints why and returns (a skip), unless
//! `TOOLNEXUS_REQUIRE_POSTGRES=1` (CI), where that is a failure. Tests isolate themselves with
//! a table of their own ([`unique_table`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// A server to use instead of starting one: `postgres://user:password@host:port/db`.
pub const URL_ENV: &str = "TOOLNEXUS_TEST_POSTGRES_URL";
/// `1`: a test that cannot get a server fails instead of skipping.
pub const REQUIRE_ENV: &str = "TOOLNEXUS_REQUIRE_POSTGRES";

/// The superuser and password of clusters started here (password authentication over TCP, so
/// wrong credentials are refused as on a real server).
pub const USER: &str = "toolnexus";
pub const PASSWORD: &str = "tn-test-secret";

/// The PostgreSQL server a test uses; keeps a cluster of ours running while it lives.
pub struct Server {
    url: String,
    external: bool,
    _cluster: Option<Arc<Cluster>>,
}

impl Server {
    /// `postgres://user:password@127.0.0.1:port/postgres`.
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

/// A server for one test, or `None` (after printing why) if there is none and none is required.
/// Tests running at once share one cluster of ours; it stops when the last of them ends.
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
    static SHARED: Mutex<Weak<Cluster>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = match shared.upgrade() {
        Some(cluster) => cluster,
        None => match Cluster::start() {
            Ok(cluster) => {
                let cluster = Arc::new(cluster);
                *shared = Arc::downgrade(&cluster);
                cluster
            }
            Err(reason) => return unavailable(&reason),
        },
    };
    Some(Server {
        url: cluster.url().to_owned(),
        external: false,
        _cluster: Some(cluster),
    })
}

/// A cluster of the test's own, which it may stop and start (fault tests), or `None` (after
/// printing why) if none can be started and none is required. Ignores `TOOLNEXUS_TEST_POSTGRES_URL`.
pub fn own_cluster() -> Option<Cluster> {
    match Cluster::start() {
        Ok(cluster) => Some(cluster),
        Err(reason) => unavailable(&reason),
    }
}

fn unavailable<T>(reason: &str) -> Option<T> {
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        panic!("PostgreSQL is required ({REQUIRE_ENV}=1) but unavailable: {reason}");
    }
    eprintln!(
        "SKIPPED: no PostgreSQL server for this test: {reason}. Set {URL_ENV} to a server, or \
         install PostgreSQL (initdb and postgres on PATH or under /usr/lib/postgresql/*/bin); \
         set {REQUIRE_ENV}=1 to make this a failure."
    );
    None
}

/// A table name no other test (in this process or another) uses.
pub fn unique_table(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    // Short enough for any prefix: table names must stay within 48 bytes.
    let prefix: String = prefix.chars().take(16).collect();
    format!(
        "{prefix}_{:x}_{}_{nanos:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs SQL statements on the server (for checks and clean-up), from sync or async code.
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

/// Drops a test's table at the end of the test, on servers that outlive it.
pub struct TableGuard {
    url: Option<String>,
    table: String,
}

impl TableGuard {
    pub fn new(server: &Server, table: &str) -> Self {
        TableGuard {
            url: server.is_external().then(|| server.url().to_owned()),
            table: table.to_owned(),
        }
    }
}

impl Drop for TableGuard {
    fn drop(&mut self) {
        if let Some(url) = &self.url {
            let _ = execute(url, &format!("DROP TABLE IF EXISTS \"{}\"", self.table));
        }
    }
}

/// A throwaway PostgreSQL cluster: initdb'd in a temp dir, served on a free port of 127.0.0.1,
/// stopped and removed when dropped. If the test process dies, the server gets SIGQUIT
/// (`setpriv --pdeathsig`) and shuts down at once.
pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    url: String,
    running: Mutex<Option<Running>>,
}

struct Running {
    waiter: std::thread::JoinHandle<std::io::Result<ExitStatus>>,
}

impl Cluster {
    /// initdb + start, or why not.
    pub fn start() -> Result<Cluster, String> {
        let bin = find_bin_dir().ok_or(
            "initdb and postgres are not on PATH or under /usr/lib/postgresql/*/bin".to_owned(),
        )?;
        if is_root() && !user_exists("postgres") {
            return Err(
                "running as root, and there is no \"postgres\" user to run the server as".into(),
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("toolnexus-pg-")
            .tempdir()
            .map_err(|e| format!("cannot make a temp dir: {e}"))?;
        if is_root() {
            let status = Command::new("chown")
                .arg("postgres:")
                .arg(dir.path())
                .status()
                .map_err(|e| format!("cannot run chown: {e}"))?;
            if !status.success() {
                return Err(format!("chown postgres {} failed", dir.path().display()));
            }
        }
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).map_err(|e| format!("cannot write pwfile: {e}"))?;
        let data = dir.path().join("data");
        let output = as_server_user(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
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
            url: String::new(),
            running: Mutex::new(None),
        };
        let mut last_error = String::new();
        // A free port can be taken between our probe and the server's bind: try a few.
        for _ in 0..5 {
            cluster.port = free_port().map_err(|e| format!("cannot find a free port: {e}"))?;
            cluster.url = format!(
                "postgres://{USER}:{PASSWORD}@127.0.0.1:{}/postgres",
                cluster.port
            );
            match cluster.resume() {
                Ok(()) => return Ok(cluster),
                Err(e) => last_error = e,
            }
        }
        Err(format!("the server would not start: {last_error}"))
    }

    /// `postgres://toolnexus:…@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server: `mode` is `fast` (disconnect clients, checkpoint) or `immediate`
    /// (abort at once, as a crash would; the next start recovers from the WAL).
    pub fn stop(&self, mode: &str) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(running) = running else { return };
        let _ = as_server_user(&self.bin.join("pg_ctl"))
            .arg("stop")
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-m", mode, "-w", "-t", "60"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = running.waiter.join();
    }

    /// Starts the server again (after [`stop`](Self::stop)) on the same port and data.
    pub fn resume(&self) -> Result<(), String> {
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
            .args(["-c", "unix_socket_directories="])
            // Tests need no protection against power loss; a crash of the server itself loses
            // nothing committed with fsync off (commits still reach the OS before they return).
            .args(["-c", "fsync=off"])
            .args(["-c", "shared_buffers=16MB", "-c", "max_connections=100"])
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
                let mut log = String::new();
                let _ = std::fs::File::open(&log_path).and_then(|mut f| f.read_to_string(&mut log));
                return Err(format!("postgres exited: {}", log.trim()));
            }
            if self.accepts_connections() {
                *running = Some(Running { waiter });
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = as_server_user(&self.bin.join("pg_ctl"))
                    .arg("stop")
                    .arg("-D")
                    .arg(self.dir.path().join("data"))
                    .args(["-m", "immediate"])
                    .status();
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
        execute(&self.url, "SELECT 1").is_ok()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop("immediate");
    }
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
