//! One POST of a delivery: to an address [`resolve_checked`] allowed (the name is never
//! resolved again, so DNS rebinding gains nothing), HTTP/1.1 by hyper, TLS by rustls with the
//! system roots, within one deadline for everything. A 307 or 308 answer is followed (at most
//! [`MAX_REDIRECTS`] times), each target checked like the first; the webhook's credentials go
//! only to the origin the config names. The response body is never read: the status is the
//! answer.

use crate::options::MAX_REDIRECTS;
use crate::url_policy::{check_scheme, resolve_checked};
use bytes::Bytes;
use http_body_util::Full;
use hyper::StatusCode;
use hyper::http::{HeaderName, HeaderValue, Method, Request, Uri, header};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout_at};
use toolnexus_egress::allow_list::AllowList;
use toolnexus_egress::check::Refusal;
use toolnexus_egress::destination::{Destination, Host};

/// A header that carries a secret: sent to the config's own origin only.
#[derive(Debug, Clone)]
pub struct Header {
    pub name: HeaderName,
    pub value: HeaderValue,
    pub secret: bool,
}

/// Why a POST got no HTTP status.
#[derive(Debug)]
pub enum PostError {
    /// The policy refused the destination (or a redirect's): never retried.
    Refused(Refusal),
    /// Name resolution failed (retried: DNS may recover).
    Resolve(Refusal),
    /// A redirect that is not followed: a 301, 302 or 303 (which would turn the POST into a
    /// GET), one without a usable `Location`, or one too many.
    Redirect(String),
    /// The deadline passed.
    Timeout,
    /// Connecting, TLS or HTTP failed.
    Transport(String),
}

impl PostError {
    /// Whether another attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            PostError::Resolve(_) | PostError::Timeout | PostError::Transport(_)
        )
    }
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PostError::Refused(Refusal::Address {
                destination,
                ip,
                class,
            }) => match destination.host {
                Host::Ip(_) => write!(f, "refused: {destination} is {class}"),
                Host::Name(_) => write!(
                    f,
                    "refused: {destination} resolves to {ip}, {class}; allow it with \
                     --push-allow (the address, or the name as internal:<name>)"
                ),
            },
            PostError::Refused(r) => write!(f, "refused: {r}"),
            PostError::Resolve(r) => write!(f, "{r}"),
            PostError::Redirect(why) => write!(f, "redirect not followed: {why}"),
            PostError::Timeout => f.write_str("no answer within the deadline"),
            PostError::Transport(why) => f.write_str(why),
        }
    }
}

trait Connection: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Connection for T {}

/// Posts `body` to `url` with `headers`, all by `deadline`: the final HTTP status. HTTPS
/// trusts `tls`, or the system's roots; with `require_https` a redirect to anything but
/// `https` is not followed.
pub async fn post(
    allow: &AllowList,
    require_https: bool,
    tls: Option<&Arc<rustls::ClientConfig>>,
    url: &Uri,
    headers: &[Header],
    body: Bytes,
    deadline: Instant,
) -> Result<StatusCode, PostError> {
    let origin = Destination::of_uri(url).ok();
    let mut uri = url.clone();
    for _ in 0..=MAX_REDIRECTS {
        let (destination, addresses) =
            resolve_checked(allow, &uri, deadline).await.map_err(|r| {
                if r.is_denial() {
                    PostError::Refused(r)
                } else {
                    PostError::Resolve(r)
                }
            })?;
        // The webhook's credentials belong to the origin its config names.
        let with_secrets = origin.as_ref() == Some(&destination);
        let sent: Vec<&Header> = headers
            .iter()
            .filter(|h| with_secrets || !h.secret)
            .collect();
        let status = post_once(tls, &destination, &addresses, &uri, &sent, &body, deadline).await?;
        match status.0 {
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => {
                let location = status.1.ok_or_else(|| {
                    PostError::Redirect(format!("HTTP {} without a Location", status.0.as_u16()))
                })?;
                uri = redirect_target(&uri, &location).map_err(PostError::Redirect)?;
                check_scheme(require_https, &uri).map_err(PostError::Redirect)?;
            }
            s if s.is_redirection() && s != StatusCode::NOT_MODIFIED => {
                return Err(PostError::Redirect(format!(
                    "HTTP {} (only 307 and 308 keep a POST a POST)",
                    s.as_u16()
                )));
            }
            s => return Ok(s),
        }
    }
    Err(PostError::Redirect(format!(
        "more than {MAX_REDIRECTS} redirects"
    )))
}

/// `location` of a redirect from `base`: an absolute URL, or a path on the same origin.
fn redirect_target(base: &Uri, location: &str) -> Result<Uri, String> {
    let target: Uri = location
        .parse()
        .map_err(|_| format!("Location {location:?} is not a URL"))?;
    if target.scheme().is_some() {
        return Ok(target);
    }
    if !location.starts_with('/') || location.starts_with("//") {
        return Err(format!(
            "Location {location:?} is neither absolute nor a path"
        ));
    }
    let mut parts = base.clone().into_parts();
    parts.path_and_query = target.path_and_query().cloned();
    Uri::from_parts(parts).map_err(|e| format!("Location {location:?}: {e}"))
}

/// One request to one checked destination: its status and `Location`.
async fn post_once(
    tls: Option<&Arc<rustls::ClientConfig>>,
    destination: &Destination,
    addresses: &[SocketAddr],
    uri: &Uri,
    headers: &[&Header],
    body: &Bytes,
    deadline: Instant,
) -> Result<(StatusCode, Option<String>), PostError> {
    let tcp = connect(addresses, deadline).await?;
    let stream: Box<dyn Connection> = if destination.tls {
        Box::new(tls_handshake(tls, destination, tcp, deadline).await?)
    } else {
        Box::new(tcp)
    };
    let (mut sender, connection) = timeout_at(
        deadline,
        hyper::client::conn::http1::handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| PostError::Timeout)?
    .map_err(|e| PostError::Transport(format!("HTTP handshake failed: {e}")))?;
    // Ends with this function: the body is not read, and the connection is not reused.
    let connection = AbortOnDrop(tokio::spawn(connection));

    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let host = match uri.port_u16() {
        Some(port) => format!("{}:{port}", destination.host),
        None => destination.host.to_string(),
    };
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::HOST, host)
        .header(header::CONTENT_LENGTH, body.len());
    for h in headers {
        request = request.header(h.name.clone(), h.value.clone());
    }
    let request = request
        .body(Full::new(body.clone()))
        .map_err(|e| PostError::Transport(format!("cannot build the request: {e}")))?;
    let response = timeout_at(deadline, sender.send_request(request))
        .await
        .map_err(|_| PostError::Timeout)?
        .map_err(|e| PostError::Transport(format!("HTTP exchange failed: {e}")))?;
    drop(connection);
    let location = response
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    Ok((response.status(), location))
}

struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Connects to the first of `addresses` that answers by `deadline`.
async fn connect(addresses: &[SocketAddr], deadline: Instant) -> Result<TcpStream, PostError> {
    let mut last_error = None;
    for address in addresses {
        match timeout_at(deadline, TcpStream::connect(address)).await {
            Err(_) => return Err(PostError::Timeout),
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last_error = Some(format!("cannot connect to {address}: {e}")),
        }
    }
    Err(PostError::Transport(
        last_error.unwrap_or_else(|| "no address to connect to".into()),
    ))
}

async fn tls_handshake(
    tls: Option<&Arc<rustls::ClientConfig>>,
    destination: &Destination,
    tcp: TcpStream,
    deadline: Instant,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, PostError> {
    let config = match tls {
        Some(config) => Arc::clone(config),
        None => toolnexus_egress::system_tls_config()
            .map_err(|why| PostError::Transport(format!("HTTPS impossible: {why}")))?,
    };
    let name = match &destination.host {
        Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
        Host::Name(name) => ServerName::try_from(name.clone())
            .map_err(|_| PostError::Transport(format!("{name:?} is no TLS server name")))?,
    };
    let connector = tokio_rustls::TlsConnector::from(config);
    match timeout_at(deadline, connector.connect(name, tcp)).await {
        Err(_) => Err(PostError::Timeout),
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => Err(PostError::Transport(format!(
            "TLS with {destination} failed: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_targets() {
        let base: Uri = "http://a.example:8080/hook?x=1".parse().unwrap();
        assert_eq!(
            redirect_target(&base, "/other?y=2").unwrap().to_string(),
            "http://a.example:8080/other?y=2"
        );
        assert_eq!(
            redirect_target(&base, "https://b.example/h")
                .unwrap()
                .to_string(),
            "https://b.example/h"
        );
        for bad in ["relative", "//b.example/h", "http://exa mple/"] {
            assert!(redirect_target(&base, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn which_failures_are_retried() {
        assert!(PostError::Timeout.is_retryable());
        assert!(PostError::Transport("reset".into()).is_retryable());
        assert!(!PostError::Redirect("303".into()).is_retryable());
    }
}
