//! The `postgres://` selector: a libpq connection URL plus this store's own options, parsed
//! into a [`PostgresTaskStoreBuilder`]. The `toolnexus` crate's `resolve_store` hands every
//! `postgres://` and `postgresql://` selector here; this backend alone knows its options.

use crate::{POSTGRES_OPTIONS, PostgresTaskStore, PostgresTaskStoreBuilder, quote_table};
use toolnexus_core::StoreError;
use toolnexus_core::options::{parse_duration, parse_query};

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

/// The URL with any password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some(start) = out.find("://").map(|i| i + 3) {
        let end = out[start..]
            .find(['/', '?'])
            .map_or(out.len(), |i| start + i);
        if let Some(at) = out[start..end].rfind('@').map(|i| start + i)
            && let Some(colon) = out[start..at].find(':').map(|i| start + i)
        {
            out.replace_range(colon + 1..at, "***");
        }
    }
    // `password=...` as a query parameter or a key-value pair.
    let mut redacted = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(i) = rest.find("password=") {
        let after = i + "password=".len();
        redacted.push_str(&rest[..after]);
        redacted.push_str("***");
        rest = &rest[after..];
        let end = rest.find(['&', ' ']).unwrap_or(rest.len());
        rest = &rest[end..];
    }
    redacted.push_str(rest);
    redacted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("postgres://u:s3cret@h:5432/db?table=t"),
            "postgres://u:***@h:5432/db?table=t"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redact("postgres://h/db?password=s3cret&table=t"),
            "postgres://h/db?password=***&table=t"
        );
        assert_eq!(
            redact("host=h password=s3cret user=u"),
            "host=h password=*** user=u"
        );
        assert_eq!(redact("postgres://u:p@ss@h/db"), "postgres://u:***@h/db");
    }
}
