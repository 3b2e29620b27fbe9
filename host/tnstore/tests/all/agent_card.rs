//! `tnstore serve --card FILE --public-url URL --tls-cert FILE --tls-key FILE`: a bad card or a
//! public address without a public URL refuses the start; the card file, the public URL and each
//! `--tenant` are on the served card; HTTPS with a CA of the test's own, and the official A2A
//! Python SDK reaching a tenant's namespace through the interface the card declares for it
//! (`tests/python/tenant_client.py` here; `TOOLNEXUS_PYTHON` as in `python_sdk.rs`).

use crate::common;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

const TENANT_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/tenant_client.py");

fn operator_card() -> Value {
    json!({
        "name": "Route planner",
        "description": "Plans routes between places.",
        "version": "2.1.0",
        "provider": {"organization": "Example Maps", "url": "https://maps.example.com"},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [{"id": "route", "name": "Route", "description": "Plans a route.",
            "tags": ["maps"]}],
        "documentationUrl": "https://maps.example.com/docs"
    })
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_bad_card_file_refuses_the_start_naming_the_file_and_the_member() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("supportedInterfaces", json!([]), "`supportedInterfaces`"),
        (
            "skills",
            json!([{"id": "x", "name": "X", "description": "x", "tags": "x"}]),
            "`skills[0].tags`",
        ),
        ("defaultOutputModes", json!([]), "`defaultOutputModes`"),
    ];
    for (member, value, named) in cases {
        let mut card = operator_card();
        card[member] = value;
        let path = write(tmp.path(), "my-card.json", &card.to_string());
        let refused = common::run(
            &[
                "--store",
                "memory",
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--card",
            ],
            "",
            |c| {
                c.arg(&path);
            },
        );
        assert_eq!(refused.status.code(), Some(2), "{refused:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains("my-card.json") && stderr.contains(named),
            "{member}: {stderr}"
        );
        assert!(!String::from_utf8_lossy(&refused.stdout).contains("listening"));
    }
}

#[test]
fn a_public_address_needs_a_public_url() {
    let refused = common::run(
        &[
            "--store",
            "memory",
            "serve",
            "--addr",
            "0.0.0.0:0",
            "--insecure-no-auth",
        ],
        "",
        |_| {},
    );
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--public-url"), "{stderr}");

    let mut child = common::tnstore_command()
        .args(["--store", "memory", "serve", "--addr", "0.0.0.0:0"])
        .args([
            "--insecure-no-auth",
            "--public-url",
            "https://agent.example.com",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut banner = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut banner)
        .unwrap();
    let port = banner
        .trim()
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next())
        .and_then(|p| p.parse::<u16>().ok());
    let card = port.map(|port| http_get_card(&format!("http://127.0.0.1:{port}/")));
    let _ = child.kill();
    let _ = child.wait();
    let card = card.unwrap_or_else(|| panic!("unexpected banner {banner:?}"));
    for interface in card["supportedInterfaces"].as_array().unwrap() {
        let url = interface["url"].as_str().unwrap();
        assert!(url.starts_with("https://agent.example.com"), "{interface}");
    }
}

fn http_get_card(base: &str) -> Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        reqwest::Client::new()
            .get(format!("{base}.well-known/agent-card.json"))
            .header("A2A-Version", "1.0")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    })
}

#[test]
fn the_card_file_and_each_tenant_are_on_the_card() {
    let tmp = tempfile::tempdir().unwrap();
    let card_file = write(tmp.path(), "card.json", &operator_card().to_string());
    let card_arg = card_file.to_str().unwrap();
    let server = common::serve(
        &["--store", "memory"],
        &["--card", card_arg, "--tenant", "acme", "--tenant", "beta"],
        |_| {},
    );
    let card = http_get_card(&server.url);
    assert_eq!(card["name"], "Route planner", "{card}");
    assert_eq!(card["skills"], operator_card()["skills"]);
    assert_eq!(card["provider"], operator_card()["provider"]);
    for tenant in ["acme", "beta"] {
        for binding in ["JSONRPC", "HTTP+JSON"] {
            assert!(
                card["supportedInterfaces"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|i| i["tenant"] == tenant
                        && i["protocolBinding"] == binding
                        && i["protocolVersion"] == "1.0"),
                "{tenant} {binding}: {card}"
            );
        }
    }
}

/// A CA of the test's own and a certificate signed by it for `localhost` and 127.0.0.1: (CA,
/// certificate, key), PEM.
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
    let mut leaf =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    leaf.distinguished_name
        .push(DnType::CommonName, "toolnexus test server");
    let cert = leaf.signed_by(&key, &*issuer).unwrap();
    (issuer.pem(), cert.pem(), key.serialize_pem())
}

/// One HTTP/1.1 request over TLS (rustls, trusting only `ca_pem`) to 127.0.0.1:`port`: the
/// status and the JSON body.
fn https(port: u16, ca_pem: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
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
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut tls = rustls::StreamOwned::new(connection, tcp);
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        tls,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nA2A-Version: 1.0\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = Vec::new();
    // A peer that closes without close_notify is an error to rustls; the answer is whole by then.
    let _ = tls.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (
        status,
        serde_json::from_str(body).unwrap_or(Value::String(body.into())),
    )
}

/// The interpreter with the SDK, or `None` after saying why the SDK part is skipped.
fn python() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TOOLNEXUS_PYTHON").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    if std::env::var("TOOLNEXUS_REQUIRE_PYTHON_SDK").is_ok_and(|v| v == "1") {
        panic!(
            "the Python A2A SDK is required (TOOLNEXUS_REQUIRE_PYTHON_SDK=1) but TOOLNEXUS_PYTHON is not set"
        );
    }
    eprintln!("SKIPPED: the Python A2A SDK part: TOOLNEXUS_PYTHON is not set (docs/python-sdk.md)");
    None
}

#[test]
fn https_and_the_python_sdk_reaching_a_tenant_through_its_interface() {
    let tmp = tempfile::tempdir().unwrap();
    let (ca, cert, key) = test_pki();
    let ca_file = write(tmp.path(), "ca.pem", &ca);
    let cert_file = write(tmp.path(), "cert.pem", &cert);
    let key_file = write(tmp.path(), "key.pem", &key);
    let (cert_arg, key_arg) = (cert_file.to_str().unwrap(), key_file.to_str().unwrap());
    let server = common::serve(
        &["--store", "memory"],
        &[
            "--tls-cert",
            cert_arg,
            "--tls-key",
            key_arg,
            "--tenant",
            "acme",
        ],
        |_| {},
    );
    assert!(
        server.url.starts_with("https://127.0.0.1:"),
        "{}",
        server.banner
    );
    let port: u16 = server.url["https://127.0.0.1:".len()..]
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let (status, card) = https(port, &ca, "GET", "/.well-known/agent-card.json", None);
    assert_eq!(status, 200, "{card}");
    for interface in card["supportedInterfaces"].as_array().unwrap() {
        let url = interface["url"].as_str().unwrap();
        assert!(
            url.starts_with(server.url.trim_end_matches('/')),
            "{interface}"
        );
    }

    let Some(python) = python() else { return };
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let output = Command::new(&python)
            .arg(TENANT_SCRIPT)
            .arg(&server.url)
            .args(["--tenant", "acme", "--binding", binding, "--ca"])
            .arg(&ca_file)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let report: Value = stdout
            .lines()
            .rev()
            .find_map(|line| serde_json::from_str(line).ok())
            .unwrap_or(Value::Null);
        assert!(
            output.status.success() && report["ok"] == true,
            "{binding}: {report}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(report["interface"]["tenant"], "acme", "{report}");
        // The SDK sent the tenant the card declared: in the path, or in the params.
        for request in report["requests"].as_array().unwrap() {
            if request["path"]
                .as_str()
                .unwrap()
                .starts_with("/.well-known/")
            {
                continue;
            }
            match binding {
                "HTTP+JSON" => assert!(
                    request["path"].as_str().unwrap().starts_with("/acme/"),
                    "{request}"
                ),
                _ => assert_eq!(request["tenant"], "acme", "{request}"),
            }
        }
        // The Task is in the tenant's namespace, and only there.
        let id = report["task_id"].as_str().unwrap();
        let get = |params: Value| {
            let call = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": params});
            https(port, &ca, "POST", "/", Some(&call)).1
        };
        let in_tenant = get(json!({"id": id, "tenant": "acme"}));
        assert_eq!(in_tenant["result"]["id"], id, "{in_tenant}");
        let at_root = get(json!({"id": id}));
        assert_eq!(at_root["error"]["code"], -32001, "{at_root}");
    }
}
