//! Several devices behind the daemon, on the CPU backend (each backend one logical
//! device): a device whose proofs keep failing is quarantined after
//! `devices.quarantine_after_failures`, its jobs complete on the other device, GetStatus,
//! /status, /metrics and /readyz say so, and `filprove device restore` (through the HTTP
//! admin, with the configured bearer token) brings it back; /readyz fails only when every
//! device is out.

mod daemon_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use daemon_support::*;
use filprove::cli::device::{DeviceArgs, DeviceCommand};
use filprove::client;
use filprove::server::convert::to_wire;
use filprove::server::pb;
use filprove_filecoin::ProofKind;
use filprove_groth16::cpu::CpuBackend;
use filprove_groth16::{Backend, Proof, ProofInput, ProveError, Srs};

const TOKEN: &str = "5f0c1d8e2b7a49c6a3e1f0d2c4b6a8e9f1d3c5b7a9e0f2d4c6b8a0e1f3d5c7b9";

/// The CPU backend, failing every prove call as a device error while `failing` is set.
struct Flaky {
    inner: CpuBackend,
    failing: AtomicBool,
    failed: AtomicUsize,
    proved: AtomicUsize,
}

impl Flaky {
    fn new(failing: bool) -> Arc<Self> {
        Arc::new(Self {
            inner: CpuBackend::new(None).unwrap(),
            failing: AtomicBool::new(failing),
            failed: AtomicUsize::new(0),
            proved: AtomicUsize::new(0),
        })
    }
}

impl Backend for Flaky {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn prove(&self, srs: &Srs, inputs: &[ProofInput<'_>]) -> Result<Vec<Proof>, ProveError> {
        if self.failing.load(Ordering::SeqCst) {
            self.failed.fetch_add(1, Ordering::SeqCst);
            return Err(ProveError::Device {
                device: "cpu:0".into(),
                message: "injected fault: Xid 79, fallen off the bus".into(),
            });
        }
        let r = self.inner.prove(srs, inputs);
        self.proved.fetch_add(1, Ordering::SeqCst);
        r
    }
}

fn device_command(config: &std::path::Path, ordinal: u32, restore: bool) -> anyhow::Result<()> {
    let args = DeviceArgs {
        ordinal,
        config: Some(config.to_path_buf()),
        timeout_secs: 10,
    };
    filprove::cli::device::run(if restore {
        DeviceCommand::Restore(args)
    } else {
        DeviceCommand::Quarantine(args)
    })
}

#[test]
fn a_failing_device_is_quarantined_reported_and_restored_by_command() {
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.server.auth_token_file = token_file.display().to_string();
    config.devices.quarantine_after_failures = 2;
    let bad = Flaky::new(true);
    let good = Flaky::new(false);
    let d = TestDaemon::start_on(
        dir,
        config,
        Some(vec![bad.clone() as Arc<dyn Backend>, good.clone()]),
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let window = request(ProofKind::WindowPoSt);
    let prove = |id: &str| {
        rt.block_on(async {
            let mut c = client::connect(&d.unix_addr()).await.unwrap();
            c.prove(pb::ProveRequest {
                submit: Some(to_wire(&window, id, pb::Priority::Normal)),
            })
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap()
        })
    };
    let status = || {
        rt.block_on(async {
            let mut c = client::connect(&d.unix_addr()).await.unwrap();
            c.get_status(pb::GetStatusRequest {})
                .await
                .unwrap()
                .into_inner()
        })
    };
    let completed = pb::await_proof_response::Status::Completed as i32;
    let mut i = 0;
    while bad.failed.load(Ordering::SeqCst) < 2 {
        assert!(i < 30, "device 0 never got two proofs");
        let r = prove(&format!("w{i}"));
        assert_eq!(r.status, completed, "{}", r.error_message);
        assert!(window.verify(&r.proof).unwrap());
        i += 1;
    }
    // Quarantined: GetStatus marks it, /status says why, /metrics counts, /readyz still
    // answers 200 (device 1 proves).
    let s = status();
    assert_eq!(s.gpus.len(), 2);
    assert_eq!(s.gpus[0].name, "cpu:0 [quarantined]");
    assert_eq!(s.gpus[1].name, "cpu:1");
    assert_eq!(s.total_proofs_failed, 0);
    let auth = format!("authorization: Bearer {TOKEN}");
    let get = |path: &str| {
        let mut c = std::net::TcpStream::connect(d.http).unwrap();
        let (code, _, body) = http_exchange(&mut c, path, &[&auth]);
        (code, body)
    };
    let (code, body) = get("/status");
    assert_eq!(code, 200);
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    let dev0 = &doc["devices"][0];
    assert_eq!(dev0["healthy"], false);
    assert_eq!(dev0["failures"], 2);
    assert!(dev0["quarantine_reason"]
        .as_str()
        .unwrap()
        .contains("Xid 79"));
    assert_eq!(doc["devices"][1]["healthy"], true);
    let (_, metrics) = get("/metrics");
    assert!(
        metrics.contains("filprove_device_healthy{device=\"cpu:0\"} 0"),
        "{metrics}"
    );
    assert!(metrics.contains("filprove_device_failures_total{device=\"cpu:0\"} 2"));
    assert_eq!(http_get(d.http, "/readyz").0, 200);
    let r = prove("while-out");
    assert_eq!(r.status, completed);
    assert_eq!(bad.failed.load(Ordering::SeqCst), 2, "not asked while out");

    // The admin action needs the token; the command sends the configuration's.
    let mut c = std::net::TcpStream::connect(d.http).unwrap();
    assert_eq!(http_exchange(&mut c, "/devices/0/restore", &[]).0, 401);
    let cli_config = secrets.path().join("filprove.toml");
    std::fs::write(
        &cli_config,
        format!(
            "[server]\nunix_socket = {:?}\nhttp_listen = \"{}\"\nauth_token_file = {:?}\n",
            d.unix_addr(),
            d.http,
            token_file.display().to_string()
        ),
    )
    .unwrap();
    // Every device out: not ready. One back: ready.
    device_command(&cli_config, 1, false).unwrap();
    let (code, body) = http_get(d.http, "/readyz");
    assert_eq!(code, 503);
    assert!(body.contains("every device is quarantined"), "{body}");
    let e = device_command(&cli_config, 9, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("404") && e.contains("unknown_device"), "{e}");
    bad.failing.store(false, Ordering::SeqCst);
    device_command(&cli_config, 0, true).unwrap();
    assert_eq!(http_get(d.http, "/readyz").0, 200);
    let s = status();
    assert_eq!(s.gpus[0].name, "cpu:0");
    assert_eq!(s.gpus[1].name, "cpu:1 [quarantined]");
    let proved_before = bad.proved.load(Ordering::SeqCst);
    let r = prove("after-restore");
    assert_eq!(r.status, completed, "{}", r.error_message);
    assert!(
        bad.proved.load(Ordering::SeqCst) > proved_before,
        "device 0 proves again (device 1 is out)"
    );
    d.shutdown().unwrap();
}
