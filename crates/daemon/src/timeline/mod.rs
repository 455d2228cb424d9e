//! The timeline analyzer behind `filprove timeline`: reads a daemon's (or any engine run's)
//! log, text or JSON, and turns the engine's `timeline` events and the NVML sampler's
//! `gpu_sample` events into per-device utilisation, idle gaps between kernel regions,
//! per-partition stage times, and a waterfall picture (SVG, or an HTML page embedding it).
//!
//! - [`parse::parse_log`]: log text to a [`Log`] (events, samples, summaries, counts);
//! - [`analyze::analyze`]: a [`Log`] to a [`analyze::Report`] (serializable to JSON);
//! - [`svg::render_svg`] / [`svg::render_html`]: the picture; [`text::summary`]: the text.
//!
//! How to record a run and read the picture: docs/timeline.md.

pub mod analyze;
pub mod parse;
pub mod svg;
pub mod text;

pub use analyze::{analyze, Report};
pub use parse::parse_log;
pub use svg::{render_html, render_svg};
pub use text::summary;

/// The log filter (`RUST_LOG`) that records all `filprove timeline` reads: the engine's
/// pipeline events (INFO) and the GPU samples, which log at DEBUG (several per second)
/// under the same target, `filprove::timeline`.
pub const RECORDING_FILTER: &str = "info,filprove::timeline=debug";

/// A timeline event's kind (`ev` field), in pipeline order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ev {
    /// A synthesis worker starts the partition.
    SynthStart,
    /// Its synthesis is done; it is queued for a prover.
    SynthEnd,
    /// A prover worker starts uploading (pre-staging) its inputs.
    StageStart,
    /// Upload done.
    StageEnd,
    /// The prover worker starts waiting for the device's kernel lock.
    LockWait,
    /// It holds the lock: the kernel region begins.
    LockAcquired,
    /// It releases the lock: the kernel region ends.
    LockReleased,
    /// The backend's prove call starts.
    GpuStart,
    /// The prove call returns.
    GpuEnd,
    /// The partition's proof is recorded.
    PartitionDone,
}

impl Ev {
    /// Every kind, in order.
    pub const ALL: [Ev; 10] = [
        Ev::SynthStart,
        Ev::SynthEnd,
        Ev::StageStart,
        Ev::StageEnd,
        Ev::LockWait,
        Ev::LockAcquired,
        Ev::LockReleased,
        Ev::GpuStart,
        Ev::GpuEnd,
        Ev::PartitionDone,
    ];

    /// The `ev` field's value.
    pub fn name(self) -> &'static str {
        match self {
            Ev::SynthStart => "synth_start",
            Ev::SynthEnd => "synth_end",
            Ev::StageStart => "stage_start",
            Ev::StageEnd => "stage_end",
            Ev::LockWait => "lock_wait",
            Ev::LockAcquired => "lock_acquired",
            Ev::LockReleased => "lock_released",
            Ev::GpuStart => "gpu_start",
            Ev::GpuEnd => "gpu_end",
            Ev::PartitionDone => "partition_done",
        }
    }

    /// Parses an `ev` value.
    pub fn from_name(s: &str) -> Option<Ev> {
        Ev::ALL.into_iter().find(|e| e.name() == s)
    }
}

/// One `timeline` event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// What happened.
    pub ev: Ev,
    /// Job id.
    pub job: String,
    /// Partition index.
    pub partition: u64,
    /// Device name ("cuda:0 NVIDIA H200", "cpu"), on prover-side events.
    pub device: Option<String>,
    /// Prover worker index on that device.
    pub worker: Option<u64>,
    /// Microseconds since the UNIX epoch.
    pub t_us: u64,
}

/// One `gpu_sample` event (fields missing from the line are `None`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// CUDA ordinal.
    pub device: u64,
    /// Microseconds since the UNIX epoch.
    pub t_us: u64,
    /// SM utilisation, %.
    pub sm_util: Option<f64>,
    /// Memory utilisation, %.
    pub mem_util: Option<f64>,
    /// Power, W.
    pub power_w: Option<f64>,
    /// PCIe device to host, MB/s.
    pub pcie_tx_mbps: Option<f64>,
    /// PCIe host to device, MB/s.
    pub pcie_rx_mbps: Option<f64>,
    /// Device memory used, MiB.
    pub mem_used_mib: Option<f64>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<f64>,
}

/// One `partition` summary event: its other fields passed through as they are.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Job id.
    pub job: String,
    /// Partition index.
    pub partition: u64,
    /// Device name.
    pub device: Option<String>,
    /// Prover worker index.
    pub worker: Option<u64>,
    /// Every other field (`*_ms`, `*_bytes`, ...).
    pub fields: serde_json::Map<String, serde_json::Value>,
}

/// What a log held.
#[derive(Clone, Debug, Default)]
pub struct Log {
    /// Non-empty lines read.
    pub lines: usize,
    /// Log lines of other targets or messages.
    pub other_lines: usize,
    /// Lines that could not be read (or timeline lines missing a field).
    pub skipped_lines: usize,
    /// The first few skipped lines: (1-based line number, reason).
    pub skipped: Vec<(usize, String)>,
    /// `timeline` events, in log order.
    pub events: Vec<Event>,
    /// `gpu_sample` events, in log order.
    pub samples: Vec<Sample>,
    /// `partition` summaries, in log order.
    pub summaries: Vec<Summary>,
}
