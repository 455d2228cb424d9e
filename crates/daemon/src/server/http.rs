//! The HTTP admin endpoint: `/metrics` (Prometheus text: the engine's families and the
//! daemon's, [`super::metrics`]), `/status` (JSON), `/healthz`
//! (the daemon answers and is not draining), `/readyz` (it also proves where it was
//! configured to: a GPU backend that fell back to the CPU, or one whose devices are all
//! quarantined, is not ready), and the device actions `POST /devices/{ordinal}/restore`
//! and `POST /devices/{ordinal}/quarantine` (behind the bearer token when one is set).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use filprove_engine::{Engine, SrsTier};
use serde_json::json;

use super::metrics::Metrics;
use super::receive::ReceiveBudget;

/// The admin router. `configured_backend` is `engine.backend` ("cpu", "cuda", "auto"):
/// anything but "cpu" asks for a GPU, which `/readyz` checks. `metrics` are served at
/// `/metrics`; `/status` reads their receive budget too.
pub fn router(engine: Arc<Engine>, configured_backend: String, metrics: Arc<Metrics>) -> Router {
    let readyz = move |State(engine): State<Arc<Engine>>| {
        let configured = configured_backend.clone();
        async move { readyz(&engine, &configured) }
    };
    let scrape = metrics.clone();
    let text = move || {
        let m = scrape.clone();
        async move { metrics_text(&m) }
    };
    let status = move |State(engine): State<Arc<Engine>>| {
        let m = metrics.clone();
        async move { axum::Json(status_json(&engine, m.receive())) }
    };
    Router::new()
        .route("/metrics", get(text))
        .route("/status", get(status))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/devices/{ordinal}/restore", post(restore_device))
        .route("/devices/{ordinal}/quarantine", post(quarantine_device))
        .with_state(engine)
}

/// Why the daemon is not ready, or `None` when it is: draining, every device out of
/// rotation (`usable` devices of `devices`), or a configured GPU backend (`cuda`, `auto`)
/// that is proving on the CPU (every device is `cpu`).
pub fn not_ready_reason(
    draining: bool,
    configured_backend: &str,
    devices: &[String],
    usable: usize,
) -> Option<String> {
    if draining {
        return Some("draining".into());
    }
    if usable == 0 && !devices.is_empty() {
        return Some(
            "every device is quarantined (GET /status says why; `filprove device restore \
             <ordinal>` brings one back)"
                .into(),
        );
    }
    if configured_backend != "cpu" && devices.iter().all(|d| d == "cpu") {
        return Some(format!(
            "engine.backend = {configured_backend:?} fell back to the CPU: no usable GPU \
             (the log's \"cuda unavailable\" line says why; `filprove doctor` checks the GPUs)"
        ));
    }
    None
}

fn readyz(engine: &Engine, configured_backend: &str) -> (StatusCode, String) {
    let devices: Vec<String> = engine
        .status()
        .devices
        .into_iter()
        .map(|d| d.name)
        .collect();
    let usable = engine.usable_devices();
    match not_ready_reason(engine.is_draining(), configured_backend, &devices, usable) {
        Some(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        ),
        None => (StatusCode::OK, "ready\n".into()),
    }
}

fn metrics_text(metrics: &Metrics) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            filprove_engine::metrics::content_type(),
        )],
        metrics.text(),
    )
}

async fn healthz(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    if engine.is_draining() {
        (StatusCode::SERVICE_UNAVAILABLE, "draining\n")
    } else {
        (StatusCode::OK, "ok\n")
    }
}

/// The status document served at `/status`: the engine's state and the receive budget.
pub fn status_json(engine: &Engine, receive: &ReceiveBudget) -> serde_json::Value {
    let s = engine.status();
    let refused = receive.refused();
    json!({
        "uptime_seconds": s.uptime.as_secs(),
        "draining": s.draining,
        "proofs": { "completed": s.completed, "failed": s.failed, "cancelled": s.cancelled },
        "devices": s.devices.iter().map(|d| json!({
            "ordinal": d.ordinal,
            "name": d.name,
            "busy_seconds": d.busy.as_secs_f64(),
            "vram_total_bytes": d.memory.map(|m| m.1),
            "vram_free_bytes": d.memory.map(|m| m.0),
            "current_job_id": d.current_job.as_ref().map(|c| c.0.clone()),
            "current_proof_kind": d.current_job.as_ref().map(|c| c.1),
            "healthy": d.health.quarantined.is_none(),
            "quarantine_reason": d.health.quarantined,
            "consecutive_failures": d.health.consecutive_failures,
            "failures": d.health.failures,
            "quarantines": d.health.quarantines,
            "reserved_for_post": d.policy.urgent_only,
            "circuits": d.policy.circuits,
        })).collect::<Vec<_>>(),
        "queues": s.queues.iter().map(|q| json!({
            "proof_kind": q.kind, "pending": q.pending, "in_progress": q.in_progress,
        })).collect::<Vec<_>>(),
        "pipeline": { "synthesis_waiting": s.synthesis_waiting, "prove_waiting": s.prove_waiting },
        "memory": { "reserved_bytes": s.memory_reserved_bytes, "limit_bytes": s.memory_limit_bytes },
        "receive": {
            "held_bytes": receive.held_bytes(),
            "limit_bytes": receive.limit_bytes(),
            "refused": { "small": refused.small, "large": refused.large },
        },
        "srs": {
            "resident_bytes": s.srs_resident_bytes,
            "budget_bytes": engine.srs().budget_bytes(),
            "circuits": s.srs.iter().map(|e| json!({
                "circuit_id": e.circuit_id,
                "tier": match e.tier { SrsTier::Hot => "hot", SrsTier::Warm => "warm", SrsTier::Cold => "cold" },
                "size_bytes": e.size_bytes,
                "ref_count": e.ref_count,
            })).collect::<Vec<_>>(),
        },
    })
}

/// The answer to a device action: `changed` says whether the device's state changed.
fn device_action(
    engine: &Engine,
    ordinal: &str,
    act: impl FnOnce(usize) -> Result<bool, filprove_engine::EngineError>,
) -> (StatusCode, axum::Json<serde_json::Value>) {
    let result = ordinal
        .parse::<usize>()
        .map_err(|_| {
            format!(
                "bad device ordinal {:?}",
                filprove_filecoin::excerpt::clip(ordinal)
            )
        })
        .and_then(|o| {
            act(o)
                .map(|changed| (o, changed))
                .map_err(|e| format!("{}: {e}", e.code()))
        });
    match result {
        Ok((o, changed)) => {
            let d = &engine.status().devices[o];
            (
                StatusCode::OK,
                axum::Json(json!({
                    "ordinal": o,
                    "name": d.name,
                    "changed": changed,
                    "healthy": d.health.quarantined.is_none(),
                })),
            )
        }
        Err(e) => (StatusCode::NOT_FOUND, axum::Json(json!({ "error": e }))),
    }
}

async fn restore_device(
    State(engine): State<Arc<Engine>>,
    Path(ordinal): Path<String>,
) -> impl IntoResponse {
    device_action(&engine, &ordinal, |o| engine.restore_device(o))
}

async fn quarantine_device(
    State(engine): State<Arc<Engine>>,
    Path(ordinal): Path<String>,
) -> impl IntoResponse {
    device_action(&engine, &ordinal, |o| {
        engine.quarantine_device(o, "taken out of rotation by an operator")
    })
}

#[cfg(test)]
mod tests {
    use super::not_ready_reason;

    #[test]
    fn a_gpu_backend_on_the_cpu_is_not_ready() {
        let cpu = ["cpu".to_string()];
        let gpu = ["NVIDIA H200".to_string()];
        assert_eq!(not_ready_reason(false, "cpu", &cpu, 1), None);
        assert_eq!(not_ready_reason(false, "auto", &gpu, 1), None);
        assert_eq!(not_ready_reason(false, "cuda", &gpu, 1), None);
        let why = not_ready_reason(false, "auto", &cpu, 1).unwrap();
        assert!(why.contains("fell back to the CPU"), "{why}");
        assert_eq!(not_ready_reason(true, "cpu", &cpu, 1).unwrap(), "draining");
        let two = ["cuda:0".to_string(), "cuda:1".to_string()];
        assert_eq!(not_ready_reason(false, "cuda", &two, 1), None, "one left");
        let why = not_ready_reason(false, "cuda", &two, 0).unwrap();
        assert!(why.contains("every device is quarantined"), "{why}");
    }
}
