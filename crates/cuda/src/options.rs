//! The GPU backend's switches. Each fast behaviour can be turned back into the naive one,
//! so its gain is measured rather than assumed (docs/transfer-discipline.md).

use crate::stage::HostPath;

/// How the backend moves data and runs its MSMs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaOptions {
    /// Stage each partition before the kernel lock on the copy stream (else upload inside
    /// the kernel region, on the compute stream). `FILPROVE_CUDA_PRESTAGE=0|1`.
    pub prestage: bool,
    /// How staged bytes leave the host. `FILPROVE_CUDA_HOST_PATH=register|bounce|pageable`.
    pub host_path: HostPath,
    /// Keep parameters in device memory when the plan allows (else stream them per MSM
    /// batch). `FILPROVE_CUDA_RESIDENT=0|1`.
    pub resident_srs: bool,
    /// Download and wait after every MSM batch (naive). `FILPROVE_CUDA_SYNC_PER_BATCH=0|1`.
    pub sync_per_batch: bool,
    /// Largest MSM batch in points (0: as large as the plan allows).
    /// `FILPROVE_CUDA_MSM_BATCH=<points>`.
    pub max_batch: u64,
    /// Partitions staged at once per device (the engine's GPU workers per device).
    pub staging_slots: u64,
    /// Device bytes the backend may use (None: what was free at start, less a margin).
    /// `FILPROVE_CUDA_VRAM_BUDGET=<bytes, or with a GiB suffix>` simulates a smaller GPU.
    pub vram_budget: Option<u64>,
    /// With `host_path` register, when a partition's vectors not page-locked yet (the
    /// first ones of a process) are registered. `FILPROVE_CUDA_REGISTER_AT=auto|staging|region`.
    pub register_at: RegisterAt,
    /// With `register_at` auto, the host time a region spends at most registering fresh
    /// host memory behind its queued kernels, in ms (0: none; the region's kernels slow
    /// down beside it, docs/decisions/009-host-registration-piece-by-piece.md).
    /// `FILPROVE_CUDA_REGISTER_BUDGET_MS=<ms>`.
    pub register_budget_ms: u64,
}

/// When host vectors are registered in place ([`CudaOptions::register_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterAt {
    /// While staging: the driver is held for the whole registration (~0.45 s per GB of
    /// freshly written memory), the partition's proof waits for it and a region running
    /// then slows down.
    Staging,
    /// Inside the partition's own kernel regions, once the H MSM is queued: staging sends
    /// what is not page-locked yet through the bounce buffers, and the region registers
    /// piece by piece while its queued kernels hide the driver time, until the compute
    /// stream runs dry (what is left goes in a later region of the same, refilled,
    /// assignment).
    Region,
    /// As `Region`, for at most [`CudaOptions::register_budget_ms`] per region (0.3 s by
    /// default: 0.75 s slowed the H MSM beside it by 5-12 ms, 0.3 s by 0-1 ms).
    Auto,
}

impl RegisterAt {
    /// The name used in switches and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            RegisterAt::Staging => "staging",
            RegisterAt::Region => "region",
            RegisterAt::Auto => "auto",
        }
    }
}

impl Default for CudaOptions {
    fn default() -> Self {
        Self {
            prestage: true,
            host_path: HostPath::Register,
            resident_srs: true,
            sync_per_batch: false,
            max_batch: 0,
            staging_slots: 2,
            vram_budget: None,
            register_at: RegisterAt::Auto,
            register_budget_ms: 300,
        }
    }
}

impl CudaOptions {
    /// The defaults with the `FILPROVE_CUDA_*` environment switches applied.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// As [`CudaOptions::from_env`], reading variables through `get`.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut o = Self::default();
        let flag = |k: &str, d: bool| -> Result<bool, String> {
            match get(k).as_deref().map(str::trim) {
                None | Some("") => Ok(d),
                Some("1" | "true" | "on" | "yes") => Ok(true),
                Some("0" | "false" | "off" | "no") => Ok(false),
                Some(v) => Err(format!("{k}={v}: expected 0 or 1")),
            }
        };
        o.prestage = flag("FILPROVE_CUDA_PRESTAGE", o.prestage)?;
        o.resident_srs = flag("FILPROVE_CUDA_RESIDENT", o.resident_srs)?;
        o.sync_per_batch = flag("FILPROVE_CUDA_SYNC_PER_BATCH", o.sync_per_batch)?;
        if let Some(v) = get("FILPROVE_CUDA_REGISTER_AT") {
            o.register_at = match v.trim() {
                "auto" => RegisterAt::Auto,
                "staging" => RegisterAt::Staging,
                "region" => RegisterAt::Region,
                other => {
                    return Err(format!(
                        "FILPROVE_CUDA_REGISTER_AT={other}: expected auto, staging or region"
                    ))
                }
            };
        }
        if let Some(v) = get("FILPROVE_CUDA_REGISTER_BUDGET_MS") {
            o.register_budget_ms = v.trim().parse().map_err(|_| {
                format!("FILPROVE_CUDA_REGISTER_BUDGET_MS={v}: expected milliseconds")
            })?;
        }
        if let Some(v) = get("FILPROVE_CUDA_HOST_PATH") {
            o.host_path = match v.trim() {
                "register" => HostPath::Register,
                "bounce" => HostPath::Bounce,
                "pageable" => HostPath::Pageable,
                other => {
                    return Err(format!(
                        "FILPROVE_CUDA_HOST_PATH={other}: expected register, bounce or pageable"
                    ))
                }
            };
        }
        if let Some(v) = get("FILPROVE_CUDA_MSM_BATCH") {
            o.max_batch = v
                .trim()
                .parse()
                .map_err(|_| format!("FILPROVE_CUDA_MSM_BATCH={v}: expected a number of points"))?;
        }
        if let Some(v) = get("FILPROVE_CUDA_VRAM_BUDGET") {
            o.vram_budget = Some(parse_bytes(&v).ok_or_else(|| {
                format!("FILPROVE_CUDA_VRAM_BUDGET={v}: expected bytes, e.g. 24GiB")
            })?);
        }
        Ok(o)
    }

    /// The naive behaviour of every switch at once: pageable uploads inside the kernel
    /// region, parameters streamed, a host sync after every MSM batch.
    pub fn naive() -> Self {
        Self {
            prestage: false,
            host_path: HostPath::Pageable,
            resident_srs: false,
            sync_per_batch: true,
            ..Self::default()
        }
    }

    /// One line for logs.
    pub fn describe(&self) -> String {
        format!(
            "prestage={} host_path={} register_at={} register_budget_ms={} resident_srs={} sync_per_batch={} max_batch={} staging_slots={} vram_budget={}",
            self.prestage,
            self.host_path.as_str(),
            self.register_at.as_str(),
            self.register_budget_ms,
            self.resident_srs,
            self.sync_per_batch,
            self.max_batch,
            self.staging_slots,
            self.vram_budget
                .map(|b| format!("{:.1}GiB", b as f64 / (1u64 << 30) as f64))
                .unwrap_or_else(|| "auto".into())
        )
    }
}

/// "123", "24GiB", "512MiB", "1.5GiB" -> bytes.
pub fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = [
        ("GiB", 1u64 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
        ("B", 1),
    ]
    .iter()
    .find_map(|(suf, m)| s.strip_suffix(suf).map(|n| (n.trim(), *m)))
    .unwrap_or((s, 1));
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some((v * mult as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(vars: &[(&str, &str)]) -> Result<CudaOptions, String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        CudaOptions::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn switches_parse_and_bad_values_are_errors() {
        assert_eq!(with(&[]).unwrap(), CudaOptions::default());
        let o = with(&[
            ("FILPROVE_CUDA_PRESTAGE", "0"),
            ("FILPROVE_CUDA_RESIDENT", "off"),
            ("FILPROVE_CUDA_SYNC_PER_BATCH", "1"),
            ("FILPROVE_CUDA_HOST_PATH", "pageable"),
            ("FILPROVE_CUDA_MSM_BATCH", "16777216"),
            ("FILPROVE_CUDA_VRAM_BUDGET", "24GiB"),
            ("FILPROVE_CUDA_REGISTER_AT", "region"),
            ("FILPROVE_CUDA_REGISTER_BUDGET_MS", "300"),
        ])
        .unwrap();
        assert!(
            !o.prestage
                && !o.resident_srs
                && o.sync_per_batch
                && o.register_at == RegisterAt::Region
        );
        assert_eq!(o.host_path, HostPath::Pageable);
        assert_eq!(o.max_batch, 1 << 24);
        assert_eq!(o.vram_budget, Some(24 << 30));
        assert_eq!(o.register_budget_ms, 300);
        assert!(with(&[("FILPROVE_CUDA_PRESTAGE", "maybe")]).is_err());
        assert!(with(&[("FILPROVE_CUDA_HOST_PATH", "dma")]).is_err());
        assert!(with(&[("FILPROVE_CUDA_REGISTER_AT", "later")]).is_err());
        assert!(with(&[("FILPROVE_CUDA_REGISTER_BUDGET_MS", "soon")]).is_err());
        assert!(with(&[("FILPROVE_CUDA_VRAM_BUDGET", "lots")]).is_err());
        assert_eq!(parse_bytes("1.5GiB"), Some(3 << 29));
        assert_eq!(parse_bytes("512MiB"), Some(512 << 20));
        assert_eq!(parse_bytes("-1"), None);
    }
}
