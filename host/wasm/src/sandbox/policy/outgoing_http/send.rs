//! Sending one checked request: connect to an address [`check_destination`] returned (never
//! resolving the name again), TLS with the name checked against the certificate, HTTP/1.1 by
//! hyper, within the policy's deadlines, the response body held to its size limit. Redirects are
//! not followed: a 3xx goes back to the guest, whose next request is checked afresh.

use super::OutgoingHttpPolicy;
use super::check::{Refusal, check_destination};
use super::destination::{Destination, Host};
use super::limited_body::{LimitedBody, from_hyper};
use http_body_util::BodyExt;
use hyper::http::{Method, Request, Response, StatusCode, Uri, header};
use rustls::pki_types::ServerName;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, timeout_at};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

/// What finishes the connection's I/O after the response head arrived (`wasi:http`'s second
/// future; errors there reach the guest through the body).
pub type ConnectionTask = Box<dyn Future<Output = Result<(), Error>> + Send>;

/// Either a plain TCP stream or a TLS one.
trait Connection: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Connection for T {}

/// Sends `request` under `policy`, holding `permit` until the response body is done.
pub(super) async fn send_checked(
    policy: Arc<OutgoingHttpPolicy>,
    mut request: Request<WasiBody>,
    options: Option<RequestOptions>,
    permit: OwnedSemaphorePermit,
) -> Result<(Response<WasiBody>, ConnectionTask), Error> {
    let limits = policy.limits;
    let options = clamped(options.unwrap_or_default(), limits.response_timeout);
    let started = Instant::now();
    let deadline = started + limits.response_timeout;
    let connect_timeout = options
        .connect_timeout
        .map_or(limits.connect_timeout, |t| t.min(limits.connect_timeout));
    let connect_by = (started + connect_timeout).min(deadline);

    // CONNECT would turn an allowed server that proxies into a tunnel to anywhere.
    if request.method() == Method::CONNECT {
        tracing::warn!(
            "outgoing HTTP request denied: CONNECT to {} (tunnels are not allowed)",
            request.uri()
        );
        return Err(Error::HttpRequestDenied);
    }
    let head_only = request.method() == Method::HEAD;

    let (destination, addresses) = check_destination(&policy.allow, request.uri(), connect_by)
        .await
        .inspect_err(|refusal| {
            if refusal.is_denial() {
                tracing::warn!("outgoing HTTP request denied: {refusal}");
            } else {
                tracing::debug!("outgoing HTTP request failed: {refusal}");
            }
        })
        .map_err(|refusal| refusal_error(&refusal))?;

    let tcp = connect(&addresses, connect_by).await?;
    let stream: Box<dyn Connection> = if destination.tls {
        Box::new(tls_handshake(&policy, &destination, tcp, connect_by).await?)
    } else {
        Box::new(tcp)
    };
    let (mut sender, connection) = timeout_at(
        connect_by,
        hyper::client::conn::http1::handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;
    // The connection runs on its own until the response is read, and not past the deadline.
    let connection = wasmtime_wasi::runtime::spawn(async move {
        match timeout_at(deadline, connection).await {
            Ok(result) => result.map_err(from_hyper),
            Err(_) => Err(Error::HttpResponseTimeout),
        }
    });

    // The request line carries the path only; scheme and host went to the connection and the
    // `host` header (as hyper's client expects).
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *request.uri_mut() = Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;

    let first_byte_by = options
        .first_byte_timeout
        .map_or(deadline, |t| (Instant::now() + t).min(deadline));
    let response = match timeout_at(first_byte_by, sender.send_request(request)).await {
        Ok(response) => response.map_err(from_hyper)?,
        Err(_) if first_byte_by < deadline => return Err(Error::ConnectionReadTimeout),
        Err(_) => return Err(Error::HttpResponseTimeout),
    };

    // A HEAD, 204 or 304 answer declares a length it does not send.
    let has_body = !(head_only
        || response.status() == StatusCode::NO_CONTENT
        || response.status() == StatusCode::NOT_MODIFIED);
    if has_body
        && let Some(length) = declared_length(&response)
        && length > limits.max_response_body_bytes
    {
        return Err(Error::HttpResponseBodySize(Some(length)));
    }
    let response = response.map(|body| {
        LimitedBody::new(
            body,
            limits.max_response_body_bytes,
            deadline,
            options.between_bytes_timeout,
            permit,
        )
        .boxed_unsync()
    });
    let task: ConnectionTask = Box::new(connection);
    Ok((response, task))
}

/// Connects to the first of `addresses` that answers by `connect_by`.
async fn connect(addresses: &[SocketAddr], connect_by: Instant) -> Result<TcpStream, Error> {
    let mut last_error = None;
    for address in addresses {
        match timeout_at(connect_by, TcpStream::connect(address)).await {
            Err(_) => return Err(Error::ConnectionTimeout),
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last_error = Some(e),
        }
    }
    Err(match last_error {
        Some(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Error::ConnectionRefused,
        Some(e) => Error::Connect(e),
        None => Error::DestinationNotFound,
    })
}

async fn tls_handshake(
    policy: &OutgoingHttpPolicy,
    destination: &Destination,
    tcp: TcpStream,
    connect_by: Instant,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, Error> {
    let config = policy.tls_config().map_err(|reason| {
        tracing::warn!("outgoing HTTPS to {destination} impossible: {reason}");
        Error::ConfigurationError
    })?;
    let name = match &destination.host {
        Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
        Host::Name(name) => {
            ServerName::try_from(name.clone()).map_err(|_| Error::HttpRequestUriInvalid)?
        }
    };
    let connector = tokio_rustls::TlsConnector::from(config);
    match timeout_at(connect_by, connector.connect(name, tcp)).await {
        Err(_) => Err(Error::ConnectionTimeout),
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => {
            tracing::debug!("outgoing HTTPS to {destination}: TLS failed: {e}");
            Err(Error::Tls(e))
        }
    }
}

/// The response's `content-length`, when it has exactly one that is a number.
fn declared_length<B>(response: &Response<B>) -> Option<u64> {
    let mut values = response.headers().get_all(header::CONTENT_LENGTH).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()?.parse().ok()
}

/// The guest's timeouts, none longer than the response deadline: what reaches Tokio's timers
/// is never a guest's `u64::MAX` nanoseconds (`docs/security.md` records such a timer, from a
/// clock wait, wedging a runtime's timers), and a guest may ask for shorter, never longer.
fn clamped(options: RequestOptions, response_timeout: std::time::Duration) -> RequestOptions {
    let clamp = |t: Option<std::time::Duration>| t.map(|t| t.min(response_timeout));
    RequestOptions {
        connect_timeout: clamp(options.connect_timeout),
        first_byte_timeout: clamp(options.first_byte_timeout),
        between_bytes_timeout: clamp(options.between_bytes_timeout),
    }
}

/// The `wasi:http` error a guest gets for a refused destination: `HTTP-request-denied` for
/// every refusal of the policy, the matching error for a name that does not resolve.
fn refusal_error(refusal: &Refusal) -> Error {
    match refusal {
        Refusal::Scheme(_) | Refusal::NotAllowed(_) | Refusal::Address { .. } => {
            Error::HttpRequestDenied
        }
        Refusal::Host(_) => Error::HttpRequestUriInvalid,
        Refusal::DnsTimeout(_) => Error::DnsTimeout,
        Refusal::Dns(_, e) => Error::DnsError {
            rcode: Some(e.to_string()),
            info_code: None,
        },
        Refusal::NoAddress(_) => Error::DestinationNotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_guests_timeouts_are_clamped_to_the_response_deadline() {
        let deadline = Duration::from_secs(30);
        let longest = Duration::from_nanos(u64::MAX);
        let asked = RequestOptions {
            connect_timeout: Some(longest),
            first_byte_timeout: Some(Duration::from_secs(1)),
            between_bytes_timeout: Some(longest),
        };
        let got = clamped(asked, deadline);
        assert_eq!(got.connect_timeout, Some(deadline));
        assert_eq!(got.first_byte_timeout, Some(Duration::from_secs(1)));
        assert_eq!(got.between_bytes_timeout, Some(deadline));
        let none = clamped(RequestOptions::default(), deadline);
        assert_eq!(none.between_bytes_timeout, None);
    }
}
