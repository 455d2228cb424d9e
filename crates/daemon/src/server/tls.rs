//! Optional TLS (`server.tls_cert_file`, `server.tls_key_file`) for gRPC on TCP and the
//! HTTP admin, through rustls (ring). gRPC uses tonic's TLS with the same certificate; the
//! HTTP admin accepts through [`TlsListener`]. The unix socket stays plain.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// How long a client has to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A certificate chain and its key, read and checked at start.
#[derive(Clone)]
pub struct TlsFiles {
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
}

impl std::fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsFiles { .. }")
    }
}

/// rustls' process-wide provider: ring, the one this build carries (tonic's server asks
/// for the process default).
fn install_provider() -> Arc<rustls::crypto::CryptoProvider> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

impl TlsFiles {
    /// Reads the PEM files and checks that they make a server configuration (the key
    /// matches the certificate).
    pub fn read(cert: &Path, key: &Path) -> anyhow::Result<Self> {
        let read = |p: &Path, key: &str| {
            std::fs::read(p).with_context(|| format!("{key}: cannot read {}", p.display()))
        };
        let files = Self {
            cert_pem: read(cert, "server.tls_cert_file")?,
            key_pem: read(key, "server.tls_key_file")?,
        };
        files
            .server_config(&[])
            .with_context(|| format!("{} and {}", cert.display(), key.display()))?;
        Ok(files)
    }

    /// A rustls server configuration offering `alpn` (in order of preference).
    fn server_config(&self, alpn: &[&[u8]]) -> anyhow::Result<rustls::ServerConfig> {
        let chain = CertificateDer::pem_slice_iter(&self.cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .context("server.tls_cert_file: not PEM certificates")?;
        anyhow::ensure!(
            !chain.is_empty(),
            "server.tls_cert_file: no certificate in the file"
        );
        let key = PrivateKeyDer::from_pem_slice(&self.key_pem)
            .context("server.tls_key_file: no PEM private key")?;
        let mut config = rustls::ServerConfig::builder_with_provider(install_provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .context("the TLS key does not fit the certificate")?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(config)
    }

    /// tonic's TLS settings for the gRPC listener.
    pub fn grpc(&self) -> tonic::transport::ServerTlsConfig {
        install_provider();
        tonic::transport::ServerTlsConfig::new()
            .identity(tonic::transport::Identity::from_pem(
                &self.cert_pem,
                &self.key_pem,
            ))
            .timeout(HANDSHAKE_TIMEOUT)
    }

    /// The HTTP admin's listener: TLS on `listener`, HTTP/1.1.
    pub fn http_listener(&self, listener: TcpListener) -> anyhow::Result<TlsListener> {
        let acceptor =
            tokio_rustls::TlsAcceptor::from(Arc::new(self.server_config(&[b"http/1.1"])?));
        let local = listener.local_addr()?;
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        tokio::spawn(accept_loop(listener, acceptor, tx));
        Ok(TlsListener { rx, local })
    }
}

type TlsStream = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

/// Accepts TCP connections and runs each handshake on its own task, so that a slow
/// client holds up no other; finished ones go to the listener.
async fn accept_loop(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    tx: tokio::sync::mpsc::Sender<(TlsStream, SocketAddr)>,
) {
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors and the like: wait, as axum's own loop does.
                tracing::warn!(error = %e, "HTTP admin: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if tx.is_closed() {
            return;
        }
        let (acceptor, tx) = (acceptor.clone(), tx.clone());
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => {
                    let _ = tx.send((tls, peer)).await;
                }
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "HTTP admin: TLS handshake failed")
                }
                Err(_) => tracing::debug!(%peer, "HTTP admin: TLS handshake timed out"),
            }
        });
    }
}

/// TLS connections of the HTTP admin, for `axum::serve`.
pub struct TlsListener {
    rx: tokio::sync::mpsc::Receiver<(TlsStream, SocketAddr)>,
    local: SocketAddr,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(c) => c,
            // The accept loop ended: nothing more will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
