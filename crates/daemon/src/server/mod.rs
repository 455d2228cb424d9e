//! The filprove daemon: the `cuzk.v1.ProvingEngine` gRPC service on a unix socket (and TCP
//! when configured), the HTTP admin endpoint, and graceful drain on SIGTERM/SIGINT.
//!
//! Entry points for the binary: [`DaemonArgs`] (clap) and [`run_daemon`].

pub mod address;
pub mod auth;
mod authority;
pub mod backends;
pub mod callers;
pub mod config;
pub mod convert;
pub mod cuda_config;
pub mod cuzk_config;
pub mod devices_config;
pub mod grpc;
pub mod http;
pub mod intake;
pub mod journal;
mod listen;
pub mod metrics;
pub mod receive;
mod resume;
pub mod srs_loading;
pub mod tls;
pub mod wire_status;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use filprove_engine::{Engine, EngineConfig};

pub use config::Config;
pub use listen::{serve, serve_until, socket_state, Listeners, SocketState};

/// The generated cuzk.v1 messages, server and client.
#[allow(missing_docs, clippy::all, rustdoc::invalid_html_tags)]
pub mod pb {
    tonic::include_proto!("cuzk.v1");

    /// The proto's encoded descriptor set (served by gRPC reflection).
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/cuzk_descriptor.bin"));
}

/// `filprove daemon`: run the proving daemon.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct DaemonArgs {
    /// TOML configuration file (see docs/config.md); defaults apply without one.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// gRPC listeners, replacing the configured ones: unix:///path/to.sock (or a path),
    /// host:port or http://host:port (cuzk's address is 127.0.0.1:9820); give it twice for
    /// a socket and TCP.
    #[arg(long, visible_alias = "addr", value_name = "ADDRESS")]
    pub listen: Vec<String>,
    /// Unix socket path or unix:///path (overrides server.unix_socket).
    #[arg(long)]
    pub unix_socket: Option<PathBuf>,
    /// Also listen on TCP, e.g. 127.0.0.1:9820 (overrides server.tcp_listen).
    #[arg(long)]
    pub tcp_listen: Option<String>,
    /// HTTP admin address for /metrics, /status, /healthz, /readyz (overrides server.http_listen;
    /// "" disables it).
    #[arg(long)]
    pub http_listen: Option<String>,
    /// Backend: cpu, cuda or auto (overrides engine.backend).
    #[arg(long)]
    pub backend: Option<String>,
    /// Let the TCP and HTTP listeners be addresses other machines reach (sets
    /// server.allow_remote; see server.auth_token_file and server.tls_cert_file).
    #[arg(long)]
    pub allow_remote: bool,
    /// Print the effective configuration and exit.
    #[arg(long)]
    pub check_config: bool,
}

impl DaemonArgs {
    /// The configuration file with the command-line overrides applied, validated.
    pub fn effective_config(&self) -> anyhow::Result<Config> {
        let mut c = match &self.config {
            Some(p) => Config::read(p).map_err(anyhow::Error::msg)?,
            None => Config::default(),
        };
        if !self.listen.is_empty() {
            c.set_listeners(&self.listen).map_err(anyhow::Error::msg)?;
        }
        if let Some(p) = &self.unix_socket {
            c.server.unix_socket = p.display().to_string();
        }
        if let Some(t) = &self.tcp_listen {
            c.server.tcp_listen = t.clone();
        }
        if let Some(h) = &self.http_listen {
            c.server.http_listen = h.clone();
        }
        if let Some(b) = &self.backend {
            c.engine.backend = b.clone();
        }
        c.server.allow_remote |= self.allow_remote;
        c.validate().map_err(anyhow::Error::msg)?;
        Ok(c)
    }
}

/// Engine settings from the configuration.
pub fn engine_config(c: &Config) -> anyhow::Result<EngineConfig> {
    Ok(EngineConfig {
        partition_workers: c.engine.partition_workers,
        gpu_workers_per_device: c.engine.gpu_workers_per_device,
        express_worker: c.engine.express_worker,
        memory_budget_bytes: c.memory.budget.resolve().map_err(anyhow::Error::msg)?,
        srs_budget_bytes: c.srs.budget.resolve().map_err(anyhow::Error::msg)?,
        max_retained_jobs: c.engine.max_retained_jobs,
        reused_partition_buffers: c.engine.reused_partition_buffers,
        reused_partition_buffers_idle: (c.engine.reused_partition_buffers_idle_secs > 0)
            .then(|| Duration::from_secs(c.engine.reused_partition_buffers_idle_secs)),
        release_host_parameters: c.engine.release_host_parameters,
        device_policies: Vec::new(),
        quarantine_after_failures: c.devices.quarantine_after_failures,
    })
}

/// Applies `srs.param_cache`: sets `FIL_PROOFS_PARAMETER_CACHE` when it is unset, and
/// refuses to start when it is set to another directory (never silently overridden).
pub fn apply_param_cache(c: &Config) -> anyhow::Result<PathBuf> {
    const VAR: &str = "FIL_PROOFS_PARAMETER_CACHE";
    if !c.srs.param_cache.is_empty() {
        match std::env::var_os(VAR) {
            Some(v)
                if !v.is_empty()
                    && std::path::Path::new(&v) != std::path::Path::new(&c.srs.param_cache) =>
            {
                anyhow::bail!(
                    "srs.param_cache is {:?} but {VAR} is {:?}; set one of them, or both the same",
                    c.srs.param_cache,
                    v
                );
            }
            Some(v) if !v.is_empty() => {}
            // Before any thread reads the environment: called first thing at start.
            _ => std::env::set_var(VAR, &c.srs.param_cache),
        }
    }
    Ok(filprove_filecoin::parameter_cache_dir())
}

/// Starts the engine for a configuration: backends, parameter loader, preloads.
pub fn start_engine(c: &Config) -> anyhow::Result<Arc<Engine>> {
    // Sets the environment before a backend starts threads (idempotent).
    apply_param_cache(c)?;
    let cuda = c
        .cuda
        .options(c.engine.gpu_workers_per_device)
        .map_err(anyhow::Error::msg)?;
    let planned = backends::build_planned(&c.engine.backend, &cuda, &c.devices)?;
    start_engine_planned(c, planned)
}

/// [`start_engine`] on the given backends instead of those `engine.backend` names; the
/// `[[devices.device]]` settings apply to them by position (ordinal).
pub fn start_engine_on(
    c: &Config,
    backends: Vec<Arc<dyn filprove_groth16::Backend>>,
) -> anyhow::Result<Arc<Engine>> {
    let policies = c
        .devices
        .plan(backends.len(), &[])
        .map_err(anyhow::Error::msg)?
        .into_iter()
        .map(|p| p.policy)
        .collect();
    start_engine_planned(c, backends::Planned { backends, policies })
}

fn start_engine_planned(c: &Config, planned: backends::Planned) -> anyhow::Result<Arc<Engine>> {
    let backends = planned.backends;
    let cache = apply_param_cache(c)?;
    tracing::info!(param_cache = %cache.display(), "parameter directory");
    warn_unknown_fil_proofs_env();
    let check_digests = matches!(
        std::env::var("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS").as_deref(),
        Ok("1") | Ok("true") | Ok("yes")
    );
    if check_digests {
        tracing::info!(
            "FIL_PROOFS_VERIFY_PRODUCTION_PARAMS: parameter digests are checked at load"
        );
    }
    let loader = srs_loading::srs_loader(cache, c.srs.validate, check_digests);
    let config = EngineConfig {
        device_policies: planned.policies,
        ..engine_config(c)?
    };
    let engine = Arc::new(Engine::start(config, backends, loader)?);
    for id in &c.srs.preload {
        let id = filprove_engine::filecoin::normalize_circuit_id(id)
            .map_err(|e| anyhow::anyhow!("srs.preload: {}: {e}", e.code()))?;
        let engine = engine.clone();
        // Preload in the background: the daemon answers (and proves other kinds) meanwhile.
        std::thread::spawn(move || match srs_loading::preload(&engine, &id) {
            Ok(o) => {
                tracing::info!(circuit_id = %id, ms = o.load_time.as_millis() as u64, "preloaded")
            }
            Err(e) => {
                tracing::error!(circuit_id = %id, code = e.code(), error = %e, "preload failed")
            }
        });
    }
    Ok(engine)
}

/// `FIL_PROOFS_*` variables filecoin-proofs 19 reads; others are warned about.
const KNOWN_FIL_PROOFS_ENV: &[&str] = &[
    "FIL_PROOFS_PARAMETER_CACHE",
    "FIL_PROOFS_PARENT_CACHE",
    "FIL_PROOFS_VERIFY_PRODUCTION_PARAMS",
    "FIL_PROOFS_USE_GPU_COLUMN_BUILDER",
    "FIL_PROOFS_USE_GPU_TREE_BUILDER",
    "FIL_PROOFS_MAXIMIZE_CACHING",
    "FIL_PROOFS_USE_MULTICORE_SDR",
    "FIL_PROOFS_MULTICORE_SDR_PRODUCERS",
    "FIL_PROOFS_MULTICORE_SDR_PRODUCER_STRIDE",
    "FIL_PROOFS_MULTICORE_SDR_LOOKAHEAD",
    "FIL_PROOFS_SDR_PARENTS_CACHE_SIZE",
    "FIL_PROOFS_VERIFY_CACHE",
    "FIL_PROOFS_MAX_GPU_COLUMN_BATCH_SIZE",
    "FIL_PROOFS_COLUMN_WRITE_BATCH_SIZE",
    "FIL_PROOFS_MAX_GPU_TREE_BATCH_SIZE",
    "FIL_PROOFS_ROWS_TO_DISCARD",
    "FIL_PROOFS_WINDOW_POST_SYNTHESIS_NUM_CPUS",
    "FIL_PROOFS_SRS_PARAMETER_CACHE",
];

fn warn_unknown_fil_proofs_env() {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("FIL_PROOFS_") && !KNOWN_FIL_PROOFS_ENV.contains(&k.as_ref()) {
            tracing::warn!(variable = %k, "unknown or obsolete FIL_PROOFS_* variable; it has no effect");
        }
    }
}

/// Runs the daemon until SIGTERM or SIGINT, then drains and returns (exit 0).
pub fn run_daemon(args: DaemonArgs) -> anyhow::Result<()> {
    let config = args.effective_config()?;
    if args.check_config {
        println!("{config:#?}");
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("filprove-rt")
        .build()
        .context("cannot start the async runtime")?;
    let engine = start_engine(&config)?;
    // GPU samples for the timeline and /metrics, until the daemon returns (stops on drop).
    let _gpu_sampler = filprove_engine::gpu_sampler::GpuSampler::start(Duration::from_millis(
        config.engine.nvml_sample_ms,
    ));
    runtime.block_on(async move {
        let (first, second) = shutdown_signals()?;
        let listeners = Listeners::bind(&config).await?;
        serve_until(
            listeners,
            engine,
            Duration::from_secs(config.server.shutdown_grace_secs),
            first,
            second,
        )
        .await
    })
}

/// Counts SIGTERM and SIGINT from now on: the first future completes on the first signal
/// (drain), the second on the next one (cut the drain short: cancel what runs, exit).
pub fn shutdown_signals() -> anyhow::Result<(
    impl std::future::Future<Output = ()> + Send + 'static,
    impl std::future::Future<Output = ()> + Send + 'static,
)> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    let (tx, rx) = tokio::sync::watch::channel(0u32);
    tokio::spawn(async move {
        loop {
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            let n = {
                tx.send_modify(|n| *n += 1);
                *tx.borrow()
            };
            if n == 1 {
                tracing::info!(
                    "{name}: draining (send it again to cancel jobs in flight and exit)"
                );
            } else {
                tracing::warn!("{name} during the drain: cancelling jobs in flight and exiting");
            }
        }
    });
    let count = |at: u32| {
        let mut rx = rx.clone();
        async move {
            let _ = rx.wait_for(|n| *n >= at).await;
        }
    };
    Ok((count(1), count(2)))
}
