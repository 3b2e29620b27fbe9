//! Store namespaces (`toolnexus::Namespaces`): every backend keeps each namespace's Tasks apart
//! from the root's and from every other namespace's, the same namespace is the same store,
//! invalid namespaces create nothing, and PostgreSQL table names are injective and fit.
//!
//! Real directories, the real file-store component (`wasm:builtin`), and a real PostgreSQL
//! server: `TOOLNEXUS_TEST_POSTGRES_URL`, or a throwaway cluster (see
//! `toolnexus_conformance::pg`); without either the PostgreSQL tests skip, unless
//! `TOOLNEXUS_REQUIRE_POSTGRES=1`.

use serde_json::json;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolnexus::{
    FileTaskStore, ListQuery, MAX_NAMESPACED_TABLE, Namespaces, StoreError, StoreSelector,
    TaskStore, check_namespace, namespace_table,
};
use toolnexus_conformance::pg::{self, TableGuard};
use toolnexus_conformance::task;

/// Namespaces asked for by every isolation test: two tenants and an owner of one of them
/// (whose directory, for the stores over directories, is inside its tenant's).
const A: &str = "t.acme";
const B: &str = "t.globex";
const C: &str = "t.acme/o.alice";

/// What every invalid-namespace test tries: path traversal, separators, empty and overlong
/// segments, hidden names, and names a file store keeps for its own files.
fn bad_namespaces() -> Vec<String> {
    [
        "", "..", ".", "a/../b", "../b", "a/..", "/abs", "/", "a/", "a//b", "a\\b", "..\\b",
        ".hidden", "a/.b", "x.json", "a/b.JSON", "a b", "a\0b", "a\nb", "é", "a:b", "~",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain(["x".repeat(65), format!("a/{}", "y".repeat(65))])
    .chain([["s"; 9].join("/")])
    .collect()
}

/// Opens a namespace as an async caller must: on the blocking pool.
async fn open(namespaces: &Arc<Namespaces>, ns: &str) -> Arc<dyn TaskStore> {
    let (namespaces, name) = (Arc::clone(namespaces), ns.to_owned());
    tokio::task::spawn_blocking(move || namespaces.store(&name))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("namespace {ns:?} opens: {e}"))
}

async fn ids(store: &dyn TaskStore) -> BTreeSet<String> {
    let page = store.list(&ListQuery::default()).await.unwrap();
    assert!(page.next_page_token.is_none(), "one page holds them all");
    page.tasks.iter().map(|t| t.id().to_owned()).collect()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

/// The isolation every backend must give: a Task saved in one namespace is found (get, list)
/// only there, never in the root, a sibling, a parent or a child; the same id in each holds
/// each one's own Task; deleting in one leaves the others; asking again gives the same store.
async fn check_isolation(namespaces: &Arc<Namespaces>) {
    let root = namespaces.root();
    let a = open(namespaces, A).await;
    let b = open(namespaces, B).await;
    let c = open(namespaces, C).await;
    let all: [(&str, &Arc<dyn TaskStore>); 4] = [("root", &root), (A, &a), (B, &b), (C, &c)];
    for (name, store) in all {
        let only = format!("only-{}", name.replace('/', "-"));
        store
            .save(&task(json!({"id": only, "status": {"state": "submitted"}})))
            .await
            .unwrap();
        store
            .save(&task(
                json!({"id": "shared", "owner": name, "status": {"state": "working"}}),
            ))
            .await
            .unwrap();
    }
    for (name, store) in all {
        let mine = format!("only-{}", name.replace('/', "-"));
        for (other, _) in all {
            let theirs = format!("only-{}", other.replace('/', "-"));
            let found = store.get(&theirs).await.unwrap();
            assert_eq!(
                found.is_some(),
                name == other,
                "{theirs} seen through {name}"
            );
        }
        let shared = store
            .get("shared")
            .await
            .unwrap()
            .expect("each has its own");
        assert_eq!(shared.get("owner").unwrap(), &json!(name));
        assert_eq!(
            ids(&**store).await,
            set(&[&mine, "shared"]),
            "list of {name}"
        );
    }

    // The same namespace asked again is the same store, and sees what was saved.
    let again = open(namespaces, A).await;
    assert!(Arc::ptr_eq(&a, &again));
    assert!(again.get("only-t.acme").await.unwrap().is_some());
    assert_eq!(namespaces.opened(), [A, C, B]);

    // Deleting in one namespace leaves every other.
    assert!(a.delete("shared").await.unwrap());
    assert!(a.get("shared").await.unwrap().is_none());
    for store in [&root, &b, &c] {
        assert!(store.get("shared").await.unwrap().is_some());
    }
}

/// A fresh `Namespaces` over the same durable selector finds each namespace's Tasks in that
/// namespace only.
async fn check_reopened(namespaces: &Arc<Namespaces>) {
    let root = namespaces.root();
    assert_eq!(ids(&*root).await, set(&["only-root", "shared"]));
    let a = open(namespaces, A).await;
    assert_eq!(ids(&*a).await, set(&["only-t.acme"]));
    let c = open(namespaces, C).await;
    assert_eq!(ids(&*c).await, set(&["only-t.acme-o.alice", "shared"]));
}

/// Every file and directory under `dir`, relative, with each file's length.
fn tree(dir: &Path) -> BTreeSet<(PathBuf, u64)> {
    let mut out = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.path().symlink_metadata().unwrap();
            let rel = entry.path().strip_prefix(dir).unwrap().to_path_buf();
            if meta.is_dir() {
                pending.push(entry.path());
                out.insert((rel, 0));
            } else {
                out.insert((rel, meta.len()));
            }
        }
    }
    out
}

fn assert_refused(namespaces: &Namespaces, ns: &str) {
    match namespaces.store(ns) {
        Err(err @ StoreError::InvalidSelector { .. }) => {
            let msg = err.to_string();
            assert!(msg.contains("namespace"), "{ns:?}: {msg}");
            assert!(
                !msg.contains(pg::PASSWORD),
                "{ns:?}: {msg} shows the password"
            );
        }
        Err(other) => panic!("{ns:?}: expected InvalidSelector, got {other:?}"),
        Ok(store) => panic!("{ns:?} opened {}", store.describe()),
    }
    assert!(check_namespace(ns).is_err(), "{ns:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_namespaces_are_separate_stores() {
    let namespaces = Arc::new(Namespaces::new("memory").unwrap());
    check_isolation(&namespaces).await;
    // No selector is memory too, and another `Namespaces` shares nothing with this one.
    let other = Arc::new(Namespaces::new(None::<&str>).unwrap());
    assert!(
        open(&other, A)
            .await
            .get("only-t.acme")
            .await
            .unwrap()
            .is_none()
    );
    for ns in bad_namespaces() {
        assert_refused(&namespaces, &ns);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn file_namespaces_are_separate_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    let selector = format!("file:{}", dir.display());
    let namespaces = Arc::new(Namespaces::new(selector.as_str()).unwrap());
    check_isolation(&namespaces).await;
    // Where the Tasks are: the root's in <dir>, each namespace's in <dir>/<segments>.
    assert!(dir.join("only-root.json").is_file());
    assert!(dir.join("t.acme/only-t.acme.json").is_file());
    assert!(dir.join("t.globex/only-t.globex.json").is_file());
    assert!(
        dir.join("t.acme/o.alice/only-t.acme-o.alice.json")
            .is_file()
    );
    check_reopened(&Arc::new(Namespaces::new(selector.as_str()).unwrap())).await;
    // A plain file store over the root directory (as `tnstore --store file:<dir>` opens it)
    // lists only the root's Tasks too.
    let plain = FileTaskStore::new(&dir).unwrap();
    assert_eq!(ids(&plain).await, set(&["only-root", "shared"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn wasm_namespaces_are_separate_granted_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    let selector = format!("wasm:builtin?dir={}&instances=2", dir.display());
    let namespaces = Arc::new(Namespaces::new(selector.as_str()).unwrap());
    check_isolation(&namespaces).await;
    assert!(dir.join("only-root.json").is_file());
    assert!(
        dir.join("t.acme/o.alice/only-t.acme-o.alice.json")
            .is_file()
    );
    check_reopened(&Arc::new(Namespaces::new(selector.as_str()).unwrap())).await;
    // The native file store reads what the component wrote in a namespace's directory.
    let native = FileTaskStore::new(dir.join("t.globex")).unwrap();
    assert_eq!(ids(&native).await, set(&["only-t.globex", "shared"]));
}

/// The stores over directories ignore the namespace subdirectories in their directory:
/// listing and pruning the root (or a tenant) never reaches a namespace under it, and neither
/// does reopening it (which sweeps the directory for stale temp files).
#[tokio::test(flavor = "multi_thread")]
async fn listing_and_pruning_a_directory_leave_its_namespaces_alone() {
    let tmp = tempfile::tempdir().unwrap();
    for selector in [
        format!("file:{}", tmp.path().join("file").display()),
        format!("wasm:builtin?dir={}", tmp.path().join("wasm").display()),
    ] {
        let namespaces = Arc::new(Namespaces::new(selector.as_str()).unwrap());
        let root = namespaces.root();
        let a = open(&namespaces, A).await;
        let c = open(&namespaces, C).await;
        let old = json!({"status": {"state": "completed", "timestamp": "2020-01-01T00:00:00Z"}});
        for (store, id) in [(&root, "r"), (&a, "a"), (&c, "c")] {
            let mut value = old.clone();
            value["id"] = json!(id);
            store.save(&task(value)).await.unwrap();
        }
        let now = toolnexus_a2a::maintenance::now();
        let deleted = toolnexus_a2a::maintenance::prune(&*root, now, &[])
            .await
            .unwrap();
        assert_eq!(deleted, 1, "{selector}: only the root's own Task");
        assert!(root.get("r").await.unwrap().is_none());
        assert!(a.get("a").await.unwrap().is_some(), "{selector}");
        assert!(c.get("c").await.unwrap().is_some(), "{selector}");
        // Pruning a tenant leaves its owner's namespace.
        let deleted = toolnexus_a2a::maintenance::prune(&*a, now, &[])
            .await
            .unwrap();
        assert_eq!(deleted, 1, "{selector}");
        assert!(c.get("c").await.unwrap().is_some(), "{selector}");
        assert!(ids(&*root).await.is_empty());
        assert!(ids(&*a).await.is_empty());
        // Reopened (a fresh root store sweeps its directory), nothing of a namespace goes.
        let reopened = Arc::new(Namespaces::new(selector.as_str()).unwrap());
        assert!(ids(&*reopened.root()).await.is_empty());
        assert_eq!(ids(&*open(&reopened, C).await).await, set(&["c"]));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_namespaces_are_refused_and_create_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    for selector in [
        format!("file:{}", tmp.path().join("file/tasks").display()),
        format!(
            "wasm:builtin?dir={}",
            tmp.path().join("wasm/tasks").display()
        ),
    ] {
        let namespaces = Namespaces::new(selector.as_str()).unwrap();
        let before = tree(tmp.path());
        for ns in bad_namespaces() {
            assert_refused(&namespaces, &ns);
        }
        assert_eq!(
            tree(tmp.path()),
            before,
            "{selector}: something was created"
        );
        assert!(namespaces.opened().is_empty());
    }
}

/// A namespace directory that exists as anything but a directory (a link planted to send a
/// namespace's Tasks elsewhere, or a file) is refused, and nothing is written through it.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_directory_that_is_a_link_or_a_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    for selector in [
        format!("file:{}", dir.display()),
        format!("wasm:builtin?dir={}", dir.display()),
    ] {
        let namespaces = Namespaces::new(selector.as_str()).unwrap();
        let link = dir.join("t.link");
        if link.symlink_metadata().is_err() {
            std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
            std::fs::write(dir.join("t.file"), "not a directory").unwrap();
        }
        for ns in ["t.link", "t.link/o.alice", "t.file", "t.file/o.alice"] {
            match namespaces.store(ns).map(|s| s.describe()) {
                Err(err @ StoreError::Io { .. }) => {
                    assert!(err.to_string().contains("t."), "{err}")
                }
                other => panic!("{selector} {ns}: expected an Io error, got {other:?}"),
            }
        }
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }
}

#[test]
fn selectors_that_cannot_be_namespaced_are_typed_errors() {
    let built: Arc<dyn TaskStore> = Arc::new(toolnexus::InMemoryTaskStore::new());
    match Namespaces::new(StoreSelector::Store(built)) {
        Err(StoreError::InvalidSelector { reason, .. }) => {
            assert!(
                reason.contains("cannot be divided into namespaces"),
                "{reason}"
            )
        }
        other => panic!("expected InvalidSelector, got {other:?}"),
    }
    // Everything else fails as resolve_store fails it.
    assert!(matches!(
        Namespaces::new("redis:whatever"),
        Err(StoreError::UnknownSelector(_))
    ));
    assert!(matches!(
        Namespaces::new("file:"),
        Err(StoreError::InvalidSelector { .. })
    ));
    assert!(matches!(
        Namespaces::new("wasm:builtin?nope=1"),
        Err(StoreError::InvalidSelector { .. })
    ));
    let err = Namespaces::new("postgress://app:s3cret@db/agents").unwrap_err();
    assert!(!err.to_string().contains("s3cret"), "{err}");
}

/// Many callers opening one namespace at once all get the one store (for memory, a second
/// store would silently lose the Tasks saved in the first).
#[test]
fn concurrent_first_uses_give_one_store() {
    let tmp = tempfile::tempdir().unwrap();
    for selector in [
        "memory".to_owned(),
        format!("file:{}", tmp.path().join("file").display()),
        format!("wasm:builtin?dir={}", tmp.path().join("wasm").display()),
    ] {
        let namespaces = Namespaces::new(selector.as_str()).unwrap();
        let stores: Vec<Arc<dyn TaskStore>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| namespaces.store(C).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for store in &stores[1..] {
            assert!(Arc::ptr_eq(&stores[0], store), "{selector}");
        }
    }
}

/// Opening a namespace of a component store reuses the component this process compiled: it
/// costs an instantiation, not a compile. The times are printed (`--nocapture`), not asserted.
#[test]
fn wasm_namespaces_reuse_the_compiled_component() {
    let tmp = tempfile::tempdir().unwrap();
    // No disk cache and a component this process has not compiled yet under this name: the
    // root pays the compile (or the in-process memo already holds it: the time says which).
    let selector = format!(
        "wasm:builtin?dir={}&cache=off",
        tmp.path().join("tasks").display()
    );
    let started = Instant::now();
    let namespaces = Namespaces::new(selector.as_str()).unwrap();
    let root = started.elapsed();
    let mut times = Vec::new();
    for ns in ["t.one", "t.two", "t.two/o.three"] {
        let started = Instant::now();
        namespaces.store(ns).unwrap();
        let first = started.elapsed();
        let started = Instant::now();
        namespaces.store(ns).unwrap();
        times.push((ns, first, started.elapsed()));
    }
    eprintln!("wasm:builtin root opened in {root:?}");
    for (ns, first, again) in &times {
        eprintln!("namespace {ns}: first use {first:?}, again {again:?}");
    }
    // A generous bound, far below a compile of the component on any machine we run on.
    for (ns, first, _) in &times {
        assert!(*first < Duration::from_secs(5), "{ns}: {first:?}");
    }
}

/// Inverts the plain (not hashed) encoding of a namespace table: proof that distinct
/// namespaces get distinct plain names.
fn decode_plain(encoded: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = encoded.chars();
    while let Some(c) = chars.next() {
        out.push(match c {
            '_' => match chars.next()? {
                '_' => '/',
                'u' => '_',
                'd' => '.',
                'h' => '-',
                _ => return None,
            },
            c if c.is_ascii_alphanumeric() => c,
            _ => return None,
        });
    }
    Some(out)
}

fn is_identifier(s: &str) -> bool {
    s.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[test]
fn postgres_table_names_are_injective_and_fit() {
    // Every namespace of up to 3 characters over an alphabet holding each escaped character,
    // both cases and a digit; then long ones that share long prefixes, so they are hashed.
    let alphabet = ['a', 'A', '0', '_', '.', '-', '/', 'x', 'd'];
    let mut namespaces: Vec<String> = Vec::new();
    let mut frontier = vec![String::new()];
    for _ in 0..3 {
        let mut next = Vec::new();
        for prefix in &frontier {
            for c in alphabet {
                next.push(format!("{prefix}{c}"));
            }
        }
        namespaces.extend(next.iter().cloned());
        frontier = next;
    }
    namespaces.retain(|ns| check_namespace(ns).is_ok());
    let long_prefix = format!("t.{}", "long-tenant".repeat(5));
    for i in 0..5_000 {
        namespaces.push(format!("{long_prefix}/o.{i}"));
        namespaces.push(format!("{long_prefix}/o_{i}"));
        namespaces.push(format!("{}{i}", "x".repeat(40)));
    }
    for len in 1..=64 {
        namespaces.push("n".repeat(len)); // every length across the plain/hashed boundary
        namespaces.push(format!("{}/{}", "p".repeat(len), "q".repeat(len)));
    }
    namespaces.sort();
    namespaces.dedup();
    assert!(namespaces.len() > 15_000);

    for base in [
        "t",
        "toolnexus_tasks",
        "app.tasks",
        &"b".repeat(MAX_NAMESPACED_TABLE),
    ] {
        let bare = base.rsplit('.').next().unwrap();
        let indexes: Vec<String> = [
            "listed",
            "context_listed",
            "state_listed",
            "context_id",
            "state",
        ]
        .iter()
        .map(|s| format!("{bare}_{s}"))
        .collect();
        let mut seen: HashMap<String, &str> = HashMap::new();
        let mut hashed = 0;
        for ns in &namespaces {
            let table = namespace_table(base, ns).unwrap();
            let (schema, name) = match table.rsplit_once('.') {
                Some((schema, name)) => (Some(schema), name),
                None => (None, table.as_str()),
            };
            assert_eq!(schema, base.rsplit_once('.').map(|(s, _)| s), "{table}");
            assert!(name.len() <= 48, "{ns:?} → {table} ({} bytes)", name.len());
            assert!(is_identifier(name), "{ns:?} → {table}");
            assert!(
                name != bare && !indexes.contains(&name.to_owned()),
                "{table}"
            );
            let encoded = name
                .strip_prefix(bare)
                .and_then(|rest| rest.strip_prefix("__"))
                .unwrap_or_else(|| panic!("{table} does not extend {bare}__"));
            match decode_plain(encoded) {
                Some(decoded) => assert_eq!(&decoded, ns, "{table}"),
                None => {
                    hashed += 1;
                    // All the room, less one byte when a two-byte code did not fit.
                    assert!(name.len() >= 47, "a hashed name uses the room: {table}");
                }
            }
            if let Some(earlier) = seen.insert(name.to_owned(), ns) {
                panic!("{earlier:?} and {ns:?} share the table {table}");
            }
            // The same namespace always maps to the same table.
            assert_eq!(namespace_table(base, ns).unwrap(), table);
        }
        assert!(hashed > 10_000, "{base}: {hashed} hashed");
    }

    // Invalid namespaces and tables that cannot be divided are refused.
    for ns in bad_namespaces() {
        assert!(namespace_table("tasks", &ns).is_err(), "{ns:?}");
    }
    assert!(namespace_table(&"b".repeat(MAX_NAMESPACED_TABLE + 1), "a").is_err());
    assert!(namespace_table("bad-name", "a").is_err());
}

/// The tables of a test's namespaces, dropped at the end on servers that outlive the test.
fn guards(server: &pg::Server, base: &str, namespaces: &[&str]) -> Vec<TableGuard> {
    let mut guards = vec![TableGuard::new(server, base)];
    for ns in namespaces {
        guards.push(TableGuard::new(server, &namespace_table(base, ns).unwrap()));
    }
    guards
}

/// A base table short enough to be divided (`pg::unique_table`'s are up to 48 bytes).
fn short_unique_table() -> String {
    let table = pg::unique_table("n");
    assert!(table.len() <= MAX_NAMESPACED_TABLE, "{table}");
    table
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_namespaces_are_separate_tables() {
    let Some(server) = pg::server() else { return };
    let base = short_unique_table();
    let long = format!("t.{}/o.{}", "a".repeat(60), "b".repeat(60));
    let _guards = guards(&server, &base, &[A, B, C, &long]);
    let selector = server.selector(&format!("table={base}&pool=2"));
    let namespaces = Arc::new(Namespaces::new(selector.as_str()).unwrap());
    assert!(!format!("{namespaces:?}").contains(pg::PASSWORD));
    assert!(!namespaces.selector().contains(pg::PASSWORD));
    check_isolation(&namespaces).await;
    check_reopened(&Arc::new(Namespaces::new(selector.as_str()).unwrap())).await;

    // A namespace whose table name is hashed (48 bytes) works like any other.
    let started = Instant::now();
    let hashed = open(&namespaces, &long).await;
    // Connecting a pool and creating the table and its indexes: printed, not asserted.
    eprintln!("postgres namespace first use: {:?}", started.elapsed());
    assert!(namespace_table(&base, &long).unwrap().len() >= 47);
    hashed.save(&task(json!({"id": "h"}))).await.unwrap();
    assert!(hashed.get("h").await.unwrap().is_some());
    assert!(namespaces.root().get("h").await.unwrap().is_none());

    // The tables are the ones namespace_table names, and no others.
    let rows = pg::execute(
        server.url(),
        &format!(
            "SELECT table_name FROM information_schema.tables \
             WHERE table_name LIKE '{base}%' ORDER BY table_name"
        ),
    )
    .unwrap();
    let mut tables: Vec<String> = rows.into_iter().filter_map(|r| r[0].clone()).collect();
    tables.sort();
    let mut expected: Vec<String> = [A, B, C, long.as_str()]
        .iter()
        .map(|ns| namespace_table(&base, ns).unwrap())
        .chain([base.clone()])
        .flat_map(|t| [format!("{t}_push_configs"), t])
        .collect();
    expected.sort();
    assert_eq!(tables, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_invalid_namespaces_create_no_table_and_hide_the_password() {
    let Some(server) = pg::server() else { return };
    let base = short_unique_table();
    let _guards = guards(&server, &base, &[]);
    let namespaces = Namespaces::new(server.selector(&format!("table={base}"))).unwrap();
    for ns in bad_namespaces() {
        assert_refused(&namespaces, &ns);
    }
    let rows = pg::execute(
        server.url(),
        &format!("SELECT count(*) FROM information_schema.tables WHERE table_name LIKE '{base}%'"),
    )
    .unwrap();
    assert_eq!(
        rows[0][0].as_deref(),
        Some("2"),
        "only the root's table and its push table"
    );

    // A table too long to divide opens as a root, and refuses every namespace, typed and
    // without the password.
    let long = format!("{base}_{}", "l".repeat(48));
    let long = &long[..48];
    let _long_guard = TableGuard::new(&server, long);
    let namespaces = Namespaces::new(server.selector(&format!("table={long}"))).unwrap();
    match namespaces.store("a").map(|s| s.describe()) {
        Err(err @ StoreError::InvalidSelector { .. }) => {
            let msg = err.to_string();
            assert!(msg.contains("at most"), "{msg}");
            assert!(!msg.contains(pg::PASSWORD), "{msg}");
        }
        other => panic!("expected InvalidSelector, got {other:?}"),
    }
    // A bad option fails as resolve_store fails it, without the password.
    let err = Namespaces::new(server.selector("table=1bad")).unwrap_err();
    assert!(!err.to_string().contains(pg::PASSWORD), "{err}");
}
