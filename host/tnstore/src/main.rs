//! `tnstore`: save and read A2A Tasks through any toolnexus store from a shell.
//!
//! Exit codes: 0 success; 1 no Task with that id; 2 bad input or usage (invalid Task JSON,
//! invalid id, unknown or malformed selector, refused database credentials); 3 the store failed
//! (I/O, corrupt data, a failing component, an unreachable database server); 4 a conditional
//! save (`--if-version`, `--if-absent`) found another version stored.
//!
//! `prune` exits 2 for a bad duration and for a store that cannot list or delete (no catalog).
//! `serve` exits 0 once a SIGTERM or SIGINT has stopped it gracefully, 130 at a second signal.

mod agent_choice;
mod component_serve;
mod graceful_stop;
mod owner_limit_args;
mod push_args;
mod serve_args;

use clap::{FromArgMatches, Parser, Subcommand};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use toolnexus::wasm::FILE_STORE_COMPONENT;
use toolnexus::{Blame, Expect, ListQuery, StoreError, Task, Timestamp, resolve_store};

/// The store used when neither --store nor TNSTORE_STORE is given: the built-in file-store
/// component over `.toolnexus/tasks` in the current directory.
const DEFAULT_STORE: &str = "wasm:builtin?dir=.toolnexus/tasks";

#[derive(Parser)]
#[command(
    name = "tnstore",
    version,
    about = "Save and read A2A Tasks through a toolnexus task store"
)]
struct Cli {
    /// Store selector: memory, file:<dir>, wasm:<component>[?dir=<dir>] (wasm:builtin is the
    /// embedded file-store component), postgres://<user>:<password>@<host>/<db>[?table=<name>].
    // `hide_env_values`: `--help` must not print a selector from the environment (it may hold a
    // password).
    #[arg(
        long,
        global = true,
        env = "TNSTORE_STORE",
        hide_env_values = true,
        default_value = DEFAULT_STORE
    )]
    store: String,
    /// Whether --store was on the command line (not from the environment or the default):
    /// `serve --component` refuses it.
    #[arg(skip)]
    store_given: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Save (upsert) a Task given as JSON, from FILE or standard input (`-` or nothing).
    /// Prints the new version on stderr. With --if-version or --if-absent the save is a
    /// compare-and-set: if the stored Task is not what was asked for, nothing is written and
    /// the exit code is 4, naming the current version. Several FILEs (each a different Task)
    /// are all read and checked first, then saved at once (so their flushes are shared), each
    /// acknowledged on stderr as it completes; if any fails the exit code is 3.
    Save {
        /// Files holding Task JSON; `-` or nothing reads standard input.
        files: Vec<PathBuf>,
        /// Save only if the stored Task is at this version.
        #[arg(long, value_name = "N", conflicts_with = "if_absent")]
        if_version: Option<u64>,
        /// Save only if there is no Task with this id yet.
        #[arg(long)]
        if_absent: bool,
    },
    /// Print the Task with this id as JSON; exit 1 if there is none.
    Get {
        /// The Task id.
        id: String,
        /// Also print the Task's version, as `version: N` on stderr.
        #[arg(long)]
        show_version: bool,
    },
    /// List Tasks as a JSON page `{"tasks": [...], "nextPageToken": ..., "totalSize": ...}`,
    /// newest status timestamp first.
    List {
        /// Only Tasks with this contextId.
        #[arg(long)]
        context_id: Option<String>,
        /// Only Tasks in this state (e.g. completed or TASK_STATE_COMPLETED).
        #[arg(long)]
        state: Option<String>,
        /// Only Tasks whose status timestamp is at or after this instant (RFC 3339, e.g.
        /// 2025-06-01T00:00:00Z).
        #[arg(long, value_name = "TIMESTAMP")]
        after: Option<String>,
        /// At most this many Tasks (default 50, at most 1000).
        #[arg(long, default_value_t = 0)]
        page_size: usize,
        /// Continue after the page that returned this token.
        #[arg(long)]
        page_token: Option<String>,
    },
    /// Delete the Task with this id; exit 1 if there is none.
    Delete {
        /// The Task id.
        id: String,
    },
    /// Serve A2A (agent card and JSON-RPC) over HTTP or HTTPS, every Task in the store. Prints
    /// `listening on http://ADDR/` (`https://` with --tls-cert) once ready (after the startup
    /// recovery); runs until SIGTERM or SIGINT, then stops gracefully (--shutdown-grace).
    Serve {
        /// Address to listen on (port 0 picks a free one).
        #[arg(long, visible_alias = "listen", default_value = "127.0.0.1:8080")]
        addr: String,
        /// Serve this `wasi:http` component instead of the built-in A2A server:
        /// `<component.wasm>?dir=<dir>&<option>=<value>…`, any component exporting
        /// wasi:http/incoming-handler, sandboxed with the limits its options set
        /// (docs/wasm-options.md). Of the other flags only --addr, --header-timeout-ms,
        /// --idle-timeout-ms, --max-connections and --insecure-no-auth apply.
        #[arg(long, value_name = "COMPONENT", conflicts_with_all = component_serve::NATIVE_ONLY)]
        component: Option<String>,
        /// The agent: `echo` (the echo agent component, embedded), `tck` (the agent the public
        /// A2A TCK drives, embedded), `native-echo` (the echo agent as native code), or any
        /// agent component, `wasm:<component>[?option=value&…]` (docs/agents.md).
        #[arg(long, value_name = "AGENT", default_value = "echo")]
        agent: String,
        /// How long the echo agent (`echo`, `native-echo`, and `tck`'s echo) works on each
        /// Task, in milliseconds: the reply comes in up to four pieces over this time.
        #[arg(long, default_value_t = 0)]
        echo_delay_ms: u64,
        /// Close a connection whose request head (request line and headers) is not all in this
        /// many milliseconds after it connected, or after the first byte of a later request.
        #[arg(long, default_value_t = millis(toolnexus_a2a::DEFAULT_HEADER_READ_TIMEOUT),
              value_parser = clap::value_parser!(u64).range(1..))]
        header_timeout_ms: u64,
        /// Answer HTTP 408 and close the connection when a request body is not all in this many
        /// milliseconds after its head (with --component: the component's read of the body
        /// fails then).
        #[arg(long, default_value_t = millis(toolnexus_a2a::DEFAULT_BODY_READ_TIMEOUT),
              value_parser = clap::value_parser!(u64).range(1..))]
        body_timeout_ms: u64,
        /// Close a kept-alive connection on which nothing moves for this many milliseconds
        /// while the server waits for the client.
        #[arg(long, default_value_t = millis(toolnexus_a2a::DEFAULT_IDLE_TIMEOUT),
              value_parser = clap::value_parser!(u64).range(1..))]
        idle_timeout_ms: u64,
        /// Serve at most this many connections at once; further clients wait in the listen
        /// backlog until one closes.
        #[arg(long, default_value_t = toolnexus_a2a::DEFAULT_MAX_CONNECTIONS,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_connections: usize,
        /// Run (or queue) at most this many agents in the background; past that, SendMessage
        /// answers -32000 "server busy" and saves nothing.
        #[arg(long, default_value_t = toolnexus_a2a::DEFAULT_MAX_BACKGROUND_TASKS,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_background_tasks: usize,
        /// At most this many bytes of Tasks in one ListTasks answer; a longer page is cut and
        /// continues with its nextPageToken.
        #[arg(long, default_value_t = toolnexus_a2a::DEFAULT_MAX_LIST_BYTES,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_list_bytes: usize,
        /// Test hook: milliseconds the agent's final step waits between reading the Task and
        /// saving its outcome (lets a test land a cancel from another process there).
        #[arg(long, default_value_t = 0, hide = true)]
        stage_finish_delay_ms: u64,
        /// At startup, before serving: `fail` marks the Tasks a previous run left submitted or
        /// working (status timestamp before this start, or none) failed, with the status
        /// message "interrupted: the server stopped before this task finished"; `off` leaves
        /// them. Use `off` when several replicas share the store: a restarting replica would
        /// otherwise fail the Tasks the others are working on.
        #[arg(long, value_enum, default_value_t = RecoveryFlag::Fail)]
        recovery: RecoveryFlag,
        /// Delete terminal Tasks (completed, canceled, failed, rejected) whose status timestamp
        /// is older than this (e.g. 7d, 12h, 30m), in the background: at startup, then every
        /// tenth of it (at least every second, at most every hour). Default: keep every Task.
        #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
        retain: Option<std::time::Duration>,
        /// Bearer tokens, one `<owner> <token>` per line (`#` comments). Every request but the
        /// agent card then needs `Authorization: Bearer <token>`, and each owner's Tasks live
        /// in the owner's own store namespace, invisible to the others.
        #[arg(long, value_name = "FILE")]
        tokens: Option<PathBuf>,
        /// A tenant requests may name (`/<tenant>/tasks/...`, or `tenant` in JSON-RPC params):
        /// its own store namespace. Repeat for several; other tenants are refused.
        #[arg(long = "tenant", value_name = "NAME")]
        tenants: Vec<String>,
        /// Serve without --tokens on an address other than loopback. Without this flag the
        /// server refuses to: anyone who reaches the port could read and cancel every Task.
        #[arg(long)]
        insecure_no_auth: bool,
        #[command(flatten)]
        card: Box<serve_args::CardArgs>,
        #[command(flatten)]
        push: Box<push_args::PushArgs>,
        #[command(flatten)]
        shutdown: graceful_stop::ShutdownArgs,
        #[command(flatten)]
        owner_limits: owner_limit_args::OwnerLimitArgs,
    },
    /// Delete, once, the Tasks whose status timestamp is older than --older-than and that are
    /// terminal (completed, canceled, failed, rejected) or in one of the --state given. Tasks
    /// without a status timestamp are kept. Prints `{"deleted": N}`.
    Prune {
        /// The age past which Tasks go, such as 7d, 12h, 30m (0s: every matching Task).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        older_than: std::time::Duration,
        /// Delete Tasks in this state (any spelling: working, TASK_STATE_WORKING) instead of
        /// the terminal ones; repeat for several.
        #[arg(long = "state", value_name = "STATE")]
        states: Vec<String>,
    },
    /// Write the embedded file-store component to a file, for `--store wasm:<file>`.
    Component {
        /// Where to write the component (e.g. ./store.wasm).
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Write an embedded agent component to a file, for `serve --agent wasm:<file>`.
    Agent {
        /// Where to write the component (e.g. ./agent.wasm).
        #[arg(long, short)]
        out: PathBuf,
        /// Which agent.
        #[arg(long, value_enum, default_value_t = agent_choice::EmbeddedAgent::Echo)]
        name: agent_choice::EmbeddedAgent,
    },
}

/// `--recovery`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum RecoveryFlag {
    /// Mark interrupted Tasks failed.
    Fail,
    /// Leave interrupted Tasks as they are.
    Off,
}

/// A duration such as `7d`, `12h`, `30m` or `1h 30m`.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{e} (expected e.g. 7d, 12h, 30m)"))
}

/// [`parse_duration`], but not zero.
fn parse_positive_duration(text: &str) -> Result<std::time::Duration, String> {
    match parse_duration(text)? {
        d if d.is_zero() => Err("must be longer than zero".into()),
        d => Ok(d),
    }
}

enum Failure {
    NotFound(String),
    Usage(String),
    Store(String),
    /// A conditional save did not hold (exit 4).
    Conflict(String),
}

impl From<StoreError> for Failure {
    fn from(err: StoreError) -> Self {
        match err.blame() {
            Blame::Caller => Failure::Usage(err.to_string()),
            Blame::Store | Blame::Environment => Failure::Store(err.to_string()),
        }
    }
}

/// Listens on `addr`: the listener and the address it got (its port, when `addr` asked for 0).
async fn listen(addr: &str) -> Result<(tokio::net::TcpListener, std::net::SocketAddr), Failure> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::Usage(format!("cannot listen on {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| Failure::Store(e.to_string()))?;
    Ok((listener, local))
}

fn main() -> ExitCode {
    let matches = <Cli as clap::CommandFactory>::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    cli.store_given = matches.value_source("store") == Some(clap::parser::ValueSource::CommandLine);
    // As servers commonly do: the soft limit on open files up to the hard one. Components get
    // a share of it, the rest stays for the server (docs/security.md, "Limits").
    if let Err(e) = toolnexus::wasm::raise_descriptor_limit() {
        eprintln!("tnstore: cannot read the limit on open files: {e}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tnstore: cannot start the async runtime: {e}");
            return ExitCode::from(3);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::NotFound(msg)) => {
            eprintln!("tnstore: {msg}");
            ExitCode::from(1)
        }
        Err(Failure::Usage(msg)) => {
            eprintln!("tnstore: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Store(msg)) => {
            eprintln!("tnstore: {msg}");
            ExitCode::from(3)
        }
        Err(Failure::Conflict(msg)) => {
            eprintln!("tnstore: {msg}");
            ExitCode::from(4)
        }
    }
}

async fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Component { out } => {
            std::fs::write(&out, FILE_STORE_COMPONENT)
                .map_err(|e| Failure::Store(format!("cannot write {}: {e}", out.display())))?;
            eprintln!(
                "tnstore: wrote the file-store component to {}",
                out.display()
            );
            Ok(())
        }
        Command::Agent { out, name } => {
            agent_choice::write_agent(name, &out).map_err(Failure::Store)?;
            eprintln!(
                "tnstore: wrote the {name:?} agent component to {}",
                out.display()
            );
            Ok(())
        }
        Command::Save {
            files,
            if_version,
            if_absent,
        } if files.len() > 1 => {
            if if_version.is_some() || if_absent {
                return Err(Failure::Usage(
                    "--if-version and --if-absent take one Task file, not several".into(),
                ));
            }
            save_several(cli.store, files).await
        }
        Command::Save {
            files,
            if_version,
            if_absent,
        } => {
            let text = read_input(files.into_iter().next())?;
            let task = Task::from_json(&text)?;
            let expect = match (if_version, if_absent) {
                (Some(v), _) => Expect::Version(v),
                (None, true) => Expect::Absent,
                (None, false) => Expect::Any,
            };
            let store = open(cli.store).await?;
            match store.save_versioned(&task, expect).await {
                Ok(version) => {
                    eprintln!("tnstore: saved {:?} at version {version}", task.id())
                }
                // A store without versions still takes a plain save.
                Err(StoreError::Unsupported { .. }) if expect == Expect::Any => {
                    store.save(&task).await?;
                    eprintln!("tnstore: saved {:?}", task.id());
                }
                Err(e @ StoreError::Conflict { .. }) => {
                    return Err(Failure::Conflict(e.to_string()));
                }
                Err(e) => return Err(e.into()),
            }
            Ok(())
        }
        Command::List {
            context_id,
            state,
            after,
            page_size,
            page_token,
        } => {
            let status_timestamp_after = after
                .map(|t| Timestamp::parse(&t))
                .transpose()
                .map_err(|e| Failure::Usage(format!("--after: {e}")))?;
            let store = open(cli.store).await?;
            let query = ListQuery {
                context_id,
                state,
                status_timestamp_after,
                page_size,
                page_token,
            };
            let page = store.list(&query).await?;
            let tasks: Vec<&serde_json::Map<String, serde_json::Value>> =
                page.tasks.iter().map(Task::as_map).collect();
            let out = serde_json::json!({
                "tasks": tasks,
                "nextPageToken": page.next_page_token,
                "totalSize": page.total_size,
            });
            writeln!(std::io::stdout().lock(), "{out}")
                .map_err(|e| Failure::Store(format!("cannot write output: {e}")))
        }
        Command::Delete { id } => {
            let store = open(cli.store).await?;
            if store.delete(&id).await? {
                eprintln!("tnstore: deleted {id:?}");
                Ok(())
            } else {
                Err(Failure::NotFound(format!(
                    "no task with id {id:?} in {}",
                    store.describe()
                )))
            }
        }
        Command::Serve {
            addr,
            component: Some(component),
            header_timeout_ms,
            body_timeout_ms,
            idle_timeout_ms,
            max_connections,
            insecure_no_auth,
            ..
        } => {
            let ms = std::time::Duration::from_millis;
            let flags = component_serve::ConnectionFlags {
                header_read_timeout: ms(header_timeout_ms),
                body_read_timeout: ms(body_timeout_ms),
                idle_timeout: ms(idle_timeout_ms),
                max_connections,
                insecure_no_auth,
                store_given: cli.store_given,
            };
            component_serve::run(component, addr, flags).await
        }
        Command::Serve {
            addr,
            component: None,
            agent,
            echo_delay_ms,
            header_timeout_ms,
            body_timeout_ms,
            idle_timeout_ms,
            max_connections,
            max_background_tasks,
            max_list_bytes,
            stage_finish_delay_ms,
            recovery,
            retain,
            tokens,
            tenants,
            insecure_no_auth,
            card,
            push,
            owner_limits,
            shutdown,
        } => {
            // Internal errors reach clients as a request id; their details go to stderr.
            let _ = tracing::subscriber::set_global_default(StderrLog);
            let card = card.load().map_err(Failure::Usage)?;
            let ms = std::time::Duration::from_millis;
            // Compiling a component takes a moment: off the async workers.
            let agent = tokio::task::spawn_blocking(move || {
                agent_choice::resolve_agent(&agent, ms(echo_delay_ms))
            })
            .await
            .map_err(|e| Failure::Usage(format!("--agent: {e}")))?
            .map_err(Failure::Usage)?;
            let tokens = tokens
                .map(|path| toolnexus_a2a::Tokens::from_file(&path))
                .transpose()
                .map_err(|e| Failure::Usage(e.to_string()))?;
            for tenant in &tenants {
                if !toolnexus_a2a::auth::valid_name(tenant) {
                    return Err(Failure::Usage(format!(
                        "--tenant {tenant:?}: a tenant is 1 to 64 of A-Z a-z 0-9 . _ - \
                         (not starting with a dot)"
                    )));
                }
            }
            let namespaced = tokens.is_some() || !tenants.is_empty();
            let push = push.options(&cli.store).map_err(Failure::Usage)?;
            let (store, stores) = open_stores(cli.store, namespaced).await?;
            let push = push_args::start(push, std::sync::Arc::clone(&stores), store.describe())
                .map_err(Failure::Usage)?;
            let (listener, local) = listen(&addr).await?;
            if tokens.is_none() && !local.ip().is_loopback() && !insecure_no_auth {
                return Err(Failure::Usage(format!(
                    "refusing to serve {local} without authentication: anyone who reaches it \
                     could read, cancel and list every Task. Give --tokens FILE, listen on a \
                     loopback address (127.0.0.1:PORT), or pass --insecure-no-auth"
                )));
            }
            card.check_listener(local).map_err(Failure::Usage)?;
            let listening = card.listening_url(local);
            let mut config = toolnexus_a2a::ServerConfig {
                service: toolnexus_a2a::ServiceConfig {
                    agent,
                    max_background_tasks,
                    max_list_bytes,
                    finish_read_to_write_delay: ms(stage_finish_delay_ms),
                    tenants: tenants.into_iter().collect(),
                    push: push
                        .map(|sender| sender as std::sync::Arc<dyn toolnexus_a2a::PushNotifier>),
                    owner_limits: owner_limits.limits(),
                    ..Default::default()
                },
                http: toolnexus_a2a::HttpConfig {
                    header_read_timeout: ms(header_timeout_ms),
                    body_read_timeout: ms(body_timeout_ms),
                    idle_timeout: ms(idle_timeout_ms),
                    max_connections,
                    ..Default::default()
                },
                recovery: match recovery {
                    RecoveryFlag::Fail => toolnexus_a2a::Recovery::FailInterrupted,
                    RecoveryFlag::Off => toolnexus_a2a::Recovery::Off,
                },
                retain,
                tokens: tokens.map(std::sync::Arc::new),
                shutdown_grace: shutdown.shutdown_grace,
                ..Default::default()
            };
            card.apply(&mut config);
            // The banner comes once recovery is done: whoever waits for it (a supervisor, a
            // test, another replica's operator) finds the store already recovered, and every
            // Task created after it is newer than this server's start.
            let describe = store.describe();
            let announce = move || {
                let mut out = std::io::stdout().lock();
                writeln!(out, "listening on {listening} with {describe}")
                    .and_then(|()| out.flush())
                    .map_err(|e| std::io::Error::new(e.kind(), format!("cannot write output: {e}")))
            };
            // SIGTERM or SIGINT: a graceful stop (`serve_stores_with_shutdown`), then exit 0.
            let grace = humantime::format_duration(shutdown.shutdown_grace);
            graceful_stop::serve_until_signaled(
                |stop| {
                    toolnexus_a2a::serve_stores_with_shutdown(
                        listener, stores, config, announce, stop,
                    )
                },
                &format!("no new connections; the agents' runs get {grace} to finish"),
            )
            .await
            .map_err(|e| Failure::Store(format!("signals: {e}")))?
            .map_err(|e| Failure::Store(format!("server failed: {e}")))
        }
        Command::Prune { older_than, states } => {
            for state in &states {
                if toolnexus::state::TaskState::parse(state).is_none() {
                    eprintln!("tnstore: warning: {state:?} names no A2A task state");
                }
            }
            let store = open(cli.store).await?;
            let cutoff = toolnexus_a2a_protocol::maintenance::cutoff(older_than);
            let deleted = toolnexus_a2a_protocol::maintenance::prune(&*store, cutoff, &states)
                .await
                .map_err(|e| match e {
                    // No catalog: this store cannot be pruned at all, whatever is retried.
                    e @ StoreError::Unsupported { .. } => Failure::Usage(e.to_string()),
                    e => Failure::from(e),
                })?;
            writeln!(
                std::io::stdout().lock(),
                "{}",
                serde_json::json!({ "deleted": deleted })
            )
            .map_err(|e| Failure::Store(format!("cannot write output: {e}")))
        }
        Command::Get { id, show_version } => {
            let store = open(cli.store).await?;
            let found = if show_version {
                store.get_versioned(&id).await?.map(|(task, version)| {
                    eprintln!("version: {version}");
                    task
                })
            } else {
                store.get(&id).await?
            };
            match found {
                Some(task) => {
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "{task}")
                        .map_err(|e| Failure::Store(format!("cannot write output: {e}")))
                }
                None => Err(Failure::NotFound(format!(
                    "no task with id {id:?} in {}",
                    store.describe()
                ))),
            }
        }
    }
}

/// A duration in whole milliseconds, for a flag's default.
const fn millis(d: std::time::Duration) -> u64 {
    d.as_secs() * 1000 + d.subsec_millis() as u64
}

/// `tnstore serve`'s log: warnings and errors (such as the details of an internal error, under
/// the request id its client was given) as one line each on stderr.
struct StderrLog;

/// An event's fields as `name=value`, each on the same line.
struct LogLine(String);

impl tracing::field::Visit for LogLine {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let value = format!("{value:?}")
            .replace('\n', "\\n")
            .replace('\r', "\\r");
        if field.name() == "message" {
            self.0.push_str(&value);
        } else {
            self.0.push_str(&format!(" {}={value}", field.name()));
        }
    }
}

impl tracing::Subscriber for StderrLog {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut line = LogLine(String::new());
        event.record(&mut line);
        let meta = event.metadata();
        eprintln!("tnstore: {} {}: {}", meta.level(), meta.target(), line.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

async fn open(selector: String) -> Result<std::sync::Arc<dyn toolnexus::TaskStore>, Failure> {
    tokio::task::spawn_blocking(move || resolve_store(selector))
        .await
        .map_err(|e| Failure::Store(format!("opening the store failed: {e}")))?
        .map_err(Failure::from)
}

/// `tnstore save FILE FILE…`: every file read and checked before anything is saved (a bad
/// one, or two holding the same id, changes nothing), then all saved at once, each
/// acknowledged as its save completes.
async fn save_several(selector: String, files: Vec<PathBuf>) -> Result<(), Failure> {
    let mut tasks = Vec::with_capacity(files.len());
    let mut ids = std::collections::HashSet::new();
    for path in &files {
        let text = read_input(Some(path.clone()))?;
        let task = Task::from_json(&text)
            .map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
        if !ids.insert(task.id().to_owned()) {
            return Err(Failure::Usage(format!(
                "{}: task {:?} is in more than one of the files",
                path.display(),
                task.id()
            )));
        }
        tasks.push(task);
    }
    let store = open(selector).await?;
    let saves: Vec<_> = tasks
        .into_iter()
        .map(|task| {
            let store = std::sync::Arc::clone(&store);
            tokio::spawn(async move {
                let saved = store.save(&task).await;
                // One write per line, so that lines of saves ending together never mix.
                let line = match &saved {
                    Ok(()) => format!("tnstore: saved {:?}\n", task.id()),
                    Err(e) => format!("tnstore: {:?} not saved: {e}\n", task.id()),
                };
                let _ = std::io::stderr().write_all(line.as_bytes());
                saved.is_ok()
            })
        })
        .collect();
    let mut failed = 0;
    for save in saves {
        if !save.await.unwrap_or(false) {
            failed += 1;
        }
    }
    match failed {
        0 => Ok(()),
        n => Err(Failure::Store(format!(
            "{n} of {} tasks were not saved",
            files.len()
        ))),
    }
}

/// The store, and the namespaces over it when the server has tenants or owners.
async fn open_stores(
    selector: String,
    namespaced: bool,
) -> Result<
    (
        std::sync::Arc<dyn toolnexus::TaskStore>,
        std::sync::Arc<dyn toolnexus_a2a::Stores>,
    ),
    Failure,
> {
    if !namespaced {
        let store = open(selector).await?;
        let stores = std::sync::Arc::new(toolnexus_a2a::SingleStore(std::sync::Arc::clone(&store)));
        return Ok((store, stores));
    }
    let namespaces = tokio::task::spawn_blocking(move || toolnexus::Namespaces::new(selector))
        .await
        .map_err(|e| Failure::Store(format!("opening the store failed: {e}")))?
        .map_err(Failure::from)?;
    let namespaces = std::sync::Arc::new(namespaces);
    Ok((
        namespaces.root(),
        std::sync::Arc::new(NamespacedStores(namespaces)),
    ))
}

/// The server's namespaces (tenants, owners) as stores of the selector's kind.
struct NamespacedStores(std::sync::Arc<toolnexus::Namespaces>);

#[async_trait::async_trait]
impl toolnexus_a2a::Stores for NamespacedStores {
    async fn store(
        &self,
        namespace: Option<&str>,
    ) -> Result<std::sync::Arc<dyn toolnexus::TaskStore>, StoreError> {
        let Some(ns) = namespace else {
            return Ok(self.0.root());
        };
        let namespaces = std::sync::Arc::clone(&self.0);
        let ns = ns.to_owned();
        // Opening a namespace may create a directory, compile a component or connect.
        tokio::task::spawn_blocking(move || namespaces.store(&ns))
            .await
            .map_err(|e| StoreError::Io {
                context: "opening a store namespace".into(),
                source: std::io::Error::other(e.to_string()),
            })?
    }
}

fn read_input(file: Option<PathBuf>) -> Result<String, Failure> {
    let mut text = String::new();
    match file {
        Some(path) if path.as_os_str() != "-" => {
            text = std::fs::read_to_string(&path)
                .map_err(|e| Failure::Usage(format!("cannot read {}: {e}", path.display())))?;
        }
        _ => {
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Failure::Usage(format!("cannot read standard input: {e}")))?;
        }
    }
    Ok(text)
}
