//! `filprove doctor`: an operator's first look at a machine and a configuration. The
//! build and the GPUs (driver, memory, compute capability against the kernels' targets),
//! host and cgroup memory with the budgets the engine would take, the parameter files and
//! their digests, the socket's permissions, the journal's directory and free space, and
//! what the daemon would do with the configuration. Exits 1 when something would make the daemon fail.

mod host;
mod journal;
mod params;
mod report;
mod socket;

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

pub use report::{Level, Report};

use crate::server::{Config, DaemonArgs};

/// Arguments of `filprove doctor`.
#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// The daemon's configuration file (filprove's or cuzk's); defaults apply without one.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// Only list the parameter files; do not hash them against parameters.json (hashing
    /// reads every file: minutes for 32 GiB parameters).
    #[arg(long)]
    pub skip_digests: bool,
}

/// Runs `filprove doctor`: prints the report, fails when a finding is a failure.
pub fn run(args: DoctorArgs) -> Result<()> {
    let report = examine(&args);
    print!("{}", report.render());
    match (report.failures(), report.warnings()) {
        (0, 0) => println!("no problems found"),
        (0, w) => println!("{w} warning(s), no failures"),
        (f, w) => bail!("{f} failure(s), {w} warning(s)"),
    }
    Ok(())
}

/// Every check, in the order an operator reads them.
pub fn examine(args: &DoctorArgs) -> Report {
    let mut r = Report::default();
    host::build(&mut r);
    host::gpus(&mut r);
    r.section("configuration");
    let daemon = DaemonArgs {
        config: args.config.clone(),
        ..DaemonArgs::default()
    };
    let config = match daemon.effective_config() {
        Ok(c) => c,
        Err(e) => {
            r.add(Level::Fail, format!("{e:#}: the daemon would not start"));
            return r;
        }
    };
    let source = match &args.config {
        Some(p) => p.display().to_string(),
        None => "no file: the defaults".into(),
    };
    r.add(Level::Ok, format!("{source}: valid"));
    host::memory(&mut r, &config);
    match crate::server::apply_param_cache(&config) {
        Ok(dir) => params::check(&mut r, &dir, &config.srs.preload, args.skip_digests),
        Err(e) => {
            r.section("parameters");
            r.add(Level::Fail, format!("{e:#}"));
        }
    }
    socket::check(&mut r, &config);
    journal::check(&mut r, &config);
    plan(&mut r, &config);
    r
}

/// Each device the daemon would prove on: what it is for and its VRAM budget.
fn devices(
    r: &mut Report,
    c: &Config,
    names: &[String],
    policies: &[filprove_engine::DevicePolicy],
) {
    let budgets = if names.iter().any(|n| n.starts_with("cpu")) {
        Vec::new()
    } else {
        crate::server::backends::cuda_plan(&c.devices).unwrap_or_default()
    };
    for (i, (name, p)) in names.iter().zip(policies).enumerate() {
        let work = match (p.urgent_only, p.circuits.is_empty()) {
            (true, true) => "PoSt (HIGH/CRITICAL work) only".to_string(),
            (true, false) => format!("PoSt only, circuits {}", p.circuits.join(", ")),
            (false, true) => "any work".to_string(),
            (false, false) => format!("circuits {} only", p.circuits.join(", ")),
        };
        let vram = match budgets.get(i).and_then(|b| b.vram_budget) {
            Some(b) => format!(", VRAM budget {:.1} GiB", b as f64 / (1u64 << 30) as f64),
            None => String::new(),
        };
        r.add(Level::Info, format!("device {i} ({name}): {work}{vram}"));
    }
    let after = c.devices.quarantine_after_failures;
    r.add(
        Level::Info,
        if after == 0 {
            "a failing device stays in rotation (devices.quarantine_after_failures = 0)".to_string()
        } else {
            format!("a device is quarantined after {after} failed proofs in a row")
        },
    );
}

/// What the daemon would run: backends (built as it builds them), workers, endpoints.
fn plan(r: &mut Report, c: &Config) {
    r.section("the daemon with this configuration");
    let kind = c.engine.backend.as_str();
    let cuda = match c.cuda.options(c.engine.gpu_workers_per_device) {
        Ok(o) => o,
        Err(e) => {
            r.add(Level::Fail, format!("[cuda]: {e}"));
            return;
        }
    };
    match crate::server::backends::build_planned(kind, &cuda, &c.devices) {
        Ok(planned) => {
            let names: Vec<String> = planned.backends.iter().map(|b| b.name()).collect();
            let text = format!("engine.backend = {kind:?}: proves on {}", names.join(", "));
            match crate::server::http::not_ready_reason(false, kind, &names, names.len()) {
                Some(why) => r.add(Level::Warn, format!("{text}; /readyz would fail: {why}")),
                None => r.add(Level::Ok, text),
            }
            devices(r, c, &names, &planned.policies);
        }
        Err(e) => r.add(Level::Fail, format!("{e:#}: the daemon would not start")),
    }
    r.add(
        Level::Info,
        format!(
            "{} synthesis workers{}, {} prover workers per device",
            c.engine.partition_workers,
            if c.engine.express_worker {
                " plus one for HIGH/CRITICAL work"
            } else {
                ""
            },
            c.engine.gpu_workers_per_device
        ),
    );
    if !c.srs.preload.is_empty() {
        r.add(
            Level::Info,
            format!("parameters loaded at start: {}", c.srs.preload.join(", ")),
        );
    }
    if c.server.http_listen.is_empty() {
        r.add(
            Level::Info,
            "no HTTP admin endpoint (server.http_listen is empty)",
        );
    } else {
        r.add(
            Level::Info,
            format!(
                "HTTP /metrics, /status, /healthz, /readyz on {}",
                c.server.http_listen
            ),
        );
    }
}
