//! filprove's GPU benchmarks, apart from the product crates: the synthetic workload of one
//! 32 GiB PoRep partition that `filprove synthetic-bench` proves ([`workload`]), and
//! `gpu_bench` (src/bin), the per-kernel benchmark of the NTT, H and MSMs. Both reach the
//! CUDA crate's internals through its hidden `testing` module. [`bounds`] sets each kernel
//! step's time against its bound on the H200.

pub mod bounds;
pub mod workload;
