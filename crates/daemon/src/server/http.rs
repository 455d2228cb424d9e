//! The HTTP admin endpoint: `/metrics` (Prometheus text), `/status` (JSON), `/healthz`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use filprove_engine::{Engine, SrsTier};
use serde_json::json;

/// The admin router.
pub fn router(engine: Arc<Engine>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/status", get(status))
        .route("/healthz", get(healthz))
        .with_state(engine)
}

async fn metrics(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        engine.metrics_text() + &filprove_engine::gpu_sampler::metrics_text(),
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
