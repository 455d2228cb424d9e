//! Stages of long work. On a terminal a stage shows a spinner (or, when its work is
//! counted, a bar with rate and ETA) while it runs, then one line when it ends; off a
//! terminal it logs a line when it starts and one when it ends. A stage is also where a
//! library reports the phases of its work ([`Progress`]): each phase restarts the bar.

use std::time::Instant;

use filprove_groth16::progress::Progress;
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

    /// The stage's name.
    pub fn name(&self) -> &str {
        &self.name
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

impl Progress for Stage {
    fn phase(&self, name: &str, total: Option<u64>, unit: Unit) {
        progress::restyle(&self.progress, total, unit);
        self.progress.set_message(format!("{}: {name}", self.name));
    }

    fn advance(&self, n: u64) {
        self.progress.inc(n);
    }

    fn shown(&self) -> bool {
        !self.progress.is_hidden()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::{InMemoryTerm, ProgressDrawTarget, ProgressFinish};

    #[test]
    fn a_library_s_phases_draw_as_spinners_then_bars_with_rate_and_eta() {
        let term = InMemoryTerm::new(4, 160);
        let target = ProgressDrawTarget::term_like(Box::new(term.clone()));
        let bar = ProgressBar::with_draw_target(None, target).with_finish(ProgressFinish::AndClear);
        let stage = Stage::begin("generating parameters for porep-2k".into(), bar);
        let reporter: &dyn Progress = &stage;

        reporter.phase(
            "capturing the blank circuit",
            None,
            Unit::Items("constraints"),
        );
        stage.progress.tick();
        let shown = term.contents();
        assert!(
            shown.contains("generating parameters for porep-2k: capturing the blank circuit"),
            "{shown}"
        );
        assert!(
            !shown.contains("left"),
            "no ETA for uncounted work: {shown}"
        );

        reporter.phase("parameter points", Some(1000), Unit::Items("points"));
        reporter.advance(250);
        stage.progress.tick();
        let shown = term.contents();
        assert!(shown.contains(": parameter points ["), "{shown}");
        assert!(shown.contains("250/1000 points"), "{shown}");
        assert!(shown.contains("/s") && shown.contains("left"), "{shown}");
        stage.done("");
    }
}
