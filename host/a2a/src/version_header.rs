//! The protocol version a request asks for (`A2A-Version`, as a header or a query parameter).

use axum::extract::Request;
use toolnexus_a2a_protocol::{A2aError, ErrorKind, Version};

/// The request header that names the protocol version.
pub const VERSION_HEADER: &str = "a2a-version";

/// The protocol version a request asks for: its `A2A-Version` header, else an `A2A-Version`
/// query parameter (1.0 lets clients send it either way); `None` when neither is there.
pub(crate) fn requested_version(request: &Request) -> Option<Result<Version, A2aError>> {
    if let Some(value) = request.headers().get(VERSION_HEADER) {
        return Some(match value.to_str() {
            Ok(v) => Version::from_header(Some(v)),
            Err(_) => Err(A2aError::new(
                ErrorKind::VersionNotSupported,
                "the A2A-Version header is not text",
            )),
        });
    }
    let query = request.uri().query()?;
    url_pairs(query)
        .into_iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(VERSION_HEADER))
        .map(|(_, v)| Version::from_header(Some(&v)))
}

/// `application/x-www-form-urlencoded` pairs of a query string.
pub(crate) fn url_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8_lossy()
                    .into_owned()
            };
            (decode(k), decode(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_pairs_are_decoded() {
        assert_eq!(
            url_pairs("a=1&b=x%20y&c=p+q&&d"),
            [
                ("a".to_string(), "1".to_string()),
                ("b".into(), "x y".into()),
                ("c".into(), "p q".into()),
                ("d".into(), "".into())
            ]
        );
    }
}
