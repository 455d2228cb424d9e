//! `run_daemon` as the binary runs it: configuration file, SIGTERM, drain, clean exit; and
//! the binary itself: a second signal during the drain cuts it short. (The first test is
//! alone of its kind in this binary: it signals its own process.)

mod daemon_support;

use std::time::Duration;

use daemon_support::spawned::*;
use daemon_support::*;
use filprove::client;
use filprove::server::convert::to_wire;
use filprove::server::pb;
use filprove::server::{run_daemon, DaemonArgs};
use filprove_filecoin::ProofKind;

#[test]
fn sigterm_drains_in_flight_work_and_exits_cleanly() {
    let e = env();
    ensure_params("wpost-2k");
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Install the SIGTERM handler before anything signals this process.
    let _guard = rt.block_on(async {
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap()
    });
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("run/filprove.sock");
    let config = dir.path().join("filprove.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nunix_socket = {:?}\nhttp_listen = \"\"\nshutdown_grace_secs = 120\n\
             [engine]\nbackend = \"cpu\"\n[memory]\nbudget = \"4GiB\"\n\
             [srs]\nbudget = \"4GiB\"\npreload = [\"wpost-2k\"]\nparam_cache = {:?}\n\
             [journal]\ndir = {:?}\n",
            socket.display().to_string(),
            e.params.display().to_string(),
            dir.path().join("journal").display().to_string(),
        ),
    )
    .unwrap();
    let args = DaemonArgs {
        config: Some(config),
        ..Default::default()
    };
    let daemon = std::thread::spawn(move || run_daemon(args));

    let addr = socket.display().to_string();
    let c = rt.block_on(async {
        let mut c = client::wait_ready(&addr, Duration::from_secs(60))
            .await
            .unwrap();
        let wire = to_wire(
            &request(ProofKind::WindowPoSt),
            "before-sigterm",
            pb::Priority::Normal,
        );
        c.submit_proof(wire).await.unwrap();
        // Preload pinned the parameters.
        let s = c
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        assert!(
            s.loaded_srs.iter().any(|p| p.circuit_id == "wpost-2k"),
            "{:?}",
            s.loaded_srs
        );
        c
    });
    let mut w = c.clone();
    let waiter = rt.spawn(async move {
        w.await_proof(pb::AwaitProofRequest {
            job_id: "before-sigterm".into(),
            timeout_ms: 0,
        })
        .await
    });
    std::thread::sleep(Duration::from_millis(200));
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let r = rt.block_on(waiter).unwrap().unwrap().into_inner();
    assert_eq!(
        r.status,
        pb::await_proof_response::Status::Completed as i32,
        "{}",
        r.error_message
    );
    daemon
        .join()
        .unwrap()
        .expect("run_daemon returns Ok (exit 0) after draining");
    assert!(!socket.exists(), "socket removed");
}

/// SIGTERM starts the drain (a grace of 120 s would let every job finish); SIGINT during
/// it cancels the jobs in flight, answers their callers (CANCELLED), keeps their journal
/// entries and exits 0 at once. The restarted daemon proves them under their ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_during_the_drain_cancels_and_exits_keeping_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), 120);
    let (mut d, mut c) = Spawned::start(dir.path(), 1).await;
    let jobs = submit_awaited(&c, "forced", 6).await;
    until_in_progress(&mut c).await;
    d.signal("TERM");
    tokio::task::block_in_place(|| until_logged(&d, "draining"));
    let signalled = std::time::Instant::now();
    d.signal("INT");
    let status = tokio::task::block_in_place(|| d.wait_exit(Duration::from_secs(30)));
    assert!(status.success(), "{status}\n{}", d.log_text());
    assert!(signalled.elapsed() < Duration::from_secs(30));
    assert!(
        d.log_text()
            .contains("cancelling jobs in flight and exiting"),
        "{}",
        d.log_text()
    );
    assert!(!d.socket.exists(), "socket removed");
    let (_, cancelled) = outcomes(jobs).await;
    assert!(!cancelled.is_empty(), "the drain was not cut short");
    assert_eq!(journaled_ids(&d.journal), cancelled);

    let (mut d2, c2) = Spawned::start(dir.path(), 2).await;
    for id in &cancelled {
        expect_proved(&c2, id).await;
    }
    // Its preload (`srs.preload = ["wpost-2k"]`) had filecoin-proofs prepare the
    // WindowPoSt verifying key too.
    tokio::task::block_in_place(|| until_logged(&d2, "verifying key prepared"));
    d2.signal("TERM");
    let status = tokio::task::block_in_place(|| d2.wait_exit(Duration::from_secs(60)));
    assert!(status.success());
}
