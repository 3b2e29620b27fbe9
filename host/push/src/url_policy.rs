//! Which webhook URLs are acceptable: the check of a URL a client gives
//! ([`check_url`], before anything is stored) and of where a delivery may connect
//! ([`resolve_checked`], at every attempt and every redirect). The address rules are agents'
//! outgoing-HTTP rules (`toolnexus_egress`), with one difference: a destination
//! the operator's list does not name may still reach public addresses.

use hyper::http::Uri;
use std::net::SocketAddr;
use tokio::time::Instant;
use toolnexus_egress::address::classify;
use toolnexus_egress::allow_list::{AllowList, Reach};
use toolnexus_egress::check::{Refusal, check_destination_or};
use toolnexus_egress::destination::{Destination, DestinationError, Host};

/// The longest webhook URL accepted, in bytes.
pub const MAX_URL_BYTES: usize = 2048;

/// The destination a webhook URL names, as its capacity share's key: `scheme://host:port`
/// (lower case, the scheme's port when none is written); `None` when it is not an absolute
/// URL (such a config is refused at delivery anyway).
pub fn destination_of(url: &str) -> Option<String> {
    let uri: Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let host = uri.host()?.to_ascii_lowercase();
    let port = uri.port_u16().or(match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    })?;
    Some(format!("{scheme}://{host}:{port}"))
}

/// Checks a webhook URL as a client gives it: absolute `http` or `https`, with a host, without
/// user information; a literal IP address must be public or named by `allow`. A name is
/// accepted here: the addresses it resolves to are checked at each delivery. `Err` is the
/// reason, for the client.
pub fn check_url(allow: &AllowList, url: &str) -> Result<Uri, String> {
    if url.len() > MAX_URL_BYTES {
        return Err(format!(
            "the URL is {} bytes long, over the limit of {MAX_URL_BYTES}",
            url.len()
        ));
    }
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("not an absolute http or https URL: {e}"))?;
    let authority = uri
        .authority()
        .ok_or("not an absolute http or https URL: it has no host")?;
    if authority.as_str().contains('@') {
        return Err(
            "the URL carries user information (user:password@); give credentials in \
                    `authentication` instead"
                .into(),
        );
    }
    let destination = Destination::of_uri(&uri).map_err(|e| match e {
        DestinationError::Scheme(s) if s.is_empty() => "not an absolute http or https URL".into(),
        other => other.to_string(),
    })?;
    if let Host::Ip(ip) = destination.host {
        let reach = allow
            .reach(&destination.host, destination.port)
            .unwrap_or(Reach::Public);
        if !reach.permits(ip) {
            return Err(format!(
                "{destination} is {}; webhooks go to public addresses unless the operator \
                 allows this one (--push-allow)",
                classify(ip)
            ));
        }
    }
    Ok(uri)
}

/// With `require_https` (`--push-require-https`), anything but an `https` URL is refused;
/// `Err` names the flag.
pub fn check_scheme(require_https: bool, uri: &Uri) -> Result<(), String> {
    if require_https
        && !uri
            .scheme_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("https"))
    {
        return Err(format!(
            "{uri} is not an https URL, and this server sends push notifications over HTTPS \
             only (--push-require-https)"
        ));
    }
    Ok(())
}

/// Where a delivery to `uri` may connect: its destination and every address its name resolves
/// to, each checked (any address not allowed refuses the whole destination). Resolution must
/// finish by `resolve_by`.
pub async fn resolve_checked(
    allow: &AllowList,
    uri: &Uri,
    resolve_by: Instant,
) -> Result<(Destination, Vec<SocketAddr>), Refusal> {
    check_destination_or(allow, Some(Reach::Public), uri, resolve_by).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(allow: &str, url: &str) -> String {
        check_url(&AllowList::parse(allow).unwrap(), url).unwrap_err()
    }

    fn accepted(allow: &str, url: &str) -> bool {
        check_url(&AllowList::parse(allow).unwrap(), url).is_ok()
    }

    #[test]
    fn https_only_when_required() {
        let http: Uri = "http://e.com/".parse().unwrap();
        let https: Uri = "HTTPS://e.com/".parse().unwrap();
        assert!(check_scheme(false, &http).is_ok());
        assert!(check_scheme(true, &https).is_ok());
        let refused = check_scheme(true, &http).unwrap_err();
        assert!(refused.contains("--push-require-https"), "{refused}");
    }

    #[test]
    fn destinations_are_scheme_host_and_port() {
        assert_eq!(
            destination_of("HTTPS://Hooks.Example.com/a?b").as_deref(),
            Some("https://hooks.example.com:443")
        );
        assert_eq!(
            destination_of("http://127.0.0.1:9000/x").as_deref(),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(
            destination_of("http://[::1]/").as_deref(),
            Some("http://[::1]:80")
        );
        assert_eq!(destination_of("/relative"), None);
        assert_eq!(destination_of("ftp://e.com/"), None);
    }

    #[test]
    fn public_addresses_and_names_are_accepted() {
        for url in [
            "https://hooks.example.com/a2a?x=1",
            "http://8.8.8.8:8080/hook",
            "https://[2606:4700:4700::1111]/",
            // Names are checked when they are resolved, at delivery.
            "http://localhost:9/hook",
        ] {
            assert!(accepted("", url), "{url}");
        }
    }

    #[test]
    fn non_public_literal_addresses_are_refused_unless_allowed() {
        let cases = [
            ("http://127.0.0.1:8080/", "a loopback address"),
            ("http://[::1]:8080/", "a loopback address"),
            ("http://169.254.169.254/latest", "a cloud metadata address"),
            ("http://[fd00:ec2::254]/", "a cloud metadata address"),
            ("http://10.1.2.3/", "a private-network address"),
            ("http://192.168.0.1/", "a private-network address"),
            ("http://100.64.0.1/", "a carrier-grade NAT address"),
            ("http://169.254.1.1/", "a link-local address"),
            ("http://0.0.0.0/", "the unspecified address"),
            ("http://[::]/", "the unspecified address"),
            ("http://224.0.0.1/", "a multicast address"),
            ("http://2130706433/", "a loopback address"),
            ("http://[::ffff:127.0.0.1]/", "a loopback address"),
        ];
        for (url, class) in cases {
            let why = refused("", url);
            assert!(why.contains(class), "{url}: {why}");
            assert!(why.contains("--push-allow"), "{url}: {why}");
        }
        assert!(accepted("127.0.0.1:8080", "http://127.0.0.1:8080/"));
        assert!(!accepted("127.0.0.1:8080", "http://127.0.0.1:8081/"));
        assert!(accepted("[::1]", "http://[::1]:8080/"));
        assert!(accepted("169.254.169.254", "http://169.254.169.254/"));
    }

    #[test]
    fn only_absolute_http_urls_without_userinfo() {
        for (url, reason) in [
            ("ftp://example.com/", "scheme \"ftp\""),
            ("/relative/path", "not an absolute"),
            ("example.com/hook", "not an absolute"),
            ("http://user:pw@example.com/", "user information"),
            ("http://exa mple.com/", "not an absolute"),
            ("", "not an absolute"),
        ] {
            let why = refused("", url);
            assert!(why.contains(reason), "{url:?}: {why}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES));
        assert!(refused("", &long).contains("over the limit"));
    }

    #[tokio::test]
    async fn names_are_checked_after_resolution() {
        let uri: Uri = "http://localhost:9/hook".parse().unwrap();
        let by = Instant::now() + std::time::Duration::from_secs(5);
        let refusal = resolve_checked(&AllowList::default(), &uri, by)
            .await
            .unwrap_err();
        assert!(refusal.is_denial(), "{refusal}");
        assert!(refusal.to_string().contains("loopback"), "{refusal}");
        let allow = AllowList::parse("internal:localhost:9").unwrap();
        let (_, addresses) = resolve_checked(&allow, &uri, by).await.unwrap();
        assert!(addresses.iter().all(|a| a.ip().is_loopback()));
    }
}
