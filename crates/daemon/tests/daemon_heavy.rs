//! PoRep and SnapDeals through the daemon, 2 KiB, proved on the CPU and verified by
//! filecoin-proofs: about a minute each on 2 cores, plus parameter generation the first time
//! (shared with the filecoin crate's tests; PoRep 2 KiB: one to three minutes).

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
async fn snapdeals_proves_through_the_daemon() {
    ensure_params("snap-2k");
    let d = TestDaemon::start(|_| {});
    prove(&d.unix_addr(), ProofKind::SnapDeals, "snap-1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn porep_proves_through_the_daemon() {
    ensure_params("porep-2k");
    let d = TestDaemon::start(|_| {});
    prove(&d.tcp_addr(), ProofKind::PoRep, "porep-1").await;
}
