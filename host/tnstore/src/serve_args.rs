//! The `tnstore serve` flags for what the agent card says and how the server is reached:
//! `--card`, `--public-url`, `--tls-cert`/`--tls-key`. Everything is read and checked before
//! the store is opened or a port bound, so a bad file refuses the start with nothing served.

use std::net::SocketAddr;
use std::path::PathBuf;
use toolnexus_a2a::{OperatorCard, PublicUrl, ServerConfig, TlsIdentity};

/// The card and reachability flags of `tnstore serve`.
#[derive(clap::Args, Debug)]
pub struct CardArgs {
    /// The agent card's description of the agent: a JSON file with the A2A 1.0 AgentCard
    /// members name, description, version, skills, defaultInputModes, defaultOutputModes and
    /// optionally provider, iconUrl, documentationUrl (docs/agent-card.md). Checked at start
    /// against the A2A 1.0 AgentCard schema; the members the server writes (supportedInterfaces,
    /// capabilities, security…) are refused. Its output modes are the ones requests must
    /// accept. Default: the echo agent's card.
    #[arg(long, value_name = "FILE")]
    pub card: Option<PathBuf>,
    /// The URL clients reach the server at (https://agent.example.com/, a reverse proxy's
    /// address), advertised by every interface on the card. Required on an address other than
    /// loopback; default there: http://ADDR/ (https:// with --tls-cert).
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Serve HTTPS with this certificate chain (PEM, the server's certificate first).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

/// [`CardArgs`] read and checked.
pub struct CardSettings {
    card: Option<OperatorCard>,
    public_url: Option<PublicUrl>,
    tls: Option<TlsIdentity>,
}

impl CardArgs {
    /// Reads the card and TLS files and checks the URL; the error names the flag or the file.
    pub fn load(self) -> Result<CardSettings, String> {
        let card = self
            .card
            .map(|path| OperatorCard::from_file(&path))
            .transpose()
            .map_err(|e| format!("--card: {e}"))?;
        let public_url = self
            .public_url
            .map(|url| PublicUrl::parse(&url))
            .transpose()
            .map_err(|e| format!("--public-url: {e}"))?;
        let tls = match (self.tls_cert, self.tls_key) {
            (Some(cert), Some(key)) => Some(
                TlsIdentity::from_pem_files(&cert, &key)
                    .map_err(|e| format!("--tls-cert/--tls-key: {e}"))?,
            ),
            _ => None,
        };
        Ok(CardSettings {
            card,
            public_url,
            tls,
        })
    }
}

impl CardSettings {
    /// Refuses a listener on an address other than loopback without `--public-url`: the card
    /// would advertise `0.0.0.0` or an internal address, which sends clients nowhere.
    pub fn check_listener(&self, local: SocketAddr) -> Result<(), String> {
        if self.public_url.is_none() && !local.ip().is_loopback() {
            return Err(format!(
                "listening on {local}, not a loopback address, needs --public-url: the agent \
                 card must advertise the URL clients reach (such as \
                 --public-url https://agent.example.com/), not {}",
                self.listening_url(local)
            ));
        }
        Ok(())
    }

    /// The URL of the listener itself, for the banner: `http://ADDR/`, `https://` with TLS.
    pub fn listening_url(&self, local: SocketAddr) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{local}/")
    }

    /// Puts the card, the public URL and TLS into `config`.
    pub fn apply(self, config: &mut ServerConfig) {
        config.card = self.card;
        config.public_url = self.public_url;
        config.http.tls = self.tls;
    }
}
