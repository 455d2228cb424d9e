//! Intake limits: how much work the daemon accepts before it refuses with
//! RESOURCE_EXHAUSTED (and a retry hint) instead of growing without bound.
//!
//! Three things are counted, each from the moment a submission is admitted:
//! - unfinished jobs (queued or running) of each proof kind, until the job ends;
//! - the bytes of those jobs' requests (their wire size), all kinds together, until it ends;
//! - the bytes of requests being parsed and validated at once, until that is done.
//!
//! WinningPoSt and WindowPoSt keep a reserved share of both byte limits that PoRep and
//! SnapDeals cannot use, and each kind has its own job limit, so a flood of PoRep never
//! leaves a PoSt without room. The request id and job id rules live here too: they are
//! checked before anything else is looked at.
//!
//! Messages still being received, before decoding, are counted by [`super::receive`]
//! (settings here: `max_receiving_bytes`, `small_message_bytes`,
//! `small_message_reserved_percent`, `max_streams_per_connection`, `max_connections`).

use std::sync::{Arc, Mutex};

use filprove_filecoin::ProofKind;
use serde::Deserialize;
use tonic::Status;

use super::config::ByteSize;
use super::receive::ReceiveLimits;

/// Longest request or job id accepted, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// The metadata key of the retry hint on a RESOURCE_EXHAUSTED answer (gRPC's retry
/// pushback, in milliseconds).
pub const RETRY_PUSHBACK_KEY: &str = "grpc-retry-pushback-ms";

/// Checks a request or job id: at most [`MAX_ID_BYTES`] bytes of printable ASCII (an id
/// ends up in log lines and API messages; a newline in it would forge log lines).
pub fn check_id(field: &str, id: &str) -> Result<(), Status> {
    if id.len() > MAX_ID_BYTES {
        return Err(Status::invalid_argument(format!(
            "invalid_request: {field} is {} bytes, at most {MAX_ID_BYTES}",
            id.len()
        )));
    }
    if let Some(at) = id.bytes().position(|b| !(b' '..=b'~').contains(&b)) {
        return Err(Status::invalid_argument(format!(
            "invalid_request: {field} must be printable ASCII; byte {at} is 0x{:02x}",
            id.as_bytes()[at]
        )));
    }
    Ok(())
}

/// `[intake]`: limits on accepted work (see the module documentation and
/// docs/hardening.md).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct IntakeSection {
    /// Unfinished PoRep jobs.
    pub queued_jobs_porep: usize,
    /// Unfinished SnapDeals jobs.
    pub queued_jobs_snap: usize,
    /// Unfinished WindowPoSt (partition) jobs.
    pub queued_jobs_window_post: usize,
    /// Unfinished WinningPoSt jobs.
    pub queued_jobs_winning_post: usize,
    /// Request bytes of all unfinished jobs together.
    pub max_queued_bytes: ByteSize,
    /// Request bytes being parsed and validated at once.
    pub max_inflight_bytes: ByteSize,
    /// Percent of both byte limits that only WinningPoSt and WindowPoSt may use.
    pub post_reserved_percent: u8,
    /// Seconds a refused caller is told to wait before retrying.
    pub retry_after_secs: u64,
    /// Bytes of messages being received (before decoding) at once, all callers together.
    pub max_receiving_bytes: ByteSize,
    /// Largest message (announced length) that may use the reserved share of
    /// `max_receiving_bytes`.
    pub small_message_bytes: ByteSize,
    /// Percent of `max_receiving_bytes` only messages up to `small_message_bytes` may use.
    pub small_message_reserved_percent: u8,
    /// Concurrent HTTP/2 streams (calls) per connection.
    pub max_streams_per_connection: u32,
    /// Open connections per gRPC listener; one beyond is closed at once.
    pub max_connections: usize,
}

impl Default for IntakeSection {
    fn default() -> Self {
        Self {
            queued_jobs_porep: 32,
            queued_jobs_snap: 32,
            queued_jobs_window_post: 256,
            queued_jobs_winning_post: 16,
            max_queued_bytes: ByteSize::Text("4GiB".into()),
            max_inflight_bytes: ByteSize::Text("1GiB".into()),
            post_reserved_percent: 25,
            retry_after_secs: 5,
            max_receiving_bytes: ByteSize::Text("1GiB".into()),
            small_message_bytes: ByteSize::Text("64MiB".into()),
            small_message_reserved_percent: 25,
            max_streams_per_connection: 512,
            max_connections: 256,
        }
    }
}

/// The resolved limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntakeLimits {
    /// Unfinished jobs per kind, in [`ProofKind::ALL`]'s order.
    pub jobs: [usize; 4],
    /// Request bytes of unfinished jobs.
    pub queued_bytes: u64,
    /// Request bytes being parsed.
    pub inflight_bytes: u64,
    /// Percent of the byte limits reserved for PoSt.
    pub post_reserved_percent: u8,
    /// The retry hint, seconds.
    pub retry_after_secs: u64,
}

impl IntakeSection {
    /// The receive budget's limits, checked: what a message above `small_message_bytes`
    /// may use must hold a message of `max_message_bytes` (server.max_message_bytes), and
    /// the reserve must hold a small message.
    pub fn receive_limits(&self, max_message_bytes: usize) -> Result<ReceiveLimits, String> {
        let bytes = |what: &str, b: &ByteSize| -> Result<u64, String> {
            b.resolve()
                .map_err(|e| format!("intake.{what}: {e}"))?
                .ok_or_else(|| format!("intake.{what} takes a size, not \"auto\""))
        };
        let l = ReceiveLimits {
            receiving_bytes: bytes("max_receiving_bytes", &self.max_receiving_bytes)?,
            small_message_bytes: bytes("small_message_bytes", &self.small_message_bytes)?,
            small_reserved_percent: self.small_message_reserved_percent,
            max_message_bytes: max_message_bytes as u64,
            retry_after_secs: self.retry_after_secs,
        };
        if l.small_reserved_percent > 90 {
            return Err("intake.small_message_reserved_percent must be at most 90".into());
        }
        // A message is charged with its 5-byte gRPC prefix.
        let framed = |len: u64| len + 5;
        let large = l.large_share();
        let reserve = l.receiving_bytes - large;
        if large < framed(l.max_message_bytes) {
            return Err(format!(
                "intake.max_receiving_bytes leaves messages above intake.small_message_bytes \
                 {large} bytes (after the reserve), less than server.max_message_bytes \
                 ({max_message_bytes}) and its 5-byte prefix; raise it"
            ));
        }
        if l.small_reserved_percent > 0 && reserve < framed(l.small_message_bytes) {
            return Err(format!(
                "intake.small_message_reserved_percent reserves {reserve} bytes, less than one \
                 message of intake.small_message_bytes ({}) and its 5-byte prefix",
                l.small_message_bytes
            ));
        }
        if self.max_streams_per_connection == 0 || self.max_connections == 0 {
            return Err(
                "intake.max_streams_per_connection and intake.max_connections must be at least 1"
                    .into(),
            );
        }
        Ok(l)
    }

    /// Resolves and checks the section; `max_message_bytes` (server.max_message_bytes) must
    /// fit in what a PoRep may use of each byte limit, or a large PoRep could never enter.
    pub fn limits(&self, max_message_bytes: usize) -> Result<IntakeLimits, String> {
        let bytes = |what: &str, b: &ByteSize| -> Result<u64, String> {
            b.resolve()
                .map_err(|e| format!("intake.{what}: {e}"))?
                .ok_or_else(|| format!("intake.{what} takes a size, not \"auto\""))
        };
        let l = IntakeLimits {
            jobs: [
                self.queued_jobs_porep,
                self.queued_jobs_snap,
                self.queued_jobs_window_post,
                self.queued_jobs_winning_post,
            ],
            queued_bytes: bytes("max_queued_bytes", &self.max_queued_bytes)?,
            inflight_bytes: bytes("max_inflight_bytes", &self.max_inflight_bytes)?,
            post_reserved_percent: self.post_reserved_percent,
            retry_after_secs: self.retry_after_secs,
        };
        self.receive_limits(max_message_bytes)?;
        if l.jobs.contains(&0) {
            return Err("intake.queued_jobs_* must be at least 1".into());
        }
        if l.post_reserved_percent > 90 {
            return Err("intake.post_reserved_percent must be at most 90".into());
        }
        for (what, limit) in [
            ("max_queued_bytes", l.queued_bytes),
            ("max_inflight_bytes", l.inflight_bytes),
        ] {
            let usable = l.share(limit, ProofKind::PoRep);
            if usable < max_message_bytes as u64 {
                return Err(format!(
                    "intake.{what} leaves PoRep {usable} bytes (after the PoSt reserve), less \
                     than server.max_message_bytes ({max_message_bytes}); raise it"
                ));
            }
        }
        Ok(l)
    }
}

fn slot(kind: ProofKind) -> usize {
    ProofKind::ALL
        .iter()
        .position(|&k| k == kind)
        .expect("every kind is in ALL")
}

fn is_post(kind: ProofKind) -> bool {
    matches!(kind, ProofKind::WindowPoSt | ProofKind::WinningPoSt)
}

impl IntakeLimits {
    /// What `kind` may use of a byte limit: all of it for PoSt, the unreserved share for
    /// the others.
    fn share(&self, limit: u64, kind: ProofKind) -> u64 {
        if is_post(kind) {
            limit
        } else {
            limit / 100 * (100 - u64::from(self.post_reserved_percent))
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    jobs: [usize; 4],
    queued_bytes: u64,
    inflight_bytes: u64,
}

/// The admission controller: counts what is admitted, refuses what is over a limit.
#[derive(Debug)]
pub struct Intake {
    limits: IntakeLimits,
    counts: Mutex<Counts>,
}

/// One admitted submission. It holds its job slot and queued bytes until dropped (when its
/// job ends, or at once when the submission fails), and its in-flight bytes until
/// [`Admission::parsed`] or drop.
#[derive(Debug)]
pub struct Admission {
    intake: Arc<Intake>,
    slot: usize,
    bytes: u64,
    inflight: bool,
}

impl Admission {
    /// The request has been parsed and validated: its in-flight bytes are released.
    pub fn parsed(&mut self) {
        if std::mem::take(&mut self.inflight) {
            self.intake.counts().inflight_bytes -= self.bytes;
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut c = self.intake.counts();
        if self.inflight {
            c.inflight_bytes -= self.bytes;
        }
        c.jobs[self.slot] -= 1;
        c.queued_bytes -= self.bytes;
    }
}

impl Intake {
    /// A controller over `limits`.
    pub fn new(limits: IntakeLimits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            counts: Mutex::new(Counts::default()),
        })
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Unfinished admitted jobs of `kind`.
    pub fn jobs(&self, kind: ProofKind) -> usize {
        self.counts().jobs[slot(kind)]
    }

    /// Admits a submission of `kind` whose request is `bytes` long, or refuses it with
    /// RESOURCE_EXHAUSTED, a stable code, and the retry hint in the message and in the
    /// [`RETRY_PUSHBACK_KEY`] metadata.
    pub fn admit(self: &Arc<Self>, kind: ProofKind, bytes: u64) -> Result<Admission, Status> {
        let l = &self.limits;
        let i = slot(kind);
        let mut c = self.counts();
        let refusal = if c.jobs[i] >= l.jobs[i] {
            Some((
                "queue_full",
                format!("{} unfinished {kind} jobs, the limit", l.jobs[i]),
            ))
        } else if c.queued_bytes + bytes > l.share(l.queued_bytes, kind) {
            Some((
                "queue_bytes_exhausted",
                format!(
                    "{} request bytes queued, {bytes} more would pass the {} bytes {kind} may use",
                    c.queued_bytes,
                    l.share(l.queued_bytes, kind)
                ),
            ))
        } else if c.inflight_bytes + bytes > l.share(l.inflight_bytes, kind) {
            Some((
                "intake_busy",
                format!(
                    "{} request bytes being parsed, {bytes} more would pass the {} bytes {kind} \
                     may use",
                    c.inflight_bytes,
                    l.share(l.inflight_bytes, kind)
                ),
            ))
        } else {
            None
        };
        if let Some((code, why)) = refusal {
            drop(c);
            return Err(self.refuse(code, &why));
        }
        c.jobs[i] += 1;
        c.queued_bytes += bytes;
        c.inflight_bytes += bytes;
        Ok(Admission {
            intake: self.clone(),
            slot: i,
            bytes,
            inflight: true,
        })
    }

    /// The retry hint, seconds.
    pub fn retry_after_secs(&self) -> u64 {
        self.limits.retry_after_secs
    }

    fn refuse(&self, code: &str, why: &str) -> Status {
        exhausted(code, why, self.limits.retry_after_secs)
    }
}

/// RESOURCE_EXHAUSTED with a stable code and the retry hint in the message and in the
/// [`RETRY_PUSHBACK_KEY`] metadata.
pub fn exhausted(code: &str, why: &str, retry_after_secs: u64) -> Status {
    let secs = retry_after_secs;
    let mut s = Status::resource_exhausted(format!("{code}: {why}; retry after {secs} s"));
    if let Ok(v) = (secs * 1000).to_string().parse() {
        s.metadata_mut().insert(RETRY_PUSHBACK_KEY, v);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> IntakeLimits {
        IntakeLimits {
            jobs: [2, 2, 3, 1],
            queued_bytes: 1000,
            inflight_bytes: 800,
            post_reserved_percent: 25,
            retry_after_secs: 7,
        }
    }

    #[test]
    fn ids_are_short_printable_ascii() {
        assert!(check_id("request_id", "").is_ok());
        assert!(check_id("request_id", "sector-1234/porep:ok ~").is_ok());
        assert!(check_id("request_id", &"a".repeat(MAX_ID_BYTES)).is_ok());
        let e = check_id("request_id", &"a".repeat(MAX_ID_BYTES + 1)).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        assert!(
            e.message().starts_with("invalid_request:"),
            "{}",
            e.message()
        );
        for bad in ["a\nINFO forged", "tab\there", "\u{7f}", "é"] {
            let e = check_id("request_id", bad).unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{bad:?}");
        }
        // An 8 MiB id is refused with a short message.
        let e = check_id("job_id", &"x".repeat(8 << 20)).unwrap_err();
        assert!(e.message().len() < 100);
    }

    #[test]
    fn job_limits_are_per_kind_and_released_when_dropped() {
        let intake = Intake::new(limits());
        let a = intake.admit(ProofKind::PoRep, 10).unwrap();
        let _b = intake.admit(ProofKind::PoRep, 10).unwrap();
        let e = intake.admit(ProofKind::PoRep, 10).unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert!(e.message().starts_with("queue_full:"), "{}", e.message());
        assert!(e.message().contains("retry after 7 s"), "{}", e.message());
        assert_eq!(
            e.metadata()
                .get(RETRY_PUSHBACK_KEY)
                .unwrap()
                .to_str()
                .unwrap(),
            "7000"
        );
        // Other kinds have their own slots.
        let _w = intake.admit(ProofKind::WinningPoSt, 10).unwrap();
        drop(a);
        assert_eq!(intake.jobs(ProofKind::PoRep), 1);
        intake.admit(ProofKind::PoRep, 10).unwrap();
    }

    #[test]
    fn post_keeps_its_reserved_share_of_the_bytes() {
        let intake = Intake::new(limits());
        // PoRep may use 750 of the 1000 queued bytes (and 600 of the 800 in flight).
        let mut a = intake.admit(ProofKind::PoRep, 500).unwrap();
        a.parsed();
        let e = intake.admit(ProofKind::SnapDeals, 300).unwrap_err();
        assert!(
            e.message().starts_with("queue_bytes_exhausted:"),
            "{}",
            e.message()
        );
        let mut b = intake.admit(ProofKind::SnapDeals, 250).unwrap();
        b.parsed();
        // The reserve is PoSt's: 250 bytes left for it, none for PoRep.
        let e = intake.admit(ProofKind::PoRep, 1).unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        let w = intake.admit(ProofKind::WindowPoSt, 200).unwrap();
        // In-flight bytes: 200 being parsed, PoSt may use 800 of them.
        let e = intake.admit(ProofKind::WindowPoSt, 100).unwrap_err();
        assert!(e.message().starts_with("queue_bytes_exhausted:"));
        drop((a, b));
        let e = intake.admit(ProofKind::PoRep, 450).unwrap_err();
        assert!(e.message().starts_with("intake_busy:"), "{}", e.message());
        drop(w);
        intake.admit(ProofKind::PoRep, 600).unwrap();
    }

    #[test]
    fn defaults_resolve_and_bad_values_are_refused() {
        let l = IntakeSection::default().limits(256 << 20).unwrap();
        assert_eq!(l.jobs, [32, 32, 256, 16]);
        assert_eq!(l.queued_bytes, 4 << 30);
        let s = IntakeSection {
            max_inflight_bytes: ByteSize::Text("300MiB".into()),
            ..Default::default()
        };
        let e = s.limits(256 << 20).unwrap_err();
        assert!(e.contains("intake.max_inflight_bytes"), "{e}");
        let s = IntakeSection {
            queued_jobs_snap: 0,
            ..Default::default()
        };
        assert!(s.limits(1024).is_err());
        let s = IntakeSection {
            max_queued_bytes: ByteSize::Text("auto".into()),
            ..Default::default()
        };
        assert!(s.limits(1024).is_err());
    }
}
