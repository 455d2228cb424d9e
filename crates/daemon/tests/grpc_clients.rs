//! Stock gRPC clients against a real daemon: Python grpcio over the unix socket with its
//! default `:authority` (installed from PyPI into a virtualenv under the target directory
//! on first use; the test fails, never skips, when that is impossible), gRPC health
//! checking and server reflection (what grpcurl uses), on the socket and on TCP.

mod daemon_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use daemon_support::*;
use filprove::server::convert::to_wire;
use filprove::server::pb;
use filprove_filecoin::ProofKind;
use prost::Message as _;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

/// The grpcio release the test installs.
const GRPCIO: &str = "grpcio==1.85.1";

const NEEDS: &str = "This test needs python3 with the venv module and access to PyPI to \
                     install grpcio (scripts/test.sh runs it; it never skips).";

fn run(what: &str, cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}\n{NEEDS}"));
    assert!(
        out.status.success(),
        "{what} failed ({cmd:?}, {GRPCIO}): {}\n{}\n{NEEDS}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A Python interpreter with grpcio, installed once per target directory.
fn python_with_grpcio() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("grpcio-venv");
    let python = venv.join("bin/python");
    let has_grpcio = |p: &Path| {
        Command::new(p)
            .args(["-c", "import grpc"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has_grpcio(&python) {
        run(
            "creating a Python virtualenv",
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
        );
        run(
            "installing grpcio from PyPI",
            Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                GRPCIO,
            ]),
        );
    }
    assert!(
        has_grpcio(&python),
        "grpcio is not importable from {}",
        python.display()
    );
    python
}

#[test]
fn python_grpcio_works_over_the_unix_socket_with_its_default_authority() {
    let python = python_with_grpcio();
    let d = TestDaemon::start(|_| {});
    let work = tempfile::tempdir().unwrap();
    let winning = request(ProofKind::WinningPoSt);
    let calls: [(&str, &str, Vec<u8>); 3] = [
        (
            "health",
            "/grpc.health.v1.Health/Check",
            HealthCheckRequest {
                service: "cuzk.v1.ProvingEngine".into(),
            }
            .encode_to_vec(),
        ),
        (
            "status",
            "/cuzk.v1.ProvingEngine/GetStatus",
            pb::GetStatusRequest {}.encode_to_vec(),
        ),
        (
            "prove",
            "/cuzk.v1.ProvingEngine/Prove",
            pb::ProveRequest {
                submit: Some(to_wire(&winning, "py-winning", pb::Priority::Critical)),
            }
            .encode_to_vec(),
        ),
    ];
    let mut cmd = Command::new(&python);
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/grpcio_client.py"))
        .arg(&d.socket)
        .arg(work.path());
    for (name, method, request) in &calls {
        std::fs::write(work.path().join(format!("{name}.request")), request).unwrap();
        cmd.arg(format!("{name}={method}"));
    }
    run("the grpcio client", &mut cmd);
    let response =
        |name: &str| std::fs::read(work.path().join(format!("{name}.response"))).unwrap();

    let health = tonic_health::pb::HealthCheckResponse::decode(&response("health")[..]).unwrap();
    assert_eq!(health.status(), ServingStatus::Serving);
    let status = pb::GetStatusResponse::decode(&response("status")[..]).unwrap();
    assert_eq!(status.gpus[0].name, "cpu");
    let result = pb::ProveResponse::decode(&response("prove")[..])
        .unwrap()
        .result
        .unwrap();
    assert_eq!(
        result.status,
        pb::await_proof_response::Status::Completed as i32,
        "{}",
        result.error_message
    );
    assert!(winning.verify(&result.proof).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_reflection_answer_on_both_listeners() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;

    let d = TestDaemon::start(|_| {});
    for addr in [format!("unix://{}", d.socket.display()), d.tcp.to_string()] {
        let channel = filprove::client::channel(&addr).await.unwrap();
        let mut health = HealthClient::new(channel.clone());
        for service in ["", "cuzk.v1.ProvingEngine"] {
            let r = health
                .check(HealthCheckRequest {
                    service: service.into(),
                })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(r.status(), ServingStatus::Serving, "{addr} {service:?}");
        }
        let e = health
            .check(HealthCheckRequest {
                service: "no.such.Service".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound);

        let mut reflection = ServerReflectionClient::new(channel);
        let ask = |m: MessageRequest| {
            tokio_stream::iter([ServerReflectionRequest {
                host: String::new(),
                message_request: Some(m),
            }])
        };
        let mut answers = reflection
            .server_reflection_info(ask(MessageRequest::ListServices(String::new())))
            .await
            .unwrap()
            .into_inner();
        let Some(MessageResponse::ListServicesResponse(list)) =
            answers.message().await.unwrap().unwrap().message_response
        else {
            panic!("no service list")
        };
        let names: Vec<_> = list.service.iter().map(|s| s.name.as_str()).collect();
        for want in ["cuzk.v1.ProvingEngine", "grpc.health.v1.Health"] {
            assert!(names.contains(&want), "{addr}: {names:?}");
        }
        let mut answers = reflection
            .server_reflection_info(ask(MessageRequest::FileContainingSymbol(
                "cuzk.v1.SubmitProofRequest".into(),
            )))
            .await
            .unwrap()
            .into_inner();
        let Some(MessageResponse::FileDescriptorResponse(files)) =
            answers.message().await.unwrap().unwrap().message_response
        else {
            panic!("no descriptor")
        };
        let file =
            prost_types::FileDescriptorProto::decode(&files.file_descriptor_proto[0][..]).unwrap();
        let submit = file
            .message_type
            .iter()
            .find(|m| m.name() == "SubmitProofRequest")
            .unwrap();
        assert!(submit
            .field
            .iter()
            .any(|f| f.name() == "vanilla_proofs" && f.number() == 11));
    }
}
