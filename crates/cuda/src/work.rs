//! The work a kernel step does, by a model of its kernel: field products and bytes moved
//! through device memory. Each probe ([`crate::gpu::Gpu::probe`]) carries the work of the
//! launches since the previous one, so `gpu_bench --breakdown` can set every step's time
//! against the machine's bound for that work (products at the multiplier's rate, bytes at
//! the memory's).
//!
//! Counts come from what the host knows at launch: exact for the NTT and the pointwise
//! passes; for the MSMs the entries of a window group and, for the batch-affine levels, the
//! upper bound on each level's points (the exact counts stay on the device). Bytes are
//! the useful ones (a scattered 4-byte write counts 4 bytes, not its 32-byte sector), so a
//! memory-bound step's share of its bound reads low where its accesses scatter.

use std::ops::{Add, AddAssign};

/// Fq products of one mixed XYZZ addition (an accumulator plus an affine point), counting
/// a square as a product: 8 products and 2 squares.
pub const MIXED_ADD_FQ: f64 = 10.0;
/// Fq products of one XYZZ + XYZZ addition: 12 products and 2 squares.
pub const XYZZ_ADD_FQ: f64 = 14.0;
/// Fq products of one batch-affine addition with its share of the batch inversion: 3 for
/// Montgomery's trick, the slope, its square and the new y, and about 0.1 for the
/// inversion of the batch's product.
pub const AFFINE_ADD_FQ: f64 = 6.1;

/// Work of one or more kernel launches.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Work {
    /// Products in Fq (381 bits); a product in Fq2 counts 3 (Karatsuba).
    pub fq: f64,
    /// Products in Fr (255 bits).
    pub fr: f64,
    /// Bytes read and written in device memory.
    pub bytes: f64,
}

impl Work {
    /// No modelled work (the probe only marks a point in time).
    pub const NONE: Self = Self {
        fq: 0.0,
        fr: 0.0,
        bytes: 0.0,
    };

    /// `n` Fr products.
    pub fn fr(n: f64) -> Self {
        Self {
            fr: n,
            ..Self::NONE
        }
    }

    /// `n` Fq products.
    pub fn fq(n: f64) -> Self {
        Self {
            fq: n,
            ..Self::NONE
        }
    }

    /// `n` bytes through device memory.
    pub fn bytes(n: f64) -> Self {
        Self {
            bytes: n,
            ..Self::NONE
        }
    }

    /// This work and `n` more bytes.
    pub fn and_bytes(self, n: f64) -> Self {
        self + Self::bytes(n)
    }
}

impl Add for Work {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self {
            fq: self.fq + o.fq,
            fr: self.fr + o.fr,
            bytes: self.bytes + o.bytes,
        }
    }
}

impl AddAssign for Work {
    fn add_assign(&mut self, o: Self) {
        *self = *self + o;
    }
}

/// One kernel step summed over a run: its probe label, device milliseconds, the probes
/// that closed it and their modelled work.
#[derive(Clone, Debug, PartialEq)]
pub struct StepSum {
    /// The probe label.
    pub label: &'static str,
    /// Device time, milliseconds.
    pub ms: f64,
    /// Probes with this label.
    pub calls: u32,
    /// Their work, summed.
    pub work: Work,
}

/// Sums (label, ms, work) per label, in order of first appearance.
pub fn sum_steps(steps: impl IntoIterator<Item = (&'static str, f64, Work)>) -> Vec<StepSum> {
    let mut sums: Vec<StepSum> = Vec::new();
    for (label, ms, work) in steps {
        match sums.iter_mut().find(|s| s.label == label) {
            Some(s) => {
                s.ms += ms;
                s.calls += 1;
                s.work += work;
            }
            None => sums.push(StepSum {
                label,
                ms,
                calls: 1,
                work,
            }),
        }
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_sum_per_label_in_first_order() {
        let s = sum_steps([
            ("b", 1.0, Work::fr(2.0)),
            ("a", 2.0, Work::bytes(8.0)),
            ("b", 3.0, Work::fq(5.0).and_bytes(1.0)),
        ]);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].label, s[0].ms, s[0].calls), ("b", 4.0, 2));
        assert_eq!(
            s[0].work,
            Work {
                fq: 5.0,
                fr: 2.0,
                bytes: 1.0
            }
        );
        assert_eq!((s[1].label, s[1].calls, s[1].work.bytes), ("a", 1, 8.0));
    }
}
