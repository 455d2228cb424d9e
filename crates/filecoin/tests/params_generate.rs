//! Parameter generation entry points: through a given fixed-base implementation the files
//! are those of the default generation; in memory, the parameters equal the written
//! `.params` and only the `.vk` and `.meta` are written (a stale `.params` is removed).

use filprove_filecoin::CircuitSpec;
use filprove_groth16::keygen::{CpuFixedBase, FixedBaseMul};
use filprove_groth16::params::ReadOptions;
use filprove_groth16::progress::{ProgressUnit, RecordedProgress};
use filprove_groth16::{G1Affine, G2Affine, ParamsError, Srs};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// The CPU's multiplications, counting the points asked for.
#[derive(Default)]
struct Counting {
    cpu: CpuFixedBase,
    points: std::sync::atomic::AtomicUsize,
}

impl FixedBaseMul for Counting {
    fn name(&self) -> String {
        "counting".into()
    }
    fn g1(&self, s: &[filprove_groth16::Fr]) -> Result<Vec<G1Affine>, ParamsError> {
        self.points
            .fetch_add(s.len(), std::sync::atomic::Ordering::SeqCst);
        self.cpu.g1(s)
    }
    fn g2(&self, s: &[filprove_groth16::Fr]) -> Result<Vec<G2Affine>, ParamsError> {
        self.points
            .fetch_add(s.len(), std::sync::atomic::Ordering::SeqCst);
        self.cpu.g2(s)
    }
}

#[test]
fn generation_through_a_fixed_base_and_in_memory() {
    let spec = CircuitSpec::from_short_name("winning-2k").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    let seed = 11;
    let files = spec
        .generate_params(&a, &mut ChaCha20Rng::seed_from_u64(seed))
        .unwrap();
    let counting = Counting::default();
    let progress = RecordedProgress::default();
    let using = spec
        .generate_params_reporting(
            &b,
            &mut ChaCha20Rng::seed_from_u64(seed),
            &counting,
            &progress,
        )
        .unwrap();
    let read = |p: &std::path::Path| std::fs::read(p).unwrap();
    assert!(read(&files.params_path) == read(&using.params_path));
    assert_eq!(read(&files.vk_path), read(&using.vk_path));
    assert_eq!(read(&files.meta_path), read(&using.meta_path));
    let srs = Srs::read_file(&files.params_path, &ReadOptions { validate: false }).unwrap();
    let points =
        srs.h.len() + srs.l.len() + srs.a.len() + srs.b_g1.len() + srs.b_g2.len() + srs.vk.ic.len();
    assert_eq!(
        counting.points.load(std::sync::atomic::Ordering::SeqCst),
        points
    );
    // Progress: two uncounted phases, then every point counted once.
    let phases = progress.phases();
    let names: Vec<&str> = phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "capturing the blank circuit",
            "evaluating the QAP at tau",
            "parameter points"
        ]
    );
    assert_eq!((phases[0].total, phases[1].total), (None, None));
    assert_eq!(phases[2].total, Some(points as u64));
    assert_eq!(phases[2].done, points as u64);
    assert_eq!(phases[2].unit, ProgressUnit::Items("points"));

    // In memory: a stale .params in the directory goes; .vk and .meta are written.
    std::fs::create_dir_all(&c).unwrap();
    let stale = spec.params_path(&c);
    std::fs::write(&stale, b"stale").unwrap();
    let mem = spec
        .generate_in_memory(
            &c,
            &mut ChaCha20Rng::seed_from_u64(seed),
            &CpuFixedBase::new(),
        )
        .unwrap();
    assert!(
        mem.srs == srs,
        "in-memory parameters differ from the file's"
    );
    assert!(!stale.exists(), "the stale .params must be removed");
    assert_eq!(read(&mem.vk_path), read(&files.vk_path));
    assert_eq!(read(&mem.meta_path), read(&files.meta_path));
    assert_eq!(mem.vk_path, spec.vk_path(&c));
    let names: Vec<String> = std::fs::read_dir(&c)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}
