//! filprove's proving engine: a priority scheduler and a per-partition pipeline between
//! CPU synthesis workers and prover workers (one group per device, sharing a kernel lock),
//! with parameter (SRS) residency, a host memory budget, verification of every proof and
//! Prometheus metrics.
//!
//! Data flow of one job: [`Engine::submit`] queues its partitions by priority; a synthesis
//! worker reserves a partition's memory and synthesizes it ([`ProofJob::synthesize`]); a
//! prover worker leases the circuit's parameters ([`srs::SrsManager`]), takes its device's
//! kernel lock only around [`filprove_groth16::Backend::prove`], and records the proof;
//! the last partition assembles and verifies the proof (retrying the job once on failure)
//! and wakes the waiters.

pub mod cgroup;
mod device;
pub mod engine;
pub mod error;
pub mod filecoin;
pub mod gpu_inventory;
pub mod gpu_sampler;
pub mod job;
pub mod memory;
pub mod metrics;
mod placement;
mod sched;
pub mod srs;
pub mod status;
mod tracker;
mod workers;

pub use engine::{
    DeviceStatus, DrainReport, Engine, EngineConfig, EngineStatus, QueueStatus, Submitted,
};
pub use error::EngineError;
pub use job::{
    InputDigest, JobOutcome, JobReport, JobStatus, Priority, ProofJob, RequestKey, Timings,
};
pub use memory::{estimate_partition_bytes, Budgets, HostMemory, MemoryBudget};
pub use placement::{DeviceHealth, DevicePolicy};
pub use srs::{EvictOutcome, PreloadOutcome, SrsLoader, SrsManager, SrsTier};
