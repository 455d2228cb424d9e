//! The cuzk.v1 API end to end: a real daemon (engine, CPU backend, 2 KiB Filecoin circuits
//! and parameters) on a temp unix socket and on loopback TCP.

mod daemon_support;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use daemon_support::*;
use filprove::client;
use filprove::server::convert::to_wire;
use filprove::server::pb;
use filprove_filecoin::ProofKind;
use tonic::Code;

fn completed() -> i32 {
    pb::await_proof_response::Status::Completed as i32
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proves_window_post_over_the_unix_socket_and_winning_post_over_tcp() {
    let d = TestDaemon::start(|_| {});
    let mode = std::fs::metadata(&d.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    let window = request(ProofKind::WindowPoSt);
    let mut c = client::connect(&d.unix_addr()).await.unwrap();
    let r = c
        .prove(pb::ProveRequest {
            submit: Some(to_wire(&window, "wpost-1", pb::Priority::Normal)),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(r.status, completed(), "{}", r.error_message);
    assert_eq!(r.job_id, "wpost-1");
    assert_eq!(r.proof.len(), 192);
    assert!(
        window.verify(&r.proof).unwrap(),
        "filecoin-proofs accepts the proof"
    );
    assert!(r.total_ms >= r.gpu_compute_ms);

    let winning = request(ProofKind::WinningPoSt);
    let mut t = client::connect(&d.tcp_addr()).await.unwrap();
    let r = t
        .prove(pb::ProveRequest {
            submit: Some(to_wire(&winning, "winning-1", pb::Priority::Low)),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(r.status, completed(), "{}", r.error_message);
    assert!(winning.verify(&r.proof).unwrap());

    let s = t
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(s.total_proofs_completed, 2);
    assert_eq!(s.gpus.len(), 1);
    assert_eq!(s.gpus[0].name, "cpu");
    let ids: Vec<_> = s.loaded_srs.iter().map(|e| e.circuit_id.as_str()).collect();
    assert!(
        ids.contains(&"wpost-2k") && ids.contains(&"winning-2k"),
        "{ids:?}"
    );
    assert!(s.loaded_srs.iter().all(|e| e.size_bytes > 0));
    assert_eq!(s.pinned_memory_limit_bytes, 4 << 30);
    d.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_is_idempotent_and_status_metrics_and_http_report_it() {
    let d = TestDaemon::start(|_| {});
    let mut c = client::connect(&d.unix_addr()).await.unwrap();
    let wire = to_wire(
        &request(ProofKind::WindowPoSt),
        "same-id",
        pb::Priority::High,
    );
    let a = c.submit_proof(wire.clone()).await.unwrap().into_inner();
    let b = c.submit_proof(wire.clone()).await.unwrap().into_inner();
    assert_eq!(
        (a.job_id.as_str(), b.job_id.as_str()),
        ("same-id", "same-id")
    );
    assert_eq!(a.assigned_gpu, "cpu");
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: "same-id".into(),
            timeout_ms: 120_000,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.status, completed(), "{}", r.error_message);
    // A retry after completion returns the same job and proof, not a second proof.
    c.submit_proof(wire).await.unwrap();
    let again = c
        .await_proof(pb::AwaitProofRequest {
            job_id: "same-id".into(),
            timeout_ms: 0,
        })
        .await
        .unwrap();
    assert_eq!(again.into_inner().proof, r.proof);
    let s = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(s.total_proofs_completed, 1);

    let m = c
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    assert!(
        m.contains("filprove_proofs_total{kind=\"window-post\",outcome=\"completed\"} 1"),
        "{m}"
    );
    let (code, headers, body) = http_get_with_headers(d.http, "/metrics");
    assert_eq!(code, 200);
    assert!(
        headers.contains(&"content-type: text/plain; version=0.0.4".to_string()),
        "{headers:?}"
    );
    // Names, types and units as Prometheus users expect them, every family.
    let scraped = exposition::parse(&body);
    for (family, kind) in [
        ("filprove_proofs_total", "counter"),
        ("filprove_proof_duration_seconds", "histogram"),
        ("filprove_stage_duration_seconds", "histogram"),
        ("filprove_device_busy_seconds_total", "counter"),
        ("filprove_memory_limit_bytes", "gauge"),
        ("filprove_uptime_seconds", "gauge"),
    ] {
        assert_eq!(
            scraped.types.get(family).map(String::as_str),
            Some(kind),
            "{body}"
        );
    }
    // The proof latency histogram of the kind proved: its buckets, one proof in them.
    let buckets = scraped.buckets(
        "filprove_proof_duration_seconds",
        &[("kind", "window-post")],
    );
    let bounds: Vec<f64> = buckets.iter().map(|b| b.0).collect();
    let mut expected = filprove_engine::metrics::PROOF_BUCKETS.to_vec();
    expected.push(f64::INFINITY);
    assert_eq!(bounds, expected);
    assert_eq!(buckets.last().unwrap().1, 1.0);
    assert!(
        body.contains("filprove_memory_limit_bytes 4294967296"),
        "{body}"
    );
    let (code, body) = http_get(d.http, "/status");
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["proofs"]["completed"], 1);
    assert_eq!(v["devices"][0]["name"], "cpu");
    assert_eq!(http_get(d.http, "/healthz"), (200, "ok\n".into()));
    assert_eq!(http_get(d.http, "/readyz"), (200, "ready\n".into()));
    assert_eq!(http_get(d.http, "/nope").0, 404);
}

/// A daemon configured for a GPU that proves on the CPU answers (`/healthz`) but is not
/// ready (`/readyz`), and says why.
#[test]
fn readyz_fails_when_the_gpu_backend_fell_back_to_the_cpu() {
    // No GPU for this process's CUDA backends: `auto` falls back to the CPU.
    std::env::set_var("BELLMAN_NO_GPU", "1");
    let d = TestDaemon::start(|c| c.engine.backend = "auto".into());
    assert_eq!(http_get(d.http, "/healthz").0, 200);
    let (code, body) = http_get(d.http, "/readyz");
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("fell back to the CPU"), "{body}");
    d.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_request_id_never_gets_another_request_s_proof() {
    let d = TestDaemon::start(|c| {
        c.engine.partition_workers = 1;
        c.engine.express_worker = false;
    });
    let mut c = client::connect(&d.unix_addr()).await.unwrap();
    let winning = request(ProofKind::WinningPoSt);
    let window = request(ProofKind::WindowPoSt);
    let prove = |mut c: client::Client, wire: pb::SubmitProofRequest| async move {
        c.prove(pb::ProveRequest { submit: Some(wire) })
            .await
            .map(|r| r.into_inner().result.unwrap())
    };
    // The case guarded here: a WindowPoSt under the id of a finished WinningPoSt gets a
    // WindowPoSt proof of its own.
    let first = prove(
        c.clone(),
        to_wire(&winning, "reused", pb::Priority::Critical),
    )
    .await
    .unwrap();
    assert!(winning.verify(&first.proof).unwrap());
    let second = prove(c.clone(), to_wire(&window, "reused", pb::Priority::High))
        .await
        .unwrap();
    assert_eq!(second.status, completed(), "{}", second.error_message);
    assert_eq!(second.job_id, "reused");
    assert!(window.verify(&second.proof).unwrap(), "a WindowPoSt proof");

    // While a job is unfinished, its id with other inputs is refused.
    for i in 0..3 {
        c.submit_proof(to_wire(
            &winning,
            &format!("ahead-{i}"),
            pb::Priority::Critical,
        ))
        .await
        .unwrap();
    }
    c.submit_proof(to_wire(&winning, "busy", pb::Priority::Critical))
        .await
        .unwrap();
    let e = c
        .submit_proof(to_wire(&window, "busy", pb::Priority::High))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::AlreadyExists, "{}", e.message());
    assert!(
        e.message().starts_with("request_id_conflict:"),
        "{}",
        e.message()
    );
    // The same inputs re-attach to it.
    let again = c
        .submit_proof(to_wire(&winning, "busy", pb::Priority::Critical))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.job_id, "busy");
    // Cancelled, then asked for again: a new job, proved.
    c.cancel_proof(pb::CancelProofRequest {
        job_id: "busy".into(),
    })
    .await
    .unwrap();
    let retried = prove(c.clone(), to_wire(&winning, "busy", pb::Priority::Critical))
        .await
        .unwrap();
    assert_eq!(retried.status, completed(), "{}", retried.error_message);
    assert!(winning.verify(&retried.proof).unwrap());
    for i in 0..3 {
        let r = c
            .await_proof(pb::AwaitProofRequest {
                job_id: format!("ahead-{i}"),
                timeout_ms: 0,
            })
            .await
            .unwrap();
        assert_eq!(r.into_inner().status, completed());
    }
    let s = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        s.total_proofs_completed, 6,
        "two under \"reused\", three ahead, one busy"
    );
}

/// Waits (bounded) until the job `id` exists and has ended; its status.
async fn ended(d: &TestDaemon, id: &str) -> filprove_engine::JobStatus {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let s = d.engine.job_status(id);
        if let Some(s) = s.as_ref().ok().filter(|s| s.is_terminal()) {
            return *s;
        }
        assert!(tokio::time::Instant::now() < deadline, "{id}: {s:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_its_last_caller_abandoned_is_cancelled_by_kind() {
    use filprove_engine::JobStatus;
    let d = TestDaemon::start(|c| {
        c.engine.partition_workers = 1;
        c.engine.express_worker = false;
        c.server.cancel_abandoned = vec!["winning-post".into()];
    });
    let mut c = client::connect(&d.unix_addr()).await.unwrap();
    let winning = request(ProofKind::WinningPoSt);
    let window = request(ProofKind::WindowPoSt);
    // Work ahead, so the jobs below are still queued when their callers give up.
    for i in 0..2 {
        c.submit_proof(to_wire(
            &winning,
            &format!("ahead-{i}"),
            pb::Priority::Critical,
        ))
        .await
        .unwrap();
    }
    let impatient = |wire: pb::SubmitProofRequest| {
        let mut c = c.clone();
        async move {
            let mut r = tonic::Request::new(pb::ProveRequest { submit: Some(wire) });
            r.set_timeout(Duration::from_millis(200));
            c.prove(r).await.unwrap_err().code()
        }
    };
    // A WinningPoSt (in server.cancel_abandoned) whose only caller gave up is cancelled.
    let code = impatient(to_wire(&winning, "gone-winning", pb::Priority::Critical)).await;
    assert!(
        matches!(code, Code::DeadlineExceeded | Code::Cancelled),
        "{code:?}"
    );
    assert_eq!(ended(&d, "gone-winning").await, JobStatus::Cancelled);

    // A WindowPoSt (not in the list) runs on, for the caller's retry.
    let code = impatient(to_wire(&window, "gone-window", pb::Priority::High)).await;
    assert!(
        matches!(code, Code::DeadlineExceeded | Code::Cancelled),
        "{code:?}"
    );
    assert_eq!(ended(&d, "gone-window").await, JobStatus::Completed);

    // A caller that gives up while another still waits on the job cancels nothing.
    let wire = to_wire(&winning, "shared", pb::Priority::Critical);
    let patient = {
        let mut c = c.clone();
        let wire = wire.clone();
        tokio::spawn(async move { c.prove(pb::ProveRequest { submit: Some(wire) }).await })
    };
    while !d.engine.contains("shared") {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let code = impatient(wire).await;
    assert!(
        matches!(code, Code::DeadlineExceeded | Code::Cancelled),
        "{code:?}"
    );
    let r = patient.await.unwrap().unwrap().into_inner().result.unwrap();
    assert_eq!(r.status, completed(), "{}", r.error_message);
    assert!(winning.verify(&r.proof).unwrap());
    // A job submitted with SubmitProof is not cancelled when an AwaitProof gives up.
    let mut r = tonic::Request::new(pb::AwaitProofRequest {
        job_id: "ahead-1".into(),
        timeout_ms: 0,
    });
    r.set_timeout(Duration::from_millis(1));
    let _ = c.await_proof(r).await;
    assert_eq!(ended(&d, "ahead-1").await, JobStatus::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_carry_grpc_codes_and_stable_codes() {
    let d = TestDaemon::start(|c| c.server.max_message_bytes = 64 << 10);
    let mut c = client::connect(&d.unix_addr()).await.unwrap();

    let e = c
        .submit_proof(pb::SubmitProofRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().starts_with("invalid_request:"),
        "{}",
        e.message()
    );

    let mut w = to_wire(
        &request(ProofKind::WindowPoSt),
        "bad-vanilla",
        pb::Priority::Normal,
    );
    w.vanilla_proofs = vec![vec![0, 0, 0]];
    let e = c.submit_proof(w).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());

    let mut w = to_wire(
        &request(ProofKind::WindowPoSt),
        "too-big",
        pb::Priority::Normal,
    );
    w.vanilla_proof = vec![b' '; 100 << 10];
    let e = c.submit_proof(w).await.unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{}", e.message());

    let e = c
        .await_proof(pb::AwaitProofRequest {
            job_id: "nope".into(),
            timeout_ms: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert!(e.message().starts_with("unknown_job:"));
    assert_eq!(
        c.cancel_proof(pb::CancelProofRequest {
            job_id: "nope".into()
        })
        .await
        .unwrap_err()
        .code(),
        Code::NotFound
    );
    let e = c
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: "porep-3k".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{}", e.message());
    let e = c
        .prove(pb::ProveRequest { submit: None })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preload_and_evict_manage_residency() {
    let d = TestDaemon::start(|_| {});
    let mut c = client::connect(&d.tcp_addr()).await.unwrap();
    let p = c
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: "wpost-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!p.already_loaded);
    // Other spellings name the same circuit.
    let p = c
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: "window-post-2KiB".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(p.already_loaded);
    let s = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    let e = s
        .loaded_srs
        .iter()
        .find(|e| e.circuit_id == "wpost-2k")
        .unwrap();
    assert_eq!(e.tier, pb::srs_status::Tier::Hot as i32);
    let ev = c
        .evict_srs(pb::EvictSrsRequest {
            circuit_id: "wpost-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(ev.was_loaded && ev.freed_bytes > 0);
    let ev = c
        .evict_srs(pb::EvictSrsRequest {
            circuit_id: "wpost-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!ev.was_loaded);
    let s = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    let e = s
        .loaded_srs
        .iter()
        .find(|e| e.circuit_id == "wpost-2k")
        .unwrap();
    assert_eq!(e.tier, pb::srs_status::Tier::Cold as i32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_await_timeout_work_over_grpc() {
    let d = TestDaemon::start(|c| {
        c.engine.partition_workers = 1;
        c.engine.express_worker = false;
    });
    let mut c = client::connect(&d.unix_addr()).await.unwrap();
    let winning = request(ProofKind::WinningPoSt);
    for i in 0..3 {
        c.submit_proof(to_wire(&winning, &format!("w{i}"), pb::Priority::Critical))
            .await
            .unwrap();
    }
    let last = c
        .submit_proof(to_wire(&winning, "w-last", pb::Priority::Critical))
        .await
        .unwrap()
        .into_inner();
    assert!(last.queue_position >= 1, "{}", last.queue_position);
    let t = c
        .await_proof(pb::AwaitProofRequest {
            job_id: "w-last".into(),
            timeout_ms: 5,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(t.status, pb::await_proof_response::Status::Timeout as i32);
    let waiter = {
        let mut c = c.clone();
        tokio::spawn(async move {
            c.await_proof(pb::AwaitProofRequest {
                job_id: "w-last".into(),
                timeout_ms: 0,
            })
            .await
        })
    };
    let r = c
        .cancel_proof(pb::CancelProofRequest {
            job_id: "w-last".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!r.was_running);
    let r = waiter.await.unwrap().unwrap().into_inner();
    assert_eq!(r.status, pb::await_proof_response::Status::Cancelled as i32);
    for i in 0..3 {
        let r = c
            .await_proof(pb::AwaitProofRequest {
                job_id: format!("w{i}"),
                timeout_ms: 0,
            })
            .await
            .unwrap();
        assert_eq!(r.into_inner().status, completed());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_in_flight_work_and_refuses_new_work() {
    let d = TestDaemon::start(|_| {});
    let mut c = client::connect(&d.unix_addr()).await.unwrap();
    let wire = to_wire(
        &request(ProofKind::WinningPoSt),
        "in-flight",
        pb::Priority::Normal,
    );
    let prove = {
        let mut c = c.clone();
        tokio::spawn(async move { c.prove(pb::ProveRequest { submit: Some(wire) }).await })
    };
    // Wait until the job is known, then start draining.
    while !d.engine.contains("in-flight") {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    d.engine.begin_drain();
    let e = c
        .submit_proof(to_wire(
            &request(ProofKind::WindowPoSt),
            "late",
            pb::Priority::Critical,
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unavailable);
    assert_eq!(http_get(d.http, "/healthz").0, 503);
    assert_eq!(
        http_get(d.http, "/readyz"),
        (503, "not ready: draining\n".into())
    );
    let socket = d.socket.clone();
    let stopper = tokio::task::spawn_blocking(move || d.shutdown());
    let r = prove.await.unwrap().unwrap().into_inner().result.unwrap();
    assert_eq!(
        r.status,
        completed(),
        "the in-flight proof finished: {}",
        r.error_message
    );
    stopper.await.unwrap().unwrap();
    assert!(!socket.exists(), "socket removed at exit");
    assert!(client::connect(&socket.display().to_string())
        .await
        .is_err());
}

#[test]
fn the_client_bench_and_commands_run_against_the_daemon() {
    let d = TestDaemon::start(|_| {});
    let rt = tokio::runtime::Runtime::new().unwrap();
    let args = client::bench::BenchArgs {
        connect: client::Connect::to(d.unix_addr()),
        input: client::RequestInput {
            request: Some(request_file(ProofKind::WindowPoSt)),
            ..Default::default()
        },
        count: 3,
        concurrency: 2,
        priority: client::PriorityArg::Normal,
        json: true,
    };
    let report = rt.block_on(client::bench::run(&args)).unwrap();
    assert_eq!(
        (report.count, report.failed, report.samples.len()),
        (3, 0, 3)
    );
    let j = report.to_json();
    assert!(j["seconds_per_proof"].as_f64().unwrap() > 0.0);
    assert!(
        j["latency_seconds"]["p99"].as_f64().unwrap()
            >= j["latency_seconds"]["p50"].as_f64().unwrap()
    );
    drop(rt);

    let out = d.dir.path().join("proof.bin");
    client::run_client(client::ClientCommand::Submit(client::SubmitArgs {
        connect: client::Connect::to(d.tcp_addr()),
        input: client::RequestInput {
            request: Some(request_file(ProofKind::WinningPoSt)),
            ..Default::default()
        },
        request_id: Some("cli-1".into()),
        priority: client::PriorityArg::High,
        wait: true,
        out: Some(out.clone()),
    }))
    .unwrap();
    assert_eq!(std::fs::read(&out).unwrap().len(), 192);
    let status = client::ClientCommand::Status(client::StatusArgs {
        connect: client::Connect::to(d.unix_addr()),
        metrics: false,
    });
    client::run_client(status).unwrap();
    let preload = client::ClientCommand::Preload(client::SrsArgs {
        connect: client::Connect::to(d.unix_addr()),
        circuit_id: "winning-2k".into(),
    });
    client::run_client(preload).unwrap();
    let err = client::run_client(client::ClientCommand::Cancel(client::CancelArgs {
        connect: client::Connect::to(d.unix_addr()),
        job_id: "missing".into(),
    }))
    .unwrap_err();
    assert!(err.to_string().contains("unknown_job"), "{err}");
}

#[test]
fn porep_c1_inputs_convert_raw_and_wrapped() {
    let e = env();
    let raw = std::fs::read(e.set_2k.c1_raw.as_ref().unwrap()).unwrap();
    let wrapped = std::fs::read(e.set_2k.c1_wrapped.as_ref().unwrap()).unwrap();
    let porep = request(ProofKind::PoRep);
    let mut w = to_wire(&porep, "porep", pb::Priority::Normal);
    for body in [raw, wrapped] {
        w.vanilla_proof = body;
        let (req, prio) = filprove::server::convert::to_request(&w).unwrap();
        assert_eq!(req.kind(), ProofKind::PoRep);
        assert_eq!(req.num_partitions(), 1);
        assert_eq!(prio, filprove_engine::Priority::Normal);
    }
    // The registered proof must be the C1's.
    w.registered_proof = 0;
    let err = filprove::server::convert::to_request(&w).unwrap_err();
    assert!(err.to_string().contains("differs"), "{err}");
    w.registered_proof = 99;
    assert_eq!(
        filprove::server::convert::to_request(&w)
            .unwrap_err()
            .code(),
        "invalid_request"
    );
}

#[test]
fn the_parameter_loader_checks_digests_when_asked() {
    let e = env();
    ensure_params("wpost-2k");
    // Locally generated parameters carry production file names but not their digests.
    let strict = filprove_engine::filecoin::srs_loader(e.params.clone(), false, true);
    match strict("wpost-2k") {
        Err(err) => assert_eq!(err.code(), "params_digest_mismatch", "{err}"),
        Ok(_) => panic!("test parameters passed the production digest check"),
    }
    let lax = filprove_engine::filecoin::srs_loader(e.params.clone(), false, false);
    assert!(lax("wpost-2k").is_ok());
    assert_eq!(lax("porep-3k").err().unwrap().code(), "unknown_circuit");
    let missing = filprove_engine::filecoin::srs_loader(e.root.join("no-such-dir"), false, false);
    assert_eq!(missing("wpost-2k").err().unwrap().code(), "params_missing");
}

#[test]
fn every_kind_round_trips_through_the_wire_form() {
    use filprove::server::convert::{encode_vanilla_proofs, to_request};
    for kind in ProofKind::ALL {
        let req = request(kind);
        let wire = to_wire(&req, "rt", pb::Priority::Unspecified);
        let (back, prio) = to_request(&wire).unwrap();
        if kind != ProofKind::PoRep {
            // Vanilla proofs travel in field 11; the JSON framing in field 10 is read only
            // when 11 is empty, and both at once are refused.
            assert!(!wire.vanilla_proofs.is_empty() && wire.vanilla_proof.is_empty());
            let mut json = wire.clone();
            json.vanilla_proof = encode_vanilla_proofs(&std::mem::take(&mut json.vanilla_proofs));
            let (from_json, _) = to_request(&json).unwrap();
            assert_eq!(
                from_json.public_inputs().unwrap(),
                req.public_inputs().unwrap()
            );
            let mut both = wire.clone();
            both.vanilla_proof = json.vanilla_proof;
            let err = to_request(&both).unwrap_err();
            assert!(err.to_string().contains("both"), "{err}");
        }
        assert_eq!(back.kind(), kind);
        assert_eq!(back.circuit(), req.circuit());
        assert_eq!(back.num_partitions(), req.num_partitions());
        assert_eq!(
            back.public_inputs().unwrap(),
            req.public_inputs().unwrap(),
            "{kind}"
        );
        let floor = match kind {
            ProofKind::WinningPoSt => filprove_engine::Priority::Critical,
            ProofKind::WindowPoSt => filprove_engine::Priority::High,
            _ => filprove_engine::Priority::Normal,
        };
        assert_eq!(prio, floor);
    }
    // SnapDeals commitments must be 32 raw bytes.
    let mut w = to_wire(&request(ProofKind::SnapDeals), "snap", pb::Priority::Normal);
    w.comm_d_new.pop();
    let err = to_request(&w).unwrap_err();
    assert!(err.to_string().contains("comm_d_new"), "{err}");
}
