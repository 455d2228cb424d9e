//! `filprove timeline`: GPU utilisation, idle gaps and per-partition stage times from a
//! run's log (text or `--log-format json`), and a waterfall picture (docs/timeline.md).

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::Args;

use crate::timeline;

/// Arguments of `filprove timeline`.
#[derive(Args, Debug)]
pub struct TimelineArgs {
    /// The log (a daemon's or an engine run's stderr); `-` reads standard input.
    pub log: PathBuf,
    /// Write the waterfall picture as SVG.
    #[arg(long, value_name = "OUT.svg")]
    pub svg: Option<PathBuf>,
    /// Write a self-contained HTML page (summary and picture).
    #[arg(long, value_name = "OUT.html")]
    pub html: Option<PathBuf>,
    /// Write the whole analysis as JSON (every partition, device and gap statistic).
    #[arg(long, value_name = "OUT.json")]
    pub json: Option<PathBuf>,
    /// Print the per-partition table when there are at most this many partition attempts.
    #[arg(long, default_value_t = 50)]
    pub max_rows: usize,
}

/// Runs `filprove timeline`.
pub fn run(args: TimelineArgs) -> Result<()> {
    let text = read_log(&args.log)?;
    let log = timeline::parse_log(&text);
    let report = timeline::analyze(&log);
    let summary = timeline::summary(&report, args.max_rows);
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().write_all(summary.as_bytes());
    if log.events.is_empty() && log.samples.is_empty() {
        eprintln!(
            "no filprove::timeline events in {}: record the run at INFO with target filprove::timeline enabled (docs/timeline.md)",
            args.log.display()
        );
    }
    if let Some(p) = &args.svg {
        write(p, &timeline::render_svg(&report, &log.samples))?;
    }
    if let Some(p) = &args.html {
        write(p, &timeline::render_html(&report, &log.samples, &summary))?;
    }
    if let Some(p) = &args.json {
        write(p, &(serde_json::to_string_pretty(&report)? + "\n"))?;
    }
    Ok(())
}

fn read_log(path: &Path) -> Result<String> {
    let mut bytes = Vec::new();
    if path == Path::new("-") {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
    } else {
        bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    }
    // A log cut mid-write may end inside a UTF-8 sequence: read what can be read.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Writes to a temporary name beside `path`, then renames.
fn write(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension(format!(
        "{}.tmp{}",
        path.extension().and_then(|e| e.to_str()).unwrap_or(""),
        std::process::id()
    ));
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    let _ = writeln!(std::io::stdout(), "wrote {}", path.display());
    Ok(())
}
