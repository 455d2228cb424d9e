//! A benchmark workload with the exact shape of one 32 GiB PoRep partition
//! (docs/reference/circuits.md, docs/reference/stand-in-workload.md): a host assignment
//! whose a/b and aux values follow the mixes measured on real PoRep witnesses (a backend
//! forms c = a*b, as for a satisfying witness), and a parameter set of valid, distinct curve
//! points made on the device in seconds. Its proofs cannot verify (the parameters come from
//! no setup); it exists to measure speed and memory.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use ff::{Field, PrimeField};
use filprove_groth16::density::DensityBits;
use filprove_groth16::recycle;
use filprove_groth16::{Fr, ProveError, ProvingAssignment, Srs, VerifyingKey};
use group::{Curve, Group};
use rayon::prelude::*;

pub use filprove_cuda::testing::resident::{DeviceSrs, Lens};
use filprove_cuda::testing::{synth, Gpu};

/// A partition's shape: row count, variable counts and the share of aux variables dense
/// in A and in B.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkloadShape {
    /// Constraints (rows of a and b), input constraints included.
    pub constraints: usize,
    /// Public inputs, ONE included.
    pub inputs: usize,
    /// Aux variables.
    pub aux: usize,
    /// Fraction of aux variables dense in A.
    pub a_density: f64,
    /// Fraction of aux variables dense in B.
    pub b_density: f64,
}

impl WorkloadShape {
    /// One 32 GiB PoRep partition (docs/reference/circuits.md).
    pub fn porep_32g() -> Self {
        Self {
            constraints: 130_278_541,
            inputs: 328,
            aux: 130_169_893,
            a_density: 129_753_292.0 / 130_169_893.0,
            b_density: 33_112_281.0 / 130_169_893.0,
        }
    }

    /// The same proportions with a 2^lg domain (rows = 97 % of it), for quick runs.
    pub fn porep_like(lg: u32) -> Self {
        let big = Self::porep_32g();
        let rows = ((1usize << lg) as f64 * 0.97) as usize;
        Self {
            constraints: rows,
            aux: (rows as f64 * big.aux as f64 / big.constraints as f64) as usize,
            inputs: big.inputs.min(rows / 4).max(1),
            ..big
        }
    }
}

/// splitmix64: a fast, stateless mixer (per-element randomness from (seed, index)).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A full-size field element from a hash (top limb masked below r: canonical, uniform
/// enough for timing).
fn full(h: u64) -> Fr {
    let mut limbs = [0u64; 4];
    let mut x = h;
    for l in &mut limbs {
        x = mix(x);
        *l = x;
    }
    limbs[3] &= 0x3fff_ffff_ffff_ffff;
    let mut repr = [0u8; 32];
    for (i, l) in limbs.iter().enumerate() {
        repr[i * 8..(i + 1) * 8].copy_from_slice(&l.to_le_bytes());
    }
    Fr::from_repr_vartime(repr).unwrap_or(Fr::ONE)
}

/// Percent-scale draw in [0, 1).
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// The aux witness and its densities: 51 % zeros, the rest ones except 3.71 % full-size
/// values among the variables dense in B and 0.48 % among the others (1.31 % overall, as
/// measured, projected to 32 GiB).
fn aux_and_densities(shape: &WorkloadShape, seed: u64) -> (Vec<Fr>, DensityBits, DensityBits) {
    let n = shape.aux;
    let chunk = 64 * 1024;
    let parts: Vec<(Vec<Fr>, Vec<u64>, Vec<u64>)> = (0..n.div_ceil(chunk))
        .into_par_iter()
        .map(|c| {
            let lo = c * chunk;
            let hi = (lo + chunk).min(n);
            let mut v = Vec::with_capacity(hi - lo);
            let mut aw = vec![0u64; (hi - lo).div_ceil(64)];
            let mut bw = aw.clone();
            for i in lo..hi {
                let h = mix(seed ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
                let in_b = unit(h) < shape.b_density;
                let in_a = unit(mix(h ^ 1)) < shape.a_density;
                let other = if in_b { 0.0371 } else { 0.0048 };
                let u = unit(mix(h ^ 2));
                v.push(if u < other {
                    full(h)
                } else if u < other + 0.51 {
                    Fr::ZERO
                } else {
                    Fr::ONE
                });
                let (w, b) = ((i - lo) / 64, (i - lo) % 64);
                aw[w] |= u64::from(in_a) << b;
                bw[w] |= u64::from(in_b) << b;
            }
            (v, aw, bw)
        })
        .collect();
    let mut aux = Vec::with_capacity(n);
    let (mut aw, mut bw) = (Vec::new(), Vec::new());
    for (v, a, b) in parts {
        aux.extend_from_slice(&v);
        aw.extend_from_slice(&a);
        bw.extend_from_slice(&b);
    }
    (
        aux,
        DensityBits::from_words(aw, n),
        DensityBits::from_words(bw, n),
    )
}

/// A host assignment of `shape`: a 49 % zero / 18 % one / 33 % other (small values and
/// -1), b 49 % zero / 49 % one / 2 % full-size (docs/reference/circuits.md, "What a real
/// PoRep witness looks like"); a backend forms c = a*b.
pub fn assignment(shape: &WorkloadShape, seed: u64) -> ProvingAssignment {
    let rows = shape.constraints;
    let row = |i: usize| -> (Fr, Fr) {
        let h = mix(seed.rotate_left(17) ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let ua = unit(h);
        let a = if ua < 0.49 {
            Fr::ZERO
        } else if ua < 0.67 {
            Fr::ONE
        } else if ua < 0.72 {
            -Fr::ONE
        } else {
            Fr::from(2 + (h >> 40) % 1000)
        };
        let ub = unit(mix(h ^ 7));
        let b = if ub < 0.49 {
            Fr::ZERO
        } else if ub < 0.98 {
            Fr::ONE
        } else {
            full(h ^ 9)
        };
        (a, b)
    };
    let mut a = vec![Fr::ZERO; rows];
    let mut b = vec![Fr::ZERO; rows];
    a.par_chunks_mut(1 << 16)
        .zip(b.par_chunks_mut(1 << 16))
        .enumerate()
        .for_each(|(k, (a, b))| {
            for j in 0..a.len() {
                (a[j], b[j]) = row(k * (1 << 16) + j);
            }
        });
    let (aux, a_aux_density, b_aux_density) = aux_and_densities(shape, seed);
    let input_assignment: Vec<Fr> = (0..shape.inputs)
        .map(|i| {
            if i == 0 {
                Fr::ONE
            } else {
                full(seed ^ i as u64)
            }
        })
        .collect();
    // ONE occurs in B; the other inputs only in their input constraints (A).
    let mut b_input_density = DensityBits::from_words(Vec::new(), shape.inputs);
    b_input_density.set(0);
    ProvingAssignment {
        pins: Default::default(),
        a,
        b,
        input_assignment,
        aux_assignment: aux,
        a_aux_density,
        b_input_density,
        b_aux_density,
    }
}

/// A copy of `asg` made by all cores (a stand-in for synthesis in pipeline benchmarks),
/// into the thread's reused assignment when the engine set one (filprove_groth16::recycle).
pub fn clone_par(asg: &ProvingAssignment) -> ProvingAssignment {
    let mut out = recycle::take_shell().unwrap_or_default();
    out.reserve_vectors(asg.a.len(), asg.aux_assignment.len());
    for (dst, src) in [
        (&mut out.a, &asg.a),
        (&mut out.b, &asg.b),
        (&mut out.aux_assignment, &asg.aux_assignment),
    ] {
        // Written in parallel straight into the reserved room (no zeroing pass).
        dst.par_extend(src.par_iter().copied());
    }
    out.input_assignment
        .extend_from_slice(&asg.input_assignment);
    out.a_aux_density.clone_from(&asg.a_aux_density);
    out.b_input_density.clone_from(&asg.b_input_density);
    out.b_aux_density.clone_from(&asg.b_aux_density);
    out
}

/// The section lengths parameters for `asg` must have.
pub fn lens_for(asg: &ProvingAssignment) -> Lens {
    let m = 1usize << asg.log_domain_size();
    Lens {
        h: m - 1,
        l: asg.aux_assignment.len(),
        a: asg.input_assignment.len() + asg.a_aux_density.count_ones(),
        b: asg.b_input_density.count_ones() + asg.b_aux_density.count_ones(),
    }
}

/// A host parameter set holding only a random verifying key (its sections stay on the
/// device: see [`device_srs`] and `CudaBackend::install_device_srs`).
pub fn host_stub(inputs: usize, seed: u64) -> Srs {
    let mut k = seed;
    let mut s = || {
        k = mix(k);
        full(k)
    };
    let g1 = |x: Fr| (G1Projective::generator() * x).to_affine();
    let g2 = |x: Fr| (G2Projective::generator() * x).to_affine();
    Srs {
        vk: VerifyingKey {
            alpha_g1: g1(s()),
            beta_g1: g1(s()),
            beta_g2: g2(s()),
            gamma_g2: g2(s()),
            delta_g1: g1(s()),
            delta_g2: g2(s()),
            ic: (0..inputs).map(|_| g1(s())).collect::<Vec<G1Affine>>(),
        },
        h: Vec::new(),
        l: Vec::new(),
        a: Vec::new(),
        b_g1: Vec::new(),
        b_g2: Vec::<G2Affine>::new(),
    }
}

/// Parameters of `lens` made on the device: distinct valid points per section.
pub fn device_srs(gpu: &Gpu, lens: Lens, seed: u64) -> Result<DeviceSrs, ProveError> {
    let t = std::time::Instant::now();
    let h = synth::g1_points(gpu, lens.h, seed ^ 0x11)?;
    let l = synth::g1_points(gpu, lens.l, seed ^ 0x22)?;
    let a = synth::g1_points(gpu, lens.a, seed ^ 0x33)?;
    let b_g1 = synth::g1_points(gpu, lens.b, seed ^ 0x44)?;
    let b_g2 = synth::g2_points(gpu, lens.b, seed ^ 0x55)?;
    gpu.sync()?;
    Ok(DeviceSrs {
        key: 0,
        lens,
        h,
        l,
        a,
        b_g1,
        b_g2,
        h_folded: false,
        device_only: true,
        upload_time: t.elapsed(),
    })
}

/// The host copy of a device-made parameter set: `stub`'s verifying key and every section
/// downloaded from `dev` (the CPU reference proves with it).
pub fn download_srs(gpu: &Gpu, dev: &DeviceSrs, stub: &Srs) -> Result<Srs, ProveError> {
    Ok(Srs {
        vk: stub.vk.clone(),
        h: synth::download_g1(gpu, &dev.h, dev.lens.h)?,
        l: synth::download_g1(gpu, &dev.l, dev.lens.l)?,
        a: synth::download_g1(gpu, &dev.a, dev.lens.a)?,
        b_g1: synth::download_g1(gpu, &dev.b_g1, dev.lens.b)?,
        b_g2: synth::download_g2(gpu, &dev.b_g2, dev.lens.b)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_workload_has_the_measured_mixes() {
        let shape = WorkloadShape::porep_like(16);
        let asg = assignment(&shape, 7);
        assert_eq!(asg.a.len(), shape.constraints);
        assert_eq!(asg.b.len(), shape.constraints);
        assert_eq!(asg.log_domain_size(), 16);
        let rows = asg.b.len() as f64;
        let b_ones = asg.b.iter().filter(|v| **v == Fr::ONE).count() as f64;
        assert!(
            (b_ones / rows - 0.49).abs() < 0.02,
            "b ones {}",
            b_ones / rows
        );
        let n = asg.aux_assignment.len() as f64;
        let zeros = asg
            .aux_assignment
            .iter()
            .filter(|v| v.is_zero_vartime())
            .count() as f64;
        let others = asg
            .aux_assignment
            .iter()
            .filter(|v| !v.is_zero_vartime() && **v != Fr::ONE)
            .count() as f64;
        assert!((zeros / n - 0.51).abs() < 0.02, "zeros {}", zeros / n);
        assert!(
            others / n > 0.005 && others / n < 0.025,
            "others {}",
            others / n
        );
        let b_share = asg.b_aux_density.count_ones() as f64 / n;
        assert!((b_share - shape.b_density).abs() < 0.02, "{b_share}");
        let lens = lens_for(&asg);
        assert_eq!(lens.h, (1 << 16) - 1);
        assert_eq!(lens.a, shape.inputs + asg.a_aux_density.count_ones());
        assert_eq!(lens.b, 1 + asg.b_aux_density.count_ones());
        // Deterministic for a seed.
        assert_eq!(assignment(&shape, 7).aux_assignment, asg.aux_assignment);
        let stub = host_stub(shape.inputs, 3);
        assert_eq!(stub.vk.ic.len(), shape.inputs);
        assert!(stub.h.is_empty());
    }
}
