//! One attempt of one delivery: read the config as it is now (a deleted one means no
//! delivery), open its secrets, build the body and headers, post, and judge the answer.

use crate::http_post::{Header, post};
use crate::outbox::Pending;
use crate::payload::body;
use crate::secrets::{Place, open_config};
use crate::shared::Shared;
use crate::url_policy::{check_scheme, check_url};
use bytes::Bytes;
use hyper::StatusCode;
use hyper::http::{HeaderName, HeaderValue, header};
use serde_json::{Map, Value};
use tokio::time::Instant;
use toolnexus_a2a_protocol::push::config_version;
use toolnexus_a2a_protocol::wire::Version;
use toolnexus_core::StoreError;

/// The header that carries the config's token.
pub const TOKEN_HEADER: &str = "x-a2a-notification-token";

/// How an attempt ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The webhook answered 2xx.
    Delivered,
    /// Nothing to deliver to any more (the config or its Task was deleted): dropped quietly.
    Gone,
    /// A failure another attempt cannot fix: dropped with a log line.
    Failed(String),
    /// A failure another attempt may not meet.
    Retry(String),
}

/// One attempt of `pending`.
pub async fn attempt(shared: &Shared, pending: &Pending) -> Outcome {
    let loaded = match shared.outbox.load(pending) {
        Ok(loaded) => loaded,
        Err(why) => return Outcome::Failed(format!("outbox entry {why}")),
    };
    let lane = &pending.lane;
    let store = match shared.stores.store(lane.namespace.as_deref()).await {
        Ok(store) => store,
        Err(e) => return Outcome::Retry(format!("its store cannot be opened: {e}")),
    };
    let config = match store.get_push_config(&lane.task_id, &lane.config_id).await {
        Ok(Some(config)) => config.to_map(),
        Ok(None) | Err(StoreError::Unsupported { .. }) => return Outcome::Gone,
        Err(e) => return Outcome::Retry(format!("its config cannot be read: {e}")),
    };
    // Opened for the place it was read from: a config moved to another namespace or Task, or
    // whose URL was changed, does not open, and nothing is sent.
    let place = Place {
        namespace: lane.namespace.as_deref(),
        task_id: &lane.task_id,
    };
    let config = match open_config(shared.options.key.as_ref(), place, config) {
        Ok(config) => config,
        Err(why) => return Outcome::Failed(why),
    };
    let Some(url) = config.get("url").and_then(Value::as_str) else {
        return Outcome::Failed("the config has no `url`".into());
    };
    let url = match check_url(&shared.options.allow, url)
        .and_then(|url| check_scheme(shared.options.require_https, &url).map(|()| url))
    {
        Ok(url) => url,
        Err(why) => return Outcome::Failed(format!("its url is refused: {why}")),
    };
    let headers = match headers(&config) {
        Ok(headers) => headers,
        Err(why) => return Outcome::Failed(why),
    };
    let version = config_version(&config);
    let text = body(
        &loaded.task,
        version,
        shared.options.max_payload_bytes,
        loaded.trimmed,
    );
    let deadline = Instant::now() + shared.options.timeout;
    match post(
        &shared.options.allow,
        shared.options.require_https,
        shared.options.tls.as_ref(),
        &url,
        &headers,
        Bytes::from(text),
        deadline,
    )
    .await
    {
        Ok(status) => judge(status),
        Err(e) if e.is_retryable() => Outcome::Retry(e.to_string()),
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// What an HTTP status means for the delivery: 2xx delivered; 408, 429 and 5xx worth another
/// attempt; anything else (4xx, a redirect not followed) final.
pub fn judge(status: StatusCode) -> Outcome {
    let code = status.as_u16();
    if status.is_success() {
        Outcome::Delivered
    } else if status.is_server_error() || code == 408 || code == 429 {
        Outcome::Retry(format!("HTTP {code}"))
    } else {
        Outcome::Failed(format!("HTTP {code}"))
    }
}

/// The headers of a delivery under `config`: the content type of its version, its
/// `authentication` as `Authorization`, its `token`.
pub fn headers(config: &Map<String, Value>) -> Result<Vec<Header>, String> {
    let content_type = match config_version(config) {
        Version::V1_0 => "application/a2a+json",
        Version::V0_3 => "application/json",
    };
    let mut headers = vec![Header {
        name: header::CONTENT_TYPE,
        value: HeaderValue::from_static(content_type),
        secret: false,
    }];
    let text = |map: &Map<String, Value>, name: &str| {
        map.get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    if let Some(auth) = config.get("authentication").and_then(Value::as_object)
        && let (Some(scheme), Some(credentials)) = (text(auth, "scheme"), text(auth, "credentials"))
    {
        let scheme = if scheme.eq_ignore_ascii_case("bearer") {
            "Bearer".to_owned()
        } else {
            scheme
        };
        headers.push(secret(
            header::AUTHORIZATION,
            &format!("{scheme} {credentials}"),
            "authentication",
        )?);
    }
    if let Some(token) = text(config, "token") {
        headers.push(secret(
            HeaderName::from_static(TOKEN_HEADER),
            &token,
            "token",
        )?);
    }
    Ok(headers)
}

fn secret(name: HeaderName, value: &str, member: &str) -> Result<Header, String> {
    let mut value = HeaderValue::from_str(value)
        .map_err(|_| format!("the config's {member} cannot be sent in an HTTP header"))?;
    value.set_sensitive(true);
    Ok(Header {
        name,
        value,
        secret: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn header_of<'a>(headers: &'a [Header], name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|h| h.name == name)
            .map(|h| h.value.to_str().unwrap())
    }

    #[test]
    fn statuses() {
        for code in [200, 201, 202, 204] {
            assert_eq!(
                judge(StatusCode::from_u16(code).unwrap()),
                Outcome::Delivered
            );
        }
        for code in [408, 429, 500, 502, 503, 504] {
            assert!(
                matches!(
                    judge(StatusCode::from_u16(code).unwrap()),
                    Outcome::Retry(_)
                ),
                "{code}"
            );
        }
        for code in [301, 304, 400, 401, 403, 404, 410, 413] {
            assert!(
                matches!(
                    judge(StatusCode::from_u16(code).unwrap()),
                    Outcome::Failed(_)
                ),
                "{code}"
            );
        }
    }

    #[test]
    fn headers_by_version_and_secrets() {
        let v1 = json!({"id": "c", "url": "https://e.com/", "protocolVersion": "1.0",
            "token": "tok", "authentication": {"scheme": "bEaReR", "credentials": "abc"}});
        let headers = headers(v1.as_object().unwrap()).unwrap();
        assert_eq!(
            header_of(&headers, "content-type"),
            Some("application/a2a+json")
        );
        assert_eq!(header_of(&headers, "authorization"), Some("Bearer abc"));
        assert_eq!(header_of(&headers, TOKEN_HEADER), Some("tok"));
        assert!(headers.iter().filter(|h| h.secret).count() == 2);

        let v03 = json!({"id": "c", "url": "https://e.com/", "protocolVersion": "0.3",
            "authentication": {"scheme": "Basic", "credentials": "dTpw"}});
        let headers = super::headers(v03.as_object().unwrap()).unwrap();
        assert_eq!(
            header_of(&headers, "content-type"),
            Some("application/json")
        );
        assert_eq!(header_of(&headers, "authorization"), Some("Basic dTpw"));
        assert_eq!(header_of(&headers, TOKEN_HEADER), None);

        let bad = json!({"id": "c", "token": "a\r\nInjected: yes"});
        assert!(
            super::headers(bad.as_object().unwrap())
                .unwrap_err()
                .contains("token")
        );
    }
}
