//! `filprove`: a Groth16 prover for Filecoin. A thin entry point: parse the command line,
//! set up logging, dispatch to a command, report errors readably.

use std::io::IsTerminal as _;

use clap::{Parser, Subcommand, ValueEnum};
use filprove::cli;

/// A GPU-resident Groth16 prover for Filecoin (PoRep C2, WinningPoSt, WindowPoSt, SnapDeals).
#[derive(Parser, Debug)]
#[command(name = "filprove", version)]
struct Cli {
    /// Log format on stderr: `text` (human) or `json` (one JSON object per line, for
    /// `filprove timeline` and log pipelines).
    #[arg(long, global = true, value_enum, env = "FILPROVE_LOG_FORMAT", default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// `--log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    /// `2026-11-30T03:40:00.123456Z  INFO target: message key=value ...`
    Text,
    /// tracing-subscriber's JSON lines (`timestamp`, `level`, `fields`, `target`).
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Prove one request (PoRep C1 output, PoSt or SnapDeals vanilla proofs) to a proof file.
    Prove(cli::prove::ProveArgs),
    /// Prove requests through the engine's pipeline in this process, parameters generated
    /// in memory or read; per-proof wall time, verified by filecoin-proofs.
    ProveBench(cli::prove_bench::ProveBenchArgs),
    /// Verify a proof file with filecoin-proofs' verifier.
    Verify(cli::verify::VerifyArgs),
    /// Time the synthesis of one partition (no parameters, no GPU); --check compares the
    /// parallel synthesis of PoRep's challenges with ordered synthesis.
    Synthesize(cli::synthesize::SynthesizeArgs),
    /// Parameter files: list, check, generate test sizes.
    #[command(subcommand)]
    Params(cli::params::ParamsCommand),
    /// Seal a small sector locally (or make a virtual one of any size) and write proof
    /// inputs of every kind.
    Fixtures(cli::fixtures::FixturesArgs),
    /// End to end on a fresh machine: fixtures, parameters, every proof kind, verified.
    Demo(cli::demo::DemoArgs),
    /// Time our prover against filecoin-proofs' own on the same request.
    Compare(cli::compare::CompareArgs),
    /// Print the device-memory plan of one partition for a circuit and a GPU size.
    VramPlan(cli::vram_plan::VramPlanArgs),
    /// GPU benchmark on a synthetic 32 GiB-shaped partition (per-phase times, bytes, syncs
    /// under each transfer switch; pipeline throughput). Its proofs cannot verify.
    SyntheticBench(cli::synthetic::SyntheticArgs),
    /// Check the machine and a daemon configuration: GPUs, CUDA build, memory and cgroup
    /// limit, parameter files and digests, socket permissions, the journal directory, what
    /// the daemon would do.
    Doctor(cli::doctor::DoctorArgs),
    /// Probe the daemon's /readyz (or /healthz) as its configuration says it listens (TLS,
    /// token): exit 0 when it answers 200. For container health checks.
    Health(cli::health::HealthArgs),
    /// Take a device of the running daemon out of rotation, or bring a quarantined one
    /// back (through its HTTP admin, as its configuration says it listens).
    #[command(subcommand)]
    Device(cli::device::DeviceCommand),
    /// Run the proving daemon (cuzk.v1 gRPC, HTTP /metrics /status /healthz /readyz).
    Daemon(filprove::server::DaemonArgs),
    #[command(flatten)]
    Client(filprove::client::ClientCommand),
    /// GPU utilisation, idle gaps and stage times from a run's log; waterfall SVG/HTML.
    Timeline(cli::timeline::TimelineArgs),
}

/// Our info lines; filecoin-proofs' per-step chatter only from warnings up (RUST_LOG overrides).
const DEFAULT_LOG_FILTER: &str = "info,filecoin_proofs=warn,storage_proofs_core=warn,\
    storage_proofs_porep=warn,storage_proofs_post=warn,storage_proofs_update=warn";

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        // Colours only on a terminal: a log file stays plain text.
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn main() {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let result = match cli.command {
        Command::Prove(a) => cli::prove::run(a),
        Command::ProveBench(a) => cli::prove_bench::run(a),
        Command::Verify(a) => cli::verify::run(a),
        Command::Synthesize(a) => cli::synthesize::run(a),
        Command::Params(c) => cli::params::run(c),
        Command::Fixtures(a) => cli::fixtures::run(a),
        Command::Demo(a) => cli::demo::run(a),
        Command::Compare(a) => cli::compare::run(a),
        Command::VramPlan(a) => cli::vram_plan::run(a),
        Command::SyntheticBench(a) => cli::synthetic::run(a),
        Command::Doctor(a) => cli::doctor::run(a),
        Command::Health(a) => cli::health::run(a),
        Command::Device(c) => cli::device::run(c),
        Command::Daemon(a) => filprove::server::run_daemon(a),
        Command::Client(c) => filprove::client::run_client(c),
        Command::Timeline(a) => cli::timeline::run(a),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
