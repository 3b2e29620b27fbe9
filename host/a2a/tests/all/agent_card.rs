//! The agent card is the operator's: their card file's members on it, the URL clients reach
//! (`public_url`) on every interface, each tenant's interfaces, the card's output modes as the
//! ones requests must accept, and HTTPS with a real TLS client.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use toolnexus_a2a::{
    HttpConfig, OperatorCard, PublicUrl, ServerConfig, ServiceConfig, Stores, TlsIdentity,
    serve_stores,
};
use toolnexus_core::{InMemoryTaskStore, StoreError, TaskStore};

fn operator_card() -> Value {
    json!({
        "name": "Route planner",
        "description": "Plans routes between places.",
        "version": "2.1.0",
        "provider": {"organization": "Example Maps", "url": "https://maps.example.com"},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["application/json"],
        "skills": [{"id": "route", "name": "Route", "description": "Plans a route.",
            "tags": ["maps"], "examples": ["from A to B"]}],
        "iconUrl": "https://maps.example.com/icon.png",
        "documentationUrl": "https://maps.example.com/docs"
    })
}

/// A memory store per namespace, the root included.
#[derive(Default)]
struct MemoryNamespaces(std::sync::Mutex<HashMap<String, Arc<InMemoryTaskStore>>>);

#[async_trait::async_trait]
impl Stores for MemoryNamespaces {
    async fn store(&self, namespace: Option<&str>) -> Result<Arc<dyn TaskStore>, StoreError> {
        let mut map = self.0.lock().unwrap();
        let store = map.entry(namespace.unwrap_or("").to_owned()).or_default();
        Ok(Arc::clone(store) as Arc<dyn TaskStore>)
    }
}

fn memory() -> Arc<dyn Stores> {
    Arc::new(MemoryNamespaces::default())
}

/// Serves `config` on a loopback port; its address.
async fn start(config: ServerConfig) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_stores(listener, memory(), config));
    addr
}

async fn card(addr: std::net::SocketAddr, version: Option<&str>) -> Value {
    let mut request =
        reqwest::Client::new().get(format!("http://{addr}/.well-known/agent-card.json"));
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    request.send().await.unwrap().json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_operators_card_is_served_with_the_servers_members() {
    let addr = start(ServerConfig {
        card: Some(OperatorCard::from_json(operator_card()).unwrap()),
        ..Default::default()
    })
    .await;
    for version in [Some("1.0"), None] {
        let card = card(addr, version).await;
        for member in [
            "name",
            "description",
            "version",
            "provider",
            "defaultInputModes",
            "defaultOutputModes",
            "skills",
            "iconUrl",
            "documentationUrl",
        ] {
            assert_eq!(card[member], operator_card()[member], "{member}: {card}");
        }
        assert_eq!(card["capabilities"]["streaming"], true, "{card}");
        assert_eq!(
            card["supportedInterfaces"][0]["url"],
            format!("http://{addr}/")
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_must_accept_one_of_the_cards_output_modes() {
    let addr = start(ServerConfig {
        card: Some(OperatorCard::from_json(operator_card()).unwrap()),
        ..Default::default()
    })
    .await;
    let send = |modes: Value| async move {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"role": "ROLE_USER", "messageId": format!("m-{modes}"),
                "parts": [{"text": "hi"}]},
            "configuration": {"acceptedOutputModes": modes, "returnImmediately": true}}});
        let answer: Value = reqwest::Client::new()
            .post(format!("http://{addr}/"))
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        answer
    };
    // The echo agent's text/plain is not on this card: its output modes are the operator's.
    let refused = send(json!(["text/plain"])).await;
    assert_eq!(refused["error"]["code"], -32005, "{refused}");
    let taken = send(json!(["application/json"])).await;
    assert!(taken["result"]["task"].is_object(), "{taken}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_interface_advertises_the_public_url() {
    let addr = start(ServerConfig {
        public_url: Some(PublicUrl::parse("https://agents.example.com/echo").unwrap()),
        ..Default::default()
    })
    .await;
    let card = card(addr, None).await;
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    assert!(!interfaces.is_empty());
    for interface in interfaces {
        let url = interface["url"].as_str().unwrap();
        assert!(
            url.starts_with("https://agents.example.com/echo"),
            "{interface}"
        );
    }
    assert_eq!(card["url"], "https://agents.example.com/echo/");
    for interface in card["additionalInterfaces"].as_array().unwrap() {
        let url = interface["url"].as_str().unwrap();
        assert!(
            url.starts_with("https://agents.example.com/echo"),
            "{interface}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_non_loopback_listener_needs_a_public_url() {
    let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
    let refused = tokio::time::timeout(
        Duration::from_secs(10),
        serve_stores(listener, memory(), ServerConfig::default()),
    )
    .await
    .expect("refused at once, not served");
    let e = refused.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("public URL"), "{e}");

    // With one, it serves, and the card says it.
    let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(serve_stores(
        listener,
        memory(),
        ServerConfig {
            public_url: Some(PublicUrl::parse("https://agent.example.com/").unwrap()),
            ..Default::default()
        },
    ));
    let card = card(([127, 0, 0, 1], port).into(), Some("1.0")).await;
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        "https://agent.example.com/"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn each_tenant_has_interfaces_that_declare_it_and_reach_its_namespace() {
    let addr = start(ServerConfig {
        service: ServiceConfig {
            tenants: ["acme".to_owned()].into(),
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    let card = card(addr, Some("1.0")).await;
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let pick = |binding: &str| {
        interfaces
            .iter()
            .find(|i| i["tenant"] == "acme" && i["protocolBinding"] == binding)
            .unwrap_or_else(|| panic!("no {binding} interface for tenant acme: {card}"))
            .clone()
    };
    let (jsonrpc, rest) = (pick("JSONRPC"), pick("HTTP+JSON"));
    assert_eq!(jsonrpc["protocolVersion"], "1.0");
    // The first interface of each binding, the one a client picks by default, is the root's.
    assert!(interfaces[0].get("tenant").is_none(), "{card}");

    // As a 1.0 client uses them: HTTP+JSON puts the tenant first in the path, JSON-RPC in params.
    let client = reqwest::Client::new();
    let sent: Value = client
        .post(format!(
            "{}/acme/message:send",
            rest["url"].as_str().unwrap()
        ))
        .header("A2A-Version", "1.0")
        .json(
            &json!({"message": {"role": "ROLE_USER", "messageId": "m-tenant",
            "parts": [{"text": "hi"}]}}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = sent["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sent}"));
    let get = |tenant: Option<&str>| {
        let mut params = json!({"id": id});
        if let Some(tenant) = tenant {
            params["tenant"] = json!(tenant);
        }
        client
            .post(jsonrpc["url"].as_str().unwrap())
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": params}))
            .send()
    };
    let in_tenant: Value = get(Some("acme")).await.unwrap().json().await.unwrap();
    assert_eq!(in_tenant["result"]["id"], id, "{in_tenant}");
    let at_root: Value = get(None).await.unwrap().json().await.unwrap();
    assert_eq!(at_root["error"]["code"], -32001, "{at_root}");
}

/// A CA of the test's own, and a certificate for `localhost` signed by it: (CA PEM, cert PEM,
/// key PEM).
fn test_pki() -> (String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    // Names of their own: OpenSSL (the Python client) takes a certificate whose subject is its
    // issuer's for a self-signed one.
    ca.distinguished_name
        .push(DnType::CommonName, "toolnexus test CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let issuer = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    leaf.distinguished_name
        .push(DnType::CommonName, "toolnexus test server");
    let cert = leaf.signed_by(&key, &*issuer).unwrap();
    (issuer.pem(), cert.pem(), key.serialize_pem())
}

/// One HTTP/1.1 request over TLS to `port`, trusting only `ca_pem`: the status and body.
async fn https(port: u16, ca_pem: &str, request: hyper::Request<String>) -> (u16, Value) {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls_pki_types::CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let tls = connector.connect(name, tcp).await.expect("TLS handshake");
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(connection);
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let body = axum::body::to_bytes(axum::body::Body::new(response.into_body()), 1 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&body).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn https_serves_the_card_and_calls_and_the_card_says_https() {
    let (ca, cert, key) = test_pki();
    let tls = TlsIdentity::from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
    let addr = start(ServerConfig {
        http: HttpConfig {
            tls: Some(tls),
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    let get_card = hyper::Request::get("/.well-known/agent-card.json")
        .header("host", "localhost")
        .body(String::new())
        .unwrap();
    let (status, card) = https(addr.port(), &ca, get_card).await;
    assert_eq!(status, 200);
    for interface in card["supportedInterfaces"].as_array().unwrap() {
        let url = interface["url"].as_str().unwrap();
        assert!(url.starts_with(&format!("https://{addr}")), "{interface}");
    }
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"role": "ROLE_USER", "messageId": "m-tls", "parts": [{"text": "over tls"}]}}});
    let post = hyper::Request::post("/")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(send.to_string())
        .unwrap();
    let (status, sent) = https(addr.port(), &ca, post).await;
    assert_eq!(status, 200, "{sent}");
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );

    // Plain HTTP on the TLS port gets no answer.
    let plain = reqwest::Client::new()
        .get(format!("http://{addr}/.well-known/agent-card.json"))
        .timeout(Duration::from_secs(10))
        .send()
        .await;
    assert!(plain.is_err(), "{plain:?}");
}

#[test]
fn tls_files_are_checked_naming_the_file() {
    let (_, cert, key) = test_pki();
    let (_, other_cert, _) = test_pki();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let (cert_file, key_file) = (write("cert.pem", &cert), write("key.pem", &key));
    TlsIdentity::from_pem_files(&cert_file, &key_file).unwrap();

    let not_pem = write("garbage.pem", "not a certificate");
    let e = TlsIdentity::from_pem_files(&not_pem, &key_file).unwrap_err();
    assert_eq!(e.file.as_deref(), Some(not_pem.as_path()), "{e}");
    assert!(e.to_string().contains("garbage.pem"), "{e}");

    let e = TlsIdentity::from_pem_files(&cert_file, &cert_file).unwrap_err();
    assert!(e.to_string().contains("private key"), "{e}");

    let mismatched = write("other.pem", &other_cert);
    let e = TlsIdentity::from_pem_files(&mismatched, &key_file).unwrap_err();
    assert!(e.to_string().contains("key.pem"), "{e}");

    let missing = dir.path().join("absent.pem");
    let e = TlsIdentity::from_pem_files(&missing, &key_file).unwrap_err();
    assert!(e.to_string().contains("absent.pem"), "{e}");
}

#[test]
fn a_bad_card_file_is_refused_naming_the_file_and_the_member() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("card.json");
    let mut card = operator_card();
    card["skills"][0]["tags"] = json!("maps");
    std::fs::write(&path, card.to_string()).unwrap();
    let e = OperatorCard::from_file(&path).unwrap_err().to_string();
    assert!(
        e.contains("card.json") && e.contains("skills[0].tags"),
        "{e}"
    );

    let mut card = operator_card();
    card["capabilities"] = json!({"streaming": false});
    std::fs::write(&path, card.to_string()).unwrap();
    let e = OperatorCard::from_file(&path).unwrap_err().to_string();
    assert!(
        e.contains("card.json") && e.contains("`capabilities`") && e.contains("server"),
        "{e}"
    );

    std::fs::write(&path, "{\"name\": ").unwrap();
    let e = OperatorCard::from_file(&path).unwrap_err().to_string();
    assert!(e.contains("card.json") && e.contains("not JSON"), "{e}");
}
