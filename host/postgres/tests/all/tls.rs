//! The PostgreSQL store over TLS against real servers: throwaway clusters with `ssl=on` (a CA and
//! a server certificate for `localhost` and `127.0.0.1`, made for the run) and with `ssl=off`.
//! libpq's `sslmode` and `sslrootcert`, with libpq's meanings (see `docs/postgres.md`).
//!
//! The clusters are the tests' own (`TOOLNEXUS_TEST_POSTGRES_URL` is not used: these need a
//! server configured for TLS). Without PostgreSQL the server tests print `SKIPPED: …` and pass,
//! unless `TOOLNEXUS_REQUIRE_POSTGRES=1`, where that fails.

use crate::support;

use crate::support::{Ca, Cluster, PASSWORD};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use std::path::Path;
use toolnexus_core::{Blame, StoreError, Task, TaskStore};
use toolnexus_postgres::{PostgresTaskStore, builder_from_selector};

/// What `toolnexus::resolve_store` does with a `postgres://` selector.
async fn resolve(selector: &str) -> Result<PostgresTaskStore, StoreError> {
    builder_from_selector(selector)?.connect().await
}

/// A path as a selector option value.
fn encoded(path: &Path) -> String {
    utf8_percent_encode(&path.to_string_lossy(), NON_ALPHANUMERIC).to_string()
}

/// Saves a Task and reads it back.
async fn round_trip(store: &PostgresTaskStore, id: &str) {
    let task = Task::from_json(&format!(
        r#"{{"id": "{id}", "contextId": "c", "status": {{"state": "working"}}}}"#
    ))
    .unwrap();
    store.save(&task).await.unwrap();
    assert_eq!(store.get(id).await.unwrap().as_ref(), Some(&task), "{id}");
}

/// Whether each of the server's connections with `application_name` `app` is encrypted, as the
/// server sees it (`pg_stat_ssl`). The store keeps its connections in its pool, so this is
/// asked while the store lives.
fn encrypted(cluster: &Cluster, app: &str) -> Vec<bool> {
    let rows = support::execute(
        &cluster.url(),
        &format!(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = '{app}'"
        ),
    )
    .unwrap();
    rows.into_iter()
        .map(|row| row.first().cloned().flatten().as_deref() == Some("t"))
        .collect()
}

/// A refusal the operator must fix: `InvalidSelector`, blamed on the caller, saying `want`,
/// never showing the password.
#[track_caller]
fn assert_refused(result: Result<PostgresTaskStore, StoreError>, want: &str) -> String {
    let err = match result {
        Ok(store) => panic!("connected to {}", store.describe()),
        Err(err) => err,
    };
    let msg = err.to_string();
    assert!(
        matches!(err, StoreError::InvalidSelector { .. }),
        "not InvalidSelector: {msg}"
    );
    assert_eq!(err.blame(), Blame::Caller, "{msg}");
    assert!(msg.contains(want), "{msg}\nshould say {want:?}");
    assert!(!msg.contains(PASSWORD), "{msg} shows the password");
    assert!(!msg.contains("pw-1"), "{msg} shows the password");
    msg
}

/// `sslmode=require` encrypts (the server says so) without checking the certificate (its CA is
/// in no root store), and the store works over it.
#[tokio::test(flavor = "multi_thread")]
async fn require_encrypts_without_checking_the_certificate() {
    let Some(cluster) = support::tls_cluster() else {
        return;
    };
    let selector = format!(
        "{}?sslmode=require&application_name=tn_require&table=tls_require",
        cluster.url()
    );
    let store = resolve(&selector).await.unwrap();
    round_trip(&store, "over-tls").await;
    let connections = encrypted(&cluster, "tn_require");
    assert!(!connections.is_empty(), "the store's connections are open");
    assert!(connections.iter().all(|tls| *tls), "{connections:?}");
}

/// `verify-full` with the CA as `sslrootcert` connects to a host the certificate names: an IP
/// address (subjectAltName IP) and a DNS name, in a URL and in a key-value string.
#[tokio::test(flavor = "multi_thread")]
async fn verify_full_accepts_the_cas_certificate_for_the_host() {
    let Some(cluster) = support::tls_cluster() else {
        return;
    };
    let ca = encoded(&cluster.ca_path());
    let by_ip = format!(
        "{}?sslmode=verify-full&sslrootcert={ca}&application_name=tn_full&table=tls_full",
        cluster.url()
    );
    let store = resolve(&by_ip).await.unwrap();
    round_trip(&store, "verified").await;
    let connections = encrypted(&cluster, "tn_full");
    assert!(
        !connections.is_empty() && connections.iter().all(|tls| *tls),
        "{connections:?}"
    );

    // The DNS name; hostaddr keeps "localhost" from resolving to ::1, where nothing listens.
    let by_name = format!(
        "{}?hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert={ca}&table=tls_full",
        cluster.url_for_host("localhost")
    );
    let store = resolve(&by_name).await.unwrap();
    assert!(store.get("verified").await.unwrap().is_some());

    // A libpq key-value string, the path quoted.
    let key_value = format!(
        "host=localhost hostaddr=127.0.0.1 port={} user={} password={PASSWORD} dbname=postgres \
         sslmode=verify-full sslrootcert='{}'",
        cluster.port(),
        support::USER,
        cluster.ca_path().display()
    );
    let store = PostgresTaskStore::builder(key_value)
        .table("tls_full")
        .connect()
        .await
        .unwrap();
    assert!(store.get("verified").await.unwrap().is_some());
}

/// A certificate that does not chain to `sslrootcert` is refused at resolve time, saying TLS
/// verification failed: under `verify-full`, `verify-ca`, and `require` with a root file (as
/// libpq). Without `sslrootcert` the system's roots are used, and they do not vouch for it
/// either.
#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_from_another_ca_is_refused() {
    let Some(cluster) = support::tls_cluster() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other-ca.pem");
    support::write_file(&other, &Ca::new("another CA").unwrap().pem(), 0o644).unwrap();
    let other = encoded(&other);
    for mode in ["verify-full", "verify-ca", "require"] {
        let selector = format!(
            "{}?sslmode={mode}&sslrootcert={other}&table=tls_other",
            cluster.url()
        );
        let msg = assert_refused(resolve(&selector).await, "TLS verification failed");
        assert!(
            msg.contains("not signed by a CA in sslrootcert"),
            "{mode}: {msg}"
        );
    }

    let system = format!("{}?sslmode=verify-full&table=tls_other", cluster.url());
    let msg = match resolve(&system).await {
        Ok(_) => panic!("the system's roots vouched for the test CA"),
        Err(err) => {
            assert!(matches!(err, StoreError::InvalidSelector { .. }), "{err}");
            err.to_string()
        }
    };
    assert!(
        msg.contains("TLS verification failed") || msg.contains("no system root certificates"),
        "{msg}"
    );
}

/// `verify-full` refuses a certificate that does not name the host connected to; `verify-ca`,
/// which checks the chain only, accepts it.
#[tokio::test(flavor = "multi_thread")]
async fn verify_full_checks_the_host_name_and_verify_ca_does_not() {
    let Some(cluster) = support::tls_cluster() else {
        return;
    };
    let ca = encoded(&cluster.ca_path());
    let elsewhere = cluster.url_for_host("db.invalid");
    let full = format!(
        "{elsewhere}?hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert={ca}&table=tls_name"
    );
    let msg = assert_refused(resolve(&full).await, "TLS verification failed");
    assert!(msg.contains("db.invalid"), "{msg}");
    assert!(msg.contains("verify-full checks"), "{msg}");

    let ca_only = format!(
        "{elsewhere}?hostaddr=127.0.0.1&sslmode=verify-ca&sslrootcert={ca}\
         &application_name=tn_verify_ca&table=tls_name"
    );
    let store = resolve(&ca_only).await.unwrap();
    round_trip(&store, "chain-only").await;
    let connections = encrypted(&cluster, "tn_verify_ca");
    assert!(
        !connections.is_empty() && connections.iter().all(|tls| *tls),
        "{connections:?}"
    );
}

/// Against a server without TLS, `require` fails at resolve time saying so, while `prefer`
/// falls back to plaintext (the server answered that it does not speak TLS).
#[tokio::test(flavor = "multi_thread")]
async fn require_fails_without_tls_on_the_server_and_prefer_falls_back() {
    let Some(cluster) = support::plain_cluster() else {
        return;
    };
    let require = format!("{}?sslmode=require&table=tls_plain", cluster.url());
    assert_refused(resolve(&require).await, "server does not support TLS");

    let prefer = format!(
        "{}?sslmode=prefer&application_name=tn_prefer_plain&table=tls_plain",
        cluster.url()
    );
    let store = resolve(&prefer).await.unwrap();
    round_trip(&store, "plaintext").await;
    let connections = encrypted(&cluster, "tn_prefer_plain");
    assert!(
        !connections.is_empty() && connections.iter().all(|tls| !*tls),
        "{connections:?}"
    );
}

/// `prefer`, and no `sslmode` at all (libpq's default is `prefer`), use TLS when the server
/// offers it; `disable` never does.
#[tokio::test(flavor = "multi_thread")]
async fn prefer_and_the_default_use_tls_when_the_server_offers_it() {
    let Some(cluster) = support::tls_cluster() else {
        return;
    };
    for (options, app, want_tls) in [
        ("sslmode=prefer&", "tn_prefer", true),
        ("", "tn_default", true),
        ("sslmode=disable&", "tn_disable", false),
    ] {
        let selector = format!(
            "{}?{options}application_name={app}&table=tls_prefer",
            cluster.url()
        );
        let store = resolve(&selector).await.unwrap();
        round_trip(&store, app).await;
        let connections = encrypted(&cluster, app);
        assert!(
            !connections.is_empty() && connections.iter().all(|tls| *tls == want_tls),
            "{app}: {connections:?}"
        );
    }
}

/// As libpq, `sslmode` does not apply to a Unix socket, which never carries TLS: even
/// `verify-full` connects over one.
#[tokio::test(flavor = "multi_thread")]
async fn a_unix_socket_never_uses_tls_whatever_sslmode_says() {
    let Some(cluster) = support::tls_cluster() else {
        return;
    };
    let key_value = format!(
        "host='{}' port={} user={} dbname=postgres sslmode=verify-full sslrootcert='{}' \
         application_name=tn_unix",
        cluster.socket_dir().display(),
        cluster.port(),
        support::USER,
        cluster.ca_path().display()
    );
    let store = PostgresTaskStore::builder(key_value)
        .table("tls_unix")
        .connect()
        .await
        .unwrap();
    round_trip(&store, "over-a-socket").await;
    assert_eq!(encrypted(&cluster, "tn_unix"), [false]);
}

/// Bad TLS options are refused before anything connects (`InvalidSelector`, naming the option;
/// the server named, port 1, would answer `Unavailable`), never showing the password. Needs no
/// server.
#[tokio::test(flavor = "multi_thread")]
async fn bad_tls_options_are_typed_errors_and_nothing_connects() {
    let base = "postgres://u:pw-1@127.0.0.1:1/db";
    let dir = tempfile::tempdir().unwrap();
    let missing = encoded(&dir.path().join("missing.pem"));
    let not_pem = dir.path().join("not.pem");
    support::write_file(&not_pem, "hello\n", 0o644).unwrap();
    let not_pem = encoded(&not_pem);
    let directory = encoded(dir.path());
    let cases = [
        (
            "sslmode=bogus".to_owned(),
            "sslmode \"bogus\" is not one of",
        ),
        ("sslmode=verify_full".to_owned(), "sslmode \"verify_full\""),
        ("sslmode=allow".to_owned(), "\"allow\" is not supported"),
        (
            "sslmode=require&sslmode=disable".to_owned(),
            "\"sslmode\" is given twice",
        ),
        (
            format!("sslmode=verify-full&sslrootcert={missing}"),
            "missing.pem\": cannot read it",
        ),
        (
            format!("sslmode=verify-ca&sslrootcert={directory}"),
            "cannot read it",
        ),
        (
            format!("sslmode=require&sslrootcert={not_pem}"),
            "holds no certificate",
        ),
        (
            "sslrootcert=system&sslmode=require".to_owned(),
            "may not be used with sslrootcert=system",
        ),
        ("sslrootcert=".to_owned(), "sslrootcert must name"),
    ];
    for (options, want) in cases {
        let selector = format!("{base}?{options}&table=t");
        let msg = assert_refused(resolve(&selector).await, want);
        assert!(
            msg.contains("sslmode") || msg.contains("sslrootcert"),
            "{options}: {msg} names neither option"
        );
    }

    // The builder takes libpq key-value strings too.
    let key_value = "host=127.0.0.1 port=1 user=u password=pw-1 dbname=db sslmode=bogus";
    assert_refused(
        PostgresTaskStore::builder(key_value).connect().await,
        "sslmode \"bogus\"",
    );

    // A valid mode does try to connect: to nothing, so the server is unavailable.
    for mode in ["require", "verify-ca", "verify-full"] {
        let err = resolve(&format!("{base}?sslmode={mode}&connect_timeout=2"))
            .await
            .map(|s| s.describe())
            .unwrap_err();
        if mode == "require" || !err.to_string().contains("no system root certificates") {
            assert!(
                matches!(err, StoreError::Unavailable { .. }),
                "{mode}: {err}"
            );
        }
    }
}
