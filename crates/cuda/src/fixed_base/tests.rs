//! The fixed-base plan and tables on the CPU (the GPU's products: tests/fixed_base.rs).

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;

use super::*;

#[test]
fn window_choice_follows_the_cost_model_and_the_cap() {
    let gib = 1u64 << 30;
    // porep-32g: 427 M G1, 33 M G2 points.
    assert_eq!(choose_window(427_000_000, 96, 6 * gib), 22);
    assert_eq!(choose_window(33_100_000, 192, 6 * gib), 22);
    // 2^24 (8.25 GiB) would save a row for G1 with a larger cap.
    assert_eq!(choose_window(427_000_000, 96, 9 * gib), 24);
    // Under a cap of the L2 size: 16 is the widest that fits 60 MB for G1.
    assert_eq!(choose_window(427_000_000, 96, 60_000_000), 16);
    assert_eq!(choose_window(33_100_000, 192, 60_000_000), 15);
    // Small counts: small tables.
    let w = choose_window(1000, 96, 6 * gib);
    assert!((7..=9).contains(&w), "{w}");
    assert_eq!(choose_window(1, 96, 6 * gib), choose_window(0, 96, 6 * gib));
    // Nothing fits: the narrowest window.
    assert_eq!(choose_window(1 << 20, 96, 0), MIN_WINDOW);
    for w in MIN_WINDOW..=MAX_WINDOW {
        // Canonical scalars are below 2^255: the top row never carries out.
        assert!(rows(w) * w >= 256 && (rows(w) - 1) * w < 256, "{w}");
    }
    assert_eq!(table_bytes(22, 96), 12 * (1 << 21) * 96);
    assert_eq!(table_bytes(16, 96), 48 << 20);
}

#[test]
fn plan_accounts_buffers_then_tables() {
    let o = FixedBaseOptions::default();
    let p = plan(&o, 427_000_000, 33_100_000, 140 << 30);
    assert_eq!((p.g1_window, p.g2_window), (22, 22));
    assert_eq!(p.buffer_bytes, 3 * (1 << 22) * 320);
    assert_eq!(p.pinned_bytes, 3 * (1 << 22) * 128);
    assert_eq!(
        p.device_bytes(),
        p.buffer_bytes + table_bytes(22, 96) + table_bytes(22, 192)
    );
    // An 8 GiB device: the G2 table gets what the G1 table and buffers leave.
    let small = plan(&o, 427_000_000, 33_100_000, 8 << 30);
    assert_eq!(small.g1_window, 22);
    assert!(
        small.device_bytes() + DEVICE_RESERVE <= 8 << 30,
        "{small:?}"
    );
    assert!(small.g2_window < 22);
    // Explicit windows are taken as they are.
    let fixed = FixedBaseOptions {
        g1_window: Some(16),
        g2_window: Some(15),
        ..o.clone()
    };
    let p = plan(&fixed, 10, 10, 1 << 30);
    assert_eq!((p.g1_window, p.g2_window), (16, 15));
    // The buffers' share of each point is the larger of G1's and G2's.
    assert!(SLOT_DEVICE_BYTES_PER_POINT >= (32 + 192 + 96) as u64);
    assert!(2 * SLOT_DEVICE_BYTES_PER_POINT >= (32 + 384 + 192) as u64);
}

#[test]
fn options_are_validated() {
    assert!(FixedBaseOptions::default().validate().is_ok());
    for bad in [
        FixedBaseOptions {
            g1_window: Some(1),
            ..Default::default()
        },
        FixedBaseOptions {
            g2_window: Some(25),
            ..Default::default()
        },
        FixedBaseOptions {
            chunk_points: 1,
            ..Default::default()
        },
        FixedBaseOptions {
            slots: 1,
            ..Default::default()
        },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
    }
}

/// Every entry the device makes is `a[k][j mod 2^lo] + b[k][j >> lo]`: check that sum
/// against `j 2^(w k) G` on the host for every entry of small windows and sampled
/// entries of w = 22.
fn check_small_tables<P>(w: u32, sample: &[usize])
where
    P: group::Curve + group::Group<Scalar = Fr> + Send + Sync + std::fmt::Debug,
    P::AffineRepr: Send + Sync + Copy + PartialEq + std::fmt::Debug + PrimeCurveAffine<Curve = P>,
{
    let (a, b) = small_tables::<P>(w);
    let lo = split_bits(w);
    let (na, nb) = (1usize << lo, (1usize << (w - 1 - lo)) + 1);
    let half = 1usize << (w - 1);
    assert_eq!(a.len(), rows(w) as usize * na);
    assert_eq!(b.len(), rows(w) as usize * nb);
    let all: Vec<usize> = (1..=half).collect();
    let js = if sample.is_empty() { &all[..] } else { sample };
    for k in 0..rows(w) as usize {
        assert!(bool::from(a[k * na].is_identity()) && bool::from(b[k * nb].is_identity()));
        let mut base = P::generator();
        for _ in 0..w as usize * k {
            base = base.double();
        }
        for &j in js {
            let (ja, jb) = (j & (na - 1), j >> lo);
            let sum = (a[k * na + ja].to_curve() + b[k * nb + jb].to_curve()).to_affine();
            assert_eq!(
                sum,
                (base * Fr::from(j as u64)).to_affine(),
                "w {w} row {k} entry {j}"
            );
            if ja != 0 && jb != 0 {
                // The device's chord addition needs distinct x.
                assert_ne!(a[k * na + ja], b[k * nb + jb]);
                assert_ne!(a[k * na + ja], -b[k * nb + jb]);
            }
        }
    }
}

#[test]
fn small_tables_sum_to_the_table_entries() {
    for w in [2, 3, 4, 5, 8] {
        check_small_tables::<G1Projective>(w, &[]);
    }
    check_small_tables::<G2Projective>(5, &[]);
    let half = 1usize << 21;
    let sample = [1, 2, 1023, 1024, 1025, 2047, 2048, half - 1, half];
    // Rows 0 and 11 of w = 22 only would do, but every row is cheap enough at 9 entries.
    check_small_tables::<G1Projective>(22, &sample);
    check_small_tables::<G2Projective>(9, &[1, 15, 16, 17, 255, 256]);
    let _ = (G1Affine::identity(), G2Affine::identity());
}
