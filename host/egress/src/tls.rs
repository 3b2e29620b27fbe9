//! The TLS client configuration of outgoing HTTPS: rustls with the ring provider (the same
//! rustls as wasmtime-wasi-http's own sender and the PostgreSQL store), HTTP/1.1 by ALPN, and
//! either the operator's roots or the system's, read once per process on first use.

use rustls::{ClientConfig, RootCertStore};
use std::sync::{Arc, OnceLock};

/// Whose certificates a server's chain must end in.
#[derive(Debug, Clone)]
pub enum TlsRoots {
    /// The operating system's roots.
    System,
    /// A configuration built from the roots the embedder gave.
    Given(Arc<ClientConfig>),
}

impl TlsRoots {
    pub fn given(roots: RootCertStore) -> Result<TlsRoots, String> {
        config_with(roots).map(TlsRoots::Given)
    }

    /// The configuration to connect with, or why there is none (no system roots could be read).
    pub fn config(&self) -> Result<Arc<ClientConfig>, String> {
        match self {
            TlsRoots::Given(config) => Ok(Arc::clone(config)),
            TlsRoots::System => {
                static SYSTEM: OnceLock<Result<Arc<ClientConfig>, String>> = OnceLock::new();
                SYSTEM
                    .get_or_init(|| system_roots().and_then(config_with))
                    .clone()
            }
        }
    }
}

fn config_with(roots: RootCertStore) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // The sender speaks HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _unparsable) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
        return Err(format!(
            "no system root certificates could be loaded ({})",
            if why.is_empty() {
                "none found".to_owned()
            } else {
                why.join("; ")
            }
        ));
    }
    Ok(roots)
}

/// The TLS client configuration with the system's roots (read once per process).
pub fn system_tls_config() -> Result<Arc<ClientConfig>, String> {
    TlsRoots::System.config()
}
