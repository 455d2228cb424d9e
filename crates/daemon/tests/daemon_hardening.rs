//! What no input may do to the daemon (docs/hardening.md), against a real daemon (CPU
//! backend, 2 KiB fixtures): out-of-range numbers, bad ids, huge inputs and undecodable
//! messages are INVALID_ARGUMENT with short messages; a burst beyond the intake limits is
//! served or refused with RESOURCE_EXHAUSTED and a retry hint, and nothing accepted is lost.

mod daemon_support;

use daemon_support::*;
use filprove::client;
use filprove::server::convert::to_wire;
use filprove::server::intake::RETRY_PUSHBACK_KEY;
use filprove::server::pb;
use filprove_filecoin::ProofKind;
use tonic::Code;

fn completed() -> i32 {
    pb::await_proof_response::Status::Completed as i32
}

/// A WindowPoSt with partition_index = u32::MAX once aborted the daemon (placeholder
/// sectors for every earlier partition); now it is INVALID_ARGUMENT and the daemon proves
/// the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_range_numbers_are_invalid_argument_and_the_daemon_lives_on() {
    let d = TestDaemon::start(|_| {});
    let mut c = client::connect(&d.unix_addr()).await.unwrap();
    let window = request(ProofKind::WindowPoSt);
    for index in [u32::MAX, 3000] {
        let mut w = to_wire(&window, &format!("far-{index}"), pb::Priority::Normal);
        w.partition_index = index;
        let e = c.submit_proof(w).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
        assert!(e.message().contains("partition_index"), "{}", e.message());
    }
    let r = c
        .prove(pb::ProveRequest {
            submit: Some(to_wire(&window, "after", pb::Priority::Normal)),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(r.status, completed(), "{}", r.error_message);
    d.shutdown().unwrap();
}

/// Request and job ids are at most 256 bytes of printable ASCII; answers to bad ones and
/// to huge inputs quote a short prefix at most.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_ids_and_huge_inputs_get_short_invalid_argument_answers() {
    let d = TestDaemon::start(|_| {});
    let mut c = client::connect(&d.unix_addr()).await.unwrap();
    let window = request(ProofKind::WindowPoSt);
    for id in [
        "forged\nINFO job finished".to_string(),
        "x".repeat(257),
        "x".repeat(8 << 20),
    ] {
        let e = c
            .submit_proof(to_wire(&window, &id, pb::Priority::Normal))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().len() < 200, "{} bytes", e.message().len());
        let e = c
            .await_proof(pb::AwaitProofRequest {
                job_id: id.clone(),
                timeout_ms: 1,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().len() < 200);
    }
    // A C1 "output" whose registered proof is a 4 MiB name, and an unknown circuit id of
    // 1 MiB: the answers quote 64 bytes of them at most.
    let huge = "A".repeat(4 << 20);
    let mut w = to_wire(
        &request(ProofKind::WinningPoSt),
        "huge",
        pb::Priority::Normal,
    );
    w.proof_kind = pb::ProofKind::PorepSealCommit as i32;
    w.registered_proof = 5;
    w.vanilla_proofs.clear();
    w.vanilla_proof = format!("{{\"registered_proof\": \"{huge}\"}}").into_bytes();
    let e = c.submit_proof(w).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    assert!(e.message().len() < 1024, "{} bytes", e.message().len());
    assert!(!e.message().contains(&"A".repeat(65)));
    let e = c
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: huge[..1 << 20].to_string(),
        })
        .await
        .unwrap_err();
    assert!(e.message().len() < 1024, "{} bytes", e.message().len());
    d.shutdown().unwrap();
}

/// A message in a wire type the field does not have: a `uint64` where `request_id`
/// (field 1) is a string.
#[derive(Clone, PartialEq, prost::Message)]
struct WrongWireType {
    #[prost(uint64, tag = "1")]
    request_id: u64,
}

/// A body that does not decode is the caller's error: INVALID_ARGUMENT, not INTERNAL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_messages_are_invalid_argument() {
    let d = TestDaemon::start(|_| {});
    let channel = client::channel(&d.unix_addr()).await.unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let path =
        tonic::codegen::http::uri::PathAndQuery::from_static("/cuzk.v1.ProvingEngine/SubmitProof");
    let codec = tonic_prost::ProstCodec::<WrongWireType, pb::SubmitProofResponse>::default();
    let e = grpc
        .unary(
            tonic::Request::new(WrongWireType { request_id: 7 }),
            path,
            codec,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    assert!(
        e.message().starts_with("invalid_message:"),
        "{}",
        e.message()
    );
    d.shutdown().unwrap();
}

/// Three times the WindowPoSt capacity at once: every submission is accepted or refused
/// with RESOURCE_EXHAUSTED and a retry hint; every accepted job completes with a proof
/// that verifies; the capacity is back once they have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_beyond_capacity_is_served_or_refused_and_nothing_is_lost() {
    const CAPACITY: usize = 2;
    let d = TestDaemon::start(|c| {
        c.intake.queued_jobs_window_post = CAPACITY;
        c.intake.retry_after_secs = 3;
    });
    let window = request(ProofKind::WindowPoSt);
    let c = client::connect(&d.unix_addr()).await.unwrap();
    let burst = (0..3 * CAPACITY).map(|i| {
        let mut c = c.clone();
        let wire = to_wire(&window, &format!("burst-{i}"), pb::Priority::Normal);
        tokio::spawn(async move { c.submit_proof(wire).await })
    });
    let mut accepted = Vec::new();
    let mut refused = 0;
    for r in futures_join(burst).await {
        match r {
            Ok(s) => accepted.push(s.into_inner().job_id),
            Err(e) => {
                assert_eq!(e.code(), Code::ResourceExhausted, "{}", e.message());
                assert!(e.message().starts_with("queue_full:"), "{}", e.message());
                assert!(e.message().contains("retry after 3 s"), "{}", e.message());
                assert_eq!(
                    e.metadata()
                        .get(RETRY_PUSHBACK_KEY)
                        .map(|v| v.to_str().unwrap()),
                    Some("3000")
                );
                refused += 1;
            }
        }
    }
    assert!(accepted.len() >= CAPACITY, "accepted {accepted:?}");
    assert_eq!(accepted.len() + refused, 3 * CAPACITY);
    assert!(refused > 0, "nothing was refused");
    let mut c = c;
    for id in &accepted {
        let r = c
            .await_proof(pb::AwaitProofRequest {
                job_id: id.clone(),
                timeout_ms: 0,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status, completed(), "{id}: {}", r.error_message);
        assert!(window.verify(&r.proof).unwrap(), "{id}");
    }
    // All ended: the whole capacity is free again.
    let again: Vec<_> = (0..CAPACITY)
        .map(|i| to_wire(&window, &format!("again-{i}"), pb::Priority::Normal))
        .collect();
    for w in again {
        c.submit_proof(w).await.unwrap();
    }
    d.shutdown().unwrap();
}

/// Awaits spawned tasks in order.
async fn futures_join<T>(tasks: impl Iterator<Item = tokio::task::JoinHandle<T>>) -> Vec<T> {
    let tasks: Vec<_> = tasks.collect();
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}
