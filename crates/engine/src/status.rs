//! Snapshots the engine reports: submissions, devices, queues, the whole status, drains.

use std::time::Duration;

use crate::placement::{DeviceHealth, DevicePolicy};
use crate::srs::SrsEntryStatus;

/// What [`Engine::submit`](crate::Engine::submit) did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// The job id (the request id when one was given).
    pub job_id: String,
    /// Unfinished jobs of the same or higher priority ahead of it.
    pub queue_position: u32,
    /// The device it will most likely run on.
    pub assigned_device: String,
    /// True when the id existed: the existing job was returned, nothing was queued.
    pub existing: bool,
}

/// A device's state for status reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceStatus {
    /// Index in the engine's device list.
    pub ordinal: u32,
    /// Backend name.
    pub name: String,
    /// Job and kind in its kernel region now.
    pub current_job: Option<(String, &'static str)>,
    /// Total time in the kernel region.
    pub busy: Duration,
    /// (free, total) device memory in bytes; None for the CPU backend.
    pub memory: Option<(u64, u64)>,
    /// In rotation or quarantined, and its failures.
    pub health: DeviceHealth,
    /// What it is used for.
    pub policy: DevicePolicy,
}

/// Jobs of one kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueStatus {
    /// Kind label.
    pub kind: String,
    /// Jobs not started.
    pub pending: u32,
    /// Jobs with work started.
    pub in_progress: u32,
}

/// A snapshot of the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineStatus {
    /// Devices.
    pub devices: Vec<DeviceStatus>,
    /// Parameter residency.
    pub srs: Vec<SrsEntryStatus>,
    /// Jobs per kind.
    pub queues: Vec<QueueStatus>,
    /// Jobs completed since start.
    pub completed: u64,
    /// Jobs failed since start.
    pub failed: u64,
    /// Jobs cancelled since start.
    pub cancelled: u64,
    /// Time since start.
    pub uptime: Duration,
    /// Host bytes reserved by partitions now.
    pub memory_reserved_bytes: u64,
    /// The partition memory budget.
    pub memory_limit_bytes: u64,
    /// Parameter bytes resident.
    pub srs_resident_bytes: u64,
    /// Partitions waiting for synthesis.
    pub synthesis_waiting: usize,
    /// Synthesized partitions waiting for a prover.
    pub prove_waiting: usize,
    /// True while draining.
    pub draining: bool,
}

/// What [`Engine::drain`](crate::Engine::drain) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainReport {
    /// Jobs that finished during the grace period.
    pub finished: usize,
    /// Jobs cancelled when it ran out.
    pub cancelled: usize,
}
