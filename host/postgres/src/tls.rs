//! TLS for the store's connections (rustls, with the *ring* provider), driven by libpq's
//! `sslmode` and `sslrootcert` with libpq's meanings.
//!
//! The driver (`tokio-postgres`) knows `sslmode=disable|prefer|require` only, and no
//! `sslrootcert`; so both options are taken out of the connection string here, before the
//! driver parses the rest, and become the driver's mode (`verify-ca` and `verify-full` are its
//! `require`) plus the certificate check of the connector:
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (default) | if the server offers it, else plaintext | not checked; with `sslrootcert`, its chain is |
//! | `require` | always | not checked; with `sslrootcert`, its chain is (as libpq) |
//! | `verify-ca` | always | chain to `sslrootcert` (default: the system's roots) |
//! | `verify-full` | always | chain, and the host name (subjectAltName) |
//!
//! `sslrootcert=system` means the system's roots and, as in libpq, implies `verify-full`;
//! a weaker `sslmode` beside it is refused.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::verify_server_cert_signed_by_trust_anchor;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The largest `sslrootcert` file read: far above any bundle of roots.
const MAX_ROOT_FILE: u64 = 16 << 20;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    fn parse(value: &str) -> Result<Mode, String> {
        Ok(match value {
            "disable" => Mode::Disable,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            "allow" => {
                let why = "sslmode \"allow\" is not supported: use \"prefer\" (TLS if the \
                           server offers it) or \"disable\"";
                return Err(why.into());
            }
            other => {
                return Err(format!(
                    "sslmode {other:?} is not one of disable, prefer, require, verify-ca, \
                     verify-full"
                ));
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Disable => "disable",
            Mode::Prefer => "prefer",
            Mode::Require => "require",
            Mode::VerifyCa => "verify-ca",
            Mode::VerifyFull => "verify-full",
        }
    }
}

/// Where trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Roots {
    /// The operating system's store (`rustls-native-certs`: `SSL_CERT_FILE`/`SSL_CERT_DIR`,
    /// else the distribution's bundle).
    System,
    /// A PEM file of CA certificates (`sslrootcert=<path>`).
    File(PathBuf),
}

/// What the connector checks of the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Nothing (encryption only): libpq's `prefer` and `require` without a root file.
    Nothing,
    /// That it chains to a trusted root: `verify-ca`.
    Chain,
    /// That, and that it names the host: `verify-full`.
    ChainAndName,
}

/// The TLS settings of a connection string, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tls {
    mode: Mode,
    check: Check,
    roots: Roots,
}

impl Tls {
    /// Takes `sslmode` and `sslrootcert` out of `url` (a `postgres://` URL or a libpq key-value
    /// string): the connection string for the driver, without them, and what they ask for.
    /// Nothing is read from disk yet.
    pub(crate) fn take_from(url: &str) -> Result<(String, Tls), String> {
        let (rest, given) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            split_url(url)?
        } else {
            split_key_values(url)?
        };
        Ok((rest, Tls::from_options(&given)?))
    }

    fn from_options(given: &Given) -> Result<Tls, String> {
        let mode = given.sslmode.as_deref().map(Mode::parse).transpose()?;
        let roots = match given.sslrootcert.as_deref() {
            None => None,
            Some("") => {
                let why = "sslrootcert must name a PEM file of CA certificates, or be \"system\"";
                return Err(why.into());
            }
            Some("system") => Some(Roots::System),
            Some(path) => Some(Roots::File(PathBuf::from(path))),
        };
        let mode = match (mode, &roots) {
            // As libpq: a public CA vouches for the hosts of all its customers, so the
            // system's roots mean something only with the host-name check: they imply
            // verify-full, and refuse weaker modes.
            (None, Some(Roots::System)) => Mode::VerifyFull,
            (Some(mode), Some(Roots::System)) if mode != Mode::VerifyFull => {
                return Err(format!(
                    "sslmode {:?} may not be used with sslrootcert=system (use \"verify-full\")",
                    mode.name()
                ));
            }
            (mode, _) => mode.unwrap_or(Mode::Prefer),
        };
        let check = match (mode, &roots) {
            (Mode::Disable, _) => Check::Nothing,
            // As libpq: with a root file, prefer and require check the chain too.
            (Mode::Prefer | Mode::Require, Some(_)) => Check::Chain,
            (Mode::Prefer | Mode::Require, None) => Check::Nothing,
            (Mode::VerifyCa, _) => Check::Chain,
            (Mode::VerifyFull, _) => Check::ChainAndName,
        };
        Ok(Tls {
            mode,
            check,
            roots: roots.unwrap_or(Roots::System),
        })
    }

    /// The driver's mode: `verify-ca` and `verify-full` are `require` plus the connector's
    /// certificate check.
    pub(crate) fn driver_mode(&self) -> SslMode {
        match self.mode {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }

    /// The connector, or `None` for `sslmode=disable`. Reads the roots now (a root file, or
    /// the system's), so a missing or unusable one is reported before anything connects.
    pub(crate) fn connector(&self) -> Result<Option<MakeRustlsConnect>, String> {
        if self.mode == Mode::Disable {
            return Ok(None);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("cannot set up TLS: {e}"))?;
        let mut config = match self.check {
            Check::Nothing => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Verifier::new(None, &provider)))
                .with_no_client_auth(),
            Check::Chain => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Verifier::new(
                    Some(self.load_roots()?),
                    &provider,
                )))
                .with_no_client_auth(),
            Check::ChainAndName => builder
                .with_root_certificates(self.load_roots()?)
                .with_no_client_auth(),
        };
        // What libpq 17 sends: PostgreSQL 17 and later need it for sslnegotiation=direct and
        // check it otherwise; earlier servers ignore it.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(Some(MakeRustlsConnect::new(config)))
    }

    fn load_roots(&self) -> Result<Arc<RootCertStore>, String> {
        match &self.roots {
            Roots::File(path) => load_root_file(path),
            Roots::System => load_system_roots(),
        }
        .map(Arc::new)
    }
}

/// The raw values of the options, as given.
#[derive(Debug, Default)]
struct Given {
    sslmode: Option<String>,
    sslrootcert: Option<String>,
}

impl Given {
    /// Records `key = value` if `key` is one of ours; `false` if it is not.
    fn take(
        &mut self,
        key: &str,
        value: impl FnOnce() -> Result<String, String>,
    ) -> Result<bool, String> {
        let slot = match key {
            "sslmode" => &mut self.sslmode,
            "sslrootcert" => &mut self.sslrootcert,
            _ => return Ok(false),
        };
        if slot.is_some() {
            return Err(format!("option {key:?} is given twice"));
        }
        *slot = Some(value()?);
        Ok(true)
    }
}

/// `postgres://…?a=1&sslmode=x&b=2` → `postgres://…?a=1&b=2`; other parameters stay exactly as
/// written (the driver decodes them).
fn split_url(url: &str) -> Result<(String, Given), String> {
    let mut given = Given::default();
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), given));
    };
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(key).unwrap_or_default();
        if !given.take(&key, || {
            decode(value).ok_or_else(|| format!("{key} {value:?} is not percent-encoded UTF-8"))
        })? {
            kept.push(pair);
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, given))
}

fn decode(s: &str) -> Option<String> {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

/// `host=db sslmode=x user=app` → `host=db user=app`, by libpq's key-value syntax (`key =
/// value`, a value bare or in single quotes, `\` escaping the next character). A string that
/// does not follow it is returned whole, for the driver to report.
fn split_key_values(s: &str) -> Result<(String, Given), String> {
    let mut given = Given::default();
    let Some(pairs) = key_value_pairs(s) else {
        return Ok((s.to_owned(), given));
    };
    let mut rest = String::with_capacity(s.len());
    let mut from = 0;
    for (key, value, span) in pairs {
        if given.take(key, || Ok(value))? {
            rest.push_str(&s[from..span.start]);
            from = span.end;
        }
    }
    rest.push_str(&s[from..]);
    Ok((rest, given))
}

/// Each `key = value` of a key-value string, the value unquoted and unescaped, with the byte
/// range of the pair; `None` if the string does not parse.
fn key_value_pairs(s: &str) -> Option<Vec<(&str, String, std::ops::Range<usize>)>> {
    let mut pairs = Vec::new();
    let mut it = s.char_indices().peekable();
    let skip_ws = |it: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
    };
    loop {
        skip_ws(&mut it);
        let Some(&(start, _)) = it.peek() else {
            return Some(pairs);
        };
        let mut key_end = start;
        while let Some((i, c)) = it.next_if(|(_, c)| !c.is_whitespace() && *c != '=') {
            key_end = i + c.len_utf8();
        }
        if key_end == start {
            return None;
        }
        skip_ws(&mut it);
        it.next_if(|(_, c)| *c == '=')?;
        skip_ws(&mut it);
        let mut value = String::new();
        let mut end = s.len();
        if it.next_if(|(_, c)| *c == '\'').is_some() {
            loop {
                let (i, c) = it.next()?;
                match c {
                    '\'' => {
                        end = i + 1;
                        break;
                    }
                    '\\' => value.push(it.next()?.1),
                    c => value.push(c),
                }
            }
        } else {
            while let Some(&(i, c)) = it.peek() {
                if c.is_whitespace() {
                    end = i;
                    break;
                }
                it.next();
                if c == '\\' {
                    if let Some((_, escaped)) = it.next() {
                        value.push(escaped);
                    }
                } else {
                    value.push(c);
                }
            }
            if value.is_empty() {
                return None;
            }
        }
        pairs.push((&s[start..key_end], value, start..end));
    }
}

/// The CA certificates of a PEM file: at least one, each one usable as a root.
fn load_root_file(path: &Path) -> Result<RootCertStore, String> {
    let what = format!("sslrootcert {path:?}");
    let mut pem = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_ROOT_FILE + 1).read_to_end(&mut pem))
        .map_err(|e| format!("{what}: cannot read it: {e}"))?;
    if pem.len() as u64 > MAX_ROOT_FILE {
        return Err(format!("{what}: larger than {MAX_ROOT_FILE} bytes"));
    }
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what}: not a PEM file of certificates: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "{what}: holds no certificate (expected PEM \"-----BEGIN CERTIFICATE-----\" blocks)"
        ));
    }
    let mut roots = RootCertStore::empty();
    for (i, cert) in certs.into_iter().enumerate() {
        roots
            .add(cert)
            .map_err(|e| format!("{what}: certificate {} is not usable: {e}", i + 1))?;
    }
    Ok(roots)
}

/// The operating system's roots: at least one must load.
fn load_system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
        return Err(format!(
            "no system root certificates could be loaded to verify the server ({}); name a CA \
             file with sslrootcert=<path>",
            if why.is_empty() {
                "none found".to_owned()
            } else {
                why.join("; ")
            }
        ));
    }
    Ok(roots)
}

/// The check of `prefer`/`require` (nothing, or the chain when a root file is given) and of
/// `verify-ca` (the chain, not the name). Handshake signatures are always verified: the server
/// must hold the key of the certificate it shows.
#[derive(Debug)]
struct Verifier {
    /// `None`: any certificate is accepted.
    roots: Option<Arc<RootCertStore>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl Verifier {
    fn new(roots: Option<Arc<RootCertStore>>, provider: &CryptoProvider) -> Self {
        Verifier {
            roots,
            algorithms: provider.signature_verification_algorithms,
        }
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls(url: &str) -> Result<(String, Tls), String> {
        Tls::take_from(url)
    }

    #[test]
    fn options_come_out_of_urls_and_the_rest_stays() {
        let (rest, t) =
            tls("postgres://u:p@h/db?application_name=x&sslmode=verify-full&sslrootcert=%2Fca%20dir%2Fca.pem&connect_timeout=2")
                .unwrap();
        assert_eq!(
            rest,
            "postgres://u:p@h/db?application_name=x&connect_timeout=2"
        );
        assert_eq!(t.mode, Mode::VerifyFull);
        assert_eq!(t.check, Check::ChainAndName);
        assert_eq!(t.roots, Roots::File("/ca dir/ca.pem".into()));
        assert_eq!(t.driver_mode(), SslMode::Require);

        let (rest, t) = tls("postgresql://u@h/db?sslmode=require").unwrap();
        assert_eq!(rest, "postgresql://u@h/db");
        assert_eq!((t.mode, t.check), (Mode::Require, Check::Nothing));

        let (rest, t) = tls("postgres://u@h/db").unwrap();
        assert_eq!(rest, "postgres://u@h/db");
        assert_eq!((t.mode, t.check), (Mode::Prefer, Check::Nothing));
        assert_eq!(t.driver_mode(), SslMode::Prefer);
    }

    #[test]
    fn options_come_out_of_key_value_strings() {
        let (rest, t) =
            tls("host=h sslmode = verify-ca user=u sslrootcert='/a b/c\\'s.pem' password=p\\ q")
                .unwrap();
        assert_eq!(rest, "host=h  user=u  password=p\\ q");
        assert_eq!((t.mode, t.check), (Mode::VerifyCa, Check::Chain));
        assert_eq!(t.roots, Roots::File("/a b/c's.pem".into()));
        // Not key-value syntax: left whole for the driver to refuse.
        let (rest, _) = tls("host=h sslmode").unwrap();
        assert_eq!(rest, "host=h sslmode");
    }

    #[test]
    fn libpq_semantics() {
        let check = |url: &str| {
            let t = tls(url).unwrap().1;
            (t.mode, t.check, t.roots)
        };
        let file = || Roots::File("ca.pem".into());
        assert_eq!(
            check("postgres://h/d?sslmode=require&sslrootcert=ca.pem"),
            (Mode::Require, Check::Chain, file()),
            "require with a root file checks the chain, as libpq"
        );
        assert_eq!(
            check("postgres://h/d?sslrootcert=ca.pem"),
            (Mode::Prefer, Check::Chain, file())
        );
        assert_eq!(
            check("postgres://h/d?sslmode=verify-ca"),
            (Mode::VerifyCa, Check::Chain, Roots::System)
        );
        assert_eq!(
            check("postgres://h/d?sslrootcert=system"),
            (Mode::VerifyFull, Check::ChainAndName, Roots::System)
        );
        assert_eq!(
            check("postgres://h/d?sslmode=disable&sslrootcert=ca.pem"),
            (Mode::Disable, Check::Nothing, file())
        );
    }

    #[test]
    fn bad_values_are_refused_by_name() {
        for (url, want) in [
            (
                "postgres://h/d?sslmode=bogus",
                "sslmode \"bogus\" is not one of",
            ),
            ("postgres://h/d?sslmode=", "sslmode \"\" is not one of"),
            ("postgres://h/d?sslmode=allow", "\"allow\" is not supported"),
            ("host=h sslmode=Require", "sslmode \"Require\""),
            (
                "postgres://h/d?sslmode=require&sslmode=disable",
                "given twice",
            ),
            ("postgres://h/d?sslrootcert=", "sslrootcert must name"),
            (
                "postgres://h/d?sslrootcert=system&sslmode=require",
                "may not be used with sslrootcert=system",
            ),
            (
                "postgres://h/d?sslrootcert=%ff",
                "not percent-encoded UTF-8",
            ),
        ] {
            let err = tls(url).unwrap_err();
            assert!(err.contains(want), "{url}: {err}");
        }
    }

    #[test]
    fn root_files_must_hold_usable_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let err = load_root_file(&missing).unwrap_err();
        assert!(
            err.starts_with("sslrootcert ") && err.contains("cannot read"),
            "{err}"
        );

        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not pem at all\n").unwrap();
        let err = load_root_file(&empty).unwrap_err();
        assert!(err.contains("holds no certificate"), "{err}");

        let broken = dir.path().join("broken.pem");
        std::fs::write(
            &broken,
            "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let err = load_root_file(&broken).unwrap_err();
        assert!(err.contains("sslrootcert"), "{err}");

        let garbage = dir.path().join("garbage.pem");
        std::fs::write(
            &garbage,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let err = load_root_file(&garbage).unwrap_err();
        assert!(err.contains("certificate 1 is not usable"), "{err}");

        let ca = rcgen::generate_simple_self_signed(vec!["ca.test".to_owned()]).unwrap();
        let good = dir.path().join("ca.pem");
        std::fs::write(&good, ca.cert.pem()).unwrap();
        assert_eq!(load_root_file(&good).unwrap().len(), 1);
    }
}
