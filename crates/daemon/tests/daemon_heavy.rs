//! PoRep and SnapDeals through the daemon, 2 KiB. Ignored by default: their test
//! parameters take minutes to generate on 2 cores (PoRep 2 KiB: about 14 min, 5 GB RAM) and
//! a CPU proof takes about a minute. Run with `cargo test -p filprove --test daemon_heavy
//! -- --ignored`.

mod daemon_support;

use daemon_support::*;
use filprove::client;
use filprove::server::convert::to_wire;
use filprove::server::pb;
use filprove_filecoin::ProofKind;

async fn prove(addr: &str, kind: ProofKind, id: &str) {
    let req = request(kind);
    let mut c = client::connect(addr).await.unwrap();
    let r = c
        .prove(pb::ProveRequest {
            submit: Some(to_wire(&req, id, pb::Priority::Normal)),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(
        r.status,
        pb::await_proof_response::Status::Completed as i32,
        "{}",
        r.error_message
    );
    assert_eq!(r.proof.len(), 192 * req.num_partitions());
    assert!(req.verify(&r.proof).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "generates SnapDeals 2 KiB parameters (minutes)"]
async fn snapdeals_proves_through_the_daemon() {
    ensure_params("snap-2k");
    let d = TestDaemon::start(|_| {});
    prove(&d.unix_addr(), ProofKind::SnapDeals, "snap-1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "generates PoRep 2 KiB parameters (about 14 minutes, 5 GB)"]
async fn porep_proves_through_the_daemon() {
    ensure_params("porep-2k");
    let d = TestDaemon::start(|_| {});
    prove(&d.tcp_addr(), ProofKind::PoRep, "porep-1").await;
}
