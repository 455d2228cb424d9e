//! Cooperative cancellation of a running synthesis. A caller (the engine's synthesis
//! worker) runs a synthesis under a flag with [`with_cancel_flag`]; the constraint system
//! ([`crate::ProvingAssignment`]) looks at it every [`CHECK_EVERY`] allocated variables and,
//! once it is set, fails the allocation, so the circuit's synthesis returns at once with an
//! error that [`is_cancellation`] recognises. A 32 GiB PoRep partition (130 M variables,
//! about 25 s of synthesis) then stops within a few milliseconds of a cancel.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bellperson::SynthesisError;

/// Allocations between two looks at the flag.
pub const CHECK_EVERY: usize = 1 << 16;

const MESSAGE: &str = "synthesis cancelled";

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Restores the thread's previous flag when the closure ends, also by unwinding.
struct Restore(Option<Arc<AtomicBool>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let prev = self.0.take();
        FLAG.with(|f| *f.borrow_mut() = prev);
    }
}

/// Runs `f` (a synthesis on this thread) with `flag` as its cancellation flag.
pub fn with_cancel_flag<T>(flag: Arc<AtomicBool>, f: impl FnOnce() -> T) -> T {
    let prev = FLAG.with(|f| f.borrow_mut().replace(flag));
    let _restore = Restore(prev);
    f()
}

/// The current thread's flag, for work it hands to other threads
/// ([`crate::parts`] runs each part under it).
pub(crate) fn current() -> Option<Arc<AtomicBool>> {
    FLAG.with(|f| f.borrow().clone())
}

/// Whether the current thread's synthesis was asked to stop.
pub(crate) fn requested() -> bool {
    FLAG.with(|f| {
        f.borrow()
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    })
}

/// The error an allocation returns once cancellation was requested.
pub(crate) fn error() -> SynthesisError {
    SynthesisError::IoError(std::io::Error::new(
        std::io::ErrorKind::Interrupted,
        MESSAGE,
    ))
}

/// Whether `e` is the error of a cancelled synthesis.
pub fn is_cancellation(e: &SynthesisError) -> bool {
    matches!(e, SynthesisError::IoError(io) if io.kind() == std::io::ErrorKind::Interrupted && io.to_string() == MESSAGE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Fr, ProvingAssignment};
    use filprove_testkit::Chain;

    fn chain(rounds: usize) -> Chain {
        Chain::new(Fr::from(3u64), rounds)
    }

    #[test]
    fn a_set_flag_stops_synthesis_within_one_check_interval() {
        let flag = Arc::new(AtomicBool::new(true));
        let err = with_cancel_flag(flag, || ProvingAssignment::synthesize(chain(1 << 20)))
            .expect_err("cancelled synthesis must fail");
        assert!(is_cancellation(&err), "{err:?}");
        // The flag is gone after the closure: the same synthesis now completes.
        let long = chain(3 * CHECK_EVERY);
        let done = ProvingAssignment::synthesize(long.clone()).expect("no flag");
        assert_eq!(done.aux_assignment.len(), long.aux_variables());
    }

    #[test]
    fn a_clear_flag_changes_nothing_and_other_errors_are_not_cancellations() {
        let flag = Arc::new(AtomicBool::new(false));
        let asg = with_cancel_flag(flag.clone(), || {
            ProvingAssignment::synthesize(chain(CHECK_EVERY + 5))
        })
        .expect("clear flag");
        assert_eq!(
            asg.aux_assignment.len(),
            chain(CHECK_EVERY + 5).aux_variables()
        );
        assert!(!is_cancellation(&SynthesisError::AssignmentMissing));
        let other =
            SynthesisError::IoError(std::io::Error::new(std::io::ErrorKind::Interrupted, "x"));
        assert!(!is_cancellation(&other));
    }
}
