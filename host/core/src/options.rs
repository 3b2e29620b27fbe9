//! The option syntax every store selector shares after its `?`: `key=value` pairs joined by
//! `&`, percent-decoded, with sizes (`64MiB`), durations (`5s`) and booleans. Each backend
//! knows its own keys and parses its own selector (`toolnexus-wasm`'s `wasm:` options,
//! `toolnexus-postgres`'s `postgres://` ones); this is only the grammar they share.
//!
//! Sizes and durations are parsed here rather than by a general-purpose crate on purpose: the
//! selector grammar accepts exactly these units and nothing else (no `1h 30m`, no fractions),
//! and each wrong value must be refused with the option's name.

/// `64MiB`, `512KiB`, `1GiB`, `4096` (bytes), `10MB` (decimal units too).
pub fn parse_size(s: &str) -> Option<usize> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let number: usize = number.parse().ok()?;
    let scale: usize = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return None,
    };
    number.checked_mul(scale).filter(|n| *n > 0)
}

/// `5s`, `250ms`, `2m`.
pub fn parse_duration(s: &str) -> Option<std::time::Duration> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let number: u64 = number.parse().ok()?;
    let duration = match unit {
        "ms" => std::time::Duration::from_millis(number),
        "s" => std::time::Duration::from_secs(number),
        "m" => std::time::Duration::from_secs(number.checked_mul(60)?),
        _ => return None,
    };
    (!duration.is_zero()).then_some(duration)
}

/// `true`/`1`/`yes`, `false`/`0`/`no`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// `a=1&b=x%26y` → `[("a","1"), ("b","x&y")]`: each key at most once, keys and values
/// percent-decoded (`+` stays `+`: a selector is not a form). The error says what is wrong.
pub fn parse_query(query: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("option {pair:?} has no \"=value\""))?;
        let (key, value) = (percent_decode(key)?, percent_decode(value)?);
        if out.iter().any(|(k, _)| *k == key) {
            return Err(format!("option {key:?} is given twice"));
        }
        out.push((key, value));
    }
    Ok(out)
}

/// Percent-decoding by the `percent-encoding` crate; it passes a malformed escape through as
/// it is, so those are refused first: an option value must mean exactly one thing.
fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let malformed = bytes.iter().enumerate().any(|(i, b)| {
        *b == b'%'
            && !bytes
                .get(i + 1..i + 3)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if malformed {
        return Err(format!("bad percent escape in {s:?}"));
    }
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(|decoded| decoded.into_owned())
        .map_err(|_| format!("{s:?} does not decode to UTF-8"))
}

/// A selector or connection URL with every password replaced by `***`, for messages: the
/// password of `scheme://user:password@host`, and any `password=` value (a query parameter or
/// a libpq key-value pair). Every selector a message shows goes through this first.
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
    fn sizes_and_durations_parse() {
        assert_eq!(parse_size("64MiB"), Some(64 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("1GiB"), Some(1 << 30));
        assert_eq!(parse_size("10MB"), Some(10_000_000));
        for bad in ["", "MiB", "0", "-1", "12XB", "99999999999999999999GiB"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
        assert_eq!(
            parse_duration("250ms"),
            Some(std::time::Duration::from_millis(250))
        );
        assert_eq!(
            parse_duration("5s"),
            Some(std::time::Duration::from_secs(5))
        );
        assert_eq!(
            parse_duration("2m"),
            Some(std::time::Duration::from_secs(120))
        );
        for bad in ["", "5", "0s", "1h", "s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn query_is_split_and_decoded() {
        assert_eq!(
            parse_query("dir=a%26b&instances=2").unwrap(),
            [
                ("dir".to_owned(), "a&b".to_owned()),
                ("instances".to_owned(), "2".to_owned())
            ]
        );
        assert!(parse_query("dir").is_err());
        assert!(parse_query("dir=a&dir=b").is_err());
        assert!(parse_query("dir=%zz").is_err());
        assert!(parse_query("dir=%2").is_err());
        assert!(parse_query("dir=%ff").is_err(), "not UTF-8");
        assert_eq!(parse_query("dir=a+b").unwrap()[0].1, "a+b");
    }

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
