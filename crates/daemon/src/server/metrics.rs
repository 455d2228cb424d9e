//! The text of `/metrics` and `GetMetrics`: the engine's families followed by the daemon's
//! own, the receive budget's (read from the budget when scraped). Same naming rules as the
//! engine's (`filprove_<what>_<base unit>`, counters end in `_total`); docs/api.md lists
//! every family.

use std::sync::{Arc, Mutex};

use filprove_engine::Engine;
use prometheus::core::Collector;
use prometheus::{
    Encoder as _, IntCounter, IntCounterVec, Opts, PullingGauge, Registry, TextEncoder,
};

use super::receive::ReceiveBudget;

/// The engine's metrics and the daemon's families.
pub struct Metrics {
    engine: Arc<Engine>,
    receive: Arc<ReceiveBudget>,
    registry: Registry,
    /// The refused counters, small and large, following the budget's counts; the lock
    /// keeps two scrapes from adding the same refusals.
    refused: Mutex<[IntCounter; 2]>,
}

/// A gauge read from the receive budget when scraped.
fn gauge(
    name: &str,
    help: &str,
    receive: &Arc<ReceiveBudget>,
    read: fn(&ReceiveBudget) -> u64,
) -> Result<Box<dyn Collector>, prometheus::Error> {
    let receive = receive.clone();
    let g = PullingGauge::new(name, help, Box::new(move || read(&receive) as f64))?;
    Ok(Box::new(g))
}

impl Metrics {
    /// The families over `engine` and the receive budget `receive`, registered in a
    /// registry of their own.
    pub fn new(
        engine: Arc<Engine>,
        receive: Arc<ReceiveBudget>,
    ) -> Result<Arc<Self>, prometheus::Error> {
        let registry = Registry::new();
        registry.register(gauge(
            "filprove_receive_held_bytes",
            "Bytes charged to the receive budget by messages being received, before decoding.",
            &receive,
            ReceiveBudget::held_bytes,
        )?)?;
        registry.register(gauge(
            "filprove_receive_limit_bytes",
            "The receive budget (intake.max_receiving_bytes).",
            &receive,
            ReceiveBudget::limit_bytes,
        )?)?;
        let refused = IntCounterVec::new(
            Opts::new(
                "filprove_receive_refused_total",
                "Calls refused at a message's length prefix by the receive budget (receive_busy), \
                 by message size: small (at most intake.small_message_bytes) or large.",
            ),
            &["size"],
        )?;
        registry.register(Box::new(refused.clone()))?;
        let refused = Mutex::new(["small", "large"].map(|size| refused.with_label_values(&[size])));
        Ok(Arc::new(Self {
            engine,
            receive,
            registry,
            refused,
        }))
    }

    /// The receive budget the families read.
    pub fn receive(&self) -> &ReceiveBudget {
        &self.receive
    }

    /// The engine's families, then the daemon's, set from the receive budget now.
    pub fn text(&self) -> String {
        let mut text = self.engine.metrics_text();
        text.push_str(&self.own_text());
        text
    }

    /// The daemon's families alone.
    fn own_text(&self) -> String {
        {
            let counters = self.refused.lock().unwrap_or_else(|p| p.into_inner());
            let now = self.receive.refused();
            for (c, now) in counters.iter().zip([now.small, now.large]) {
                c.inc_by(now.saturating_sub(c.get()));
            }
        }
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!(error = %e, "cannot render the daemon's metrics");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}
