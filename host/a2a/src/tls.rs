//! HTTPS for [`serve`](crate::serve): a certificate chain and its key from PEM files, served
//! with rustls (the ring provider, as the PostgreSQL store uses it), HTTP/1.1 over ALPN.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The server's TLS identity: give it to [`HttpConfig::tls`](crate::HttpConfig::tls).
#[derive(Clone)]
pub struct TlsIdentity {
    config: Arc<rustls::ServerConfig>,
}

impl fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TlsIdentity")
    }
}

/// Why a TLS identity could not be made: the file at fault (when one is), and what is wrong.
#[derive(Debug)]
pub struct TlsError {
    pub file: Option<PathBuf>,
    pub problem: String,
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "TLS file {}: {}", file.display(), self.problem),
            None => write!(f, "TLS: {}", self.problem),
        }
    }
}

impl std::error::Error for TlsError {}

impl TlsIdentity {
    /// Reads the certificate chain (`cert`: PEM, the server's certificate first, then any
    /// intermediates) and its private key (`key`: PEM, PKCS#8, PKCS#1 or SEC1).
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<TlsIdentity, TlsError> {
        let read = |path: &Path| {
            std::fs::read(path).map_err(|e| TlsError {
                file: Some(path.to_owned()),
                problem: format!("cannot read it: {e}"),
            })
        };
        let (cert_pem, key_pem) = (read(cert)?, read(key)?);
        let chain = certificates(&cert_pem).map_err(|problem| TlsError {
            file: Some(cert.to_owned()),
            problem,
        })?;
        let key_der = private_key(&key_pem).map_err(|problem| TlsError {
            file: Some(key.to_owned()),
            problem,
        })?;
        identity(chain, key_der).map_err(|problem| TlsError {
            file: Some(key.to_owned()),
            problem: format!("{problem} (does the key belong to {}?)", cert.display()),
        })
    }

    /// [`from_pem_files`](Self::from_pem_files) from PEM text in memory.
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<TlsIdentity, TlsError> {
        let plain = |problem| TlsError {
            file: None,
            problem,
        };
        let chain = certificates(cert_pem).map_err(plain)?;
        identity(chain, private_key(key_pem).map_err(plain)?).map_err(plain)
    }

    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(Arc::clone(&self.config))
    }
}

fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not a PEM certificate chain: {e}"))?;
    if chain.is_empty() {
        return Err("holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into());
    }
    Ok(chain)
}

fn private_key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| format!("no PEM private key in it: {e}"))
}

fn identity(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<TlsIdentity, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("the certificate and key do not make an identity: {e}"))?;
    // The server speaks HTTP/1.1 only; saying so lets a client that offers h2 fall back.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsIdentity {
        config: Arc::new(config),
    })
}
