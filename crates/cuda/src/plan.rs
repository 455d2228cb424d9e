//! The device-memory plan of one partition: what is allocated in each phase of a proof,
//! the peak, and whether the parameters can stay resident. Pure arithmetic (no GPU), so
//! `filprove vram-plan` prints the same plan the backend enforces.

use std::fmt;

use crate::msm::{self, Curve, G1, G2};
use crate::ntt;

const FR: u64 = 32;
const GIB: f64 = (1u64 << 30) as f64;

/// The staged a and b among a phase's allocations (freed once the H MSM has run).
pub(crate) const STAGED_AB: &str = "staged a, b";

/// The sizes that decide a partition's memory: its domain and its parameter sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// log2 of the evaluation domain.
    pub lg: u32,
    /// Aux (private) variables = points in L.
    pub n_aux: u64,
    /// Points in A (inputs plus aux dense in A).
    pub a_len: u64,
    /// Points in B (G1 and G2 alike).
    pub b_len: u64,
}

impl Shape {
    /// The shape implied by a parameter set: h has 2^lg - 1 points, l one per aux.
    pub fn from_srs_lengths(h: u64, l: u64, a: u64, b: u64) -> Self {
        Self {
            lg: (h + 1).next_power_of_two().trailing_zeros(),
            n_aux: l,
            a_len: a,
            b_len: b,
        }
    }

    /// One 32 GiB PoRep partition (docs/reference/circuits.md: 2^27 domain, 130,169,893
    /// aux, A 328 inputs + 129,753,292 aux, B 33,112,281 aux + the ONE input).
    pub fn porep_32g() -> Self {
        Self {
            lg: 27,
            n_aux: 130_169_893,
            a_len: 328 + 129_753_292,
            b_len: 1 + 33_112_281,
        }
    }

    /// One 32 GiB WindowPoSt partition (docs/reference/circuits.md: 2^27 domain,
    /// 126,902,376 aux, A 25,840 inputs + 96,179,805 aux, B 91,925,766 aux + the ONE input).
    pub fn wpost_32g() -> Self {
        Self {
            lg: 27,
            n_aux: 126_902_376,
            a_len: 25_840 + 96_179_805,
            b_len: 1 + 91_925_766,
        }
    }

    /// One 32 GiB SnapDeals partition (docs/reference/circuits.md: 2^27 domain, 80,978,488
    /// aux, A 5 inputs + 80,743,581 aux, B 20,983,607 aux + the ONE input).
    pub fn snap_32g() -> Self {
        Self {
            lg: 27,
            n_aux: 80_978_488,
            a_len: 5 + 80_743_581,
            b_len: 1 + 20_983_607,
        }
    }

    /// Domain size.
    pub fn m(&self) -> u64 {
        1 << self.lg
    }

    /// Bytes of the parameters the proof reads (h, l, a, b_g1, b_g2).
    pub fn srs_bytes(&self) -> u64 {
        let g1 = G1::AFFINE_BYTES as u64;
        (self.m() - 1 + self.n_aux + self.a_len + self.b_len) * g1
            + self.b_len * G2::AFFINE_BYTES as u64
    }

    /// Bytes of the folded H bases' second half (folded.rs): h again.
    pub fn folded_h_bytes(&self) -> u64 {
        (self.m() - 1) * G1::AFFINE_BYTES as u64
    }

    /// Bytes staged per partition: a and b padded to the domain, the aux witness and the
    /// density bitmaps.
    pub fn staged_bytes(&self) -> u64 {
        self.ab_bytes() + self.aux_bytes()
    }

    /// Of the staged bytes, a and b: nothing reads them after the H MSM.
    pub fn ab_bytes(&self) -> u64 {
        2 * self.m() * FR
    }

    /// Of the staged bytes, the aux witness and the density bitmaps (read to the end).
    fn aux_bytes(&self) -> u64 {
        self.n_aux * FR + 2 * self.n_aux.div_ceil(64) * 8
    }
}

/// Knobs the plan depends on.
#[derive(Clone, Copy, Debug)]
pub struct PlanInput {
    /// Device memory the plan may use (bytes).
    pub budget: u64,
    /// Partitions staged at once (one in the kernel region, the others waiting).
    pub staging_slots: u64,
    /// Keep the parameters in device memory when they fit.
    pub allow_resident: bool,
    /// Keep H's bases folded (folded.rs) when resident and they fit.
    pub allow_folded_h: bool,
    /// Largest MSM batch (points); 0 = no limit.
    pub max_batch: u64,
}

/// One allocation live during a phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// What it holds.
    pub name: &'static str,
    /// Bytes.
    pub bytes: u64,
    /// Part of the staged partition (else the region's working memory).
    pub staged: bool,
}

/// The allocations of one phase of the kernel region (beyond resident parameters and the
/// other staged partitions).
#[derive(Clone, Debug)]
pub struct PhasePlan {
    /// Phase name (as in the timing line).
    pub phase: &'static str,
    /// Live allocations.
    pub live: Vec<Allocation>,
}

impl PhasePlan {
    /// Bytes live in this phase.
    pub fn bytes(&self) -> u64 {
        self.live.iter().map(|a| a.bytes).sum()
    }

    /// Of them, the region's working memory (not the staged partition's).
    pub fn working_bytes(&self) -> u64 {
        self.live
            .iter()
            .filter(|a| !a.staged)
            .map(|a| a.bytes)
            .sum()
    }
}

/// The plan of one partition on one device.
#[derive(Clone, Debug)]
pub struct VramPlan {
    /// The shape planned for.
    pub shape: Shape,
    /// Budget planned against.
    pub budget: u64,
    /// Parameters resident in device memory (else streamed from pinned host memory per
    /// MSM batch).
    pub resident: bool,
    /// H's bases kept folded beside the resident parameters (folded.rs).
    pub folded_h: bool,
    /// Parameter bytes (resident or streamed), with the folded half of H when folded.
    pub srs_bytes: u64,
    /// Bytes of one staged partition.
    pub staged_bytes: u64,
    /// Partitions staged at once (0: uploads happen inside the kernel region).
    pub staging_slots: u64,
    /// MSM batch (points) per curve group: the MSMs run in batches of at most this many.
    pub batch: u64,
    /// The kernel region's phases.
    pub phases: Vec<PhasePlan>,
    /// Why the plan is not the fastest one, where it is not.
    pub notes: Vec<String>,
}

impl VramPlan {
    /// Peak bytes of the kernel region (largest phase).
    pub fn working_peak(&self) -> u64 {
        self.phases.iter().map(|p| p.bytes()).max().unwrap_or(0)
    }

    /// Peak device bytes: resident parameters, the staged partitions other than the one
    /// being proved, and the kernel region's largest phase.
    pub fn peak(&self) -> u64 {
        let srs = if self.resident { self.srs_bytes } else { 0 };
        srs + self.staging_slots.saturating_sub(1) * self.staged_bytes + self.working_peak()
    }

    /// Whether one more partition than the slots fits once the region's H MSM has run:
    /// the region then holds its aux witness and working memory only, and the ledger
    /// admits the next partition's staging as soon as its a and b are freed.
    pub fn stages_after_h(&self) -> bool {
        let after_h = self
            .phases
            .iter()
            .filter(|p| !p.live.iter().any(|a| a.name == STAGED_AB))
            .map(|p| p.bytes())
            .max()
            .unwrap_or(0);
        let srs = if self.resident { self.srs_bytes } else { 0 };
        self.staging_slots >= 1
            && srs + self.staging_slots * self.staged_bytes + after_h <= self.budget
    }

    /// The largest working memory (beyond the staged partition) of the phases before the
    /// H MSM has freed a and b (`true`) or after it (`false`).
    fn working_while(&self, with_ab: bool) -> u64 {
        self.phases
            .iter()
            .filter(|p| p.live.iter().any(|a| a.name == STAGED_AB) == with_ab)
            .map(|p| p.working_bytes())
            .max()
            .unwrap_or(0)
    }

    /// Bytes reserved for the kernel region beyond the partition's staged buffers when it
    /// starts: the working memory of its phases while a and b are live, and of the later
    /// ones less what they take over of a and b's bytes ([`Self::kept_after_h`]). With
    /// the staged partition that is the region's largest phase.
    pub fn working_extra(&self) -> u64 {
        let ab = self.shape.ab_bytes();
        self.working_while(true)
            .max(self.working_while(false).saturating_sub(ab))
    }

    /// Of a and b's bytes, those the phases after the H MSM use as working memory (the
    /// region keeps them to its end; the rest is freed once H has run): where those
    /// phases need more than the region reserved at its start, as WindowPoSt's B MSMs do
    /// with dense B.
    pub fn kept_after_h(&self) -> u64 {
        self.working_while(false)
            .saturating_sub(self.working_extra())
    }

    /// Of the staged bytes, those released once the H MSM has run: a and b's, less what
    /// the later phases keep ([`Self::kept_after_h`]).
    pub fn released_after_h(&self) -> u64 {
        self.shape.ab_bytes() - self.kept_after_h()
    }
}

fn scratch<C: Curve>(n: u64, batch: u64) -> u64 {
    msm::scratch_bytes::<C>(n.min(batch).max(1) as usize) as u64
}

/// The kernel region's phases for a batch size, parameters resident or streamed, H's
/// bases folded or not.
fn phases(s: &Shape, batch: u64, resident: bool, folded_h: bool) -> Vec<PhasePlan> {
    let m = s.m();
    let (g1, g2) = (G1::AFFINE_BYTES as u64, G2::AFFINE_BYTES as u64);
    let work = |name, bytes| Allocation {
        name,
        bytes,
        staged: false,
    };
    // The staged a and b live until the H MSM has run (H is computed in place in a); the
    // aux witness and the bitmaps until the region ends.
    let staged = |with_ab: bool| {
        let aux = Allocation {
            name: "staged aux, bitmaps",
            bytes: s.aux_bytes(),
            staged: true,
        };
        let ab = Allocation {
            name: STAGED_AB,
            bytes: s.ab_bytes(),
            staged: true,
        };
        if with_ab {
            vec![ab, aux]
        } else {
            vec![aux]
        }
    };
    // Streamed parameters: two batch-sized slots of bases, filled in turn.
    let slots = |n: u64, bytes: u64| {
        if resident {
            0
        } else {
            2 * n.min(batch) * bytes
        }
    };
    // An MSM phase over `n` points of `bytes` each, with its scalars when gathered.
    let msm = |phase, with_ab, n: u64, bytes: u64, scalar: Option<Allocation>, c: u64| {
        let mut live = staged(with_ab);
        live.extend(scalar);
        live.push(work("MSM scratch", c));
        live.push(work("streamed bases", slots(n, bytes)));
        PhasePlan { phase, live }
    };
    let b_scalars = || Some(work("B scalars", s.b_len * FR));
    let mut ntt_h = staged(true);
    ntt_h.extend([
        work("c", m * FR),
        work("twiddles", ntt::twiddle_count(s.lg) as u64 * FR),
        work("coset tables", ntt::scale_table_bytes(s.lg)),
    ]);
    vec![
        PhasePlan {
            phase: "ntt_h",
            live: ntt_h,
        },
        msm(
            "msm_h",
            true,
            m - 1,
            g1,
            None,
            if folded_h {
                msm::folded_scratch_bytes::<G1>((m - 1) as usize) as u64
            } else {
                scratch::<G1>(m - 1, batch)
            },
        ),
        msm(
            "msm_l",
            false,
            s.n_aux,
            g1,
            None,
            scratch::<G1>(s.n_aux, batch),
        ),
        msm(
            "msm_a",
            false,
            s.a_len,
            g1,
            Some(work("A scalars", s.a_len * FR)),
            scratch::<G1>(s.a_len, batch),
        ),
        msm(
            "msm_b_g1",
            false,
            s.b_len,
            g1,
            b_scalars(),
            scratch::<G1>(s.b_len, batch),
        ),
        msm(
            "msm_b_g2",
            false,
            s.b_len,
            g2,
            b_scalars(),
            scratch::<G2>(s.b_len, batch),
        ),
    ]
}

/// Plans one partition: parameters resident if they fit beside the staged partitions and
/// the largest phase (with H's bases folded if those fit too), else streamed; MSM
/// batches as large as fit; staging slots reduced (down to uploads inside the region)
/// before failing.
pub fn plan(shape: Shape, input: PlanInput) -> Result<VramPlan, String> {
    let max_points = shape.m().max(shape.n_aux).max(shape.a_len).max(1);
    let cap = if input.max_batch == 0 {
        max_points
    } else {
        input.max_batch.min(max_points)
    };
    let mut notes = Vec::new();
    // (resident, H folded), most preferred first.
    let resident_choices: &[(bool, bool)] = match (input.allow_resident, input.allow_folded_h) {
        (true, true) => &[(true, true), (true, false), (false, false)],
        (true, false) => &[(true, false), (false, false)],
        (false, _) => {
            notes.push("parameters streamed: residency switched off".into());
            &[(false, false)]
        }
    };
    // Preference: resident parameters, then pre-staging, then large MSM batches.
    let mut batches = vec![cap];
    let mut b = cap.next_power_of_two() / 2;
    while b >= 1 << 16 {
        if b < cap {
            batches.push(b);
        }
        b /= 2;
    }
    for &(resident, folded_h) in resident_choices {
        // The fitting plan with the most partitions staged ahead of a region, then the
        // largest batch; but one slot fewer at a larger batch where one more partition is
        // staged once the region's H MSM has run (as many ahead, in effect).
        let (notes, batches) = (&notes, &batches);
        let mut fitting = (0..=input.staging_slots).rev().flat_map(move |slots| {
            batches.iter().filter_map(move |&b| {
                // Folded H only with the fastest staging and whole MSMs.
                if folded_h && (slots < input.staging_slots || b < cap) {
                    return None;
                }
                let p = VramPlan {
                    shape,
                    budget: input.budget,
                    resident,
                    folded_h,
                    srs_bytes: shape.srs_bytes()
                        + if folded_h { shape.folded_h_bytes() } else { 0 },
                    staged_bytes: shape.staged_bytes(),
                    staging_slots: slots,
                    batch: b,
                    phases: phases(&shape, b, resident, folded_h),
                    notes: notes.clone(),
                };
                (p.peak() <= input.budget).then_some(p)
            })
        });
        let Some(first) = fitting.next() else {
            continue;
        };
        let fewer = fitting
            .find(|p| p.staging_slots + 1 == first.staging_slots)
            .filter(|p| p.batch > first.batch && p.stages_after_h());
        let after_h = fewer.is_some() || first.stages_after_h();
        let mut p = fewer.unwrap_or(first);
        let (slots, b) = (p.staging_slots, p.batch);
        if input.allow_resident && input.allow_folded_h && resident && !folded_h {
            p.notes.push(format!(
                "H's bases not folded: {:.1} GiB more do not fit",
                shape.folded_h_bytes() as f64 / GIB
            ));
        }
        if input.allow_resident && !resident {
            p.notes.push(format!(
                "parameters streamed: {:.1} GiB of them do not fit beside the working set",
                p.srs_bytes as f64 / GIB
            ));
        }
        if slots < input.staging_slots && after_h {
            p.notes.push(format!(
                "{slots} of {} partitions pre-staged beside a whole region, one more once \
                 its H MSM has run (a and b freed)",
                input.staging_slots
            ));
        } else if slots < input.staging_slots {
            p.notes.push(format!(
                "{slots} of {} partitions pre-staged: device memory",
                input.staging_slots
            ));
        }
        if b < cap {
            p.notes.push(format!("MSMs in batches of {b} points"));
        }
        return Ok(p);
    }
    Err(format!(
        "a partition of domain 2^{} needs more than the {:.1} GiB device-memory budget \
         even with streamed parameters, no pre-staging and 2^16-point MSM batches",
        shape.lg,
        input.budget as f64 / GIB
    ))
}

impl fmt::Display for VramPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = |b: u64| b as f64 / GIB;
        let s = &self.shape;
        writeln!(
            f,
            "partition: domain 2^{}, {} aux, A {} points, B {} points",
            s.lg, s.n_aux, s.a_len, s.b_len
        )?;
        writeln!(f, "budget: {:.2} GiB", g(self.budget))?;
        writeln!(
            f,
            "parameters: {:.2} GiB, {}",
            g(self.srs_bytes),
            match (self.resident, self.folded_h) {
                (true, true) => "resident in device memory (uploaded once), H's bases folded",
                (true, false) => "resident in device memory (uploaded once)",
                (false, _) => "streamed from pinned host memory per MSM batch",
            }
        )?;
        writeln!(
            f,
            "staged partition (a, b, aux): {:.2} GiB x {} slot(s){}",
            g(self.staged_bytes),
            self.staging_slots,
            if self.staging_slots == 0 {
                " (uploaded inside the kernel region)"
            } else {
                ""
            }
        )?;
        writeln!(f, "MSM batch: {} points", self.batch)?;
        writeln!(f, "kernel region, per phase:")?;
        for p in &self.phases {
            writeln!(f, "  {:<9} {:>8.2} GiB", p.phase, g(p.bytes()))?;
            for a in p.live.iter().filter(|a| a.bytes > 0) {
                writeln!(f, "      {:<22} {:>8.2} GiB", a.name, g(a.bytes))?;
            }
        }
        writeln!(
            f,
            "peak: {:.2} GiB = parameters {:.2} + other staged {:.2} + largest phase {:.2}",
            g(self.peak()),
            g(if self.resident { self.srs_bytes } else { 0 }),
            g(self.staging_slots.saturating_sub(1) * self.staged_bytes),
            g(self.working_peak())
        )?;
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1 << 30;

    fn input(budget_gib: u64) -> PlanInput {
        PlanInput {
            budget: budget_gib * GB,
            staging_slots: 2,
            allow_resident: true,
            allow_folded_h: true,
            max_batch: 0,
        }
    }

    #[test]
    fn porep_32g_is_resident_on_an_h200_and_streamed_on_small_gpus() {
        let s = Shape::porep_32g();
        // docs/reference/circuits.md: a 47.37 GB parameter file; the proof reads all but
        // the vk.
        assert!(
            (s.srs_bytes() as f64 / 1e9 - 47.4).abs() < 0.5,
            "{}",
            s.srs_bytes()
        );
        let h200 = plan(s, input(136)).unwrap();
        assert!(h200.resident && h200.folded_h, "{h200}");
        assert_eq!(h200.srs_bytes, s.srs_bytes() + s.folded_h_bytes());
        // Where the folded half does not fit, the parameters stay resident unfolded.
        let tight = plan(s, input(110)).unwrap();
        assert!(tight.resident && !tight.folded_h, "{tight}");
        assert!(tight.peak() <= 110 * GB);
        assert!(
            tight.notes.iter().any(|n| n.contains("not folded")),
            "{tight}"
        );
        assert_eq!(h200.staging_slots, 2);
        assert_eq!(h200.batch, s.m());
        assert!(h200.peak() <= 136 * GB);
        let small = plan(s, input(24)).unwrap();
        assert_eq!(small.staging_slots, 1, "{small}");
        assert!(!small.resident);
        assert!(small.peak() <= 24 * GB, "{small}");
        assert!(small.batch < s.m());
        assert!(!small.notes.is_empty());
        let off = plan(
            s,
            PlanInput {
                allow_resident: false,
                ..input(136)
            },
        )
        .unwrap();
        assert!(!off.resident);
        assert!(plan(s, input(16)).is_err());
    }

    #[test]
    fn an_80_gb_card_stages_the_next_partition_once_h_has_run() {
        // An H100 80GB's budget: the parameters and one staged partition beside a whole
        // region at whole-domain batches; a second one only after the region's H MSM.
        let s = Shape::porep_32g();
        let p = plan(s, input(75)).unwrap();
        assert!(p.resident && !p.folded_h, "{p}");
        assert_eq!(p.staging_slots, 1, "{p}");
        assert!(p.stages_after_h(), "{p}");
        assert!(p.batch >= 1 << 26, "{p}");
        // What the ledger admits while the region runs its MSMs after H: the parameters,
        // the region's aux witness and working memory, the next partition.
        assert!(p.srs_bytes + s.aux_bytes() + p.working_extra() + s.staged_bytes() <= 75 * GB);
        // ... and not before: a and b still held.
        assert!(p.srs_bytes + 2 * s.staged_bytes() + p.working_extra() > 75 * GB);
        // Every phase fits in the partition's bytes and the working reservation.
        for ph in &p.phases {
            assert!(ph.bytes() <= s.staged_bytes() + p.working_extra(), "{p}");
        }
        assert!(p.notes.iter().any(|n| n.contains("once its H MSM")), "{p}");
        // Where two fit beside a whole region, both are staged ahead.
        let h200 = plan(s, input(136)).unwrap();
        assert_eq!(h200.staging_slots, 2);
        assert!(!h200.notes.iter().any(|n| n.contains("once its H MSM")));
    }

    #[test]
    fn peak_is_the_largest_phase_plus_resident_and_staged() {
        let s = Shape::from_srs_lengths((1 << 20) - 1, 1_000_000, 900_000, 300_000);
        assert_eq!(s.lg, 20);
        let p = plan(s, input(80)).unwrap();
        let largest = p.phases.iter().map(|x| x.bytes()).max().unwrap();
        assert!(p.folded_h);
        assert_eq!(p.peak(), p.srs_bytes + s.staged_bytes() + largest);
        assert!(p.to_string().contains("peak:"));
    }
}
