//! Native twin of neptune 11's legacy Poseidon circuit (`circuit::poseidon_hash`), as
//! filecoin-hashers' `PoseidonFunction` calls it with its `PoseidonArity::PARAMETERS()`.
//!
//! The gadget tracks each state element as an `Elt`: an allocated number, or a `Num` (a
//! value with a linear combination) that the MDS products build and that is only
//! allocated, with the constraint `lc * ONE = v`, when an S-box needs it. The twin
//! computes the same values with field arithmetic and writes the same aux variables and
//! constraints in the same order:
//!
//! - first full round: the domain tag's S-box is a constant; each input `l` gets
//!   `(l + rk)^2`, its square, and `l4 * (l + rk) + rk'` (3 variables, 3 constraints);
//! - every other S-box (full rounds, and element 0 of each partial round): the allocation
//!   of the `Num`, `l^2`, `l^4`, `l4 * l + rk` (4 variables, 4 constraints; the terminal
//!   round adds no key);
//! - MDS: the full matrix, the pre-sparse matrix at the last initial full round, the
//!   sparse matrices in the partial rounds (only element 0 is new there, the others keep
//!   growing their linear combinations);
//! - the result: element 1 allocated as in `ensure_allocated`.
//!
//! The linear combination of an allocated `Num` marks in A exactly the S-box outputs
//! whose merged coefficient is not zero. Those coefficients depend on the constants only,
//! so they are worked out once per arity (`Template`) from the same matrices, and as a
//! density bit is set however often it is marked, each S-box output that any of them
//! marks is marked once, after the hash.

use std::sync::OnceLock;

use bellperson::gadgets::num::AllocatedNum;
use bellperson::{ConstraintSystem, Index, SynthesisError};
use ff::Field;
use filecoin_hashers::PoseidonArity;
use filprove_groth16::sink::WitnessSink;
use filprove_groth16::Fr;
use generic_array::typenum::U2;

/// The largest arity filecoin-hashers defines constants for.
const MAX_ARITY: usize = 36;

/// Twin of `PoseidonFunction::hash_multi_leaf_circuit::<A, _>(cs, leaves, _)`.
pub fn hash_multi_leaf<A, CS>(
    cs: CS,
    leaves: &[AllocatedNum<Fr>],
) -> Result<AllocatedNum<Fr>, SynthesisError>
where
    A: PoseidonArity,
    CS: ConstraintSystem<Fr>,
    CS::Root: WitnessSink,
{
    poseidon_hash::<A, CS>(cs, leaves)
}

/// Twin of `PoseidonFunction::hash2_circuit(cs, a, b)`.
pub fn hash2<CS>(
    cs: CS,
    a: &AllocatedNum<Fr>,
    b: &AllocatedNum<Fr>,
) -> Result<AllocatedNum<Fr>, SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    CS::Root: WitnessSink,
{
    poseidon_hash::<U2, CS>(cs, &[a.clone(), b.clone()])
}

/// Twin of `neptune::circuit::poseidon_hash(cs, preimage, A::PARAMETERS())`; the preimage
/// holds exactly `A` numbers.
pub fn poseidon_hash<A, CS>(
    mut cs: CS,
    preimage: &[AllocatedNum<Fr>],
) -> Result<AllocatedNum<Fr>, SynthesisError>
where
    A: PoseidonArity,
    CS: ConstraintSystem<Fr>,
    CS::Root: WitnessSink,
{
    let arity = A::to_usize();
    if preimage.len() != arity {
        return Err(invalid(&format!(
            "a preimage of {} numbers for arity {arity}",
            preimage.len()
        )));
    }
    let inputs = preimage
        .iter()
        .map(|n| {
            let value = n.get_value().ok_or(SynthesisError::AssignmentMissing)?;
            Ok((n.get_variable().get_unchecked(), value))
        })
        .collect::<Result<Vec<_>, SynthesisError>>()?;
    let template = template::<A>()?;
    let k = &template.rounds;
    let mut run = Run::new(k);
    let s = cs.get_root();
    run.first_round(s, &inputs);
    for _ in 1..k.half_full {
        run.full_round(s, true);
    }
    for _ in 0..k.partial {
        run.partial_round(s);
    }
    for _ in 1..k.half_full {
        run.full_round(s, true);
    }
    run.terminal_round(s);
    // `elements[1].ensure_allocated(..)`: the variable through `cs` (the gadget's
    // `AllocatedNum::alloc`), the constraint through the sink.
    let value = run.vals[1];
    let num = AllocatedNum::alloc(cs.namespace(|| "hash result"), || Ok(value))?;
    run.enforce_num(cs.get_root(), value);
    let s = cs.get_root();
    for &o in &template.marked {
        s.mark_a(Index::Aux(run.l5[o as usize]));
    }
    Ok(num)
}

fn invalid(what: &str) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(format!("Poseidon: {what}")))
}

/// The constants of one arity, as the gadget reads them.
struct Rounds {
    width: usize,
    half_full: usize,
    partial: usize,
    tag: Fr,
    keys: &'static [Fr],
    m: &'static [Vec<Fr>],
    pre_sparse: &'static [Vec<Fr>],
    /// Per partial round: `w_hat` and `v_rest` of its sparse matrix.
    sparse: Vec<(&'static [Fr], &'static [Fr])>,
}

impl Rounds {
    fn of<A: PoseidonArity>() -> Self {
        let c = A::PARAMETERS();
        Rounds {
            width: c.width(),
            half_full: c.half_full_rounds,
            partial: c.partial_rounds,
            tag: c.domain_tag,
            keys: &c.compressed_round_constants,
            m: &c.mds_matrices.m,
            pre_sparse: &c.pre_sparse_matrix,
            sparse: c
                .sparse_matrixes
                .iter()
                .map(|s| (s.w_hat.as_slice(), s.v_rest.as_slice()))
                .collect(),
        }
    }

    /// The matrix of round `round`'s MDS product: `Ok(matrix)` for a dense one (the
    /// pre-sparse matrix at the last initial full round, else the MDS matrix), `Err(i)`
    /// for the sparse matrix `i` of a partial round.
    fn matrix(&self, round: usize) -> Result<&'static [Vec<Fr>], usize> {
        let sparse_offset = self.half_full - 1;
        if round == sparse_offset {
            Ok(self.pre_sparse)
        } else if round > sparse_offset && round < self.half_full + self.partial {
            Err(round - sparse_offset - 1)
        } else {
            Ok(self.m)
        }
    }

    /// The number of S-box outputs of one hash (the tag's S-box is a constant).
    fn sbox_outputs(&self) -> usize {
        self.width * 2 * self.half_full - 1 + self.partial
    }
}

/// One hash in progress: the state's values, the S-box outputs' variables, and where the
/// round keys and the rounds stand.
struct Run<'a> {
    k: &'a Rounds,
    vals: Vec<Fr>,
    /// Room for the next state in a dense MDS product.
    next: Vec<Fr>,
    /// The aux index of each S-box output, in order.
    l5: Vec<usize>,
    key: usize,
    round: usize,
}

impl<'a> Run<'a> {
    fn new(k: &'a Rounds) -> Self {
        Run {
            k,
            vals: vec![Fr::ZERO; k.width],
            next: vec![Fr::ZERO; k.width],
            l5: Vec::with_capacity(k.sbox_outputs()),
            key: 0,
            round: 0,
        }
    }

    /// The first full round: keys added before and after each S-box, the tag's S-box a
    /// constant, each input's `quintic_s_box_pre_add`.
    fn first_round<S: WitnessSink>(&mut self, s: &mut S, inputs: &[(Index, Fr)]) {
        let w = self.k.width;
        let pre = &self.k.keys[..w];
        let post = &self.k.keys[w..2 * w];
        self.key = 2 * w;
        self.vals[0] = (self.k.tag + pre[0]).pow_vartime([5]) + post[0];
        for (i, &(var, l)) in inputs.iter().enumerate() {
            let (pre, post) = (pre[i + 1], post[i + 1]);
            // square_sum: (l + rk) * (l + rk) = l2.
            let sum = l + pre;
            let l2 = sum.square();
            let l2_var = s.push_aux(l2);
            s.push_constraint(sum, sum);
            mark_var_plus_one(s, var, pre, true);
            mark_var_plus_one(s, var, pre, false);
            let (l4_var, l4) = square(s, l2_var, l2);
            // mul_sum pre-post-add: (l + rk) * l4 = l5 - rk'.
            let product = sum * l4;
            let l5 = product + post;
            let l5_var = s.push_aux(l5);
            s.push_constraint(sum, l4);
            mark_var_plus_one(s, var, pre, true);
            s.mark_b(Index::Aux(l4_var));
            self.l5.push(l5_var);
            self.vals[i + 1] = l5;
        }
        self.mds();
    }

    /// A full round after the first: every element through `quintic_s_box`, with the
    /// round's keys after the S-box unless it is the terminal round.
    fn full_round<S: WitnessSink>(&mut self, s: &mut S, keyed: bool) {
        self.sboxes(s, keyed);
        self.mds();
    }

    /// The terminal full round: every element through `quintic_s_box` with no key, then
    /// of the MDS product only element 1, the hash (the others are never read).
    fn terminal_round<S: WitnessSink>(&mut self, s: &mut S) {
        self.sboxes(s, false);
        self.vals[1] = dense_column(&self.vals, self.k.m, 1);
    }

    /// Every element through `quintic_s_box`, with the round's keys after the S-box when
    /// `keyed`.
    fn sboxes<S: WitnessSink>(&mut self, s: &mut S, keyed: bool) {
        let w = self.k.width;
        for i in 0..w {
            let key = keyed.then(|| self.k.keys[self.key + i]);
            self.vals[i] = self.sbox(s, self.vals[i], key);
        }
        if keyed {
            self.key += w;
        }
    }

    /// A partial round: element 0 through `quintic_s_box` with one key.
    fn partial_round<S: WitnessSink>(&mut self, s: &mut S) {
        let key = self.k.keys[self.key];
        self.key += 1;
        self.vals[0] = self.sbox(s, self.vals[0], Some(key));
        self.mds();
    }

    /// `quintic_s_box` of a `Num` of value `v`: its allocation, `l^2`, `l^4` and
    /// `l4 * l + key`.
    fn sbox<S: WitnessSink>(&mut self, s: &mut S, v: Fr, key: Option<Fr>) -> Fr {
        let l = s.push_aux(v);
        self.enforce_num(s, v);
        let (l2, l2v) = square(s, l, v);
        let (l4, l4v) = square(s, l2, l2v);
        let product = v * l4v;
        let l5v = key.map_or(product, |k| product + k);
        let l5 = s.push_aux(l5v);
        s.push_constraint(v, l4v);
        s.mark_a(Index::Aux(l));
        s.mark_b(Index::Aux(l4));
        self.l5.push(l5);
        l5v
    }

    /// `ensure_allocated`'s constraint `lc * ONE = v` for the next allocated `Num` (its
    /// S-box outputs are marked in A after the hash, [`Template::marked`]).
    fn enforce_num<S: WitnessSink>(&mut self, s: &mut S, v: Fr) {
        s.push_constraint(v, Fr::ONE);
        s.mark_b(Index::Input(0));
    }

    /// The round's MDS product on the values.
    fn mds(&mut self) {
        let vals = &mut self.vals;
        match self.k.matrix(self.round) {
            Ok(m) => {
                for (j, out) in self.next.iter_mut().enumerate() {
                    *out = dense_column(vals, m, j);
                }
                std::mem::swap(vals, &mut self.next);
            }
            Err(i) => {
                let (w_hat, v_rest) = self.k.sparse[i];
                let first = vals.iter().zip(w_hat).map(|(v, w)| *v * w).sum();
                let e0 = vals[0];
                for (v, r) in vals[1..].iter_mut().zip(v_rest) {
                    *v += e0 * r;
                }
                vals[0] = first;
            }
        }
        self.round += 1;
    }
}

/// Element `j` of the product of the state `vals` (a row) and the dense matrix `m`.
fn dense_column(vals: &[Fr], m: &[Vec<Fr>], j: usize) -> Fr {
    vals.iter().zip(m).map(|(v, row)| *v * row[j]).sum()
}

/// `AllocatedNum::square` of the aux variable `var` of value `v`: `var * var = v^2`.
fn square<S: WitnessSink>(s: &mut S, var: usize, v: Fr) -> (usize, Fr) {
    let sq = v.square();
    let out = s.push_aux(sq);
    s.push_constraint(v, v);
    s.mark_a(Index::Aux(var));
    s.mark_b(Index::Aux(var));
    (out, sq)
}

/// Marks the variables of `var + k * ONE` (merged as a linear combination does) in A (only
/// aux variables are tracked there) or in B.
fn mark_var_plus_one<S: WitnessSink>(s: &mut S, var: Index, k: Fr, in_a: bool) {
    if in_a {
        if let Index::Aux(_) = var {
            s.mark_a(var);
        }
        return;
    }
    if var == Index::Input(0) {
        if k + Fr::ONE != Fr::ZERO {
            s.mark_b(var);
        }
        return;
    }
    s.mark_b(var);
    if k != Fr::ZERO {
        s.mark_b(Index::Input(0));
    }
}

/// Per arity: which S-box outputs the linear combinations of the allocated `Num`s mark in
/// A.
struct Template {
    /// The arity's constants.
    rounds: Rounds,
    /// The ordinals (among the hash's S-box outputs) of the variables with a non-zero
    /// merged coefficient in the linear combination of at least one allocated `Num`.
    marked: Vec<u32>,
}

impl Template {
    /// Runs the rounds on the linear combinations instead of the values: each element is
    /// its coefficients over the S-box outputs (the ONE terms, dense in A, are left out).
    fn build(k: Rounds) -> Template {
        let n = k.sbox_outputs();
        let w = k.width;
        let unit = |o: usize| {
            let mut v = vec![Fr::ZERO; n];
            v[o] = Fr::ONE;
            v
        };
        let mut marked = vec![false; n];
        let mut site = |lc: &[Fr]| {
            for (m, c) in marked.iter_mut().zip(lc) {
                *m |= *c != Fr::ZERO;
            }
        };
        let mut next = 0;
        // First round: the tag is a constant, the inputs become S-box outputs 0..arity.
        let mut state: Vec<Vec<Fr>> = std::iter::once(vec![Fr::ZERO; n])
            .chain((1..w).map(|i| unit(i - 1)))
            .collect();
        next += w - 1;
        let total_rounds = 2 * k.half_full + k.partial;
        for round in 0..total_rounds {
            if round > 0 {
                let partial = round >= k.half_full && round < k.half_full + k.partial;
                let elements = if partial { 1 } else { w };
                for e in state.iter_mut().take(elements) {
                    site(e);
                    *e = unit(next);
                    next += 1;
                }
            }
            state = match k.matrix(round) {
                Ok(m) => (0..w)
                    .map(|j| {
                        let mut acc = vec![Fr::ZERO; n];
                        for (e, row) in state.iter().zip(m) {
                            axpy(&mut acc, e, row[j]);
                        }
                        acc
                    })
                    .collect(),
                Err(i) => {
                    let (w_hat, v_rest) = k.sparse[i];
                    let mut first = vec![Fr::ZERO; n];
                    for (e, &c) in state.iter().zip(w_hat) {
                        axpy(&mut first, e, c);
                    }
                    let mut out = vec![first];
                    for j in 1..w {
                        let mut e = state[j].clone();
                        axpy(&mut e, &state[0], v_rest[j - 1]);
                        out.push(e);
                    }
                    out
                }
            };
        }
        // The result: element 1.
        site(&state[1]);
        debug_assert_eq!(next, n);
        let marked = (0..n).filter(|&o| marked[o]).map(|o| o as u32).collect();
        Template { rounds: k, marked }
    }
}

/// `acc += c * x`, term by term.
fn axpy(acc: &mut [Fr], x: &[Fr], c: Fr) {
    for (a, x) in acc.iter_mut().zip(x) {
        if *x != Fr::ZERO {
            *a += *x * c;
        }
    }
}

fn template<A: PoseidonArity>() -> Result<&'static Template, SynthesisError> {
    static CACHE: [OnceLock<Template>; MAX_ARITY + 1] = [const { OnceLock::new() }; MAX_ARITY + 1];
    let arity = A::to_usize();
    let slot = CACHE
        .get(arity)
        .ok_or_else(|| invalid(&format!("no constants for arity {arity}")))?;
    Ok(slot.get_or_init(|| Template::build(Rounds::of::<A>())))
}
