//! Throwaway PostgreSQL clusters for the TLS tests, with or without `ssl=on`, from
//! `toolnexus-pg-cluster` (as for the other PostgreSQL tests), plus a CA and a server
//! certificate made for the run (`rcgen`); and for the other tests, the server named by
//! `TOOLNEXUS_TEST_POSTGRES_URL` or a plain throwaway cluster ([`server`]), with a table of
//! each test's own ([`unique_table`]).
//!
//! When no cluster can be started a test prints why and returns (a skip), unless
//! `TOOLNEXUS_REQUIRE_POSTGRES=1` (CI), where that is a failure.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use std::sync::Arc;
pub use toolnexus_pg_cluster::{Cluster, PASSWORD, USER, write_file};
use toolnexus_pg_cluster::{Options, SharedCluster, Tls, unavailable};

/// The names the server's certificate is valid for (subjectAltName).
pub const CERT_NAMES: [&str; 2] = ["localhost", "127.0.0.1"];

/// A cluster serving TLS, shared by the tests running at once; `None` (after printing why) if
/// none can be started and none is required.
pub fn tls_cluster() -> Option<Arc<Cluster>> {
    static SHARED: SharedCluster = SharedCluster::new();
    shared(&SHARED, true)
}

/// A cluster with `ssl=off`, shared likewise.
pub fn plain_cluster() -> Option<Arc<Cluster>> {
    static SHARED: SharedCluster = SharedCluster::new();
    shared(&SHARED, false)
}

fn shared(slot: &SharedCluster, tls: bool) -> Option<Arc<Cluster>> {
    match slot.get_or_start(|| start(tls)) {
        Ok(cluster) => Some(cluster),
        Err(reason) => unavailable(&reason, None),
    }
}

/// A cluster with a Unix socket of its own and (with `tls`) a CA and a server certificate for
/// [`CERT_NAMES`], or why not.
fn start(tls: bool) -> Result<Cluster, String> {
    let tls = if tls {
        let ca = Ca::new("toolnexus test CA")?;
        let (cert, key) = ca.server_cert(&CERT_NAMES)?;
        Some(Tls {
            ca: ca.pem(),
            cert,
            key,
        })
    } else {
        None
    };
    Cluster::start_with(Options {
        tls,
        unix_socket: true,
    })
}

/// Runs SQL over a plaintext connection of the test's own (the clusters accept both), from
/// sync or async code; rows as text.
pub fn execute(url: &str, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    let sep = if url.contains('?') { '&' } else { '?' };
    toolnexus_pg_cluster::execute(&format!("{url}{sep}sslmode=disable&connect_timeout=5"), sql)
}

pub use toolnexus_pg_cluster::{Server, server, unique_table};

/// A CA of its own (certificate and key), to sign server certificates or to be the wrong CA.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub fn new(name: &str) -> Result<Ca, String> {
        let key = KeyPair::generate().map_err(|e| format!("CA key: {e}"))?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(params, key).map_err(|e| format!("CA: {e}"))?;
        Ok(Ca { issuer })
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for `names` and its key, PEM.
    pub fn server_cert(&self, names: &[&str]) -> Result<(String, String), String> {
        let key = KeyPair::generate().map_err(|e| format!("server key: {e}"))?;
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).map_err(|e| e.to_string())?;
        params
            .distinguished_name
            .push(DnType::CommonName, "toolnexus test server");
        let cert = params
            .signed_by(&key, &*self.issuer)
            .map_err(|e| format!("server certificate: {e}"))?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}
