//! Proof kinds, registered proofs and the circuits they use (names, sizes, file names).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use storage_proofs_core::parameter_cache::{metadata_id, parameter_id, verifying_key_id};

use crate::error::FilecoinError;

/// The four kinds of Filecoin SNARK this prover makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProofKind {
    /// Seal commit phase 2 (C2) of a sector.
    PoRep,
    /// Empty sector update (SnapDeals).
    SnapDeals,
    /// One partition of a WindowPoSt.
    WindowPoSt,
    /// A WinningPoSt.
    WinningPoSt,
}

impl ProofKind {
    /// All kinds, in a stable order.
    pub const ALL: [ProofKind; 4] = [
        ProofKind::PoRep,
        ProofKind::SnapDeals,
        ProofKind::WindowPoSt,
        ProofKind::WinningPoSt,
    ];

    /// The name used in files, CLIs and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PoRep => "porep",
            Self::SnapDeals => "snap",
            Self::WindowPoSt => "window-post",
            Self::WinningPoSt => "winning-post",
        }
    }

    /// The prefix of this kind's circuit short names ("porep-32g", "wpost-2k").
    fn short_prefix(self) -> &'static str {
        match self {
            Self::PoRep => "porep",
            Self::SnapDeals => "snap",
            Self::WindowPoSt => "wpost",
            Self::WinningPoSt => "winning",
        }
    }
}

impl fmt::Display for ProofKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProofKind {
    type Err = FilecoinError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "porep" | "seal" | "c2" => Ok(Self::PoRep),
            "snap" | "snapdeals" | "snap-deals" | "update" => Ok(Self::SnapDeals),
            "window-post" | "windowpost" | "wpost" => Ok(Self::WindowPoSt),
            "winning-post" | "winningpost" | "winning" => Ok(Self::WinningPoSt),
            _ => Err(FilecoinError::InvalidRequest(format!(
                "unknown proof kind {} (expected porep, snap, window-post or winning-post)",
                crate::excerpt::quote_str(s)
            ))),
        }
    }
}

/// A registered proof of any kind, as filecoin-proofs-api names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegisteredProof {
    /// A seal (PoRep) proof.
    Seal(RegisteredSealProof),
    /// A PoSt (Winning or Window) proof.
    PoSt(RegisteredPoStProof),
    /// An empty sector update proof.
    Update(RegisteredUpdateProof),
}

impl RegisteredProof {
    /// The proof kind.
    pub fn kind(self) -> ProofKind {
        match self {
            Self::Seal(_) => ProofKind::PoRep,
            Self::Update(_) => ProofKind::SnapDeals,
            Self::PoSt(p) => match p.typ() {
                filecoin_proofs_api::PoStType::Winning => ProofKind::WinningPoSt,
                filecoin_proofs_api::PoStType::Window => ProofKind::WindowPoSt,
            },
        }
    }

    /// Sector size in bytes.
    pub fn sector_size(self) -> u64 {
        match self {
            Self::Seal(p) => u64::from(p.sector_size()),
            Self::PoSt(p) => u64::from(p.sector_size()),
            Self::Update(p) => u64::from(p.sector_size()),
        }
    }

    /// The circuit identifier (the `<cache_id>` of `v28-<cache_id>.params`).
    pub fn cache_id(self) -> Result<String, FilecoinError> {
        match self {
            Self::Seal(p) => p.circuit_identifier(),
            Self::PoSt(p) => p.circuit_identifier(),
            Self::Update(p) => return crate::circuits::update::cache_id(p),
        }
        .map_err(FilecoinError::fp)
    }

    /// Every registered proof filecoin-proofs-api 19.1 defines (seal V1, V1_1, synthetic and
    /// non-interactive; Winning V1; Window V1 and V1_2; update), at every sector size.
    pub fn all() -> Vec<RegisteredProof> {
        use RegisteredPoStProof as P;
        use RegisteredSealProof as S;
        use RegisteredUpdateProof as U;
        let seal = [
            S::StackedDrg2KiBV1,
            S::StackedDrg8MiBV1,
            S::StackedDrg512MiBV1,
            S::StackedDrg32GiBV1,
            S::StackedDrg64GiBV1,
            S::StackedDrg2KiBV1_1,
            S::StackedDrg8MiBV1_1,
            S::StackedDrg512MiBV1_1,
            S::StackedDrg32GiBV1_1,
            S::StackedDrg64GiBV1_1,
            S::StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
            S::StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
            S::StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
            S::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
            S::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
        ];
        let post = [
            P::StackedDrgWinning2KiBV1,
            P::StackedDrgWinning8MiBV1,
            P::StackedDrgWinning512MiBV1,
            P::StackedDrgWinning32GiBV1,
            P::StackedDrgWinning64GiBV1,
            P::StackedDrgWindow2KiBV1,
            P::StackedDrgWindow8MiBV1,
            P::StackedDrgWindow512MiBV1,
            P::StackedDrgWindow32GiBV1,
            P::StackedDrgWindow64GiBV1,
            P::StackedDrgWindow2KiBV1_2,
            P::StackedDrgWindow8MiBV1_2,
            P::StackedDrgWindow512MiBV1_2,
            P::StackedDrgWindow32GiBV1_2,
            P::StackedDrgWindow64GiBV1_2,
        ];
        let update = [
            U::StackedDrg2KiBV1,
            U::StackedDrg8MiBV1,
            U::StackedDrg512MiBV1,
            U::StackedDrg32GiBV1,
            U::StackedDrg64GiBV1,
        ];
        seal.into_iter()
            .map(Self::Seal)
            .chain(post.into_iter().map(Self::PoSt))
            .chain(update.into_iter().map(Self::Update))
            .collect()
    }

    /// Whether this is a non-interactive PoRep (`*_Feat_NonInteractivePoRep`), whose C2
    /// output is the SnarkPack aggregate of its partition proofs.
    pub fn is_non_interactive(self) -> bool {
        matches!(self, Self::Seal(p) if p.feature_enabled(filecoin_proofs_api::ApiFeature::NonInteractivePoRep))
    }

    /// The name filecoin-proofs-api gives the variant (its serde name, e.g. "StackedDrg2KiBV1_1").
    pub fn name(self) -> String {
        match self {
            Self::Seal(p) => format!("{p:?}"),
            Self::PoSt(p) => format!("{p:?}"),
            Self::Update(p) => format!("{p:?}"),
        }
    }
}

/// The sector sizes filecoin-proofs supports for registered proofs.
pub const SECTOR_SIZES: [u64; 5] = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];

/// Short size label: "2k", "8m", "512m", "32g", "64g".
pub fn size_label(sector_size: u64) -> String {
    match sector_size {
        s if s >= 1 << 30 && s % (1 << 30) == 0 => format!("{}g", s >> 30),
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{}m", s >> 20),
        s if s % (1 << 10) == 0 => format!("{}k", s >> 10),
        s => format!("{s}b"),
    }
}

/// Parses "2k", "2KiB", "8m", "32g", "32GiB" or a plain byte count.
pub fn parse_sector_size(s: &str) -> Option<u64> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.trim_end_matches("ib").trim_end_matches('b');
    let (num, shift) = match t.chars().last()? {
        'k' => (&t[..t.len() - 1], 10),
        'm' => (&t[..t.len() - 1], 20),
        'g' => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n: u64 = num.parse().ok()?;
    let size = n.checked_shl(shift)?;
    SECTOR_SIZES.contains(&size).then_some(size)
}

/// The seal proof of the current network version (V1_1) for a sector size.
pub fn seal_proof_for_size(sector_size: u64) -> Option<RegisteredSealProof> {
    use RegisteredSealProof::*;
    Some(match sector_size {
        s if s == 2 << 10 => StackedDrg2KiBV1_1,
        s if s == 8 << 20 => StackedDrg8MiBV1_1,
        s if s == 512 << 20 => StackedDrg512MiBV1_1,
        s if s == 32 << 30 => StackedDrg32GiBV1_1,
        s if s == 64 << 30 => StackedDrg64GiBV1_1,
        _ => return None,
    })
}

/// The synthetic-PoRep seal proof (V1_1, Feat_SyntheticPoRep) for a sector size.
pub fn synthetic_seal_proof_for_size(sector_size: u64) -> Option<RegisteredSealProof> {
    featured_seal_proof(sector_size, filecoin_proofs_api::ApiFeature::SyntheticPoRep)
}

/// The non-interactive PoRep seal proof (V1_2, Feat_NonInteractivePoRep) for a sector size.
pub fn non_interactive_seal_proof_for_size(sector_size: u64) -> Option<RegisteredSealProof> {
    featured_seal_proof(
        sector_size,
        filecoin_proofs_api::ApiFeature::NonInteractivePoRep,
    )
}

/// The registered seal proof of `sector_size` with `feature` enabled.
fn featured_seal_proof(
    sector_size: u64,
    feature: filecoin_proofs_api::ApiFeature,
) -> Option<RegisteredSealProof> {
    RegisteredProof::all().into_iter().find_map(|p| match p {
        RegisteredProof::Seal(s)
            if u64::from(s.sector_size()) == sector_size && s.feature_enabled(feature) =>
        {
            Some(s)
        }
        _ => None,
    })
}

/// The WinningPoSt proof for a sector size.
pub fn winning_proof_for_size(sector_size: u64) -> Option<RegisteredPoStProof> {
    use RegisteredPoStProof::*;
    Some(match sector_size {
        s if s == 2 << 10 => StackedDrgWinning2KiBV1,
        s if s == 8 << 20 => StackedDrgWinning8MiBV1,
        s if s == 512 << 20 => StackedDrgWinning512MiBV1,
        s if s == 32 << 30 => StackedDrgWinning32GiBV1,
        s if s == 64 << 30 => StackedDrgWinning64GiBV1,
        _ => return None,
    })
}

/// The current (V1_2) WindowPoSt proof for a sector size.
pub fn window_proof_for_size(sector_size: u64) -> Option<RegisteredPoStProof> {
    use RegisteredPoStProof::*;
    Some(match sector_size {
        s if s == 2 << 10 => StackedDrgWindow2KiBV1_2,
        s if s == 8 << 20 => StackedDrgWindow8MiBV1_2,
        s if s == 512 << 20 => StackedDrgWindow512MiBV1_2,
        s if s == 32 << 30 => StackedDrgWindow32GiBV1_2,
        s if s == 64 << 30 => StackedDrgWindow64GiBV1_2,
        _ => return None,
    })
}

/// The update proof for a sector size.
pub fn update_proof_for_size(sector_size: u64) -> Option<RegisteredUpdateProof> {
    use RegisteredUpdateProof::*;
    Some(match sector_size {
        s if s == 2 << 10 => StackedDrg2KiBV1,
        s if s == 8 << 20 => StackedDrg8MiBV1,
        s if s == 512 << 20 => StackedDrg512MiBV1,
        s if s == 32 << 30 => StackedDrg32GiBV1,
        s if s == 64 << 30 => StackedDrg64GiBV1,
        _ => return None,
    })
}

/// One Groth16 circuit (one parameter file): what it proves, its size and its file names.
///
/// Registered proofs that share a circuit (PoRep V1, V1_1, synthetic, non-interactive;
/// WindowPoSt V1 and V1_2) share one `CircuitSpec`; `registered` is the canonical one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CircuitSpec {
    /// The proof kind.
    pub kind: ProofKind,
    /// Sector size in bytes.
    pub sector_size: u64,
    /// The circuit identifier (`v28-<cache_id>.params`).
    pub cache_id: String,
    /// cuzk-style short name: "porep-32g", "snap-2k", "wpost-32g", "winning-2k".
    pub short_name: String,
    /// The canonical registered proof of this circuit.
    pub registered: RegisteredProof,
}

impl CircuitSpec {
    fn from_registered(registered: RegisteredProof) -> Self {
        let kind = registered.kind();
        let sector_size = registered.sector_size();
        let cache_id = registered
            .cache_id()
            .expect("every registered proof of filecoin-proofs-api 19.1 has a circuit identifier");
        let short_name = format!("{}-{}", kind.short_prefix(), size_label(sector_size));
        Self {
            kind,
            sector_size,
            cache_id,
            short_name,
            registered,
        }
    }

    /// The circuit of a seal proof.
    pub fn for_registered_seal(p: RegisteredSealProof) -> Self {
        Self::from_registered(RegisteredProof::Seal(p))
    }

    /// The circuit of a PoSt proof.
    pub fn for_registered_post(p: RegisteredPoStProof) -> Self {
        Self::from_registered(RegisteredProof::PoSt(p))
    }

    /// The circuit of an update proof.
    pub fn for_registered_update(p: RegisteredUpdateProof) -> Self {
        Self::from_registered(RegisteredProof::Update(p))
    }

    /// The circuit of any registered proof.
    pub fn for_registered(p: RegisteredProof) -> Self {
        Self::from_registered(p)
    }

    /// The circuit of a kind at a sector size (canonical registered proof).
    pub fn for_kind(kind: ProofKind, sector_size: u64) -> Option<Self> {
        let registered = match kind {
            ProofKind::PoRep => RegisteredProof::Seal(seal_proof_for_size(sector_size)?),
            ProofKind::SnapDeals => RegisteredProof::Update(update_proof_for_size(sector_size)?),
            ProofKind::WindowPoSt => RegisteredProof::PoSt(window_proof_for_size(sector_size)?),
            ProofKind::WinningPoSt => RegisteredProof::PoSt(winning_proof_for_size(sector_size)?),
        };
        Some(Self::from_registered(registered))
    }

    /// Looks a circuit up by short name ("porep-2k", "wpost-32g", also "window-post-2k",
    /// "winning-post-2KiB").
    pub fn from_short_name(s: &str) -> Option<Self> {
        let s = s.trim().to_ascii_lowercase();
        let (kind, size) = s.rsplit_once('-')?;
        let kind: ProofKind = kind.parse().ok()?;
        Self::for_kind(kind, parse_sector_size(size)?)
    }

    /// Every circuit filecoin-proofs 19.1 has parameters for: four kinds at five sizes.
    pub fn all() -> Vec<CircuitSpec> {
        SECTOR_SIZES
            .iter()
            .flat_map(|&size| {
                ProofKind::ALL
                    .iter()
                    .filter_map(move |&k| Self::for_kind(k, size))
            })
            .collect()
    }

    /// Partitions of one proof of this circuit (PoRep 32 GiB: 10, SnapDeals 32 GiB: 16,
    /// PoSt: 1 per call).
    pub fn partitions(&self) -> usize {
        match self.registered {
            RegisteredProof::Seal(p) => usize::from(p.partitions()),
            RegisteredProof::Update(p) => storage_proofs_update::constants::partition_count(
                u64::from(p.sector_size()) as usize / 32,
            ),
            RegisteredProof::PoSt(_) => 1,
        }
    }

    /// `<cache_dir>/v28-<cache_id>.params`.
    pub fn params_path(&self, cache_dir: &Path) -> PathBuf {
        cache_dir.join(parameter_id(&self.cache_id))
    }

    /// `<cache_dir>/v28-<cache_id>.vk`.
    pub fn vk_path(&self, cache_dir: &Path) -> PathBuf {
        cache_dir.join(verifying_key_id(&self.cache_id))
    }

    /// `<cache_dir>/v28-<cache_id>.meta`.
    pub fn meta_path(&self, cache_dir: &Path) -> PathBuf {
        cache_dir.join(metadata_id(&self.cache_id))
    }

    /// The `parameters.json` key of the params file, and whether the network manifest has it.
    pub fn in_network_manifest(&self) -> bool {
        filecoin_proofs_api::get_parameter_data(&self.cache_id).is_some()
    }
}

impl fmt::Display for CircuitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.short_name, self.cache_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_round_trip() {
        let all = CircuitSpec::all();
        assert_eq!(all.len(), 20);
        for spec in &all {
            assert_eq!(
                CircuitSpec::from_short_name(&spec.short_name).as_ref(),
                Some(spec)
            );
            assert!(spec.in_network_manifest(), "{spec} not in parameters.json");
        }
        let ids: std::collections::HashSet<_> = all.iter().map(|s| &s.cache_id).collect();
        assert_eq!(ids.len(), 20, "circuits must be distinct");
        assert_eq!(
            CircuitSpec::from_short_name("porep-32g")
                .unwrap()
                .partitions(),
            10
        );
        assert_eq!(
            CircuitSpec::from_short_name("snap-32g")
                .unwrap()
                .partitions(),
            16
        );
        assert_eq!(
            CircuitSpec::from_short_name("window-post-2KiB")
                .unwrap()
                .short_name,
            "wpost-2k"
        );
        assert!(CircuitSpec::from_short_name("porep-3k").is_none());
        // Every registered proof maps to one of these circuits.
        let registered = RegisteredProof::all();
        assert_eq!(registered.len(), 40);
        for r in registered {
            let spec = CircuitSpec::for_registered(r);
            assert!(all.iter().any(|s| s.cache_id == spec.cache_id), "{r:?}");
            assert_eq!(spec.kind, r.kind());
        }
    }

    #[test]
    fn kinds_parse() {
        for k in ProofKind::ALL {
            assert_eq!(k.to_string().parse::<ProofKind>().unwrap(), k);
        }
        assert!("nope".parse::<ProofKind>().is_err());
    }

    #[test]
    fn variants_share_circuits() {
        use RegisteredSealProof::*;
        let base = CircuitSpec::for_registered_seal(StackedDrg2KiBV1_1).cache_id;
        for p in [StackedDrg2KiBV1, StackedDrg2KiBV1_1_Feat_SyntheticPoRep] {
            assert_eq!(CircuitSpec::for_registered_seal(p).cache_id, base);
        }
        let w = CircuitSpec::for_registered_post(RegisteredPoStProof::StackedDrgWindow2KiBV1);
        let w2 = CircuitSpec::for_registered_post(RegisteredPoStProof::StackedDrgWindow2KiBV1_2);
        assert_eq!(w.cache_id, w2.cache_id);
    }

    #[test]
    fn every_sector_size_has_a_synthetic_seal_proof() {
        for size in SECTOR_SIZES {
            let p = synthetic_seal_proof_for_size(size).expect("synthetic proof");
            assert_eq!(u64::from(p.sector_size()), size);
            assert!(p.feature_enabled(filecoin_proofs_api::ApiFeature::SyntheticPoRep));
        }
        assert!(synthetic_seal_proof_for_size(4096).is_none());
    }

    #[test]
    fn non_interactive_seal_proofs_share_the_porep_circuit() {
        for size in SECTOR_SIZES {
            let p = non_interactive_seal_proof_for_size(size).expect("NI proof");
            assert_eq!(u64::from(p.sector_size()), size);
            assert!(RegisteredProof::Seal(p).is_non_interactive());
            let ni = CircuitSpec::for_registered_seal(p);
            let plain = CircuitSpec::for_kind(ProofKind::PoRep, size).unwrap();
            // Same circuit and parameter files (filecoin-proofs picks the NI partition
            // counts so that the challenges per partition match), more partitions.
            assert_eq!(ni.cache_id, plain.cache_id);
            assert_eq!(ni.short_name, plain.short_name);
            assert!(ni.partitions() > plain.partitions());
        }
        let two_k = non_interactive_seal_proof_for_size(2048).unwrap();
        assert_eq!(CircuitSpec::for_registered_seal(two_k).partitions(), 13);
        assert!(!RegisteredProof::Seal(seal_proof_for_size(2048).unwrap()).is_non_interactive());
        assert!(non_interactive_seal_proof_for_size(4096).is_none());
    }
}
