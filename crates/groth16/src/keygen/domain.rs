//! The evaluation domain and the Lagrange basis at tau, as bellperson's generator uses them.

use ff::{BatchInvert, Field, PrimeField};
use rayon::prelude::*;

use crate::error::ParamsError;
use crate::Fr;

/// Elements per parallel task.
const CHUNK: usize = 1 << 14;

/// log2 of the domain for `n` constraints: the smallest power of two >= n (at least 1), as
/// bellperson's `EvaluationDomain::from_coeffs`; errors where that does.
pub(crate) fn log_domain(n: usize) -> Result<u32, ParamsError> {
    let m = n.max(1).next_power_of_two();
    let exp = m.trailing_zeros();
    if exp >= Fr::S {
        return Err(ParamsError::Generate(format!(
            "{n} constraints need a domain of 2^{exp}; BLS12-381's scalar field has 2^{}",
            Fr::S - 1
        )));
    }
    Ok(exp)
}

/// The primitive 2^exp-th root of unity bellperson uses: `ROOT_OF_UNITY` squared down.
pub(crate) fn omega(exp: u32) -> Fr {
    let mut w = Fr::ROOT_OF_UNITY;
    for _ in exp..Fr::S {
        w = w.square();
    }
    w
}

/// `out[i] = start * x^i`, in parallel.
pub(crate) fn geometric(out: &mut [Fr], start: Fr, x: Fr) {
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut v = start * x.pow_vartime([(c * CHUNK) as u64]);
            for o in chunk {
                *o = v;
                v *= x;
            }
        });
}

/// The Lagrange basis of the domain of size 2^exp evaluated at tau:
/// L_j(tau) = (tau^m - 1) / m * omega^j / (tau - omega^j), one batch inversion per chunk.
///
/// Equal to what bellperson obtains by an inverse FFT of the powers of tau; when tau lies
/// in the domain (tau = omega^k) that is the unit vector e_k, returned here too.
pub(crate) fn lagrange_at(tau: Fr, exp: u32) -> Vec<Fr> {
    let m = 1usize << exp;
    let w = omega(exp);
    let mut out = vec![Fr::ZERO; m];
    geometric(&mut out, Fr::ONE, w);
    let z = tau.pow_vartime([m as u64]) - Fr::ONE;
    if bool::from(z.is_zero()) {
        let k = out.par_iter().position_first(|x| *x == tau);
        out.par_iter_mut().for_each(|x| *x = Fr::ZERO);
        if let Some(k) = k {
            out[k] = Fr::ONE;
        }
        return out;
    }
    let m_inv = Fr::from(m as u64).invert().unwrap_or(Fr::ZERO);
    let c = z * m_inv;
    out.par_chunks_mut(CHUNK).for_each(|chunk| {
        // Denominators tau - omega^j are non-zero since tau is not in the domain.
        let mut den: Vec<Fr> = chunk.iter().map(|wj| tau - wj).collect();
        den.iter_mut().batch_invert();
        for (o, d) in chunk.iter_mut().zip(&den) {
            *o = c * *o * d;
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    /// Reference: L_j(tau) = (1/m) sum_i tau^i omega^(-ij), the inverse DFT.
    fn naive(tau: Fr, exp: u32) -> Vec<Fr> {
        let m = 1usize << exp;
        let winv = omega(exp).invert().unwrap();
        let m_inv = Fr::from(m as u64).invert().unwrap();
        (0..m)
            .map(|j| {
                let x = winv.pow_vartime([j as u64]);
                let mut acc = Fr::ZERO;
                let mut t = Fr::ONE;
                let mut xi = Fr::ONE;
                for _ in 0..m {
                    acc += t * xi;
                    t *= tau;
                    xi *= x;
                }
                acc * m_inv
            })
            .collect()
    }

    #[test]
    fn lagrange_matches_inverse_dft() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for exp in 0..6 {
            let tau = Fr::random(&mut rng);
            assert_eq!(lagrange_at(tau, exp), naive(tau, exp), "exp {exp}");
            assert_eq!(lagrange_at(Fr::ZERO, exp), naive(Fr::ZERO, exp));
            let in_domain = omega(exp).pow_vartime([3]);
            assert_eq!(lagrange_at(in_domain, exp), naive(in_domain, exp));
        }
        assert_eq!(omega(5).pow_vartime([32]), Fr::ONE);
        assert_ne!(omega(5).pow_vartime([16]), Fr::ONE);
        assert_eq!(log_domain(0).unwrap(), 0);
        assert_eq!(log_domain(5).unwrap(), 3);
        assert!(log_domain(1 << 32).is_err());
    }
}
