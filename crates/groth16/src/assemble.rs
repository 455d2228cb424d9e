//! What every backend does before and after its NTTs and MSMs, in one place so that every
//! backend refuses the same ill-shaped request with the same [`ProveError`] and assembles
//! the same proof from the same sums:
//!
//! - [`check_shapes`]: the assignment is internally consistent and fits the proving key
//!   (every section length, the verifying key's ic, a usable delta);
//! - [`assemble`]: the proof from the five MSM results and r, s (bellperson's formulas):
//!   `A = alpha_g1 + a + r delta_g1`, `B = beta_g2 + b_g2 + s delta_g2`,
//!   `C = s A + r (beta_g1 + b_g1 + s delta_g1) - r s delta_g1 + h + l`.

use group::prime::PrimeCurveAffine;
use group::Curve;

use crate::{
    G1Projective, G2Projective, Proof, ProveError, ProvingAssignment, Randomness, Srs, VerifyingKey,
};

/// Section lengths of a proving key (points), whether its sections are on the host or
/// only on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyShape {
    /// h: the domain size minus one.
    pub h: usize,
    /// l: one point per aux variable.
    pub l: usize,
    /// a: the inputs and the aux variables dense in A.
    pub a: usize,
    /// b_g1: the inputs and aux variables dense in B.
    pub b_g1: usize,
    /// b_g2: as b_g1.
    pub b_g2: usize,
}

impl KeyShape {
    /// The section lengths of a host parameter set.
    pub fn of(srs: &Srs) -> Self {
        Self {
            h: srs.h.len(),
            l: srs.l.len(),
            a: srs.a.len(),
            b_g1: srs.b_g1.len(),
            b_g2: srs.b_g2.len(),
        }
    }
}

/// Checks that `asg` is internally consistent and fits a proving key of verifying key `vk`
/// and sections `key`, and that `vk`'s delta is not the identity; returns log2 of the NTT
/// domain. A length that disagrees is [`ProveError::ShapeMismatch`] naming the quantity
/// (the first one checked, in a fixed order); an assignment without the ONE input or a
/// subverted key is [`ProveError::Invalid`].
pub fn check_shapes(
    vk: &VerifyingKey,
    key: &KeyShape,
    asg: &ProvingAssignment,
) -> Result<u32, ProveError> {
    let eq = |what: &'static str, params: usize, circuit: usize| {
        if params == circuit {
            Ok(())
        } else {
            Err(ProveError::ShapeMismatch {
                what,
                params,
                circuit,
            })
        }
    };
    let n = asg.a.len();
    eq("b evaluations vs a evaluations", n, asg.b.len())?;
    let inputs = asg.input_assignment.len();
    let aux = asg.aux_assignment.len();
    if inputs == 0 {
        return Err(ProveError::Invalid("assignment has no ONE input".into()));
    }
    eq("a_aux_density length vs aux", aux, asg.a_aux_density.len())?;
    eq("b_aux_density length vs aux", aux, asg.b_aux_density.len())?;
    eq(
        "b_input_density length vs inputs",
        inputs,
        asg.b_input_density.len(),
    )?;
    let lg = asg.log_domain_size();
    eq("h (domain - 1)", key.h, (1usize << lg) - 1)?;
    eq("l (aux)", key.l, aux)?;
    eq(
        "a (inputs + aux dense in A)",
        key.a,
        inputs + asg.a_aux_density.count_ones(),
    )?;
    let b = asg.b_input_density.count_ones() + asg.b_aux_density.count_ones();
    eq("b_g1 (inputs + aux dense in B)", key.b_g1, b)?;
    eq("b_g2 (inputs + aux dense in B)", key.b_g2, b)?;
    eq("vk ic (inputs)", vk.ic.len(), inputs)?;
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(ProveError::Invalid(
            "delta is the identity (subverted parameters)".into(),
        ));
    }
    Ok(lg)
}

/// The five MSMs of one proof: each query of the proving key against its scalars.
#[derive(Clone, Copy, Debug)]
pub struct MsmResults {
    /// `<h, (AB - C)/Z coefficients>`.
    pub h: G1Projective,
    /// `<l, aux>`.
    pub l: G1Projective,
    /// `<a, inputs ++ aux dense in A>`.
    pub a: G1Projective,
    /// `<b_g1, inputs and aux dense in B>`.
    pub b_g1: G1Projective,
    /// `<b_g2, the same scalars>`.
    pub b_g2: G2Projective,
}

/// The proof from the MSM results, the verifying key and r, s (the module's formulas;
/// byte-identical to bellperson's `create_proof` with the same r, s).
pub fn assemble(vk: &VerifyingKey, randomness: Randomness, msm: &MsmResults) -> Proof {
    let Randomness { r, s } = randomness;
    let delta_g1 = G1Projective::from(vk.delta_g1);
    let g_a = msm.a + vk.alpha_g1 + delta_g1 * r;
    let g_b = msm.b_g2 + vk.beta_g2 + G2Projective::from(vk.delta_g2) * s;
    let b_g1 = msm.b_g1 + vk.beta_g1 + delta_g1 * s;
    let g_c = g_a * s + b_g1 * r - delta_g1 * (r * s) + msm.h + msm.l;
    Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keygen::generate_parameters;
    use crate::{Fr, G1Affine, G2Affine};
    use ff::Field;
    use filprove_testkit::Chain;
    use group::Group;
    use rand_core::SeedableRng;

    fn chain_and_key(rounds: usize) -> (ProvingAssignment, Srs) {
        let asg = ProvingAssignment::synthesize(Chain::new(Fr::from(3u64), rounds)).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(rounds as u64);
        let srs = generate_parameters(Chain::blank(rounds), &mut rng).unwrap();
        (asg, srs)
    }

    fn what(e: ProveError) -> &'static str {
        match e {
            ProveError::ShapeMismatch { what, .. } => what,
            other => panic!("expected a shape mismatch, got {other}"),
        }
    }

    #[test]
    fn a_fitting_assignment_gives_its_domain() {
        let (asg, srs) = chain_and_key(20);
        let lg = check_shapes(&srs.vk, &KeyShape::of(&srs), &asg).unwrap();
        assert_eq!(lg, asg.log_domain_size());
        assert_eq!(srs.h.len(), (1 << lg) - 1);
    }

    #[test]
    fn each_section_that_disagrees_is_named() {
        let (asg, srs) = chain_and_key(20);
        let fits = KeyShape::of(&srs);
        type Edit = fn(&mut KeyShape);
        let cases: [(&str, Edit); 5] = [
            ("h (domain - 1)", |k| k.h += 1),
            ("l (aux)", |k| k.l -= 1),
            ("a (inputs + aux dense in A)", |k| k.a += 1),
            ("b_g1 (inputs + aux dense in B)", |k| k.b_g1 -= 1),
            ("b_g2 (inputs + aux dense in B)", |k| k.b_g2 += 1),
        ];
        for (name, edit) in cases {
            let mut key = fits;
            edit(&mut key);
            let e = check_shapes(&srs.vk, &key, &asg).unwrap_err();
            assert_eq!(what(e), name);
        }
        let mut vk = srs.vk.clone();
        vk.ic.push(G1Affine::generator());
        assert_eq!(
            what(check_shapes(&vk, &fits, &asg).unwrap_err()),
            "vk ic (inputs)"
        );
    }

    #[test]
    fn an_inconsistent_assignment_is_refused_before_the_key_is_read() {
        let (good, srs) = chain_and_key(20);
        // Sections of another circuit: an inconsistency inside the assignment wins.
        let key = KeyShape {
            h: 0,
            l: 0,
            a: 0,
            b_g1: 0,
            b_g2: 0,
        };
        let mut short_b = good.clone();
        short_b.b.pop();
        assert_eq!(
            what(check_shapes(&srs.vk, &key, &short_b).unwrap_err()),
            "b evaluations vs a evaluations"
        );
        let mut long_density = good.clone();
        long_density.a_aux_density.push_clear();
        assert_eq!(
            what(check_shapes(&srs.vk, &key, &long_density).unwrap_err()),
            "a_aux_density length vs aux"
        );
        let mut no_one = good.clone();
        no_one.input_assignment.clear();
        assert!(matches!(
            check_shapes(&srs.vk, &key, &no_one),
            Err(ProveError::Invalid(_))
        ));
    }

    #[test]
    fn a_key_with_identity_delta_is_refused() {
        let (asg, srs) = chain_and_key(4);
        let key = KeyShape::of(&srs);
        let mut vk = srs.vk.clone();
        vk.delta_g2 = G2Affine::identity();
        assert!(matches!(
            check_shapes(&vk, &key, &asg),
            Err(ProveError::Invalid(_))
        ));
        vk = srs.vk.clone();
        vk.delta_g1 = G1Affine::identity();
        assert!(matches!(
            check_shapes(&vk, &key, &asg),
            Err(ProveError::Invalid(_))
        ));
    }

    /// With every point a known multiple of the generator, the proof's discrete logs
    /// follow from the formulas in the scalar field alone.
    #[test]
    fn assembly_follows_the_formulas_in_the_exponent() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(27);
        let mut x = || Fr::random(&mut rng);
        let (alpha, beta, delta) = (x(), x(), x());
        let (h, l, a, b1, b2) = (x(), x(), x(), x(), x());
        let (r, s) = (x(), x());
        let g1 = |v: Fr| G1Projective::generator() * v;
        let g2 = |v: Fr| G2Projective::generator() * v;
        let vk = VerifyingKey {
            alpha_g1: g1(alpha).to_affine(),
            beta_g1: g1(beta).to_affine(),
            beta_g2: g2(beta).to_affine(),
            gamma_g2: G2Affine::generator(),
            delta_g1: g1(delta).to_affine(),
            delta_g2: g2(delta).to_affine(),
            ic: vec![G1Affine::generator()],
        };
        let msm = MsmResults {
            h: g1(h),
            l: g1(l),
            a: g1(a),
            b_g1: g1(b1),
            b_g2: g2(b2),
        };
        let proof = assemble(&vk, Randomness { r, s }, &msm);
        let log_a = alpha + a + r * delta;
        let log_b = beta + b2 + s * delta;
        let log_c = s * log_a + r * (beta + b1 + s * delta) - r * s * delta + h + l;
        assert_eq!(proof.a, g1(log_a).to_affine());
        assert_eq!(proof.b, g2(log_b).to_affine());
        assert_eq!(proof.c, g1(log_c).to_affine());
    }
}
