//! Conformance with the cuzk.v1 proto that cuzk ships, and with how Curio fills it in.
//!
//! `tests/conformance/cuzk/v1/proving.proto` is cuzk's field list; build.rs compiles it
//! (client only) beside filprove's own. One test compares the two protos message by
//! message; the other builds each kind of request the way Curio's `lib/ffi/cuzk_funcs.go`
//! and ProofShare do, with the client generated from cuzk's proto, and has a real daemon
//! started from the README's configuration ("Running beside Curio"; 2 KiB circuits and
//! test parameters, the CPU where no GPU is usable) prove them, each proof checked by
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

/// The TOML block of the README's "Running beside Curio" section, as printed there.
fn readme_config_text() -> String {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Running beside Curio"))
        .expect("README has a \"Running beside Curio\" section");
    let mut lines = section
        .lines()
        .skip_while(|l| l.trim() != "```toml")
        .skip(1);
    let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
    assert!(
        !block.is_empty(),
        "the section shows its configuration as a toml block"
    );
    block.iter().map(|l| format!("{}\n", l.trim())).collect()
}

/// The README's configuration with what a test must change: the socket into `dir` (still a
/// `unix://` URL), the HTTP admin and the TCP listener of step 5 on free loopback ports,
/// the test parameter directory, the journal, and the preloads at 2 KiB instead of 32 GiB. Every other
/// key keeps the README's value.
fn readme_config(dir: &std::path::Path) -> filprove::server::Config {
    let text = readme_config_text();
    let as_printed = filprove::server::Config::from_toml(&text)
        .unwrap_or_else(|e| panic!("the README's configuration: {e}\n{text}"));
    let mut table: toml::Table = text.parse().unwrap();
    let section = |t: &toml::Table, name: &str| -> toml::Table {
        t.get(name)
            .and_then(|v| v.as_table())
            .cloned()
            .unwrap_or_else(|| panic!("the README's configuration has no [{name}]"))
    };
    let mut server = section(&table, "server");
    for (key, value) in [
        (
            "unix_socket",
            format!("unix://{}", dir.join("filprove.sock").display()),
        ),
        ("http_listen", "127.0.0.1:0".into()),
        ("tcp_listen", "127.0.0.1:0".into()),
    ] {
        server.insert(key.into(), toml::Value::String(value));
    }
    let mut srs = section(&table, "srs");
    let preload: Vec<toml::Value> = as_printed
        .srs
        .preload
        .iter()
        .map(|id| {
            let small = id
                .strip_suffix("-32g")
                .expect("the README preloads 32 GiB circuits");
            toml::Value::String(format!("{small}-2k"))
        })
        .collect();
    assert!(!preload.is_empty(), "the README preloads parameters");
    srs.insert("preload".into(), toml::Value::Array(preload));
    srs.insert(
        "param_cache".into(),
        toml::Value::String(env().params.display().to_string()),
    );
    table.insert("server".into(), toml::Value::Table(server));
    table.insert("srs".into(), toml::Value::Table(srs));
    let mut config =
        filprove::server::Config::from_toml(&toml::to_string(&table).unwrap()).unwrap();
    // The journal beside the socket, not in the machine's state directory.
    config.journal.dir = dir.join("journal").display().to_string();
    // What the README sets and the test leaves alone.
    assert_eq!(config.server.socket_mode, as_printed.server.socket_mode);
    assert_eq!(config.engine, as_printed.engine);
    assert_eq!(config.memory, as_printed.memory);
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curio_s_requests_of_every_kind_are_proved_by_the_readme_s_daemon() {
    use std::os::unix::fs::PermissionsExt as _;
    ensure_params("porep-2k");
    ensure_params("snap-2k");
    let dir = tempfile::tempdir().unwrap();
    let config = readme_config(dir.path());
    let mode = config.socket_mode().unwrap();
    let d = TestDaemon::start_with(dir, config);
    assert_eq!(
        std::fs::metadata(&d.socket).unwrap().permissions().mode() & 0o777,
        mode,
        "the socket has the README's socket_mode"
    );
    // Curio's [Cuzk] Address forms of step 5: a unix:// URL and a bare host:port.
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
    // Step 6: /readyz is 200 exactly when the configured backend ("auto") found a GPU.
    let on_gpu = d.engine.status().devices.iter().any(|g| g.name != "cpu");
    let (healthz, _) = http_get(d.http, "/healthz");
    let (readyz, why) = http_get(d.http, "/readyz");
    assert_eq!(healthz, 200);
    assert_eq!(readyz, if on_gpu { 200 } else { 503 }, "{why}");
    d.shutdown().unwrap();
}
