//! The `postgres://` selector: a libpq connection URL plus this store's own options, parsed
//! into a [`PostgresTaskStoreBuilder`]. The `toolnexus` crate's `resolve_store` hands every
//! `postgres://` and `postgresql://` selector here; this backend alone knows its options.

use crate::builder::PostgresTaskStoreBuilder;
use crate::store::PostgresTaskStore;
use crate::table_name::quote_table;
use toolnexus_core::StoreError;
pub use toolnexus_core::options::redact;
use toolnexus_core::options::{parse_duration, parse_query};

/// The options a `postgres://` selector takes for the store itself (after `?`); every other
/// option is a libpq connection parameter (`sslmode`, `sslrootcert`, `connect_timeout`,
/// `application_name`, `options`, …): `sslmode` and `sslrootcert` set up TLS, the rest is
/// passed to the driver.
pub const POSTGRES_OPTIONS: &[&str] = &["table", "pool", "timeout"];

/// The builder a `postgres://…` (or `postgresql://…`) selector describes, not yet connected:
/// the store's own options ([`POSTGRES_OPTIONS`]: `table`, `pool`, `timeout`) come out, the
/// rest of the URL (libpq connection parameters included) goes to the driver. Errors never
/// show the password.
pub fn builder_from_selector(selector: &str) -> Result<PostgresTaskStoreBuilder, StoreError> {
    let invalid = |reason: String| StoreError::InvalidSelector {
        selector: redact(selector),
        reason,
    };
    let (base, query) = selector.split_once('?').unwrap_or((selector, ""));
    let mut passed = Vec::new();
    let mut ours = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let key = pair.split_once('=').map_or(pair, |(k, _)| k);
        if POSTGRES_OPTIONS.contains(&key) {
            ours.push(pair);
        } else {
            passed.push(pair);
        }
    }
    let url = if passed.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", passed.join("&"))
    };
    let mut builder = PostgresTaskStore::builder(url);
    for (key, value) in parse_query(&ours.join("&")).map_err(invalid)? {
        let bad = |what: &str| invalid(format!("{key:?} must be {what}, not {value:?}"));
        builder = match key.as_str() {
            "table" => {
                quote_table(&value).map_err(invalid)?;
                builder.table(value)
            }
            "pool" => builder.pool_size(
                value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=1000).contains(n))
                    .ok_or_else(|| bad("an integer from 1 to 1000"))?,
            ),
            "timeout" => builder
                .timeout(parse_duration(&value).ok_or_else(|| bad("a duration like 5s or 250ms"))?),
            other => return Err(invalid(format!("unknown option {other:?}"))),
        };
    }
    Ok(builder)
}
