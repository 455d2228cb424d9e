//! Conformance with the cuzk.v1 proto that cuzk ships, and with how Curio fills it in.
//!
//! `tests/conformance/cuzk/v1/proving.proto` is cuzk's field list; build.rs compiles it
//! (client only) beside filprove's own. One test compares the two protos message by
//! message; the other builds each kind of request the way Curio's `lib/ffi/cuzk_funcs.go`
//! and ProofShare do, with the client generated from cuzk's proto, and has a real daemon
//! (CPU backend, 2 KiB circuits and test parameters) prove them, each proof checked by
//! filecoin-proofs' verifier. About two minutes on 2 cores (PoRep and SnapDeals dominate).

mod daemon_support;

use std::collections::BTreeMap;

use base64::Engine as _;
use daemon_support::*;
use filprove::server::convert::{post_proof_number, seal_proof_number, update_proof_number};
use filprove_filecoin::{ProofKind, ProofRequest, RequestBody};
use prost::Message as _;

/// The client and messages generated from cuzk's proto.
#[allow(clippy::all, missing_docs, dead_code)]
mod cuzk {
    include!(concat!(env!("OUT_DIR"), "/conformance/cuzk.v1.rs"));
}

const CUZK_DESCRIPTOR: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/conformance/descriptor.bin"));

/// Everything of a descriptor set that decides the wire format and the generated API:
/// per message its fields (name, number, label, type, type name), per enum its values, per
/// service its methods.
fn wire_shape(encoded: &[u8]) -> BTreeMap<String, Vec<String>> {
    use prost_types::{DescriptorProto, EnumDescriptorProto};
    fn message(prefix: &str, m: &DescriptorProto, out: &mut BTreeMap<String, Vec<String>>) {
        let name = format!("{prefix}.{}", m.name());
        let fields = m
            .field
            .iter()
            .map(|f| {
                format!(
                    "{} = {} {:?} {:?} {}",
                    f.name(),
                    f.number(),
                    f.label(),
                    f.r#type(),
                    f.type_name()
                )
            })
            .collect();
        out.insert(format!("message {name}"), fields);
        for e in &m.enum_type {
            enumeration(&name, e, out);
        }
        for nested in &m.nested_type {
            message(&name, nested, out);
        }
    }
    fn enumeration(prefix: &str, e: &EnumDescriptorProto, out: &mut BTreeMap<String, Vec<String>>) {
        let values = e
            .value
            .iter()
            .map(|v| format!("{} = {}", v.name(), v.number()))
            .collect();
        out.insert(format!("enum {prefix}.{}", e.name()), values);
    }
    let set = prost_types::FileDescriptorSet::decode(encoded).unwrap();
    let mut out = BTreeMap::new();
    for file in &set.file {
        let package = format!(".{}", file.package());
        for m in &file.message_type {
            message(&package, m, &mut out);
        }
        for e in &file.enum_type {
            enumeration(&package, e, &mut out);
        }
        for s in &file.service {
            let methods = s
                .method
                .iter()
                .map(|m| format!("{}({}) -> {}", m.name(), m.input_type(), m.output_type()))
                .collect();
            out.insert(format!("service {package}.{}", s.name()), methods);
        }
    }
    out
}

#[test]
fn filprove_s_proto_is_cuzk_s_field_for_field() {
    let cuzk = wire_shape(CUZK_DESCRIPTOR);
    let ours = wire_shape(filprove::server::pb::FILE_DESCRIPTOR_SET);
    assert!(
        cuzk["message .cuzk.v1.SubmitProofRequest"]
            .contains(&"vanilla_proofs = 11 Repeated Bytes ".to_string()),
        "the conformance copy is cuzk's shipped proto: {:?}",
        cuzk["message .cuzk.v1.SubmitProofRequest"]
    );
    let names: Vec<_> = cuzk.keys().collect();
    assert_eq!(
        names,
        ours.keys().collect::<Vec<_>>(),
        "messages, enums, services"
    );
    for (name, shape) in &cuzk {
        assert_eq!(shape, &ours[name], "{name}");
    }
}

/// Go's `%d` of a byte slice: "[1 2 3]".
fn go_bytes(b: &[u8]) -> String {
    let items: Vec<String> = b.iter().map(u8::to_string).collect();
    format!("[{}]", items.join(" "))
}

/// The C1 envelope of Curio's wrapC1Output: Go marshals the fields in this order, the
/// []byte Phase1Out as standard base64.
#[derive(serde::Serialize)]
#[allow(non_snake_case)]
struct C1OutputWrapper {
    SectorNum: i64,
    Phase1Out: String,
    SectorSize: u64,
}

/// The four requests as Curio sends them, with the request each proof must verify against.
fn curio_requests() -> Vec<(cuzk::SubmitProofRequest, ProofRequest)> {
    let env = env();
    let miner = env.set_2k.miner_id;
    let mut out = Vec::new();

    // PoRepSnarkCuzk: the C1 output in its wrapper, NORMAL.
    let porep = request(ProofKind::PoRep);
    let RequestBody::PoRep {
        c1, sector_number, ..
    } = porep.body()
    else {
        unreachable!()
    };
    let raw = std::fs::read(env.set_2k.c1_raw.as_ref().unwrap()).unwrap();
    let wrapped = serde_json::to_vec(&C1OutputWrapper {
        SectorNum: *sector_number as i64,
        Phase1Out: base64::engine::general_purpose::STANDARD.encode(&raw),
        SectorSize: 2048,
    })
    .unwrap();
    out.push((
        cuzk::SubmitProofRequest {
            request_id: format!("porep-{miner}-{sector_number}"),
            proof_kind: cuzk::ProofKind::PorepSealCommit as i32,
            sector_size: 2048,
            registered_proof: seal_proof_number(c1.registered_proof),
            priority: cuzk::Priority::Normal as i32,
            vanilla_proof: wrapped,
            sector_number: *sector_number,
            miner_id: miner,
            ..Default::default()
        },
        porep.clone(),
    ));

    // ProofShare's computeSnap: raw 32-byte commitments, no sector_size, NORMAL.
    let snap = request(ProofKind::SnapDeals);
    let RequestBody::SnapDeals {
        registered,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        vanilla_proofs,
    } = snap.body()
    else {
        unreachable!()
    };
    out.push((
        cuzk::SubmitProofRequest {
            request_id: format!("ps-snap-{miner}-{sector_number}-17"),
            proof_kind: cuzk::ProofKind::SnapDealsUpdate as i32,
            registered_proof: update_proof_number(*registered),
            priority: cuzk::Priority::Normal as i32,
            vanilla_proofs: vanilla_proofs.clone(),
            sector_number: *sector_number,
            miner_id: miner,
            comm_r_old: comm_r_old.to_vec(),
            comm_r_new: comm_r_new.to_vec(),
            comm_d_new: comm_d_new.to_vec(),
            ..Default::default()
        },
        snap.clone(),
    ));

    // WindowPoStCuzk, HIGH, after the compaction of skipped sectors: the fixture
    // partition's first sector could not be read, the second one's proof moves up.
    let window = request(ProofKind::WindowPoSt);
    let RequestBody::WindowPoSt {
        registered,
        randomness,
        vanilla_proofs,
        ..
    } = window.body()
    else {
        unreachable!()
    };
    assert_eq!(
        vanilla_proofs.len(),
        2,
        "the fixture partition has two sectors"
    );
    let compacted = vanilla_proofs[1..].to_vec();
    let window = ProofRequest::new(RequestBody::WindowPoSt {
        registered: *registered,
        miner_id: miner,
        randomness: *randomness,
        partition_index: 0,
        vanilla_proofs: compacted.clone(),
    })
    .unwrap();
    out.push((
        cuzk::SubmitProofRequest {
            request_id: format!("wdpost-{miner}-0-{}", go_bytes(&randomness[..8])),
            proof_kind: cuzk::ProofKind::WindowPostPartition as i32,
            sector_size: 2048,
            registered_proof: post_proof_number(*registered),
            priority: cuzk::Priority::High as i32,
            vanilla_proofs: compacted,
            miner_id: miner,
            randomness: randomness.to_vec(),
            partition_index: 0,
            ..Default::default()
        },
        window,
    ));

    // WinningPoStCuzk, CRITICAL.
    let winning = request(ProofKind::WinningPoSt);
    let RequestBody::WinningPoSt {
        registered,
        randomness,
        vanilla_proofs,
        ..
    } = winning.body()
    else {
        unreachable!()
    };
    out.push((
        cuzk::SubmitProofRequest {
            request_id: format!("winpost-{miner}-{}", hex::encode(&randomness[..8])),
            proof_kind: cuzk::ProofKind::WinningPost as i32,
            sector_size: 2048,
            registered_proof: post_proof_number(*registered),
            priority: cuzk::Priority::Critical as i32,
            vanilla_proofs: vanilla_proofs.clone(),
            miner_id: miner,
            randomness: randomness.to_vec(),
            ..Default::default()
        },
        winning.clone(),
    ));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curio_s_requests_of_every_kind_are_proved() {
    ensure_params("porep-2k");
    ensure_params("snap-2k");
    let d = TestDaemon::start(|_| {});
    // Curio's [Cuzk] Address forms: a unix:// URL and a bare host:port.
    let addresses = [format!("unix://{}", d.socket.display()), d.tcp.to_string()];
    let mut calls = Vec::new();
    for (i, (wire, expected)) in curio_requests().into_iter().enumerate() {
        let channel = filprove::client::channel(&addresses[i % 2]).await.unwrap();
        let mut client = cuzk::proving_engine_client::ProvingEngineClient::new(channel)
            .max_decoding_message_size(256 << 20)
            .max_encoding_message_size(256 << 20);
        calls.push(tokio::spawn(async move {
            let id = wire.request_id.clone();
            let r = client
                .prove(cuzk::ProveRequest { submit: Some(wire) })
                .await
                .unwrap_or_else(|e| panic!("{id}: {e}"))
                .into_inner()
                .result
                .unwrap();
            (id, r, expected)
        }));
    }
    for call in calls {
        let (id, r, expected) = call.await.unwrap();
        assert_eq!(
            r.status,
            cuzk::await_proof_response::Status::Completed as i32,
            "{id}: {}",
            r.error_message
        );
        assert_eq!(r.job_id, id);
        assert_eq!(r.proof.len(), 192 * expected.num_partitions(), "{id}");
        assert!(
            expected.verify(&r.proof).unwrap(),
            "{id}: filecoin-proofs rejects it"
        );
    }
    d.shutdown().unwrap();
}
