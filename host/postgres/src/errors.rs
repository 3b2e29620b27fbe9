//! Driver and pool errors as [`StoreError`]s, classified by what the driver exposes: the
//! server's SQLSTATE code, a closed connection, an I/O cause, a TLS (rustls) cause; never by
//! message text.

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

/// Why the store refused the server's certificate, if that is what the error is: the TLS
/// handshake (rustls, under the driver's I/O error) failed verification (`sslmode=verify-ca`,
/// `verify-full`, or a `sslrootcert`). The connection was never used.
pub(crate) fn tls_verification_failure(e: &tokio_postgres::Error) -> Option<String> {
    use rustls::{CertificateError, Error as Tls};
    let tls = io_cause(e)?.get_ref()?.downcast_ref::<Tls>()?;
    let hint = match tls {
        Tls::InvalidCertificate(CertificateError::UnknownIssuer) => {
            " (it is not signed by a CA in sslrootcert, or without sslrootcert by one of the \
             system's roots)"
        }
        Tls::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => {
            " (sslmode=verify-full checks that the certificate names the host connected to; \
             verify-ca does not)"
        }
        Tls::InvalidCertificate(_) | Tls::NoCertificatesPresented => "",
        _ => return None,
    };
    Some(format!(
        "TLS verification failed: the server's certificate was refused: {tls}{hint}"
    ))
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
    if let Some(reason) = tls_verification_failure(e) {
        // The certificate does not pass the checks the URL asks for: the operator's to fix
        // (the CA file, the mode, the host name). Once the store runs (the server's
        // certificate changed), the server is unusable until then.
        return if connecting {
            StoreError::InvalidSelector {
                selector: store.to_owned(),
                reason,
            }
        } else {
            unavailable(reason)
        };
    }
    let text = chain(e);
    if connection_lost(e) {
        return unavailable(text);
    }
    let cause = std::error::Error::source(e);
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
        // Only making a connection fails this way (the fast recycling method never queries).
        PoolError::Backend(e) => match pg_error(store, &e, connecting) {
            // A connection that cannot be made once the store runs, for a reason that is
            // neither I/O nor the server's answer (the server stopped offering TLS under
            // sslmode=require, say), is the server's state, not the store's fault.
            StoreError::Backend { store, reason } if !connecting && e.as_db_error().is_none() => {
                StoreError::Unavailable { store, reason }
            }
            other => other,
        },
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
