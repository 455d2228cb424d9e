//! A real daemon on a temp unix socket and loopback TCP, over the real engine, CPU backend,
//! filecoin circuits and 2 KiB fixtures (shared with the filecoin crate's tests: the same
//! directory, seeds and lock, so parameters are generated once per target dir).

#![allow(dead_code)]

pub mod exposition;
pub mod spawned;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use filprove::server::{self, Config, Listeners};
use filprove_engine::Engine;
use filprove_filecoin::fixtures::FixtureSet;
use filprove_filecoin::shared_fixtures::SharedFixtures;
use filprove_filecoin::{CircuitSpec, ProofKind, ProofRequest};

pub struct Env {
    pub root: PathBuf,
    pub params: PathBuf,
    pub set_2k: FixtureSet,
    shared: SharedFixtures,
}

/// Fixtures and the parameter directory, shared with the filecoin crate's tests (same
/// directory and seeds); sets FIL_PROOFS_PARAMETER_CACHE (call first).
pub fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("filprove-test-fixtures");
        let shared = SharedFixtures::open_and_export(&root).unwrap();
        let set_2k = shared.set("2k", 2048).unwrap();
        Env {
            root: shared.root.clone(),
            params: shared.params.clone(),
            set_2k,
            shared,
        }
    })
}

/// Generates the test parameters of a circuit once.
pub fn ensure_params(short_name: &str) {
    let spec = CircuitSpec::from_short_name(short_name).unwrap();
    env().shared.ensure_params(&spec).unwrap();
}

/// The 2 KiB request of `kind`.
pub fn request(kind: ProofKind) -> ProofRequest {
    env().set_2k.request(kind).unwrap()
}

/// The request file of `kind`.
pub fn request_file(kind: ProofKind) -> PathBuf {
    env().set_2k.requests[&kind].clone()
}

/// A daemon running on its own runtime thread.
pub struct TestDaemon {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub tcp: SocketAddr,
    pub http: SocketAddr,
    pub engine: Arc<Engine>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

/// A test configuration: CPU backend, temp socket, loopback TCP and HTTP on free ports.
pub fn test_config(dir: &Path) -> Config {
    let mut c = Config::default();
    c.server.unix_socket = dir.join("filprove.sock").display().to_string();
    c.server.tcp_listen = "127.0.0.1:0".into();
    c.server.http_listen = "127.0.0.1:0".into();
    c.server.shutdown_grace_secs = 60;
    c.engine.backend = "cpu".into();
    c.engine.partition_workers = 2;
    c.memory.budget = server::config::ByteSize::Text("4GiB".into());
    c.srs.budget = server::config::ByteSize::Text("4GiB".into());
    c.journal.dir = dir.join("journal").display().to_string();
    c
}

impl TestDaemon {
    /// Starts a daemon; `tweak` edits the test configuration first.
    pub fn start(tweak: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(dir.path());
        tweak(&mut config);
        Self::start_with(dir, config)
    }

    /// Starts a daemon with `config` as it is (its listeners in `dir`, which it keeps).
    pub fn start_with(dir: tempfile::TempDir, config: Config) -> Self {
        Self::start_on(dir, config, None)
    }

    /// Starts a daemon on `backends` (instead of those `engine.backend` names) when given.
    pub fn start_on(
        dir: tempfile::TempDir,
        config: Config,
        backends: Option<Vec<Arc<dyn filprove_groth16::Backend>>>,
    ) -> Self {
        env();
        ensure_params("wpost-2k");
        ensure_params("winning-2k");
        config.validate().unwrap();
        let engine = match backends {
            Some(b) => server::start_engine_on(&config, b).unwrap(),
            None => server::start_engine(&config).unwrap(),
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (addrs_tx, addrs_rx) = std::sync::mpsc::channel();
        let e = engine.clone();
        let grace = Duration::from_secs(config.server.shutdown_grace_secs);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let l = Listeners::bind(&config).await?;
                addrs_tx.send((
                    l.unix_path().unwrap().to_path_buf(),
                    l.tcp_addr().unwrap(),
                    l.http_addr().unwrap(),
                ))?;
                server::serve(l, e, grace, async move {
                    let _ = stopped.await;
                })
                .await
            })
        });
        let (socket, tcp, http) = addrs_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("daemon bound its listeners");
        Self {
            dir,
            socket,
            tcp,
            http,
            engine,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The unix socket as a client address.
    pub fn unix_addr(&self) -> String {
        self.socket.display().to_string()
    }

    /// The TCP listener as a client address.
    pub fn tcp_addr(&self) -> String {
        format!("http://{}", self.tcp)
    }

    /// Sends the shutdown signal and waits for the daemon to return.
    pub fn shutdown(mut self) -> anyhow::Result<()> {
        let _ = self.stop.take().unwrap().send(());
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A plain HTTP/1.1 GET on loopback: (status code, body).
pub fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let (code, _, body) = http_get_with_headers(addr, path);
    (code, body)
}

/// `GET path`: status code, header lines (lower-cased names), body.
pub fn http_get_with_headers(addr: SocketAddr, path: &str) -> (u16, Vec<String>, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    http_exchange(&mut s, path, &[])
}

/// `GET path` with `extra` request header lines over an open connection `s`: status code,
/// header lines (lower-cased names), body.
pub fn http_exchange(
    s: &mut (impl std::io::Read + std::io::Write),
    path: &str,
    extra: &[&str],
) -> (u16, Vec<String>, String) {
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for h in extra {
        request.push_str(&format!("{h}\r\n"));
    }
    request.push_str("\r\n");
    s.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    // A TLS peer may close without close_notify after the response; what came is kept.
    let _ = s.read_to_end(&mut bytes);
    let buf = String::from_utf8_lossy(&bytes).into_owned();
    let code = buf.split_whitespace().nth(1).unwrap().parse().unwrap();
    let (head, body) = buf.split_once("\r\n\r\n").unwrap_or((&buf, ""));
    let headers = head
        .lines()
        .skip(1)
        .map(|l| l.to_ascii_lowercase())
        .collect();
    (code, headers, body.to_string())
}
