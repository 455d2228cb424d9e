//! `[devices]`: which devices the daemon proves on, each one's device-memory budget and
//! what it is for (PoSt only, or a list of circuits), and when a failing device is taken
//! out of rotation. docs/config.md lists the keys; docs/operations.md ("Several GPUs in
//! one host") says how to use them.

use filprove_engine::DevicePolicy;
use serde::Deserialize;

use super::config::ByteSize;

/// A device as the configuration names it: a CUDA ordinal (an integer or its digits) or
/// a UUID as nvidia-smi prints it ("GPU-8f3e..."; a prefix is enough).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum DeviceId {
    /// CUDA ordinal (after `CUDA_VISIBLE_DEVICES`); for the CPU backend, the position.
    Ordinal(usize),
    /// Digits or a UUID.
    Text(String),
}

impl DeviceId {
    /// The ordinal this names among `visible` devices whose UUIDs are `uuids` (by
    /// ordinal; empty when unknown).
    fn resolve(&self, visible: usize, uuids: &[String]) -> Result<usize, String> {
        let ordinal = match self {
            Self::Ordinal(o) => *o,
            Self::Text(t) if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() => {
                t.parse().map_err(|_| format!("bad device ordinal {t:?}"))?
            }
            Self::Text(t) if t.starts_with("GPU-") => {
                if uuids.is_empty() {
                    return Err(format!(
                        "device {t:?}: UUIDs need NVML (libnvidia-ml) and a GPU backend; name the device by its ordinal"
                    ));
                }
                let hits: Vec<usize> = (0..uuids.len())
                    .filter(|&i| uuids[i].starts_with(t.as_str()))
                    .collect();
                match hits.as_slice() {
                    [one] => *one,
                    [] => return Err(format!("no visible device has UUID {t:?}")),
                    _ => return Err(format!("UUID prefix {t:?} names several devices")),
                }
            }
            Self::Text(t) => {
                return Err(format!(
                    "device {t:?}: name a device by its ordinal (0, 1, ...) or its UUID (GPU-...)"
                ))
            }
        };
        if ordinal >= visible {
            return Err(format!(
                "device {ordinal}: only {visible} device(s) visible"
            ));
        }
        Ok(ordinal)
    }

    fn is_uuid(&self) -> bool {
        matches!(self, Self::Text(t) if t.starts_with("GPU-"))
    }
}

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ordinal(o) => write!(f, "{o}"),
            Self::Text(t) => write!(f, "{t}"),
        }
    }
}

/// `[[devices.device]]`: the settings of one device.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceEntry {
    /// The device (ordinal or UUID); it must be among `devices.select` when that is set.
    pub id: DeviceId,
    /// Device bytes this GPU may use; absent or "auto": `cuda.vram_budget`.
    #[serde(default)]
    pub vram_budget: ByteSize,
    /// Circuits this device proves ("porep-32g", "wpost-32g", ...); their parameters are
    /// loaded on it and on no device that does not list them. Empty: any.
    #[serde(default)]
    pub circuits: Vec<String>,
    /// "post": the device takes only HIGH and CRITICAL work (WinningPoSt, WindowPoSt),
    /// so a PoSt never waits behind PoRep on it; "none" (default): any work.
    #[serde(default = "no_reserve")]
    pub reserve: String,
}

fn no_reserve() -> String {
    "none".into()
}

/// `[devices]` in the daemon's configuration.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DevicesSection {
    /// The devices to prove on, in this order; empty: every visible device.
    pub select: Vec<DeviceId>,
    /// Failed proofs in a row that take a device out of rotation (its jobs are retried on
    /// the others; `filprove device restore` brings it back), unless it is the last one in
    /// rotation; 0: never.
    pub quarantine_after_failures: u32,
    /// Logical devices when proving on the CPU (each a CPU prover sharing the cores): to
    /// try a multi-device configuration on a machine without GPUs.
    pub cpu_devices: usize,
    /// Per-device settings.
    pub device: Vec<DeviceEntry>,
}

impl Default for DevicesSection {
    fn default() -> Self {
        Self {
            select: Vec::new(),
            quarantine_after_failures: 3,
            cpu_devices: 1,
            device: Vec::new(),
        }
    }
}

/// One device the daemon will prove on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedDevice {
    /// CUDA ordinal (the position for the CPU backend).
    pub ordinal: usize,
    /// Its device-memory budget; `None`: `cuda.vram_budget`.
    pub vram_budget: Option<u64>,
    /// What it is for.
    pub policy: DevicePolicy,
}

impl DevicesSection {
    /// True when a device is named by UUID (resolving it needs NVML).
    pub fn names_uuids(&self) -> bool {
        self.select.iter().any(DeviceId::is_uuid) || self.device.iter().any(|d| d.id.is_uuid())
    }

    /// Checks what can be checked without the devices.
    pub fn check(&self) -> Result<(), String> {
        if self.cpu_devices == 0 {
            return Err("devices.cpu_devices must be at least 1".into());
        }
        for d in &self.device {
            self.entry_policy(d)?;
            let budget = d
                .vram_budget
                .resolve()
                .map_err(|e| format!("devices.device {}: vram_budget: {e}", d.id))?;
            if budget == Some(0) {
                return Err(format!(
                    "devices.device {}: vram_budget must be more than 0 bytes",
                    d.id
                ));
            }
        }
        Ok(())
    }

    fn entry_policy(&self, d: &DeviceEntry) -> Result<DevicePolicy, String> {
        let urgent_only = match d.reserve.as_str() {
            "none" => false,
            "post" => true,
            other => {
                return Err(format!(
                    "devices.device {}: reserve must be \"none\" or \"post\", not {other:?}",
                    d.id
                ))
            }
        };
        let circuits = d
            .circuits
            .iter()
            .map(|c| {
                filprove_engine::filecoin::normalize_circuit_id(c)
                    .map_err(|e| format!("devices.device {}: circuits: {e}", d.id))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DevicePolicy {
            urgent_only,
            circuits,
        })
    }

    /// The devices to prove on among `visible` ones (UUIDs by ordinal in `uuids`, empty
    /// when unknown), in order, with their settings.
    pub fn plan(&self, visible: usize, uuids: &[String]) -> Result<Vec<PlannedDevice>, String> {
        self.check()?;
        let selected: Vec<usize> = if self.select.is_empty() {
            (0..visible).collect()
        } else {
            self.select
                .iter()
                .map(|id| id.resolve(visible, uuids))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("devices.select: {e}"))?
        };
        for (i, o) in selected.iter().enumerate() {
            if selected[..i].contains(o) {
                return Err(format!("devices.select: device {o} is named twice"));
            }
        }
        let mut planned: Vec<PlannedDevice> = selected
            .iter()
            .map(|&ordinal| PlannedDevice {
                ordinal,
                vram_budget: None,
                policy: DevicePolicy::default(),
            })
            .collect();
        let mut configured = Vec::new();
        for d in &self.device {
            let ordinal =
                d.id.resolve(visible, uuids)
                    .map_err(|e| format!("devices.device: {e}"))?;
            if configured.contains(&ordinal) {
                return Err(format!(
                    "devices.device: device {ordinal} is configured twice"
                ));
            }
            configured.push(ordinal);
            let Some(p) = planned.iter_mut().find(|p| p.ordinal == ordinal) else {
                return Err(format!(
                    "devices.device {}: device {ordinal} is not in devices.select",
                    d.id
                ));
            };
            p.vram_budget = d.vram_budget.resolve()?;
            p.policy = self.entry_policy(d)?;
        }
        if !planned.is_empty() && planned.iter().all(|p| p.policy.urgent_only) {
            return Err(
                "every device is reserved for PoSt (reserve = \"post\"): PoRep and SnapDeals \
                 would have nowhere to run"
                    .into(),
            );
        }
        Ok(planned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::config::Config;

    fn section(text: &str) -> DevicesSection {
        Config::from_toml(text).unwrap().devices
    }

    #[test]
    fn devices_are_selected_by_ordinal_or_uuid_and_configured_one_by_one() {
        let s = section(
            "[devices]\nselect = [\"GPU-bb\", 0]\nquarantine_after_failures = 5\n\
             [[devices.device]]\nid = 0\nreserve = \"post\"\nvram_budget = \"20GiB\"\n\
             [[devices.device]]\nid = \"GPU-bb\"\ncircuits = [\"porep-32g\"]\n",
        );
        assert_eq!(s.quarantine_after_failures, 5);
        assert!(s.names_uuids());
        let uuids = ["GPU-aa11".to_string(), "GPU-bb22".into(), "GPU-cc33".into()];
        let plan = s.plan(3, &uuids).unwrap();
        assert_eq!(plan.len(), 2);
        assert_eq!((plan[0].ordinal, plan[1].ordinal), (1, 0));
        assert_eq!(plan[1].vram_budget, Some(20 << 30));
        assert!(plan[1].policy.urgent_only && !plan[0].policy.urgent_only);
        assert_eq!(plan[0].policy.circuits, ["porep-32g"]);
        assert_eq!(plan[0].vram_budget, None);
        // Without NVML a UUID cannot be resolved; that is said.
        let e = s.plan(3, &[]).unwrap_err();
        assert!(e.contains("NVML"), "{e}");
    }

    #[test]
    fn the_defaults_take_every_device_for_any_work() {
        let s = DevicesSection::default();
        let plan = s.plan(4, &[]).unwrap();
        assert_eq!(
            plan.iter().map(|p| p.ordinal).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert!(plan.iter().all(|p| p.policy == DevicePolicy::default()));
        assert_eq!(s.quarantine_after_failures, 3);
    }

    #[test]
    fn bad_device_settings_are_refused_with_the_key() {
        for (text, needle) in [
            ("[devices]\nselect = [\"two\"]\n", "ordinal"),
            ("[devices]\nselect = [5]\n", "only 2 device(s)"),
            ("[devices]\nselect = [1, \"1\"]\n", "named twice"),
            ("[devices]\nselect = [\"GPU-zz\"]\n", "no visible device has UUID"),
            ("[devices]\nselect = [\"GPU-\"]\n", "several devices"),
            (
                "[devices]\nselect = [0]\n[[devices.device]]\nid = 1\n",
                "not in devices.select",
            ),
            (
                "[[devices.device]]\nid = 0\n[[devices.device]]\nid = \"0\"\n",
                "configured twice",
            ),
            (
                "[[devices.device]]\nid = 0\nreserve = \"post\"\n[[devices.device]]\nid = 1\nreserve = \"post\"\n",
                "every device is reserved",
            ),
        ] {
            let s = section(text);
            let e = s.plan(2, &["GPU-a1".into(), "GPU-a2".into()]).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
        for (text, needle) in [
            (
                "[[devices.device]]\nid = 0\nreserve = \"porep\"\n",
                "reserve",
            ),
            (
                "[[devices.device]]\nid = 0\ncircuits = [\"nope\"]\n",
                "circuits",
            ),
            (
                "[[devices.device]]\nid = 0\nvram_budget = 0\n",
                "vram_budget",
            ),
            ("[devices]\ncpu_devices = 0\n", "cpu_devices"),
            ("[[devices.device]]\nid = 0\nbudget = 1\n", "unknown field"),
        ] {
            let e = Config::from_toml(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
