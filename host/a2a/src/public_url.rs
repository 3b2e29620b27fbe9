//! The URL the agent card advertises (`tnstore serve --public-url`): where clients reach the
//! server, which behind a reverse proxy or on a public address is not the address it listens on.

use std::fmt;

/// An absolute `http://` or `https://` URL with a host, ending in `/` (added when missing): the
/// JSON-RPC endpoint, and the root of the HTTP+JSON routes, of every interface on the card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl(String);

/// Why a public URL was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrlError {
    pub url: String,
    pub problem: &'static str,
}

impl fmt::Display for PublicUrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "public URL {:?}: {}", self.url, self.problem)
    }
}

impl std::error::Error for PublicUrlError {}

impl PublicUrl {
    /// Checks `text`: scheme `http` or `https`, a host, no query or fragment, no spaces.
    pub fn parse(text: &str) -> Result<PublicUrl, PublicUrlError> {
        let refuse = |problem| {
            Err(PublicUrlError {
                url: text.to_owned(),
                problem,
            })
        };
        let Some((scheme, rest)) = text.split_once("://") else {
            return refuse("must start with http:// or https://");
        };
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return refuse("must start with http:// or https://");
        }
        let host = rest.split('/').next().unwrap_or_default();
        if host.is_empty() || host.starts_with(':') || host.contains('@') {
            return refuse("must name a host (and no user), as in https://agent.example.com/");
        }
        if text.contains(['?', '#']) {
            return refuse("must have no query or fragment: it is the base of every route");
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return refuse("must have no spaces or control characters");
        }
        let mut url = text.to_owned();
        if !url.ends_with('/') {
            url.push('/');
        }
        Ok(PublicUrl(url))
    }

    /// The URL, ending in `/`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_end_in_a_slash() {
        assert_eq!(
            PublicUrl::parse("https://agent.example.com")
                .unwrap()
                .as_str(),
            "https://agent.example.com/"
        );
        assert_eq!(
            PublicUrl::parse("http://10.0.0.5:8080/a2a/")
                .unwrap()
                .as_str(),
            "http://10.0.0.5:8080/a2a/"
        );
        for bad in [
            "agent.example.com",
            "ftp://agent.example.com/",
            "https:///path",
            "https://agent.example.com/?x=1",
            "https://agent example.com/",
            "https://user@agent.example.com/",
        ] {
            assert!(PublicUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
