//! The R1CS of a circuit made of a head and identical parts, from the circuit of the head
//! and one part.
//!
//! A PoRep partition of a 32 GiB sector is a small head followed by 18 challenge proofs of
//! one shape, each reading only the head's variables besides its own (the premise of
//! [`crate::parts`]). In a blank circuit (no witness) nothing can depend on values, so part
//! `j`'s constraints are part 0's with every row moved by `j` parts and every variable
//! that part 0 allocated (inputs and aux) moved by `j` parts' worth of variables; head
//! variables stay. Capturing the head and part 0 (one eighteenth of the circuit) and
//! shifting part 0's entries gives the whole R1CS, entry for entry what
//! [`R1csAssembly::synthesize`] gives (tested here and on Filecoin's PoRep circuits), in
//! seconds instead of minutes of single-threaded synthesis.

use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use ff::Field;
use rayon::prelude::*;

use super::r1cs::{R1csAssembly, SparseMatrix, INDEX_MASK, INPUT_BIT, ONE_BIT};
use crate::error::ParamsError;
use crate::parts::Lengths;
use crate::Fr;

/// Records the lengths of the assembly when the first namespace whose path is `marker`
/// opens: the end of the head.
struct Marking<'a> {
    inner: R1csAssembly,
    /// The namespace path of part 0, outermost first.
    marker: Vec<&'a str>,
    /// The open namespaces, outermost first.
    open: Vec<String>,
    head: Option<Lengths>,
}

impl Marking<'_> {
    fn lengths(&self) -> Lengths {
        Lengths {
            constraints: self.inner.num_constraints,
            inputs: self.inner.num_inputs,
            aux: self.inner.num_aux,
        }
    }
}

impl ConstraintSystem<Fr> for Marking<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, a: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inner.alloc(a, f)
    }

    fn alloc_input<F, A, AR>(&mut self, a: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inner.alloc_input(a, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, a: A, la: LA, lb: LB, lc: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.inner.enforce(a, la, lb, lc)
    }

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        let name = name().into();
        let at_marker = self.head.is_none()
            && self.open.len() + 1 == self.marker.len()
            && self.open.iter().zip(&self.marker).all(|(a, b)| a == b)
            && self.marker.last() == Some(&name.as_str());
        if at_marker {
            self.head = Some(self.lengths());
        }
        self.open.push(name);
    }

    fn pop_namespace(&mut self) {
        self.open.pop();
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// How part 0's variables move for part `j`.
#[derive(Clone, Copy)]
struct Shift {
    head: Lengths,
    part: Lengths,
}

impl Shift {
    /// Column `col` (flags and index) of part 0, as part `j` has it.
    fn col(self, col: u32, j: usize) -> Option<u32> {
        let index = (col & INDEX_MASK) as usize;
        let (start, step) = if col & INPUT_BIT != 0 {
            (self.head.inputs, self.part.inputs)
        } else {
            (self.head.aux, self.part.aux)
        };
        let moved = if index >= start {
            index + j * step
        } else {
            index
        };
        let moved = u32::try_from(moved).ok().filter(|&m| m <= INDEX_MASK)?;
        Some((col & !INDEX_MASK) | moved)
    }
}

/// `m` (head rows, then part 0's) with part 0's entries repeated for parts 1..`parts`.
fn replicate(m: &SparseMatrix, shift: Shift, parts: usize) -> Result<SparseMatrix, ParamsError> {
    let head_rows = shift.head.constraints as u32;
    let split = m.rows.partition_point(|&r| r < head_rows);
    let head_coeffs = m.cols[..split]
        .iter()
        .filter(|&&c| c & ONE_BIT == 0)
        .count();
    let (part_rows, part_cols) = (&m.rows[split..], &m.cols[split..]);
    let part_coeffs = &m.coeffs[head_coeffs..];
    let (n, k) = (part_rows.len(), part_coeffs.len());

    let mut rows = m.rows[..split].to_vec();
    let mut cols = m.cols[..split].to_vec();
    rows.resize(split + parts * n, 0);
    cols.resize(split + parts * n, 0);
    let overflow = std::sync::atomic::AtomicBool::new(false);
    if n > 0 {
        rows[split..]
            .par_chunks_mut(n)
            .zip(cols[split..].par_chunks_mut(n))
            .enumerate()
            .for_each(|(j, (r_out, c_out))| {
                let dr = (j * shift.part.constraints) as u32;
                for (i, (&r, &c)) in part_rows.iter().zip(part_cols).enumerate() {
                    r_out[i] = r + dr;
                    match shift.col(c, j) {
                        Some(c) => c_out[i] = c,
                        None => overflow.store(true, std::sync::atomic::Ordering::Relaxed),
                    }
                }
            });
    }
    if overflow.into_inner() {
        return Err(ParamsError::Generate(
            "parted circuit too large for the keygen representation (at most 2^30 variables)"
                .into(),
        ));
    }
    let mut coeffs = m.coeffs[..head_coeffs].to_vec();
    coeffs.reserve(parts * k);
    for _ in 0..parts {
        coeffs.extend_from_slice(part_coeffs);
    }
    Ok(SparseMatrix { rows, cols, coeffs })
}

impl R1csAssembly {
    /// The R1CS of a circuit of `parts` identical parts after a head, captured from
    /// `one_part`: the same circuit with only its first part, which begins where the first
    /// namespace whose path is `marker` opens (names joined by `/`, outermost first, e.g.
    /// `challenge_0` or `outer namespace/sector_0`). Equal to [`R1csAssembly::synthesize`] of the
    /// whole circuit when the parts are alike (as in any blank circuit of repeated
    /// gadgets); an error when the marker is missing or the sizes overflow.
    pub fn synthesize_parted<C: Circuit<Fr>>(
        one_part: C,
        parts: usize,
        marker: &str,
    ) -> Result<Self, ParamsError> {
        let mut cs = Marking {
            inner: Self::default(),
            marker: marker.split('/').collect(),
            open: Vec::new(),
            head: None,
        };
        cs.alloc_input(|| "one", || Ok(Fr::ONE))
            .map_err(|e| ParamsError::Generate(format!("allocating ONE: {e}")))?;
        one_part
            .synthesize(&mut cs)
            .map_err(|e| ParamsError::Generate(format!("synthesis failed: {e}")))?;
        let head = cs.head.ok_or_else(|| {
            ParamsError::Generate(format!(
                "no top-level namespace {marker:?}: not a parted circuit"
            ))
        })?;
        let end = cs.lengths();
        let one = cs.inner;
        if one.overflow {
            return Err(ParamsError::Generate("circuit too large for keygen".into()));
        }
        let part = Lengths {
            constraints: end.constraints - head.constraints,
            inputs: end.inputs - head.inputs,
            aux: end.aux - head.aux,
        };
        let total = |h: usize, p: usize| h + parts * p;
        let num_constraints = total(head.constraints, part.constraints);
        if u32::try_from(num_constraints + total(head.inputs, part.inputs)).is_err() {
            return Err(ParamsError::Generate(
                "parted circuit has over 2^32 constraints".into(),
            ));
        }
        let shift = Shift { head, part };
        let (a, (b, c)) = rayon::join(
            || replicate(&one.a, shift, parts),
            || {
                rayon::join(
                    || replicate(&one.b, shift, parts),
                    || replicate(&one.c, shift, parts),
                )
            },
        );
        let mut whole = Self {
            num_inputs: total(head.inputs, part.inputs),
            num_aux: total(head.aux, part.aux),
            num_constraints,
            a: a?,
            b: b?,
            c: c?,
            overflow: false,
        };
        whole.enforce_inputs();
        Ok(whole)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head of two inputs and an aux, then `parts` parts that each allocate an input and
    /// three aux and constrain them with the head's variables, coefficients of every kind
    /// (one, minus one, powers of two, full-size, zero, repeated terms).
    struct Parted {
        parts: usize,
        /// Parts inside a namespace of this name.
        outer: Option<&'static str>,
    }

    impl Circuit<Fr> for Parted {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            match self.outer {
                Some(name) => self.body(&mut cs.namespace(|| name)),
                None => self.body(cs),
            }
        }
    }

    impl Parted {
        fn body<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let h0 = cs.alloc_input(|| "h0", || Ok(Fr::from(3u64)))?;
            let h1 = cs.alloc_input(|| "h1", || Ok(Fr::from(5u64)))?;
            let h2 = cs.alloc(|| "h2", || Ok(Fr::from(15u64)))?;
            cs.enforce(|| "head", |lc| lc + h0, |lc| lc + h1, |lc| lc + h2);
            let big = Fr::from(0x1234_5678_9abc_def0u64).square();
            for j in 0..self.parts {
                let mut ns = cs.namespace(|| format!("part_{j}"));
                let cs = &mut ns;
                let x = cs.alloc_input(|| "x", || Ok(Fr::from(j as u64)))?;
                let y = cs.alloc(|| "y", || Ok(Fr::ONE))?;
                let z = cs.alloc(|| "z", || Ok(Fr::ONE))?;
                let w = cs.alloc(|| "w", || Ok(Fr::ONE))?;
                cs.enforce(
                    || "a",
                    |lc| lc + x + (Fr::from(2u64), y) - h2,
                    |lc| lc + CS::one() + (big, h0),
                    |lc| lc + z + z - (Fr::ZERO, w),
                );
                {
                    let mut inner = cs.namespace(|| "part_0");
                    inner.enforce(|| "b", |lc| lc + w, |lc| lc + h1 + y, |lc| lc + (big, x));
                }
                cs.enforce(|| "c", |lc| lc, |lc| lc + z, |lc| lc);
            }
            Ok(())
        }
    }

    #[test]
    fn parted_capture_equals_whole_capture() {
        for (outer, marker) in [(None, "part_0"), (Some("outer"), "outer/part_0")] {
            for parts in [1, 2, 5, 18] {
                let whole = R1csAssembly::synthesize(Parted { parts, outer }).unwrap();
                let one = Parted { parts: 1, outer };
                let parted = R1csAssembly::synthesize_parted(one, parts, marker).unwrap();
                assert_eq!(parted.num_constraints(), whole.num_constraints(), "{parts}");
                assert_eq!(parted, whole, "{parts} parts under {marker}");
            }
        }
    }

    #[test]
    fn a_circuit_without_the_marker_is_refused() {
        for marker in ["challenge_0", "part_1", "outer/part_0"] {
            let one = Parted {
                parts: 1,
                outer: None,
            };
            let err = R1csAssembly::synthesize_parted(one, 3, marker).unwrap_err();
            assert!(err.to_string().contains(marker), "{err}");
        }
    }
}
