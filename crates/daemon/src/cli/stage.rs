//! Stages of long work. On a terminal a stage shows a spinner (or, when its work is
//! counted, a bar with rate and ETA) while it runs, then one line when it ends; off a
//! terminal it logs a line when it starts and one when it ends.

use std::time::Instant;

use indicatif::ProgressBar;

use super::progress::{self, Unit};

/// A named stage of a command.
pub struct Stage {
    name: String,
    start: Instant,
    progress: ProgressBar,
}

impl Stage {
    /// Announces `name` and starts its clock (a spinner on a terminal).
    pub fn start(name: impl Into<String>) -> Self {
        let name = name.into();
        let progress = progress::spinner(name.clone());
        Self::begin(name, progress)
    }

    /// [`Stage::start`] for work of `len` units, advanced through [`Stage::progress`] (a
    /// bar with rate and ETA on a terminal).
    pub fn counted(name: impl Into<String>, len: u64, unit: Unit) -> Self {
        let name = name.into();
        let progress = progress::bar(name.clone(), len, unit);
        Self::begin(name, progress)
    }

    fn begin(name: String, progress: ProgressBar) -> Self {
        if progress.is_hidden() {
            eprintln!("[filprove] {name} ...");
        }
        Self {
            name,
            start: Instant::now(),
            progress,
        }
    }

    /// The stage's bar (hidden off a terminal): `inc` it as the work advances.
    pub fn progress(&self) -> &ProgressBar {
        &self.progress
    }

    /// Reports the stage as done (with an optional detail) and returns its seconds.
    pub fn done(self, detail: &str) -> f64 {
        self.progress.finish_and_clear();
        let secs = self.start.elapsed().as_secs_f64();
        if detail.is_empty() {
            eprintln!("[filprove] {} done in {secs:.2} s", self.name);
        } else {
            eprintln!("[filprove] {} done in {secs:.2} s: {detail}", self.name);
        }
        secs
    }
}
