//! `http-caller`: a component that imports `wasi:http/outgoing-handler` the way an agent calling
//! a model API does, and exports `run(url)`: one GET to `url`, the whole body read, and the
//! status answered; or, as `err`, the host's error code (its debug name, like
//! `ErrorCode::HttpRequestDenied`) for the request or the body. It never follows redirects
//! itself, so the host test sees what the host handed back.

wit_bindgen::generate!({
    inline: "
        package toolnexus:http-caller;

        world http-caller {
            /// One GET to `url` (`http://` or `https://`): its status, or the error.
            export run: func(url: string) -> result<u16, string>;
        }
    ",
    world: "toolnexus:http-caller/http-caller",
});

use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

struct HttpCaller;

impl Guest for HttpCaller {
    fn run(url: String) -> Result<u16, String> {
        let (scheme, rest) = match url.split_once("://") {
            Some(("http", rest)) => (Scheme::Http, rest),
            Some(("https", rest)) => (Scheme::Https, rest),
            Some((other, rest)) => (Scheme::Other(other.to_owned()), rest),
            None => return Err(format!("not an absolute URL: {url}")),
        };
        let (authority, path) = match rest.find('/') {
            Some(slash) => rest.split_at(slash),
            None => (rest, "/"),
        };
        let request = OutgoingRequest::new(Fields::new());
        request
            .set_scheme(Some(&scheme))
            .map_err(|()| "scheme refused".to_owned())?;
        request
            .set_authority(Some(authority))
            .map_err(|()| "authority refused".to_owned())?;
        request
            .set_path_with_query(Some(path))
            .map_err(|()| "path refused".to_owned())?;

        let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
        pending.subscribe().block();
        let response = pending
            .get()
            .ok_or("no response after the pollable was ready")?
            .map_err(|()| "response taken twice")?
            .map_err(|e| format!("{e:?}"))?;
        let status = response.status();

        let body = response.consume().map_err(|()| "body taken twice")?;
        let stream = body.stream().map_err(|()| "body stream taken twice")?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(_) => {}
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    let code = wasip2::http::types::http_error_code(&e);
                    return Err(format!("body: {code:?} ({})", e.to_debug_string()));
                }
            }
        }
        Ok(status)
    }
}

export!(HttpCaller);
