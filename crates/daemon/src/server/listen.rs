//! Listeners (unix socket, TCP, HTTP) and the serve loop with graceful drain.

use std::future::Future;
use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use filprove_engine::Engine;
use tokio::net::{TcpListener, UnixListener};
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tokio_stream::StreamExt as _;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;

use super::auth::{BearerToken, GrpcAuth};
use super::config::Config;
use super::grpc::ProvingService;
use super::journal::Journal;
use super::pb::proving_engine_server::ProvingEngineServer;
use super::receive::{limit_connections, ReceiveBudget, ReceiveLimits};
use super::tls::TlsFiles;

/// The daemon's bound sockets, and the service settings of the configuration.
pub struct Listeners {
    unix: Option<(UnixListener, PathBuf)>,
    tcp: Option<TcpListener>,
    http: Option<TcpListener>,
    max_message_bytes: usize,
    intake: super::intake::IntakeLimits,
    receive: ReceiveLimits,
    max_streams_per_connection: u32,
    max_connections: usize,
    cancel_abandoned: Vec<filprove_filecoin::ProofKind>,
    configured_backend: String,
    token: Option<BearerToken>,
    tls: Option<TlsFiles>,
    journal: Option<Arc<Journal>>,
}

/// What is at a unix socket path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketState {
    /// Nothing.
    Absent,
    /// A file that is not a socket (never replaced).
    NotASocket,
    /// A socket a process answers on (another daemon).
    Answering,
    /// A socket nobody answers on, left by a daemon that died (removed at start).
    Stale,
}

/// Looks at `path` (connecting to it when it is a socket).
pub fn socket_state(path: &Path) -> SocketState {
    match std::fs::symlink_metadata(path) {
        Err(_) => SocketState::Absent,
        Ok(meta) if !meta.file_type().is_socket() => SocketState::NotASocket,
        Ok(_) if std::os::unix::net::UnixStream::connect(path).is_ok() => SocketState::Answering,
        Ok(_) => SocketState::Stale,
    }
}

/// Removes a stale socket file left by a daemon that died; refuses when one still answers
/// or when the path is not a socket.
fn clear_stale_socket(path: &Path) -> anyhow::Result<()> {
    match socket_state(path) {
        SocketState::Absent => Ok(()),
        SocketState::NotASocket => anyhow::bail!(
            "{} exists and is not a socket; refusing to replace it",
            path.display()
        ),
        SocketState::Answering => {
            anyhow::bail!("another daemon is listening on {}", path.display())
        }
        SocketState::Stale => std::fs::remove_file(path)
            .with_context(|| format!("cannot remove stale socket {}", path.display())),
    }
}

impl Listeners {
    /// Binds everything the configuration asks for.
    pub async fn bind(c: &Config) -> anyhow::Result<Self> {
        // The files first: a bad token or certificate fails before anything is bound.
        let token = match c.server.auth_token_file.as_str() {
            "" => None,
            p => Some(BearerToken::read(Path::new(p))?),
        };
        let tls = match c.server.tls_cert_file.as_str() {
            "" => None,
            p => Some(TlsFiles::read(
                Path::new(p),
                Path::new(&c.server.tls_key_file),
            )?),
        };
        for (key, addr) in c.remote_listeners() {
            tracing::warn!(
                %addr,
                bearer_token = token.is_some(),
                tls = tls.is_some(),
                "{key} accepts connections from other machines (server.allow_remote = true)"
            );
        }
        let journal = if c.journal.enabled {
            let max = c
                .journal
                .max_bytes(c.server.max_message_bytes)
                .map_err(anyhow::Error::msg)?;
            let dir = Path::new(&c.journal.dir);
            let j = Journal::open(dir, max).with_context(|| {
                format!(
                    "journal.dir {}: the journal of accepted jobs needs a writable directory \
                     (or journal.enabled = false)",
                    dir.display()
                )
            })?;
            tracing::info!(dir = %dir.display(), max_bytes = max, used_bytes = j.used_bytes(), "journal of accepted jobs");
            Some(j)
        } else {
            tracing::warn!("journal.enabled = false: accepted jobs are lost on a restart or crash");
            None
        };
        let unix = match c.unix_socket().map_err(anyhow::Error::msg)? {
            Some(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("cannot create {}", dir.display()))?;
                }
                clear_stale_socket(&path)?;
                let l = UnixListener::bind(&path)
                    .with_context(|| format!("cannot bind {}", path.display()))?;
                let mode = c.socket_mode().map_err(anyhow::Error::msg)?;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                    .with_context(|| format!("cannot chmod {}", path.display()))?;
                tracing::info!(path = %path.display(), mode = format!("{mode:o}"), "gRPC on unix socket");
                Some((l, path))
            }
            None => None,
        };
        let tcp = match c.tcp_addr().map_err(anyhow::Error::msg)? {
            Some(a) => {
                let l = TcpListener::bind(a)
                    .await
                    .with_context(|| format!("cannot bind {a}"))?;
                tracing::info!(addr = %l.local_addr()?, tls = tls.is_some(), bearer_token = token.is_some(), "gRPC on TCP");
                Some(l)
            }
            None => None,
        };
        let http = match c.http_addr().map_err(anyhow::Error::msg)? {
            Some(a) => {
                let l = TcpListener::bind(a)
                    .await
                    .with_context(|| format!("cannot bind {a}"))?;
                tracing::info!(addr = %l.local_addr()?, tls = tls.is_some(), bearer_token = token.is_some(), "HTTP admin (/metrics, /status, /healthz, /readyz)");
                Some(l)
            }
            None => None,
        };
        Ok(Self {
            unix,
            tcp,
            http,
            max_message_bytes: c.server.max_message_bytes,
            intake: c
                .intake
                .limits(c.server.max_message_bytes)
                .map_err(anyhow::Error::msg)?,
            receive: c
                .intake
                .receive_limits(c.server.max_message_bytes)
                .map_err(anyhow::Error::msg)?,
            max_streams_per_connection: c.intake.max_streams_per_connection,
            max_connections: c.intake.max_connections,
            cancel_abandoned: c.cancel_abandoned().map_err(anyhow::Error::msg)?,
            configured_backend: c.engine.backend.clone(),
            token,
            tls,
            journal,
        })
    }

    /// The bound TCP gRPC address (to learn the port of `:0`).
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The bound HTTP address.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The unix socket path.
    pub fn unix_path(&self) -> Option<&Path> {
        self.unix.as_ref().map(|(_, p)| p.as_path())
    }
}

/// gRPC status codes (as sent in the `grpc-status` header).
const GRPC_OUT_OF_RANGE: &str = "11";
const GRPC_RESOURCE_EXHAUSTED: &str = "8";

/// tonic refuses a message over the size limit from its length prefix, before decoding,
/// with OUT_OF_RANGE; the API promises RESOURCE_EXHAUSTED and a stable code, so rewrite it.
fn oversize_to_resource_exhausted(
    mut r: tonic::codegen::http::Response<tonic::body::Body>,
) -> tonic::codegen::http::Response<tonic::body::Body> {
    use tonic::codegen::http::HeaderValue;
    let h = r.headers_mut();
    let oversized = h.get("grpc-status").is_some_and(|v| v == GRPC_OUT_OF_RANGE)
        && h.get("grpc-message")
            .and_then(|m| m.to_str().ok())
            .is_some_and(|m| m.contains("too%20large"));
    if oversized {
        let msg = h
            .get("grpc-message")
            .and_then(|m| m.to_str().ok())
            .unwrap_or_default()
            .to_string();
        h.insert(
            "grpc-status",
            HeaderValue::from_static(GRPC_RESOURCE_EXHAUSTED),
        );
        if let Ok(v) = HeaderValue::from_str(&format!("message_too_large:%20{msg}")) {
            h.insert("grpc-message", v);
        }
    }
    r
}

/// gRPC server reflection (v1 and v1alpha, for older grpcurl) over the cuzk.v1 and health
/// protos, so `grpcurl` lists and calls the service without a proto file.
fn reflection_services() -> anyhow::Result<(
    tonic_reflection::server::v1::ServerReflectionServer<
        impl tonic_reflection::server::v1::ServerReflection,
    >,
    tonic_reflection::server::v1alpha::ServerReflectionServer<
        impl tonic_reflection::server::v1alpha::ServerReflection,
    >,
)> {
    let builder = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(super::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    Ok((
        builder().build_v1().context("gRPC reflection")?,
        builder().build_v1alpha().context("gRPC reflection")?,
    ))
}

async fn stopped(mut rx: tokio::sync::watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// Serves gRPC and HTTP until `shutdown` completes, then drains: new submissions are
/// refused (UNAVAILABLE), in-flight jobs get `grace` to finish and are cancelled after it,
/// waiting callers get their answers, and the listeners close.
pub async fn serve(
    listeners: Listeners,
    engine: Arc<Engine>,
    grace: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    serve_until(listeners, engine, grace, shutdown, std::future::pending()).await
}

/// [`serve`], and when `force` completes during the drain, the grace period ends at once:
/// jobs in flight are cancelled (their journal entries kept, so they resume at the next
/// start), waiting callers get their answers, and the daemon stops.
///
/// Before the listeners serve, the journal's entries are resumed (or reported as failed
/// jobs under their ids).
pub async fn serve_until(
    listeners: Listeners,
    engine: Arc<Engine>,
    grace: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
    force: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // One receive budget for every listener: each message is charged from its length
    // prefix until it is decoded.
    let receive = ReceiveBudget::new(listeners.receive.clone());
    let metrics = super::metrics::Metrics::new(engine.clone(), receive.clone())
        .context("the daemon's metrics")?;
    let mut service = ProvingService::new(engine.clone(), listeners.cancel_abandoned.clone())
        .with_intake(super::intake::Intake::new(listeners.intake.clone()))
        .with_metrics(metrics.clone());
    if let Some(j) = &listeners.journal {
        service = service.with_journal(j.clone());
        let s = service.clone();
        tokio::task::spawn_blocking(move || s.resume_journal()).await?;
    }
    let max = listeners.max_message_bytes;
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<ProvingEngineServer<ProvingService>>()
        .await;
    let reflection = reflection_services()?;
    let streams = listeners.max_streams_per_connection;
    let connections = listeners.max_connections;
    // The same services on every listener; the length prefix is checked against the limit
    // before any decoding. `auth` checks the bearer token (TCP only); health stays open.
    let router = |builder: Server, auth: GrpcAuth| {
        let receive = receive.clone();
        builder
            .max_concurrent_streams(streams)
            .layer(tower::util::MapRequestLayer::new(move |r| receive.count(r)))
            .layer(tower::util::MapResponseLayer::new(
                oversize_to_resource_exhausted,
            ))
            .layer(tower::util::MapResponseLayer::new(
                super::wire_status::decode_failure_to_invalid_argument,
            ))
            .add_service(InterceptedService::new(
                ProvingEngineServer::new(service.clone())
                    .max_decoding_message_size(max)
                    .max_encoding_message_size(max),
                auth.clone(),
            ))
            .add_service(health_service.clone())
            .add_service(InterceptedService::new(reflection.0.clone(), auth.clone()))
            .add_service(InterceptedService::new(reflection.1.clone(), auth))
    };
    let mut tasks = tokio::task::JoinSet::new();
    let mut socket_path = None;
    if let Some((l, path)) = listeners.unix {
        socket_path = Some(path);
        // Each connection through the authority relay (grpcio & co. send the socket path).
        let incoming = limit_connections(UnixListenerStream::new(l), connections, "unix socket")
            .map(|c| c.map(|a| a.map_io(super::authority::relay)));
        let s = router(Server::builder(), GrpcAuth::default())
            .serve_with_incoming_shutdown(incoming, stopped(stop_rx.clone()));
        tasks.spawn(async move { s.await.context("gRPC (unix socket)") });
    }
    if let Some(l) = listeners.tcp {
        let incoming = limit_connections(TcpListenerStream::new(l), connections, "TCP");
        let builder = match &listeners.tls {
            Some(tls) => Server::builder()
                .tls_config(tls.grpc())
                .context("gRPC TLS")?,
            None => Server::builder(),
        };
        let s = router(builder, GrpcAuth::new(listeners.token.clone()))
            .serve_with_incoming_shutdown(incoming, stopped(stop_rx.clone()));
        tasks.spawn(async move { s.await.context("gRPC (TCP)") });
    }
    if let Some(l) = listeners.http {
        let mut app = super::http::router(engine.clone(), listeners.configured_backend, metrics);
        if let Some(token) = listeners.token {
            app = app.layer(axum::middleware::from_fn_with_state(
                Arc::new(token),
                super::auth::http_auth,
            ));
        }
        let stop = stopped(stop_rx.clone());
        match &listeners.tls {
            Some(tls) => {
                let s = axum::serve(tls.http_listener(l)?, app).with_graceful_shutdown(stop);
                tasks.spawn(async move { s.await.context("HTTP admin (TLS)") });
            }
            None => {
                let s = axum::serve(l, app).with_graceful_shutdown(stop);
                tasks.spawn(async move { s.await.context("HTTP admin") });
            }
        }
    }
    tracing::info!("filprove daemon ready");

    // Run until asked to stop, or until a listener fails.
    let mut failure = None;
    tokio::select! {
        _ = shutdown => {}
        Some(r) = tasks.join_next() => {
            failure = Some(match r {
                Ok(Ok(())) => anyhow::anyhow!("a listener stopped unexpectedly"),
                Ok(Err(e)) => e,
                Err(e) => anyhow::anyhow!("a listener task failed: {e}"),
            });
        }
    }

    engine.begin_drain();
    health
        .set_not_serving::<ProvingEngineServer<ProvingService>>()
        .await;
    health
        .set_service_status("", tonic_health::ServingStatus::NotServing)
        .await;
    tracing::info!(
        grace_secs = grace.as_secs(),
        "draining: no new work; waiting for jobs in flight"
    );
    let e = engine.clone();
    let drain = tokio::task::spawn_blocking(move || e.drain(grace));
    tokio::pin!(drain);
    let report = tokio::select! {
        r = &mut drain => r?,
        _ = force => {
            engine.cut_drain_short();
            drain.await?
        }
    };
    tracing::info!(
        finished = report.finished,
        cancelled = report.cancelled,
        "drained"
    );
    let _ = stop_tx.send(true);
    // Let the RPCs that were waiting for those jobs deliver their answers.
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(r) = tasks.join_next().await {
            if let Ok(Err(e)) = r {
                tracing::error!(error = %e, "listener error at shutdown");
            }
        }
    })
    .await;
    if let Some(p) = socket_path {
        let _ = std::fs::remove_file(p);
    }
    match failure {
        Some(e) => Err(e),
        None => {
            tracing::info!("filprove daemon stopped");
            Ok(())
        }
    }
}
