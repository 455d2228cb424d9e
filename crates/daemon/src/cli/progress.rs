//! Progress on a terminal: bars with a rate and an ETA where the work is counted (bytes
//! decoded, proofs proved), spinners with the elapsed time where it is not. Off a terminal
//! (a log file, a pipe, journald) they draw nothing; the stage lines say what happened.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};

/// What a bar counts: bytes (shown in KiB, MiB, GiB; rate per second) or things of a name
/// ("proofs"). The libraries' unit, so that their reports draw as they are.
pub use filprove_groth16::progress::ProgressUnit as Unit;

/// Whether progress is drawn: stderr is a terminal.
pub fn on_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// Where progress goes: stderr on a terminal, nowhere otherwise.
fn target() -> ProgressDrawTarget {
    target_for(on_terminal())
}

fn target_for(terminal: bool) -> ProgressDrawTarget {
    if terminal {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

/// A bar over `len` units with the rate and the time left (cleared when dropped).
pub fn bar(message: impl Into<String>, len: u64, unit: Unit) -> ProgressBar {
    bar_to(target(), message, len, unit)
}

/// A spinner with the elapsed time, for work that is not counted (cleared when dropped).
pub fn spinner(message: impl Into<String>) -> ProgressBar {
    spinner_to(target(), message)
}

fn style(template: &str) -> ProgressStyle {
    // The templates are constants of this module, checked by its tests.
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

const BYTES: &str =
    "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec}, {eta} left ({elapsed})";
const ITEMS: &str = "{msg} [{bar:30}] {pos}/{len} {prefix}, {per_sec}, {eta} left ({elapsed})";
const SPINNER: &str = "{spinner} {msg} ({elapsed})";

fn bar_to(
    target: ProgressDrawTarget,
    message: impl Into<String>,
    len: u64,
    unit: Unit,
) -> ProgressBar {
    let bar =
        ProgressBar::with_draw_target(Some(len), target).with_finish(ProgressFinish::AndClear);
    restyle(&bar, Some(len), unit);
    bar.set_message(message.into());
    bar
}

/// Starts `bar` over: a bar of `len` units from zero, with rate and ETA, or a spinner with
/// the elapsed time when `len` is `None`.
pub fn restyle(bar: &ProgressBar, len: Option<u64>, unit: Unit) {
    bar.reset();
    match (len, unit) {
        (None, _) => {
            bar.unset_length();
            bar.set_style(style(SPINNER));
        }
        (Some(len), Unit::Bytes) => {
            bar.set_length(len);
            bar.set_style(style(BYTES));
        }
        (Some(len), Unit::Items(name)) => {
            bar.set_length(len);
            bar.set_style(style(ITEMS));
            bar.set_prefix(name);
        }
    }
}

pub(crate) fn spinner_to(target: ProgressDrawTarget, message: impl Into<String>) -> ProgressBar {
    let spinner = ProgressBar::with_draw_target(None, target).with_finish(ProgressFinish::AndClear);
    spinner.set_style(style(SPINNER));
    spinner.set_message(message.into());
    spinner.enable_steady_tick(Duration::from_millis(200));
    spinner
}

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::{InMemoryTerm, TermLike as _};

    fn terminal() -> (InMemoryTerm, ProgressDrawTarget) {
        let term = InMemoryTerm::new(4, 120);
        (term.clone(), ProgressDrawTarget::term_like(Box::new(term)))
    }

    #[test]
    fn a_counted_bar_shows_the_rate_and_the_time_left() {
        for template in [BYTES, ITEMS, SPINNER] {
            ProgressStyle::with_template(template).unwrap();
        }
        let (term, target) = terminal();
        let bar = bar_to(target, "proving", 10, Unit::Items("proofs"));
        bar.inc(4);
        bar.tick();
        let shown = term.contents();
        assert!(shown.contains("proving ["), "{shown}");
        assert!(shown.contains("4/10 proofs"), "{shown}");
        assert!(shown.contains("/s"), "rate: {shown}");
        assert!(shown.contains("left"), "ETA: {shown}");
        assert!(term.width() > 0);

        let (term, target) = terminal();
        let bar = bar_to(target, "loading", 4 << 20, Unit::Bytes);
        bar.inc(1 << 20);
        bar.tick();
        let shown = term.contents();
        assert!(shown.contains("1.00 MiB/4.00 MiB"), "{shown}");
        assert!(shown.contains("/s"), "{shown}");
    }

    #[test]
    fn nothing_is_drawn_off_a_terminal() {
        assert!(bar_to(target_for(false), "x", 10, Unit::Bytes).is_hidden());
        assert!(spinner_to(target_for(false), "x").is_hidden());
    }
}
