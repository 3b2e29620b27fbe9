//! The HTTP/1.1 client: one kept-alive connection to a target URL, and reading bodies.

use crate::outcome::{Failure, fail};
use anyhow::bail;
use std::time::Duration;

/// `http://host:port/path` split for a raw HTTP/1.1 connection.
#[derive(Clone)]
pub struct Target {
    /// `host:port`, to connect to and for the Host header.
    authority: String,
    pub path: String,
}

impl Target {
    pub fn parse(url: &str) -> anyhow::Result<Target> {
        let Some(rest) = url.strip_prefix("http://") else {
            bail!("only http:// URLs are supported: {url}");
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let authority = if authority.contains(':') {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        Ok(Target {
            authority,
            path: path.to_owned(),
        })
    }
}

/// One kept-alive HTTP/1.1 connection (hyper's client connection, no pool): a request at a
/// time, reconnecting (and counting it) only when the server closed it.
pub struct HttpConnection {
    pub target: Target,
    sender: Option<hyper::client::conn::http1::SendRequest<String>>,
    pub connects: u64,
}

impl HttpConnection {
    pub fn new(target: Target) -> HttpConnection {
        HttpConnection {
            target,
            sender: None,
            connects: 0,
        }
    }

    /// A fresh connection to the target: its request sender.
    async fn connect(
        &mut self,
    ) -> Result<hyper::client::conn::http1::SendRequest<String>, Failure> {
        let what = |e: &dyn std::fmt::Display| {
            fail(
                "transport",
                format!("connect {}: {e}", self.target.authority),
            )
        };
        let stream = tokio::net::TcpStream::connect(&self.target.authority)
            .await
            .map_err(|e| what(&e))?;
        stream.set_nodelay(true).map_err(|e| what(&e))?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| what(&e))?;
        tokio::spawn(connection);
        self.connects += 1;
        Ok(sender)
    }

    pub async fn request(
        &mut self,
        method: hyper::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: String,
    ) -> Result<hyper::Response<hyper::body::Incoming>, Failure> {
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.target.authority);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(body)
            .map_err(|e| fail("request", e.to_string()))?;
        // The kept connection if it can take another request, else a new one.
        let mut sender = match self.sender.take() {
            Some(mut kept) => match kept.ready().await {
                Ok(()) => kept,
                Err(_) => self.connect().await?,
            },
            None => self.connect().await?,
        };
        let answer = tokio::time::timeout(Duration::from_secs(30), sender.send_request(request))
            .await
            .map_err(|_| fail("timeout", format!("no answer in 30 s from {path}")));
        self.sender = Some(sender);
        answer?.map_err(|e| fail("transport", format!("{path}: {e}")))
    }
}

/// The next data of a body; `None` at its end.
pub async fn next_chunk(
    body: &mut hyper::body::Incoming,
) -> Result<Option<hyper::body::Bytes>, hyper::Error> {
    use hyper::body::Body;
    loop {
        let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut *body).poll_frame(cx)).await;
        match frame {
            None => return Ok(None),
            Some(Err(e)) => return Err(e),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
            }
        }
    }
}

/// A whole body, read within 30 s.
pub async fn read_body(mut body: hyper::body::Incoming) -> Result<Vec<u8>, Failure> {
    let read = async {
        let mut out = Vec::new();
        while let Some(chunk) = next_chunk(&mut body).await? {
            out.extend_from_slice(&chunk);
        }
        Ok::<_, hyper::Error>(out)
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .map_err(|_| fail("timeout", "body not read in 30 s"))?
        .map_err(|e| fail("transport", format!("reading the body: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_split_into_authority_and_path() {
        let target = Target::parse("http://127.0.0.1:8081/a2a/").unwrap();
        assert_eq!(
            (target.authority.as_str(), target.path.as_str()),
            ("127.0.0.1:8081", "/a2a/")
        );
        let target = Target::parse("http://example.test").unwrap();
        assert_eq!(
            (target.authority.as_str(), target.path.as_str()),
            ("example.test:80", "/")
        );
        assert!(Target::parse("https://example.test/").is_err());
    }
}
