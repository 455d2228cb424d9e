//! Progress lines for long work: each stage says when it starts and how long it took.

use std::time::Instant;

/// A named stage of a command, reported on stderr when it starts and when it ends.
pub struct Stage {
    name: String,
    start: Instant,
}

impl Stage {
    /// Announces `name` and starts its clock.
    pub fn start(name: impl Into<String>) -> Self {
        let name = name.into();
        eprintln!("[filprove] {name} ...");
        Self {
            name,
            start: Instant::now(),
        }
    }

    /// Reports the stage as done (with an optional detail) and returns its seconds.
    pub fn done(self, detail: &str) -> f64 {
        let secs = self.start.elapsed().as_secs_f64();
        if detail.is_empty() {
            eprintln!("[filprove] {} done in {secs:.2} s", self.name);
        } else {
            eprintln!("[filprove] {} done in {secs:.2} s: {detail}", self.name);
        }
        secs
    }
}
