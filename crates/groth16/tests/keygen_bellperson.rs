//! Parameters from `filprove_groth16::keygen` must be byte-identical to bellperson's
//! `generate_parameters` for the same toxic waste, and bellperson's prover and verifier
//! must work with them.

use bellperson::groth16;
use bellperson::{Circuit, SynthesisError};
use ff::Field;
use filprove_groth16::keygen::{self, R1csAssembly, ToxicWaste};
use filprove_groth16::params::{ParamsHeader, ParamsShape};
use filprove_groth16::{Bls12, Fr, G1Projective, G2Projective, ProvingAssignment, Srs};
use filprove_testkit::{InputsOnly, RandomR1cs};
use group::Group;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The public inputs (without ONE) a test circuit allocates.
trait PublicInputs {
    fn public_inputs(&self) -> Vec<Fr>;
}

impl PublicInputs for RandomR1cs {
    fn public_inputs(&self) -> Vec<Fr> {
        RandomR1cs::public_inputs(self)
    }
}

impl PublicInputs for InputsOnly {
    fn public_inputs(&self) -> Vec<Fr> {
        InputsOnly::public_inputs(self)
    }
}

fn toxic(seed: u64) -> ToxicWaste {
    ToxicWaste::random(&mut ChaCha8Rng::seed_from_u64(seed))
}

fn bellperson_params<C: Circuit<Fr>>(
    c: C,
    t: &ToxicWaste,
) -> Result<groth16::Parameters<Bls12>, SynthesisError> {
    groth16::generate_parameters::<Bls12, _>(
        c,
        G1Projective::generator(),
        G2Projective::generator(),
        t.alpha,
        t.beta,
        t.gamma,
        t.delta,
        t.tau,
    )
}

/// Checks byte identity with bellperson and that bellperson proofs verify.
fn check<C: Circuit<Fr> + Clone + Send + PublicInputs>(c: C, seed: u64) -> Srs {
    let t = toxic(seed);
    let ours = keygen::generate_parameters_with(c.clone(), &t).expect("our keygen");
    let theirs = bellperson_params(c.clone(), &t).expect("bellperson keygen");
    let mut ours_bytes = Vec::new();
    ours.write_to(&mut ours_bytes).unwrap();
    let mut theirs_bytes = Vec::new();
    theirs.write(&mut theirs_bytes).unwrap();
    assert_eq!(Srs::from(&theirs), ours, "decoded parameters differ");
    assert!(ours_bytes == theirs_bytes, "encoded parameters differ");

    // The file's shape is what a captured witness of the circuit needs.
    let header = ParamsHeader::from_bytes(&ours_bytes, "ours").unwrap();
    let pa = ProvingAssignment::synthesize(c.clone()).expect("witness");
    assert_eq!(header.shape(), ParamsShape::of_assignment(&pa));

    let bp: groth16::Parameters<Bls12> = (&ours).into();
    let pvk = groth16::prepare_verifying_key(&bp.vk);
    let mut rng = ChaCha8Rng::seed_from_u64(seed + 1);
    let proof = groth16::create_random_proof(c.clone(), &bp, &mut rng).expect("prove");
    let inputs = c.public_inputs();
    assert!(
        groth16::verify_proof(&pvk, &proof, &inputs).unwrap(),
        "proof must verify"
    );
    let mut wrong = inputs.clone();
    if let Some(x) = wrong.first_mut() {
        *x += Fr::ONE;
        assert!(!groth16::verify_proof(&pvk, &proof, &wrong).unwrap());
    }
    ours
}

#[test]
fn circuits_without_aux() {
    let one = check(InputsOnly(0), 3);
    assert!(one.h.is_empty() && one.l.is_empty() && one.vk.ic.len() == 1);
    let five = check(InputsOnly(4), 4);
    assert_eq!(five.h.len(), 7); // 5 constraints -> domain 8
    assert_eq!(five.vk.ic.len(), 5);
}

#[test]
fn multiplication_chain_and_random_sizes() {
    // Constraint counts (incl. input constraints) around powers of two.
    for (i, (inputs, n)) in [
        (0, 1),
        (1, 2),
        (2, 5),
        (1, 14),
        (3, 29),
        (5, 200),
        (2, 1021),
    ]
    .into_iter()
    .enumerate()
    {
        check(RandomR1cs::new(100 + i as u64, inputs, n), 200 + i as u64);
    }
}

#[test]
fn many_inputs_and_vars_only_in_b_or_c() {
    let mut c = RandomR1cs::new(7, 40, 300);
    c.only_b = 50;
    c.only_c = 60;
    let srs = check(c, 8);
    assert_eq!(srs.vk.ic.len(), 41);
}

#[test]
fn larger_circuit() {
    let mut c = RandomR1cs::new(9, 3, 5000);
    c.only_b = 100;
    check(c, 10);
}

#[test]
fn unconstrained_variable_is_an_error_like_bellperson() {
    let mut c = RandomR1cs::new(5, 1, 10);
    c.unconstrained = true;
    let t = toxic(6);
    let err = keygen::generate_parameters_with(c.clone(), &t).unwrap_err();
    assert_eq!(err.code(), "params_generate");
    assert!(err.to_string().contains("unconstrained"), "{err}");
    assert!(bellperson_params(c, &t).is_err());
}

#[test]
fn degenerate_toxic_waste() {
    let c = RandomR1cs::new(12, 1, 20);
    let mut t = toxic(13);
    t.delta = Fr::ZERO;
    assert!(keygen::generate_parameters_with(c.clone(), &t).is_err());
    let mut t = toxic(13);
    t.gamma = Fr::ZERO;
    assert!(keygen::generate_parameters_with(c.clone(), &t).is_err());
}

#[test]
fn random_rng_entry_point_and_r1cs_counts() {
    let c = RandomR1cs::new(21, 2, 50);
    let r1cs = R1csAssembly::synthesize(c.clone()).unwrap();
    assert_eq!(r1cs.num_inputs(), 3);
    assert_eq!(r1cs.num_aux(), 51);
    assert_eq!(r1cs.num_constraints(), 53);
    let srs = keygen::generate_parameters(c, &mut ChaCha8Rng::seed_from_u64(1)).unwrap();
    assert_eq!(srs.h.len(), 63);
    assert_eq!(srs.l.len(), 51);
}

/// A [`keygen::FixedBaseMul`] that records what it is asked and delegates to the CPU one,
/// optionally returning one point too few or failing.
struct Recording {
    inner: keygen::CpuFixedBase,
    prepared: std::sync::Mutex<Vec<(usize, usize)>>,
    g1_calls: std::sync::Mutex<Vec<usize>>,
    g2_calls: std::sync::Mutex<Vec<usize>>,
    released: std::sync::atomic::AtomicUsize,
    short: bool,
    fail: bool,
    fail_prepare: bool,
}

impl Recording {
    fn new(short: bool, fail: bool) -> Self {
        Self {
            inner: keygen::CpuFixedBase::new(),
            prepared: Default::default(),
            g1_calls: Default::default(),
            g2_calls: Default::default(),
            released: Default::default(),
            short,
            fail,
            fail_prepare: false,
        }
    }
}

impl keygen::FixedBaseMul for Recording {
    fn name(&self) -> String {
        "recording".into()
    }
    fn prepare(&self, g1: usize, g2: usize) -> Result<(), filprove_groth16::ParamsError> {
        self.prepared.lock().unwrap().push((g1, g2));
        if self.fail_prepare {
            return Err(filprove_groth16::ProveError::DeviceOutOfMemory {
                device: "test".into(),
                needed: 1,
                free: 0,
            }
            .into());
        }
        self.inner.prepare(g1, g2)
    }
    fn g1(
        &self,
        s: &[Fr],
    ) -> Result<Vec<filprove_groth16::G1Affine>, filprove_groth16::ParamsError> {
        self.g1_calls.lock().unwrap().push(s.len());
        if self.fail {
            return Err(filprove_groth16::ProveError::Device {
                device: "test".into(),
                message: "injected".into(),
            }
            .into());
        }
        let mut v = self.inner.g1(s)?;
        if self.short {
            v.pop();
        }
        Ok(v)
    }
    fn g2(
        &self,
        s: &[Fr],
    ) -> Result<Vec<filprove_groth16::G2Affine>, filprove_groth16::ParamsError> {
        self.g2_calls.lock().unwrap().push(s.len());
        self.inner.g2(s)
    }
    fn release(&self) {
        self.released
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.release();
    }
}

#[test]
fn fixed_base_seam_gets_every_query_and_its_errors_surface() {
    let mut c = RandomR1cs::new(31, 3, 700);
    c.only_b = 20;
    let t = toxic(32);
    let cpu = keygen::generate_parameters_with(c.clone(), &t).unwrap();
    let rec = Recording::new(false, false);
    let via = keygen::generate_parameters_using(c.clone(), &t, &rec).unwrap();
    assert!(via == cpu, "parameters through the seam differ");
    let g1: Vec<usize> = rec.g1_calls.lock().unwrap().clone();
    let g2: Vec<usize> = rec.g2_calls.lock().unwrap().clone();
    // h, l, ic, a, b_g1; then b_g2.
    assert_eq!(
        g1,
        [
            cpu.h.len(),
            cpu.l.len(),
            cpu.vk.ic.len(),
            cpu.a.len(),
            cpu.b_g1.len()
        ]
    );
    assert_eq!(g2, [cpu.b_g2.len()]);
    assert_eq!(
        *rec.prepared.lock().unwrap(),
        [(g1.iter().sum::<usize>(), cpu.b_g2.len())]
    );
    assert_eq!(rec.released.load(std::sync::atomic::Ordering::SeqCst), 1);

    // The same through a captured R1CS.
    let r1cs = R1csAssembly::synthesize(c.clone()).unwrap();
    let rec = Recording::new(false, false);
    assert!(keygen::generate_from_r1cs_using(&r1cs, &t, &rec).unwrap() == cpu);

    let short = Recording::new(true, false);
    let err = keygen::generate_parameters_using(c.clone(), &t, &short).unwrap_err();
    assert_eq!(err.code(), "params_generate");
    assert!(err.to_string().contains("expected"), "{err}");
    assert_eq!(short.released.load(std::sync::atomic::Ordering::SeqCst), 1);

    let failing = Recording::new(false, true);
    let err = keygen::generate_parameters_using(c, &t, &failing).unwrap_err();
    assert_eq!(err.code(), "params_device");
    assert!(err.to_string().contains("injected"), "{err}");
    assert_eq!(
        failing.released.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
}
