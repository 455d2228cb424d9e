//! `filprove health`: probes the daemon's HTTP admin endpoint the way its configuration
//! says it listens, for container health checks and service monitors. It reads the
//! daemon's own configuration: `server.http_listen` (an unspecified address is probed on
//! loopback), TLS when `server.tls_cert_file` is set (the certificate presented must be
//! the first one of that file: pinned, so neither a CA nor a host name has to match), and
//! the bearer token of `server.auth_token_file` (sent, though the probes need none).
//! Exits 0 when the endpoint answers 200.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

use crate::server::auth::BearerToken;
use crate::server::{Config, DaemonArgs};

/// The most of an answer read (the probes answer a line).
const MAX_ANSWER_BYTES: u64 = 64 << 10;

/// Arguments of `filprove health`.
#[derive(Args, Debug)]
pub struct HealthArgs {
    /// The daemon's configuration file (the one `filprove daemon --config` reads);
    /// defaults apply without one.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// Probe /healthz (the daemon answers and is not draining) instead of /readyz (it
    /// also proves where it was configured to).
    #[arg(long)]
    pub live: bool,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 5)]
    pub timeout_secs: u64,
}

/// Runs `filprove health`: prints the answer, fails unless it is 200.
pub fn run(args: HealthArgs) -> Result<()> {
    let config = DaemonArgs {
        config: args.config.clone(),
        ..DaemonArgs::default()
    }
    .effective_config()?;
    let probe = Probe::of(&config, if args.live { "/healthz" } else { "/readyz" })?;
    ask(&probe, args.timeout_secs)
}

/// Makes `probe`'s request within `timeout_secs` (at least 1) and prints the answer's
/// body; an answer other than 200 is an error naming the URL, the code and the body.
pub fn ask(probe: &Probe, timeout_secs: u64) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let limit = Duration::from_secs(timeout_secs.max(1));
    let (code, body) = rt
        .block_on(async { tokio::time::timeout(limit, probe.get()).await })
        .with_context(|| format!("{}: no answer within {} s", probe.url(), limit.as_secs()))??;
    let body = body.trim();
    if code != 200 {
        bail!("{}: {code} {body}", probe.url());
    }
    println!("{body}");
    Ok(())
}

/// One request (GET, or POST without a body) of an admin path, as a configuration says
/// to make it.
#[derive(Debug)]
pub struct Probe {
    addr: SocketAddr,
    path: String,
    method: &'static str,
    /// The pinned certificate, when the admin speaks TLS.
    tls: Option<CertificateDer<'static>>,
    token: Option<BearerToken>,
}

impl Probe {
    /// The probe (a GET) of `path` on the HTTP admin of `config`.
    pub fn of(config: &Config, path: &str) -> Result<Self> {
        let mut addr = config
            .http_addr()
            .map_err(anyhow::Error::msg)?
            .context("server.http_listen is empty: the daemon has no HTTP admin to probe")?;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            });
        }
        let s = &config.server;
        let tls = if s.tls_cert_file.is_empty() {
            None
        } else {
            let pem = std::fs::read(&s.tls_cert_file).with_context(|| {
                format!("server.tls_cert_file: cannot read {}", s.tls_cert_file)
            })?;
            let first = CertificateDer::pem_slice_iter(&pem)
                .next()
                .context("server.tls_cert_file: no PEM certificate in the file")?
                .context("server.tls_cert_file: not PEM certificates")?;
            Some(first)
        };
        let token = if s.auth_token_file.is_empty() {
            None
        } else {
            Some(BearerToken::read(std::path::Path::new(&s.auth_token_file))?)
        };
        Ok(Self {
            addr,
            path: path.to_string(),
            method: "GET",
            tls,
            token,
        })
    }

    /// Makes the request a POST without a body (an admin action).
    pub fn post(mut self) -> Self {
        self.method = "POST";
        self
    }

    /// What is probed, as a URL.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}{}", self.addr, self.path)
    }

    /// Makes the request: the status code and the body.
    pub async fn get(&self) -> Result<(u16, String)> {
        let tcp = TcpStream::connect(self.addr)
            .await
            .with_context(|| format!("{}: cannot connect", self.url()))?;
        match &self.tls {
            None => self.exchange(tcp).await,
            Some(cert) => {
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let verifier = Arc::new(PinnedCert {
                    cert: cert.clone(),
                    provider: provider.clone(),
                });
                let config = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()?
                    .dangerous()
                    .with_custom_certificate_verifier(verifier)
                    .with_no_client_auth();
                let name = ServerName::from(self.addr.ip());
                let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
                    .connect(name, tcp)
                    .await
                    .with_context(|| format!("{}: TLS handshake failed", self.url()))?;
                self.exchange(tls).await
            }
        }
    }

    async fn exchange(&self, mut io: impl AsyncRead + AsyncWrite + Unpin) -> Result<(u16, String)> {
        let mut request = format!(
            "{} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.method, self.path, self.addr
        );
        if self.method == "POST" {
            request.push_str("Content-Length: 0\r\n");
        }
        if let Some(t) = &self.token {
            request.push_str(&format!("Authorization: {}\r\n", t.header_value()));
        }
        request.push_str("\r\n");
        io.write_all(request.as_bytes()).await?;
        io.flush().await?;
        let mut answer = Vec::new();
        // A peer that closes without TLS close_notify ends the read with an error after
        // the answer; what arrived counts.
        let read = (&mut io)
            .take(MAX_ANSWER_BYTES)
            .read_to_end(&mut answer)
            .await;
        parse_answer(&answer).with_context(|| match read {
            Err(e) => format!("{}: no HTTP answer ({e})", self.url()),
            Ok(_) => format!("{}: no HTTP answer", self.url()),
        })
    }
}

/// The status code and body of an HTTP/1.1 answer (the body as sent, not de-chunked: the
/// probes' bodies are one short line).
fn parse_answer(answer: &[u8]) -> Option<(u16, String)> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.lines().next()?;
    let code = status
        .strip_prefix("HTTP/1.")?
        .get(2..)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some((code, body.to_string()))
}

/// Accepts exactly one certificate (the daemon's own, from its configuration) and checks
/// the handshake signatures with it.
#[derive(Debug)]
struct PinnedCert {
    cert: CertificateDer<'static>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedCert {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.cert.as_ref() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::parse_answer;

    #[test]
    fn an_answer_gives_its_code_and_body() {
        let a =
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 18\r\n\r\nnot ready: draining\n";
        assert_eq!(
            parse_answer(a),
            Some((503, "not ready: draining\n".to_string()))
        );
        assert_eq!(
            parse_answer(b"HTTP/1.1 200 OK\r\n\r\nready\n"),
            Some((200, "ready\n".into()))
        );
        assert_eq!(parse_answer(b"HTTP/1.1 200 OK\r\n"), None, "no end of head");
        assert_eq!(parse_answer(b"\x16\x03\x01garbage\r\n\r\n"), None);
        assert_eq!(parse_answer(b""), None);
    }
}
