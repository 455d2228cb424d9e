//! `filprove device`: takes a device of a running daemon out of rotation or brings it
//! back, through the daemon's HTTP admin (`POST /devices/<ordinal>/restore` or
//! `/quarantine`), reached and authenticated the way its configuration says (TLS, bearer
//! token), as `filprove health` does.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::health::Probe;
use crate::server::DaemonArgs;

/// `filprove device`.
#[derive(Subcommand, Debug)]
pub enum DeviceCommand {
    /// Bring a quarantined device back into rotation (its failures in a row cleared).
    Restore(DeviceArgs),
    /// Take a device out of rotation: it finishes what it proves and takes nothing new.
    Quarantine(DeviceArgs),
}

/// Arguments of `filprove device restore|quarantine`.
#[derive(Args, Debug)]
pub struct DeviceArgs {
    /// The device's ordinal, as GetStatus and /status list it.
    pub ordinal: u32,
    /// The daemon's configuration file (the one `filprove daemon --config` reads);
    /// defaults apply without one.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 5)]
    pub timeout_secs: u64,
}

/// Runs `filprove device ...`: prints the daemon's answer, fails unless it is 200.
pub fn run(command: DeviceCommand) -> Result<()> {
    let (args, action) = match command {
        DeviceCommand::Restore(a) => (a, "restore"),
        DeviceCommand::Quarantine(a) => (a, "quarantine"),
    };
    let config = DaemonArgs {
        config: args.config.clone(),
        ..DaemonArgs::default()
    }
    .effective_config()?;
    let path = format!("/devices/{}/{action}", args.ordinal);
    let probe = Probe::of(&config, &path)?.post();
    super::health::ask(&probe, args.timeout_secs)
}
