//! The gRPC client commands: submit, await, status, cancel, preload, evict and bench.
//!
//! Entry points for the binary: [`ClientCommand`] (clap subcommands) and [`run_client`].

pub mod bench;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use filprove_filecoin::ProofRequest;
use hyper_util::rt::TokioIo;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Uri};

use crate::server::address::GrpcAddress;
use crate::server::config::DEFAULT_UNIX_SOCKET;
use crate::server::convert;
use crate::server::pb;
use crate::server::pb::proving_engine_client::ProvingEngineClient;

/// Largest message the client sends or accepts.
const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// A connected client (with the bearer token, when one is given, on every call).
pub type Client = ProvingEngineClient<InterceptedService<Channel, WithToken>>;

/// Where the daemon is, and how to reach it.
#[derive(clap::Args, Clone, Debug)]
pub struct Connect {
    /// Daemon address: a unix socket (unix:///path/to.sock or a path) or TCP (host:port or
    /// http://host:port).
    #[arg(long, default_value = DEFAULT_UNIX_SOCKET)]
    pub addr: String,
    /// A file holding the daemon's bearer token (its server.auth_token_file), sent on
    /// every call.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// PEM certificate to trust for a daemon that speaks TLS (its server.tls_cert_file, or
    /// the CA that signed it): the TCP address is then dialled with TLS, its host checked
    /// against the certificate.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
}

impl Connect {
    /// `addr`, without a token or TLS.
    pub fn to(addr: impl Into<String>) -> Self {
        Self {
            addr: addr.into(),
            token_file: None,
            tls_ca: None,
        }
    }

    /// Connects as the options say.
    pub async fn client(&self) -> anyhow::Result<Client> {
        let channel = match &self.tls_ca {
            None => channel(&self.addr).await?,
            Some(ca) => {
                let pem = std::fs::read(ca)
                    .with_context(|| format!("--tls-ca: cannot read {}", ca.display()))?;
                tls_channel(&self.addr, &pem).await?
            }
        };
        let token = match &self.token_file {
            None => WithToken::default(),
            Some(f) => WithToken::read(f)?,
        };
        Ok(client_on(channel, token))
    }
}

/// Adds `authorization: Bearer <token>` to every call, when it holds a token.
#[derive(Clone, Default)]
pub struct WithToken(Option<tonic::metadata::AsciiMetadataValue>);

impl std::fmt::Debug for WithToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WithToken(..)")
    }
}

impl WithToken {
    /// The token of a file (as the daemon reads its server.auth_token_file).
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let token = crate::server::auth::BearerToken::read(path)?;
        let value = token
            .header_value()
            .parse()
            .context("the token is not a valid header value")?;
        Ok(Self(Some(value)))
    }
}

impl tonic::service::Interceptor for WithToken {
    fn call(&mut self, mut r: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            r.metadata_mut().insert("authorization", v.clone());
        }
        Ok(r)
    }
}

fn client_on(channel: Channel, token: WithToken) -> Client {
    ProvingEngineClient::with_interceptor(channel, token)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES)
}

/// A TLS channel to the TCP address `addr` (host:port or http://host:port), trusting the
/// PEM certificates `ca_pem` and checking the host against them.
pub async fn tls_channel(addr: &str, ca_pem: &[u8]) -> anyhow::Result<Channel> {
    let GrpcAddress::Tcp(host_port) = GrpcAddress::parse(addr).map_err(anyhow::Error::msg)? else {
        anyhow::bail!("--tls-ca: {addr} is a unix socket, which speaks no TLS");
    };
    let host = host_port
        .rsplit_once(':')
        .map_or(host_port.as_str(), |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    Endpoint::from_shared(format!("https://{host_port}"))?
        .tls_config(
            ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(ca_pem))
                .domain_name(host),
        )?
        .connect()
        .await
        .with_context(|| format!("cannot connect to {addr} with TLS"))
}

/// A gRPC channel to `addr`, in any of [`GrpcAddress`]'s forms (what Curio's
/// `[Cuzk] Address` takes works here too).
pub async fn channel(addr: &str) -> anyhow::Result<Channel> {
    match GrpcAddress::parse(addr).map_err(anyhow::Error::msg)? {
        GrpcAddress::Tcp(host_port) => Endpoint::from_shared(format!("http://{host_port}"))?
            .connect()
            .await
            .with_context(|| format!("cannot connect to {addr}")),
        GrpcAddress::Unix(path) => {
            // The URI is required by the API but unused: the connector dials the socket.
            Endpoint::try_from("http://localhost")?
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move {
                        Ok::<_, std::io::Error>(TokioIo::new(
                            tokio::net::UnixStream::connect(path).await?,
                        ))
                    }
                }))
                .await
                .with_context(|| format!("cannot connect to the unix socket {addr}"))
        }
    }
}

/// Connects to `addr` (see [`channel`]), without a token or TLS ([`Connect::client`] has
/// both).
pub async fn connect(addr: &str) -> anyhow::Result<Client> {
    Ok(client_on(channel(addr).await?, WithToken::default()))
}

/// What to prove.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RequestInput {
    /// A request file (JSON, see docs/formats.md; written by `filprove fixtures`).
    #[arg(long, conflicts_with = "c1")]
    pub request: Option<PathBuf>,
    /// A PoRep C1 output (raw JSON or the {"SectorNum","Phase1Out","SectorSize"} wrapper).
    #[arg(long)]
    pub c1: Option<PathBuf>,
    /// Miner actor id (with --c1).
    #[arg(long)]
    pub miner_id: Option<u64>,
    /// Sector number (with a raw --c1).
    #[arg(long)]
    pub sector_number: Option<u64>,
}

impl RequestInput {
    /// Reads and validates the request.
    pub fn load(&self) -> anyhow::Result<ProofRequest> {
        let read =
            |p: &Path| std::fs::read(p).with_context(|| format!("cannot read {}", p.display()));
        match (&self.request, &self.c1) {
            (Some(p), _) => ProofRequest::from_request_json(&read(p)?)
                .map_err(|e| anyhow::anyhow!("{}: {}: {e}", p.display(), e.code())),
            (None, Some(p)) => {
                let miner = self.miner_id.context("--c1 needs --miner-id")?;
                ProofRequest::parse_c1(&read(p)?, self.sector_number, miner)
                    .map_err(|e| anyhow::anyhow!("{}: {}: {e}", p.display(), e.code()))
            }
            (None, None) => anyhow::bail!("give --request FILE or --c1 FILE"),
        }
    }
}

/// Scheduling priority on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PriorityArg {
    /// LOW.
    Low,
    /// NORMAL.
    #[default]
    Normal,
    /// HIGH.
    High,
    /// CRITICAL.
    Critical,
}

impl PriorityArg {
    /// The wire value.
    pub fn wire(self) -> pb::Priority {
        match self {
            Self::Low => pb::Priority::Low,
            Self::Normal => pb::Priority::Normal,
            Self::High => pb::Priority::High,
            Self::Critical => pb::Priority::Critical,
        }
    }
}

/// `submit`: queue a proof.
#[derive(clap::Args, Clone, Debug)]
pub struct SubmitArgs {
    /// The daemon's address.
    #[command(flatten)]
    pub connect: Connect,
    /// What to prove.
    #[command(flatten)]
    pub input: RequestInput,
    /// Idempotency key (default: a random id).
    #[arg(long)]
    pub request_id: Option<String>,
    /// Priority (PoSt kinds run at least HIGH / CRITICAL anyway).
    #[arg(long, value_enum, default_value_t)]
    pub priority: PriorityArg,
    /// Wait for the proof (like Prove) instead of printing the job id only.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: write the proof bytes here (default: print hex).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `await`: wait for a job.
#[derive(clap::Args, Clone, Debug)]
pub struct AwaitArgs {
    /// The daemon's address.
    #[command(flatten)]
    pub connect: Connect,
    /// The job id.
    pub job_id: String,
    /// Milliseconds to wait (0: until it ends).
    #[arg(long, default_value_t = 0)]
    pub timeout_ms: u64,
    /// Write the proof bytes here (default: print hex).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `status`: devices, parameters, queues.
#[derive(clap::Args, Clone, Debug)]
pub struct StatusArgs {
    /// The daemon's address.
    #[command(flatten)]
    pub connect: Connect,
    /// Print the Prometheus metrics instead.
    #[arg(long)]
    pub metrics: bool,
}

/// `cancel`: cancel a job.
#[derive(clap::Args, Clone, Debug)]
pub struct CancelArgs {
    /// The daemon's address.
    #[command(flatten)]
    pub connect: Connect,
    /// The job id.
    pub job_id: String,
}

/// `preload` / `evict`: parameter residency.
#[derive(clap::Args, Clone, Debug)]
pub struct SrsArgs {
    /// The daemon's address.
    #[command(flatten)]
    pub connect: Connect,
    /// Circuit id: porep-32g, wpost-32g, winning-32g, snap-32g, ... (any size: 2k, 8m,
    /// 512m, 32g, 64g).
    pub circuit_id: String,
}

/// The client commands.
#[derive(clap::Subcommand, Clone, Debug)]
pub enum ClientCommand {
    /// Submit a proof request to the daemon.
    Submit(SubmitArgs),
    /// Wait for a submitted job and print or save its proof.
    Await(AwaitArgs),
    /// Show the daemon's devices, parameters and queues.
    Status(StatusArgs),
    /// Cancel a job.
    Cancel(CancelArgs),
    /// Load a circuit's parameters into the daemon's memory.
    Preload(SrsArgs),
    /// Drop a circuit's parameters from the daemon's memory.
    Evict(SrsArgs),
    /// Prove a request N times with concurrency J and report throughput and latency.
    Bench(bench::BenchArgs),
}

/// Runs a client command to completion.
pub fn run_client(command: ClientCommand) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(run(command))
}

/// [`crate::server::intake::check_id`] as a client error.
fn check_id(field: &str, id: &str) -> anyhow::Result<()> {
    crate::server::intake::check_id(field, id).map_err(|s| anyhow::anyhow!("{}", s.message()))
}

fn print_result(r: &pb::AwaitProofResponse, out: Option<&Path>) -> anyhow::Result<()> {
    use pb::await_proof_response::Status as S;
    let status = S::try_from(r.status).unwrap_or(S::Unknown);
    eprintln!(
        "job {}: {:?} (total {} ms: queue {} ms, srs {} ms, synthesis {} ms, prove {} ms)",
        r.job_id,
        status,
        r.total_ms,
        r.queue_wait_ms,
        r.srs_load_ms,
        r.synthesis_ms,
        r.gpu_compute_ms
    );
    match status {
        S::Completed => {
            match out {
                Some(p) => std::fs::write(p, &r.proof)
                    .with_context(|| format!("cannot write {}", p.display()))?,
                None => println!("{}", hex::encode(&r.proof)),
            }
            Ok(())
        }
        S::Timeout => anyhow::bail!("timed out waiting for job {}", r.job_id),
        _ => anyhow::bail!("job {} {:?}: {}", r.job_id, status, r.error_message),
    }
}

async fn run(command: ClientCommand) -> anyhow::Result<()> {
    match command {
        ClientCommand::Submit(a) => {
            let request = a.input.load()?;
            let id = a
                .request_id
                .clone()
                .unwrap_or_else(|| format!("cli-{:016x}", rand::random::<u64>()));
            // The daemon's rules, checked before connecting (the request was checked by
            // `load`, against the same bounds the daemon applies).
            check_id("--request-id", &id)?;
            let wire = convert::to_wire(&request, &id, a.priority.wire());
            let mut c = a.connect.client().await?;
            let s = c.submit_proof(wire).await?.into_inner();
            println!("{}", s.job_id);
            eprintln!(
                "queued as {} (position {}, device {})",
                s.job_id, s.queue_position, s.assigned_gpu
            );
            if a.wait {
                let r = c
                    .await_proof(pb::AwaitProofRequest {
                        job_id: s.job_id,
                        timeout_ms: 0,
                    })
                    .await?
                    .into_inner();
                print_result(&r, a.out.as_deref())?;
            }
        }
        ClientCommand::Await(a) => {
            check_id("job id", &a.job_id)?;
            let mut c = a.connect.client().await?;
            let r = c
                .await_proof(pb::AwaitProofRequest {
                    job_id: a.job_id,
                    timeout_ms: a.timeout_ms,
                })
                .await?
                .into_inner();
            print_result(&r, a.out.as_deref())?;
        }
        ClientCommand::Status(a) => {
            let mut c = a.connect.client().await?;
            if a.metrics {
                print!(
                    "{}",
                    c.get_metrics(pb::GetMetricsRequest {})
                        .await?
                        .into_inner()
                        .prometheus_text
                );
            } else {
                let s = c.get_status(pb::GetStatusRequest {}).await?.into_inner();
                print!("{}", format_status(&s));
            }
        }
        ClientCommand::Cancel(a) => {
            check_id("job id", &a.job_id)?;
            let mut c = a.connect.client().await?;
            let r = c
                .cancel_proof(pb::CancelProofRequest {
                    job_id: a.job_id.clone(),
                })
                .await?
                .into_inner();
            println!("cancelled {} (was running: {})", a.job_id, r.was_running);
        }
        ClientCommand::Preload(a) => {
            let mut c = a.connect.client().await?;
            let r = c
                .preload_srs(pb::PreloadSrsRequest {
                    circuit_id: a.circuit_id.clone(),
                })
                .await?
                .into_inner();
            println!(
                "{}: already loaded {}, {} ms",
                a.circuit_id, r.already_loaded, r.load_time_ms
            );
        }
        ClientCommand::Evict(a) => {
            let mut c = a.connect.client().await?;
            let r = c
                .evict_srs(pb::EvictSrsRequest {
                    circuit_id: a.circuit_id.clone(),
                })
                .await?
                .into_inner();
            println!(
                "{}: was loaded {}, freed {} bytes",
                a.circuit_id, r.was_loaded, r.freed_bytes
            );
        }
        ClientCommand::Bench(a) => {
            let report = bench::run(&a).await?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&report.to_json())?);
            } else {
                print!("{}", report.format());
            }
            if report.failed > 0 {
                anyhow::bail!("{} of {} proofs failed", report.failed, report.count);
            }
        }
    }
    Ok(())
}

/// A readable status report.
pub fn format_status(s: &pb::GetStatusResponse) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "uptime {} s, proofs completed {}, failed {}, memory reserved {:.2} / {:.2} GiB",
        s.uptime_seconds,
        s.total_proofs_completed,
        s.total_proofs_failed,
        s.pinned_memory_bytes as f64 / (1u64 << 30) as f64,
        s.pinned_memory_limit_bytes as f64 / (1u64 << 30) as f64
    );
    for g in &s.gpus {
        let cur = if g.current_job_id.is_empty() {
            "idle".to_string()
        } else {
            format!("{} ({})", g.current_job_id, g.current_proof_kind)
        };
        let _ = writeln!(o, "device {} {}: {cur}", g.ordinal, g.name);
    }
    for q in &s.queues {
        let _ = writeln!(
            o,
            "queue {}: {} pending, {} in progress",
            q.proof_kind, q.pending, q.in_progress
        );
    }
    for p in &s.loaded_srs {
        let tier = pb::srs_status::Tier::try_from(p.tier)
            .map(|t| t.as_str_name())
            .unwrap_or("?");
        let _ = writeln!(
            o,
            "srs {}: {tier}, {:.1} MiB, {} users",
            p.circuit_id,
            p.size_bytes as f64 / (1u64 << 20) as f64,
            p.ref_count
        );
    }
    o
}

/// Polls `addr` until the daemon answers GetStatus or `timeout` passes.
pub async fn wait_ready(addr: &str, timeout: Duration) -> anyhow::Result<Client> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Ok(mut c) = connect(addr).await {
            if c.get_status(pb::GetStatusRequest {}).await.is_ok() {
                return Ok(c);
            }
        }
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!("daemon at {addr} not ready");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    /// How the binary embeds these types (its main.rs does the same).
    #[derive(Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        command: Top,
    }

    #[derive(clap::Subcommand, Debug)]
    enum Top {
        Daemon(crate::server::DaemonArgs),
        #[command(flatten)]
        Client(ClientCommand),
    }

    #[test]
    fn command_line_definitions_are_consistent() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "filprove",
            "bench",
            "--addr",
            "http://127.0.0.1:9820",
            "--request",
            "r.json",
            "-n",
            "5",
            "-j",
            "2",
        ])
        .unwrap();
        match cli.command {
            Top::Client(ClientCommand::Bench(b)) => {
                assert_eq!((b.count, b.concurrency), (5, 2));
                assert_eq!(b.connect.addr, "http://127.0.0.1:9820");
            }
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from([
            "filprove",
            "daemon",
            "-c",
            "/etc/filprove.toml",
            "--backend",
            "cpu",
        ])
        .unwrap();
        assert!(matches!(cli.command, Top::Daemon(ref d) if d.backend.as_deref() == Some("cpu")));
        // --listen (or --addr) replaces the configured listeners, any address form.
        let cli = Cli::try_parse_from([
            "filprove",
            "daemon",
            "--listen",
            "unix:///tmp/filprove-test.sock",
            "--addr",
            "127.0.0.1:9820",
        ])
        .unwrap();
        let Top::Daemon(d) = cli.command else {
            panic!("not the daemon")
        };
        let c = d.effective_config().unwrap();
        assert_eq!(
            c.unix_socket().unwrap(),
            Some(PathBuf::from("/tmp/filprove-test.sock"))
        );
        assert_eq!(
            c.tcp_addr().unwrap(),
            Some("127.0.0.1:9820".parse().unwrap())
        );
        let cli =
            Cli::try_parse_from(["filprove", "daemon", "--listen", "http://127.0.0.1:1"]).unwrap();
        let Top::Daemon(d) = cli.command else {
            panic!("not the daemon")
        };
        assert_eq!(d.effective_config().unwrap().unix_socket().unwrap(), None);
        let cli =
            Cli::try_parse_from(["filprove", "await", "job-1", "--timeout-ms", "10"]).unwrap();
        match cli.command {
            Top::Client(ClientCommand::Await(a)) => {
                assert_eq!((a.job_id.as_str(), a.timeout_ms), ("job-1", 10));
                assert_eq!(a.connect.addr, DEFAULT_UNIX_SOCKET);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            Cli::try_parse_from(["filprove", "submit", "--request", "a", "--c1", "b"]).is_err()
        );
    }
}
