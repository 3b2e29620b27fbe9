//! Driver and pool errors as [`StoreError`]s, classified by what the driver exposes: the
//! server's SQLSTATE code, a closed connection, an I/O cause; never by message text.

use deadpool_postgres::{PoolError, TimeoutType};
use std::fmt::Write as _;
use tokio_postgres::error::SqlState;
use toolnexus_core::StoreError;

/// The error and its causes, joined: tokio-postgres puts the detail in the sources.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// SQLSTATE classes (the code's first two characters) the server answers with when it cannot
/// serve now, but may later: connection exceptions, insufficient resources, operator
/// intervention (shutdown, restart).
const UNAVAILABLE_CLASSES: [&str; 3] = ["08", "53", "57"];
/// SQLSTATE class 28: invalid authorization (a wrong password, an unknown role).
const AUTHORIZATION_CLASS: &str = "28";

/// Whether the connection itself broke (as opposed to the statement failing): the driver says
/// it closed, the server said it is going away, or the cause is an I/O error.
pub(crate) fn connection_lost(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        Some(code) => {
            in_class(code, "08")
                || [
                    SqlState::ADMIN_SHUTDOWN,
                    SqlState::CRASH_SHUTDOWN,
                    SqlState::CANNOT_CONNECT_NOW,
                ]
                .contains(code)
        }
        None => io_cause(e).is_some(),
    }
}

fn in_class(code: &SqlState, class: &str) -> bool {
    code.code().starts_with(class)
}

/// The I/O error under a driver error (connect, read, write), if that is what it is.
fn io_cause(e: &tokio_postgres::Error) -> Option<&std::io::Error> {
    std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>())
}

/// A driver error as a [`StoreError`]. `connecting`: while resolving the store, when refused
/// credentials, a missing database or a connection the URL cannot describe are the caller's to
/// fix.
pub(crate) fn pg_error(store: &str, e: &tokio_postgres::Error, connecting: bool) -> StoreError {
    let unavailable = |reason: String| StoreError::Unavailable {
        store: store.to_owned(),
        reason,
    };
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let mut reason = format!("{} (SQLSTATE {})", db.message(), code.code());
        if let Some(detail) = db.detail() {
            let _ = write!(reason, "; {detail}");
        }
        let refused = in_class(code, AUTHORIZATION_CLASS)
            || [
                SqlState::INVALID_CATALOG_NAME,
                SqlState::INVALID_SCHEMA_NAME,
                SqlState::INSUFFICIENT_PRIVILEGE,
                SqlState::UNDEFINED_TABLE,
            ]
            .contains(code);
        let transient = UNAVAILABLE_CLASSES.iter().any(|c| in_class(code, c))
            || in_class(code, AUTHORIZATION_CLASS)
            || [
                SqlState::READ_ONLY_SQL_TRANSACTION,
                SqlState::T_R_SERIALIZATION_FAILURE,
                SqlState::T_R_DEADLOCK_DETECTED,
                SqlState::INVALID_CATALOG_NAME,
            ]
            .contains(code);
        return if refused && connecting {
            StoreError::InvalidSelector {
                selector: store.to_owned(),
                reason: format!("PostgreSQL refused: {reason}"),
            }
        } else if transient {
            unavailable(format!("PostgreSQL: {reason}"))
        } else {
            StoreError::Backend {
                store: store.to_owned(),
                reason: format!("PostgreSQL: {reason}"),
            }
        };
    }
    let text = chain(e);
    if connection_lost(e) {
        return unavailable(text);
    }
    let cause = std::error::Error::source(e);
    if cause.is_some_and(|c| c.is::<tokio_postgres::tls::NoTlsError>()) {
        // The server or the URL demands TLS, which this build does not speak.
        return unavailable(text);
    }
    if connecting && cause.is_some() {
        // The URL parsed up front, so what the driver still refuses while connecting, short of
        // I/O and the server's own answers, is a setting it cannot use ("password missing",
        // an unusable host list): the selector's to fix.
        return StoreError::InvalidSelector {
            selector: store.to_owned(),
            reason: text,
        };
    }
    StoreError::Backend {
        store: store.to_owned(),
        reason: text,
    }
}

pub(crate) fn pool_error(store: &str, e: PoolError, connecting: bool) -> StoreError {
    let unavailable = |reason: String| StoreError::Unavailable {
        store: store.to_owned(),
        reason,
    };
    match e {
        PoolError::Backend(e) => pg_error(store, &e, connecting),
        PoolError::Timeout(TimeoutType::Wait) => {
            unavailable("timed out waiting for a free connection".into())
        }
        PoolError::Timeout(TimeoutType::Create) => {
            unavailable("timed out connecting to the server".into())
        }
        PoolError::Timeout(TimeoutType::Recycle) => {
            unavailable("timed out checking a pooled connection".into())
        }
        PoolError::Closed => unavailable("the connection pool is closed".into()),
        other => StoreError::Backend {
            store: store.to_owned(),
            reason: format!("connection pool: {other}"),
        },
    }
}
