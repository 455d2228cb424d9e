//! Each kernel step's time set against its own bound: the step's modelled work
//! (filprove-cuda's `work` module: Fq and Fr products, bytes through device memory) at the
//! H200's rates. `gpu_bench --breakdown` prints the share for every step.
//!
//! The rates (docs/reference/h200.md, "Lower bounds"): 132 SMs at 1.98 GHz issue 28 wide
//! 32x32-bit multiplies per SM per clock; a 381-bit Montgomery product (12 limbs of 32 bits)
//! takes 288 of them plus 12 low ones, about 10.5 SM-clocks, a 255-bit one (8 limbs)
//! about 4.5; device memory copies at 4.27 TB/s (read plus write). A step's bound is the
//! larger of its products' time and its bytes' time. The product by columns runs at
//! these rates on its own (mulbench: 2.54e10 Fq, 5.85e10 Fr per second; decision 005).

use filprove_cuda::testing::work::Work;

/// The machine a bound is computed for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Fq products per second at the multiplier's full rate.
    pub fq_per_s: f64,
    /// Fr products per second at the multiplier's full rate.
    pub fr_per_s: f64,
    /// Bytes per second through device memory (reads plus writes).
    pub bytes_per_s: f64,
}

impl Machine {
    /// One NVIDIA H200 (132 SMs, 1.98 GHz, HBM3e).
    pub const H200: Self = Self {
        fq_per_s: 2.5e10,
        fr_per_s: 5.8e10,
        bytes_per_s: 4.27e12,
    };

    /// The least time `work` can take here, and what sets it.
    pub fn bound(&self, work: &Work) -> Bound {
        let products = (work.fq / self.fq_per_s + work.fr / self.fr_per_s) * 1e3;
        let memory = work.bytes / self.bytes_per_s * 1e3;
        if products >= memory {
            Bound {
                ms: products,
                by: Limit::Products,
            }
        } else {
            Bound {
                ms: memory,
                by: Limit::Memory,
            }
        }
    }
}

/// What bounds a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Field products at the multiplier's rate.
    Products,
    /// Bytes at device memory's rate.
    Memory,
}

/// A step's least time on a machine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    /// Milliseconds.
    pub ms: f64,
    /// What sets it.
    pub by: Limit,
}

impl Bound {
    /// The bound as a share of `measured_ms` (100 % runs at the bound); `None` without a
    /// model (no work) or a measured time.
    pub fn percent_of(&self, measured_ms: f64) -> Option<f64> {
        (self.ms > 0.0 && measured_ms > 0.0).then(|| 100.0 * self.ms / measured_ms)
    }

    /// "381.2 ms products" or "-" without a model.
    pub fn describe(&self) -> String {
        if self.ms <= 0.0 {
            return "no model".into();
        }
        let by = match self.by {
            Limit::Products => "products",
            Limit::Memory => "memory",
        };
        format!("{:.1} ms {by}", self.ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The H MSM's levels at 2^27 (12 windows of c = 22, about 0.97 additions per point and
    /// window at 6.1 Fq products): 381 ms of products, more than their bytes take; a pass of
    /// bytes alone is memory-bound; no work has no bound.
    #[test]
    fn bounds_follow_the_larger_limit() {
        let adds = 12.0 * 0.97 * (1u64 << 27) as f64;
        let levels = Work::fq(adds * 6.1).and_bytes(adds * 402.0);
        let b = Machine::H200.bound(&levels);
        assert_eq!(b.by, Limit::Products);
        assert!((b.ms - 381.2).abs() < 1.0, "{}", b.ms);
        let pct = b.percent_of(713.0).unwrap();
        assert!((pct - 53.5).abs() < 0.5, "{pct}");
        let scan = Machine::H200.bound(&Work::bytes(4.27e9));
        assert_eq!((scan.by, scan.ms), (Limit::Memory, 1.0));
        let none = Machine::H200.bound(&Work::NONE);
        assert_eq!(none.percent_of(5.0), None);
        assert_eq!(none.describe(), "no model");
    }

    /// A 2^27 NTT (27 butterfly stages, half an Fr product per element each, four passes
    /// over 4 GiB) is bound by its products: about 31 ms.
    #[test]
    fn an_ntt_is_bound_by_its_products() {
        let n = (1u64 << 27) as f64;
        let ntt = Work::fr(27.0 * n / 2.0).and_bytes(4.0 * 2.0 * 32.0 * n);
        let b = Machine::H200.bound(&ntt);
        assert_eq!(b.by, Limit::Products);
        assert!((b.ms - 31.2).abs() < 0.5, "{}", b.ms);
    }
}
