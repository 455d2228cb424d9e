//! The HTTP admin endpoint: `/metrics` (Prometheus text), `/status` (JSON), `/healthz`
//! (the daemon answers and is not draining) and `/readyz` (it also proves where it was
//! configured to: a GPU backend that fell back to the CPU is not ready).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use filprove_engine::{Engine, SrsTier};
use serde_json::json;

/// The admin router. `configured_backend` is `engine.backend` ("cpu", "cuda", "auto"):
/// anything but "cpu" asks for a GPU, which `/readyz` checks.
pub fn router(engine: Arc<Engine>, configured_backend: String) -> Router {
    let readyz = move |State(engine): State<Arc<Engine>>| {
        let configured = configured_backend.clone();
        async move { readyz(&engine, &configured) }
    };
    Router::new()
        .route("/metrics", get(metrics))
        .route("/status", get(status))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(engine)
}

/// Why the daemon is not ready, or `None` when it is: draining, or a configured GPU
/// backend (`cuda`, `auto`) that is proving on the CPU (every device is `cpu`).
pub fn not_ready_reason(
    draining: bool,
    configured_backend: &str,
    devices: &[String],
) -> Option<String> {
    if draining {
        return Some("draining".into());
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
    match not_ready_reason(engine.is_draining(), configured_backend, &devices) {
        Some(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        ),
        None => (StatusCode::OK, "ready\n".into()),
    }
}

async fn metrics(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            filprove_engine::metrics::content_type(),
        )],
        engine.metrics_text(),
    )
}

async fn healthz(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    if engine.is_draining() {
        (StatusCode::SERVICE_UNAVAILABLE, "draining\n")
    } else {
        (StatusCode::OK, "ok\n")
    }
}

/// The status document served at `/status`.
pub fn status_json(engine: &Engine) -> serde_json::Value {
    let s = engine.status();
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
        })).collect::<Vec<_>>(),
        "queues": s.queues.iter().map(|q| json!({
            "proof_kind": q.kind, "pending": q.pending, "in_progress": q.in_progress,
        })).collect::<Vec<_>>(),
        "pipeline": { "synthesis_waiting": s.synthesis_waiting, "prove_waiting": s.prove_waiting },
        "memory": { "reserved_bytes": s.memory_reserved_bytes, "limit_bytes": s.memory_limit_bytes },
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

async fn status(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    axum::Json(status_json(&engine))
}

#[cfg(test)]
mod tests {
    use super::not_ready_reason;

    #[test]
    fn a_gpu_backend_on_the_cpu_is_not_ready() {
        let cpu = ["cpu".to_string()];
        let gpu = ["NVIDIA H200".to_string()];
        assert_eq!(not_ready_reason(false, "cpu", &cpu), None);
        assert_eq!(not_ready_reason(false, "auto", &gpu), None);
        assert_eq!(not_ready_reason(false, "cuda", &gpu), None);
        let why = not_ready_reason(false, "auto", &cpu).unwrap();
        assert!(why.contains("fell back to the CPU"), "{why}");
        assert_eq!(not_ready_reason(true, "cpu", &cpu).unwrap(), "draining");
    }
}
