//! Local fixtures: seal a small sector with filecoin-proofs and write one request file per
//! proof kind (plus the raw and wrapped C1). No parameters are needed and nothing is
//! downloaded. Sealing uses filecoin-proofs' parent cache (`FIL_PROOFS_PARENT_CACHE`).

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use filecoin_proofs_api::seal::{
    add_piece, generate_synth_proofs, seal_commit_phase1, seal_pre_commit_phase1,
    seal_pre_commit_phase2, SealCommitPhase1Output, SealPreCommitPhase2Output,
};
use filecoin_proofs_api::{
    post, update, ApiFeature, PaddedBytesAmount, PieceInfo, PrivateReplicaInfo,
    RegisteredSealProof, SectorId, UnpaddedBytesAmount,
};
use filprove_groth16::progress::{NoProgress, Progress, ProgressUnit};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::c1::C1Wrapper;
use crate::error::FilecoinError;
use crate::kinds::{self, ProofKind};
use crate::request::{prover_id_from_miner_id, ProofRequest, RequestBody};

/// The miner (actor) id fixtures are sealed for.
pub const FIXTURE_MINER_ID: u64 = 1000;

/// The sector number of the fixture sector.
pub const FIXTURE_SECTOR_NUMBER: u64 = 1;

/// What [`make`] wrote.
#[derive(Clone, Debug)]
pub struct FixtureSet {
    /// The output directory.
    pub dir: PathBuf,
    /// Sector size in bytes.
    pub sector_size: u64,
    /// The miner id of every request.
    pub miner_id: u64,
    /// The request file of each kind made (`porep.request.json`, ...).
    pub requests: BTreeMap<ProofKind, PathBuf>,
    /// `porep-c1.json` (raw C1), when PoRep was asked for.
    pub c1_raw: Option<PathBuf>,
    /// `porep-c1-wrapped.json` (lotus-bench / Curio wrapper), when PoRep was asked for.
    pub c1_wrapped: Option<PathBuf>,
}

impl FixtureSet {
    /// The file name of a kind's request file.
    pub fn request_file_name(kind: ProofKind) -> String {
        format!("{}.request.json", kind.as_str())
    }

    /// Finds the files of a fixture set [`make`] wrote earlier into `dir`.
    pub fn open(dir: &Path, sector_size: u64) -> Self {
        let existing = |name: String| Some(dir.join(name)).filter(|p| p.is_file());
        let requests = ProofKind::ALL
            .iter()
            .filter_map(|&k| existing(Self::request_file_name(k)).map(|p| (k, p)))
            .collect();
        Self {
            dir: dir.to_path_buf(),
            sector_size,
            miner_id: FIXTURE_MINER_ID,
            requests,
            c1_raw: existing("porep-c1.json".into()),
            c1_wrapped: existing("porep-c1-wrapped.json".into()),
        }
    }

    /// An empty set writing into `dir` (created if needed).
    pub(crate) fn create(dir: &Path, sector_size: u64) -> Result<Self, FilecoinError> {
        fs::create_dir_all(dir).map_err(io("create", dir))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            sector_size,
            miner_id: FIXTURE_MINER_ID,
            requests: BTreeMap::new(),
            c1_raw: None,
            c1_wrapped: None,
        })
    }

    /// Writes `req` as the request file of `kind`.
    pub(crate) fn put(&mut self, kind: ProofKind, req: &ProofRequest) -> Result<(), FilecoinError> {
        let path = self.dir.join(Self::request_file_name(kind));
        write_json(&path, &req.to_request_json())?;
        self.requests.insert(kind, path);
        Ok(())
    }

    /// Validates a C1 output as a PoRep request and writes it three ways: raw
    /// (`porep-c1.json`), in the lotus-bench / Curio wrapper (`porep-c1-wrapped.json`) and
    /// as the PoRep request file.
    pub(crate) fn put_porep(
        &mut self,
        c1: SealCommitPhase1Output,
        sector_number: u64,
        miner_id: u64,
    ) -> Result<(), FilecoinError> {
        let raw = serde_json::to_vec(&c1).expect("C1 serializes");
        let wrapper = C1Wrapper {
            sector_num: sector_number,
            phase1_out: base64::engine::general_purpose::STANDARD.encode(&raw),
            sector_size: self.sector_size,
        };
        let raw_path = self.dir.join("porep-c1.json");
        let wrapped_path = self.dir.join("porep-c1-wrapped.json");
        let req = ProofRequest::new(RequestBody::PoRep {
            c1: Box::new(c1),
            sector_number,
            miner_id,
        })?;
        write_json(&raw_path, &raw)?;
        write_json(
            &wrapped_path,
            &serde_json::to_vec(&wrapper).expect("wrapper serializes"),
        )?;
        self.c1_raw = Some(raw_path);
        self.c1_wrapped = Some(wrapped_path);
        self.put(ProofKind::PoRep, &req)
    }

    /// Reads and validates the request of `kind`.
    pub fn request(&self, kind: ProofKind) -> Result<ProofRequest, FilecoinError> {
        let path = self.requests.get(&kind).ok_or_else(|| {
            FilecoinError::InvalidRequest(format!("no {kind} fixture in {}", self.dir.display()))
        })?;
        let bytes = fs::read(path).map_err(|e| FilecoinError::io("read", path, e))?;
        ProofRequest::from_request_json(&bytes)
    }
}

/// One sealed sector in the scratch directory.
struct Sealed {
    cache: PathBuf,
    replica: PathBuf,
    pc2: SealPreCommitPhase2Output,
    piece: PieceInfo,
    ticket: [u8; 32],
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> FilecoinError + 'a {
    move |e| FilecoinError::io(what, path, e)
}

/// 32 random bytes that are a valid field element (top bits clear), as chain randomness is
/// used by Lotus and Curio.
fn fr_bytes(rng: &mut impl RngCore) -> [u8; 32] {
    let mut b: [u8; 32] = rng.gen();
    b[31] &= 0x3f;
    b
}

/// Writes a whole-sector piece of `data` (fr32-padded) into `path`.
fn write_piece(
    registered: RegisteredSealProof,
    path: &Path,
    data: impl Read,
) -> Result<PieceInfo, FilecoinError> {
    let size = UnpaddedBytesAmount::from(PaddedBytesAmount(u64::from(registered.sector_size())));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(io("create", path))?;
    let (piece, _) = add_piece(registered, data.take(u64::from(size)), file, size, &[])
        .map_err(FilecoinError::fp)?;
    Ok(piece)
}

/// Seals a sector: the piece, PC1, PC2 (one step of `progress` each).
fn seal(
    registered: RegisteredSealProof,
    dir: &Path,
    data: impl Read,
    ticket: [u8; 32],
    progress: &dyn Progress,
) -> Result<Sealed, FilecoinError> {
    let cache = dir.join("cache");
    fs::create_dir_all(&cache).map_err(io("create", &cache))?;
    let unsealed = dir.join("unsealed");
    let replica = dir.join("sealed");
    let piece = write_piece(registered, &unsealed, data)?;
    progress.advance(1);
    File::create(&replica).map_err(io("create", &replica))?;
    let prover_id = prover_id_from_miner_id(FIXTURE_MINER_ID);
    let sector_id = SectorId::from(FIXTURE_SECTOR_NUMBER);
    let pc1 = seal_pre_commit_phase1(
        registered,
        &cache,
        &unsealed,
        &replica,
        prover_id,
        sector_id,
        ticket,
        std::slice::from_ref(&piece),
    )
    .map_err(FilecoinError::fp)?;
    progress.advance(1);
    let pc2 = seal_pre_commit_phase2(pc1, &cache, &replica).map_err(FilecoinError::fp)?;
    progress.advance(1);
    Ok(Sealed {
        cache,
        replica,
        pc2,
        piece,
        ticket,
    })
}

fn write_json(path: &Path, bytes: &[u8]) -> Result<(), FilecoinError> {
    fs::write(path, bytes).map_err(io("write", path))
}

/// Seals a sector of `sector_size` locally (seeded random data, PC1, PC2, and C1 for the
/// V1_1 seal proof) and writes into `out_dir` the request file of each of `kinds`, plus
/// `porep-c1.json` and `porep-c1-wrapped.json` for PoRep. SnapDeals seals a second, CC sector
/// and encodes seeded random data into it. Every request is validated before it is written.
/// Works in `out_dir/.scratch-*`, removed at the end. 2 KiB takes well under a second.
pub fn make(
    out_dir: &Path,
    sector_size: u64,
    kinds: &[ProofKind],
    seed: u64,
) -> Result<FixtureSet, FilecoinError> {
    make_reporting(out_dir, sector_size, kinds, seed, &NoProgress)
}

/// [`make`], counting its steps in `progress`: the piece, PC1 and PC2 of each sector
/// sealed, then each request written.
pub fn make_reporting(
    out_dir: &Path,
    sector_size: u64,
    kinds: &[ProofKind],
    seed: u64,
    progress: &dyn Progress,
) -> Result<FixtureSet, FilecoinError> {
    let registered = kinds::seal_proof_for_size(sector_size)
        .ok_or_else(|| FilecoinError::Unsupported(format!("sector size {sector_size}")))?;
    fs::create_dir_all(out_dir).map_err(io("create", out_dir))?;
    let scratch = out_dir.join(format!(".scratch-{}-{seed}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(&scratch).map_err(io("create", &scratch))?;
    let result = make_in(out_dir, &scratch, registered, kinds, seed, progress);
    let _ = fs::remove_dir_all(&scratch);
    result
}

/// File name of the synthetic-PoRep request written by [`make_synthetic_porep`].
pub const SYNTHETIC_POREP_REQUEST: &str = "porep-synthetic.request.json";

/// File name of the non-interactive PoRep request written by [`make_non_interactive_porep`].
pub const NON_INTERACTIVE_POREP_REQUEST: &str = "porep-ni.request.json";

/// Seals a sector of `sector_size` with the synthetic-PoRep seal proof (PC1, PC2, the
/// synthetic challenge proofs filecoin-proofs keeps in the cache, C1 over them) and writes
/// its PoRep request to `out_dir/porep-synthetic.request.json`. Returns that path.
pub fn make_synthetic_porep(
    out_dir: &Path,
    sector_size: u64,
    seed: u64,
) -> Result<PathBuf, FilecoinError> {
    let registered = kinds::synthetic_seal_proof_for_size(sector_size)
        .ok_or_else(|| FilecoinError::Unsupported(format!("sector size {sector_size}")))?;
    make_seal_variant(out_dir, registered, SYNTHETIC_POREP_REQUEST, "synth", seed)
}

/// Seals a sector of `sector_size` with the non-interactive PoRep seal proof (PC1, PC2, C1:
/// the NI challenges come from comm_r, so the C1 opens 13 partitions at test sizes, 126 at
/// 32 GiB) and writes its PoRep request to `out_dir/porep-ni.request.json`. Returns that path.
pub fn make_non_interactive_porep(
    out_dir: &Path,
    sector_size: u64,
    seed: u64,
) -> Result<PathBuf, FilecoinError> {
    let registered = kinds::non_interactive_seal_proof_for_size(sector_size)
        .ok_or_else(|| FilecoinError::Unsupported(format!("sector size {sector_size}")))?;
    make_seal_variant(
        out_dir,
        registered,
        NON_INTERACTIVE_POREP_REQUEST,
        "ni",
        seed,
    )
}

/// Seals one sector with `registered` in a scratch directory and writes its PoRep request
/// to `out_dir/<file_name>`.
fn make_seal_variant(
    out_dir: &Path,
    registered: RegisteredSealProof,
    file_name: &str,
    tag: &str,
    seed: u64,
) -> Result<PathBuf, FilecoinError> {
    fs::create_dir_all(out_dir).map_err(io("create", out_dir))?;
    let scratch = out_dir.join(format!(".scratch-{tag}-{}-{seed}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    let result = (|| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let ticket = fr_bytes(&mut rng);
        let data_rng = ChaCha8Rng::seed_from_u64(rng.next_u64());
        let s = seal(
            registered,
            &scratch,
            RngReader(data_rng),
            ticket,
            &NoProgress,
        )?;
        let prover_id = prover_id_from_miner_id(FIXTURE_MINER_ID);
        let sector_id = SectorId::from(FIXTURE_SECTOR_NUMBER);
        if registered.feature_enabled(ApiFeature::SyntheticPoRep) {
            generate_synth_proofs(
                s.cache.as_path(),
                s.replica.as_path(),
                prover_id,
                sector_id,
                s.ticket,
                s.pc2.clone(),
                std::slice::from_ref(&s.piece),
            )
            .map_err(FilecoinError::fp)?;
        }
        // Non-interactive PoRep ignores the seed for its challenges, but C2 still wants a
        // non-zero one (as for the other seal proofs).
        let c1 = seal_commit_phase1(
            s.cache.as_path(),
            s.replica.as_path(),
            prover_id,
            sector_id,
            s.ticket,
            fr_bytes(&mut rng),
            s.pc2.clone(),
            std::slice::from_ref(&s.piece),
        )
        .map_err(FilecoinError::fp)?;
        let req = ProofRequest::new(RequestBody::PoRep {
            c1: Box::new(c1),
            sector_number: FIXTURE_SECTOR_NUMBER,
            miner_id: FIXTURE_MINER_ID,
        })?;
        let path = out_dir.join(file_name);
        write_json(&path, &req.to_request_json())?;
        Ok(path)
    })();
    let _ = fs::remove_dir_all(&scratch);
    result
}

fn make_in(
    out_dir: &Path,
    scratch: &Path,
    registered: RegisteredSealProof,
    kinds: &[ProofKind],
    seed: u64,
    progress: &dyn Progress,
) -> Result<FixtureSet, FilecoinError> {
    let sector_size = u64::from(registered.sector_size());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut set = FixtureSet::create(out_dir, sector_size)?;
    let prover_id = prover_id_from_miner_id(FIXTURE_MINER_ID);
    let needs_data_sector = kinds.iter().any(|k| *k != ProofKind::SnapDeals);
    // Three steps per sector sealed (the piece, PC1, PC2), one per request written.
    let sectors =
        usize::from(needs_data_sector) + usize::from(kinds.contains(&ProofKind::SnapDeals));
    progress.phase(
        "sealing and writing inputs",
        Some((3 * sectors + kinds.len()) as u64),
        ProgressUnit::Items("steps"),
    );
    let data = if needs_data_sector {
        let dir = scratch.join("data");
        let ticket = fr_bytes(&mut rng);
        let data_rng = ChaCha8Rng::seed_from_u64(rng.next_u64());
        Some(seal(
            registered,
            &dir,
            RngReader(data_rng),
            ticket,
            progress,
        )?)
    } else {
        None
    };
    for &kind in kinds {
        match kind {
            ProofKind::PoRep => {
                let s = data.as_ref().expect("data sector sealed");
                let seed_bytes = fr_bytes(&mut rng);
                let c1 = seal_commit_phase1(
                    s.cache.as_path(),
                    s.replica.as_path(),
                    prover_id,
                    SectorId::from(FIXTURE_SECTOR_NUMBER),
                    s.ticket,
                    seed_bytes,
                    s.pc2.clone(),
                    std::slice::from_ref(&s.piece),
                )
                .map_err(FilecoinError::fp)?;
                set.put_porep(c1, FIXTURE_SECTOR_NUMBER, FIXTURE_MINER_ID)?;
            }
            ProofKind::WinningPoSt | ProofKind::WindowPoSt => {
                let s = data.as_ref().expect("data sector sealed");
                let post_proof = if kind == ProofKind::WinningPoSt {
                    kinds::winning_proof_for_size(sector_size)
                } else {
                    kinds::window_proof_for_size(sector_size)
                }
                .expect("published sector size");
                let randomness = fr_bytes(&mut rng);
                let replica = PrivateReplicaInfo::new(
                    post_proof,
                    s.pc2.comm_r,
                    s.cache.clone(),
                    s.replica.clone(),
                );
                // WindowPoSt: fill the partition with the same replica under consecutive
                // sector numbers (the proof only opens the replica's trees).
                let count = if kind == ProofKind::WinningPoSt {
                    1
                } else {
                    post_proof.sector_count().min(2)
                };
                let sectors: Vec<SectorId> = (0..count as u64)
                    .map(|i| SectorId::from(FIXTURE_SECTOR_NUMBER + i))
                    .collect();
                let challenges = post::generate_fallback_sector_challenges(
                    post_proof,
                    &randomness,
                    &sectors,
                    prover_id,
                )
                .map_err(FilecoinError::fp)?;
                let vanilla_proofs = sectors
                    .iter()
                    .map(|id| {
                        post::generate_single_vanilla_proof(
                            post_proof,
                            *id,
                            &replica,
                            &challenges[id],
                        )
                        .map_err(FilecoinError::fp)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let body = if kind == ProofKind::WinningPoSt {
                    RequestBody::WinningPoSt {
                        registered: post_proof,
                        miner_id: FIXTURE_MINER_ID,
                        randomness,
                        vanilla_proofs,
                    }
                } else {
                    RequestBody::WindowPoSt {
                        registered: post_proof,
                        miner_id: FIXTURE_MINER_ID,
                        randomness,
                        partition_index: 0,
                        vanilla_proofs,
                    }
                };
                set.put(kind, &ProofRequest::new(body)?)?;
            }
            ProofKind::SnapDeals => {
                set.put(kind, &make_snap(scratch, registered, &mut rng, progress)?)?;
            }
        }
        progress.advance(1);
    }
    Ok(set)
}

fn make_snap(
    scratch: &Path,
    registered: RegisteredSealProof,
    rng: &mut ChaCha8Rng,
    progress: &dyn Progress,
) -> Result<ProofRequest, FilecoinError> {
    let sector_size = u64::from(registered.sector_size());
    let update_proof = kinds::update_proof_for_size(sector_size).expect("published sector size");
    let cc = seal(
        registered,
        &scratch.join("cc"),
        std::io::repeat(0),
        fr_bytes(rng),
        progress,
    )?;
    let dir = scratch.join("update");
    let new_cache = dir.join("cache");
    fs::create_dir_all(&new_cache).map_err(io("create", &new_cache))?;
    let staged = dir.join("staged");
    let piece = write_piece(
        registered,
        &staged,
        RngReader(ChaCha8Rng::seed_from_u64(rng.next_u64())),
    )?;
    let new_replica = dir.join("sealed");
    File::create(&new_replica)
        .and_then(|f| f.set_len(sector_size))
        .map_err(io("create", &new_replica))?;
    let encoded = update::empty_sector_update_encode_into(
        update_proof,
        &new_replica,
        &new_cache,
        &cc.replica,
        &cc.cache,
        &staged,
        std::slice::from_ref(&piece),
    )
    .map_err(FilecoinError::fp)?;
    let comm_r_old = cc.pc2.comm_r;
    let vanilla = update::generate_partition_proofs(
        update_proof,
        comm_r_old,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &cc.replica,
        &cc.cache,
        &new_replica,
        &new_cache,
    )
    .map_err(FilecoinError::fp)?;
    ProofRequest::new(RequestBody::SnapDeals {
        registered: update_proof,
        comm_r_old,
        comm_r_new: encoded.comm_r_new,
        comm_d_new: encoded.comm_d_new,
        vanilla_proofs: vanilla.into_iter().map(|p| p.0).collect(),
    })
}

/// An endless reader of seeded random bytes.
struct RngReader(ChaCha8Rng);

impl Read for RngReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.fill_bytes(buf);
        Ok(buf.len())
    }
}
