//! Partition buffers reused from one synthesis to the next.
//!
//! A 32 GiB PoRep partition's assignment is ~16 GiB of vectors. Allocating them afresh for
//! every partition costs page faults on the synthesis thread, and a GPU backend that
//! page-locks them in place (`cuMemHostRegister`) pays about a second of registration per
//! partition, during which the other GPU worker's kernels run up to 4.7x slower (H200,
//! docs/decisions/008-partition-buffers-reused.md). Instead, the engine gives a proved
//! partition's assignment back to a [`BufferPool`]; the next synthesis refills the same
//! vectors in place ([`with_shell`]), keeping their capacity and the page-locking a backend
//! attached to them ([`HostPins`]), so steady-state partitions register nothing.
//!
//! Safety of the pinnings: a pin names one vector's whole allocation. Every way the
//! assignment grows a vector ([`crate::ProvingAssignment`]'s `ConstraintSystem` methods
//! and [`crate::ProvingAssignment::reserve_vectors`]) releases the vector's pin before the
//! vector reallocates, and [`HostPins`] is the assignment's first field, so pins are
//! released before the vectors are freed when an assignment is dropped.

use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::ProvingAssignment;

/// One pinned byte range `[from, to)` of an allocation (its start and length), with the
/// backend's guard that releases the pinning when dropped. An allocation may be pinned
/// piece by piece: several ranges of the same allocation, from its start.
struct Pin {
    ptr: usize,
    bytes: usize,
    from: usize,
    to: usize,
    _guard: Box<dyn Send + Sync>,
}

/// Page-lockings a backend attached to an assignment's vectors. Cloning an assignment
/// gives the clone no pins (its vectors are new allocations); pins never affect equality.
#[derive(Default)]
pub struct HostPins {
    pins: Mutex<Vec<Pin>>,
}

impl HostPins {
    fn lock(&self) -> MutexGuard<'_, Vec<Pin>> {
        self.pins.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True when the whole allocation starting at `ptr` of exactly `bytes` is pinned.
    pub fn covers(&self, ptr: *const u8, bytes: usize) -> bool {
        self.pinned_prefix(ptr, bytes) == bytes
    }

    /// How many bytes from the start of the allocation at `ptr` (`bytes` long) are
    /// pinned without a gap.
    pub fn pinned_prefix(&self, ptr: *const u8, bytes: usize) -> usize {
        let pins = self.lock();
        let mut ranges: Vec<(usize, usize)> = pins
            .iter()
            .filter(|p| p.ptr == ptr as usize && p.bytes == bytes)
            .map(|p| (p.from, p.to))
            .collect();
        ranges.sort_unstable();
        let mut end = 0;
        for (from, to) in ranges {
            if from > end {
                break;
            }
            end = end.max(to);
        }
        end.min(bytes)
    }

    /// Records that bytes `range` of the allocation at `ptr` (`bytes` long) are pinned
    /// until `guard` drops, next to the ranges already attached to it (pins of the same
    /// start for another length, left from an earlier allocation, are released first).
    pub fn attach_range(
        &self,
        ptr: *const u8,
        bytes: usize,
        range: std::ops::Range<usize>,
        guard: Box<dyn Send + Sync>,
    ) {
        let ptr = ptr as usize;
        drop(self.take_where(|p| p.ptr == ptr && p.bytes != bytes)); // outside the lock
        self.lock().push(Pin {
            ptr,
            bytes,
            from: range.start,
            to: range.end,
            _guard: guard,
        });
    }

    /// Releases the pins of the allocation starting at `ptr`, if any (called before that
    /// allocation is reallocated or freed).
    pub fn release(&self, ptr: *const u8) {
        let old = self.take_where(|p| p.ptr == ptr as usize);
        drop(old); // guards run outside the lock
    }

    /// Removes the pins `gone` selects and returns them (their guards still held).
    fn take_where(&self, gone: impl Fn(&Pin) -> bool) -> Vec<Pin> {
        let mut pins = self.lock();
        let (gone, kept): (Vec<Pin>, Vec<Pin>) =
            std::mem::take(&mut *pins).into_iter().partition(gone);
        *pins = kept;
        gone
    }

    /// Number of pinned ranges.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when nothing is pinned.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Clone for HostPins {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for HostPins {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for HostPins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostPins({} allocations)", self.len())
    }
}

/// Finished assignments kept, emptied, for the next syntheses (at most `max_shells`),
/// each with the time it was put back.
pub struct BufferPool {
    max_shells: usize,
    idle: Mutex<Vec<(ProvingAssignment, Instant)>>,
}

impl fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferPool")
            .field("max_shells", &self.max_shells)
            .field("idle_bytes", &self.idle_bytes())
            .finish()
    }
}

impl BufferPool {
    /// A pool keeping at most `max_shells` idle assignments (0: keeps nothing).
    pub fn new(max_shells: usize) -> Arc<Self> {
        Arc::new(Self {
            max_shells,
            idle: Mutex::new(Vec::new()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(ProvingAssignment, Instant)>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Empties `asg` (keeping its capacity and pins) and keeps it for a later synthesis.
    /// Beyond `max_shells` it is kept as surplus, counted like the others, until
    /// [`BufferPool::take_surplus`]: freeing it unpins it, and that holds the driver for
    /// long enough to stall a kernel region (1.4 s for a 32 GiB partition's 16.7 GB on
    /// the H200 host), so the caller frees surplus when no region runs.
    pub fn put(&self, asg: Option<ProvingAssignment>) {
        let Some(mut asg) = asg else {
            return;
        };
        if asg.heap_bytes() == 0 {
            return;
        }
        asg.clear();
        self.lock().push((asg, Instant::now()));
    }

    /// Removes the kept assignments beyond `max_shells` (the oldest first; the caller
    /// frees them, at a time no kernel region waits for the driver).
    pub fn take_surplus(&self) -> Vec<ProvingAssignment> {
        let mut idle = self.lock();
        let n = idle.len().saturating_sub(self.max_shells);
        if n == 0 {
            return Vec::new(); // the common case, after every region: no sort
        }
        idle.sort_by_key(|(_, t)| *t);
        idle.drain(..n).map(|(a, _)| a).collect()
    }

    /// Takes the idle assignment with the most room, if any.
    pub fn take(&self) -> Option<ProvingAssignment> {
        self.take_at_most(u64::MAX)
    }

    /// Takes the idle assignment with the most room among those of at most `bytes`.
    pub fn take_at_most(&self, bytes: u64) -> Option<ProvingAssignment> {
        let mut idle = self.lock();
        let best = (0..idle.len())
            .filter(|&i| idle[i].0.heap_bytes() as u64 <= bytes)
            .max_by_key(|&i| idle[i].0.heap_bytes())?;
        Some(idle.swap_remove(best).0)
    }

    /// Bytes held by idle assignments.
    pub fn idle_bytes(&self) -> u64 {
        self.lock().iter().map(|(a, _)| a.heap_bytes() as u64).sum()
    }

    /// Bytes of the idle assignment [`BufferPool::take`] would return (0 when none).
    pub fn largest_bytes(&self) -> u64 {
        self.lock()
            .iter()
            .map(|(a, _)| a.heap_bytes() as u64)
            .max()
            .unwrap_or(0)
    }

    /// Removes every idle assignment (the caller drops them, ideally outside its locks).
    pub fn evict_all(&self) -> Vec<ProvingAssignment> {
        self.evict_idle(Duration::ZERO)
    }

    /// Removes the assignments idle for at least `max_idle` (the caller drops them).
    /// (The scheduler asks at every wake-up: nothing is allocated when none is that old.)
    pub fn evict_idle(&self, max_idle: Duration) -> Vec<ProvingAssignment> {
        let mut idle = self.lock();
        let mut old = Vec::new();
        let mut i = 0;
        while i < idle.len() {
            if idle[i].1.elapsed() >= max_idle {
                old.push(idle.swap_remove(i).0);
            } else {
                i += 1;
            }
        }
        old
    }
}

/// Frees large host allocations on a background thread. Dropping a 32 GiB partition's
/// assignment took 2.8 s on the H200 host (unregistering its page-locking and returning
/// 16.7 GB of pages); on a prover thread that is time the GPU or a job's completion
/// waits for. Drops run one after another, in the order given.
#[derive(Default)]
pub struct Reaper {
    last: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Reaper {
    /// Drops `items` on a background thread after the earlier ones (on this thread when
    /// no thread can be started).
    pub fn drop_later<T: Send + 'static>(&self, items: T) {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let before = last.take();
        let spawned = std::thread::Builder::new()
            .name("filprove-free".into())
            .spawn(move || {
                if let Some(b) = before {
                    let _ = b.join();
                }
                drop(items);
            });
        match spawned {
            Ok(h) => *last = Some(h),
            Err(e) => {
                log::warn!("no thread to free host memory in the background: {e}");
                // `items` moved into the closure that failed to start and was dropped
                // with it, here.
            }
        }
    }

    /// Waits until everything given so far is dropped.
    pub fn wait(&self) {
        let h = self.last.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = h {
            let _ = h.join();
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.wait();
    }
}

impl fmt::Debug for Reaper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Reaper")
    }
}

thread_local! {
    static SHELL: RefCell<Option<ProvingAssignment>> = const { RefCell::new(None) };
}

/// Runs `f` (a synthesis) with `shell` as the assignment the next
/// [`ProvingAssignment::synthesize`] on this thread fills. Returns `f`'s result and the
/// shell when nothing took it.
pub fn with_shell<R>(
    shell: Option<ProvingAssignment>,
    f: impl FnOnce() -> R,
) -> (R, Option<ProvingAssignment>) {
    // Puts the caller's shell (normally none) back however `f` ends, a panic included.
    struct Restore(Option<ProvingAssignment>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            SHELL.with(|s| *s.borrow_mut() = previous);
        }
    }
    let previous = SHELL.with(|s| std::mem::replace(&mut *s.borrow_mut(), shell));
    let _restore = Restore(previous);
    let r = f();
    let left = take_shell();
    (r, left)
}

/// The shell [`with_shell`] set for this thread's synthesis, emptied, if still there
/// (taken by [`ProvingAssignment::synthesize`]; a stand-in synthesis that fills an
/// assignment by other means takes it here, then calls
/// [`ProvingAssignment::reserve_vectors`]).
pub fn take_shell() -> Option<ProvingAssignment> {
    let mut shell = SHELL.with(|s| s.borrow_mut().take())?;
    shell.clear();
    Some(shell)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Fr;
    use ff::Field;
    use filprove_testkit::Chain;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn chain(rounds: usize) -> Chain {
        Chain::new(Fr::from(3u64), rounds)
    }

    /// A guard that records when it is dropped.
    struct Flag(Arc<AtomicBool>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    fn flag() -> (Arc<AtomicBool>, Box<dyn Send + Sync>) {
        let f = Arc::new(AtomicBool::new(false));
        (f.clone(), Box::new(Flag(f)))
    }

    fn pin_a(asg: &ProvingAssignment) -> Arc<AtomicBool> {
        let (f, guard) = flag();
        let bytes = asg.a.capacity() * std::mem::size_of::<Fr>();
        asg.pins
            .attach_range(asg.a.as_ptr().cast(), bytes, 0..bytes, guard);
        f
    }

    #[test]
    fn a_kept_shell_is_refilled_in_place_with_its_pin() {
        let pool = BufferPool::new(2);
        let first = ProvingAssignment::synthesize(chain(1000)).unwrap();
        let expected = first.clone();
        let released = pin_a(&first);
        let (ptr, cap) = (first.a.as_ptr(), first.a.capacity());
        pool.put(Some(first));
        assert_eq!(pool.idle_bytes() as usize, {
            let s = pool.take().unwrap();
            let b = s.heap_bytes();
            assert!(s.a.is_empty() && s.aux_assignment.is_empty() && s.a_aux_density.is_empty());
            pool.put(Some(s));
            b
        });
        let (again, left) = with_shell(pool.take(), || {
            ProvingAssignment::synthesize(chain(1000)).unwrap()
        });
        assert!(left.is_none(), "the synthesis took the shell");
        assert_eq!(again, expected, "same witness as a fresh synthesis");
        assert_eq!((again.a.as_ptr(), again.a.capacity()), (ptr, cap));
        assert!(
            !released.load(Ordering::SeqCst),
            "the pin survived the refill"
        );
        assert!(again.pins.covers(ptr.cast(), cap * 32));
        drop(again);
        assert!(
            released.load(Ordering::SeqCst),
            "dropping the assignment unpins"
        );
    }

    #[test]
    fn a_vector_that_outgrows_its_shell_releases_its_pin_first() {
        let pool = BufferPool::new(1);
        let small = ProvingAssignment::synthesize(chain(100)).unwrap();
        let released = pin_a(&small);
        pool.put(Some(small));
        let (big, _) = with_shell(pool.take(), || {
            ProvingAssignment::synthesize(chain(5000)).unwrap()
        });
        assert!(
            released.load(Ordering::SeqCst),
            "the pin went before the reallocation"
        );
        assert!(big.pins.is_empty());
        assert_eq!(big, ProvingAssignment::synthesize(chain(5000)).unwrap());
    }

    #[test]
    fn reserve_vectors_releases_only_what_reallocates() {
        let mut asg = ProvingAssignment::synthesize(chain(100)).unwrap();
        asg.clear();
        let cap = asg.a.capacity();
        let kept = pin_a(&asg);
        asg.reserve_vectors(cap, 0);
        assert!(!kept.load(Ordering::SeqCst), "no reallocation: pin kept");
        assert_eq!(asg.a.capacity(), cap);
        asg.reserve_vectors(cap + 1, 0);
        assert!(kept.load(Ordering::SeqCst), "reallocation: pin released");
        assert!(asg.a.capacity() > cap);
    }

    /// Vectors filled to an exactly reserved size (as parted synthesis fills them) grow by
    /// exactly the input constraints when finished: no amortised doubling of a
    /// partition-sized vector, so a refill keeps the allocation and its pin.
    #[test]
    fn finishing_a_reserved_assignment_adds_exactly_the_input_constraints() {
        let asg = ProvingAssignment::synthesize(chain(1000)).unwrap();
        let (rows, inputs) = (asg.a.len(), asg.input_assignment.len());
        assert!(inputs >= 2, "the circuit has inputs besides ONE");
        let body = rows - inputs;
        let refill = |asg: &mut ProvingAssignment| {
            asg.clear();
            asg.reserve_vectors(body, 0);
            for v in [&mut asg.a, &mut asg.b] {
                v.resize(body, Fr::ONE);
            }
            asg.input_assignment.resize(inputs, Fr::ONE);
            asg.finish();
        };
        let mut fresh = ProvingAssignment::default();
        refill(&mut fresh);
        for v in [&fresh.a, &fresh.b] {
            assert_eq!((v.len(), v.capacity()), (rows, rows), "exact room");
        }
        let kept = pin_a(&fresh);
        refill(&mut fresh);
        assert!(
            !kept.load(Ordering::SeqCst),
            "a refill keeps the allocation"
        );
        assert_eq!(fresh.a.capacity(), rows);
    }

    #[test]
    fn an_allocation_pinned_piece_by_piece_is_covered_once_its_pieces_meet() {
        let pins = HostPins::default();
        let base = 0x1000 as *const u8;
        let (whole, other) = (300, 0x9000 as *const u8);
        assert_eq!(pins.pinned_prefix(base, whole), 0);
        let (first, g1) = flag();
        pins.attach_range(base, whole, 0..100, g1);
        let (_, g3) = flag();
        pins.attach_range(base, whole, 200..300, g3);
        assert_eq!(
            pins.pinned_prefix(base, whole),
            100,
            "a gap ends the prefix"
        );
        assert!(!pins.covers(base, whole));
        let (_, g_other) = flag();
        pins.attach_range(other, whole, 0..300, g_other);
        assert_eq!(
            pins.pinned_prefix(base, whole),
            100,
            "another allocation's range"
        );
        let (_, g2) = flag();
        pins.attach_range(base, whole, 100..200, g2);
        assert!(pins.covers(base, whole), "the gap filled");
        assert_eq!(pins.pinned_prefix(base, whole + 1), 0, "another length");
        // A range of the same start for a new length drops the old length's pins.
        let (_, g_new) = flag();
        pins.attach_range(base, 500, 0..50, g_new);
        assert!(first.load(Ordering::SeqCst), "stale pins released");
        assert_eq!(pins.pinned_prefix(base, 500), 50);
        assert_eq!(pins.len(), 2);
        pins.release(base);
        assert_eq!(pins.len(), 1, "only the other allocation's pin left");
    }

    #[test]
    fn the_pool_keeps_surplus_until_taken_and_hands_out_the_largest() {
        let pool = BufferPool::new(2);
        for n in [10, 400, 50] {
            pool.put(ProvingAssignment::synthesize(chain(n)).ok());
        }
        let three = pool.idle_bytes();
        let surplus = pool.take_surplus();
        assert_eq!(surplus.len(), 1, "one beyond the bound, the oldest");
        assert!(surplus[0].a.capacity() >= 10 && surplus[0].a.is_empty());
        assert_eq!(pool.idle_bytes(), three - surplus[0].heap_bytes() as u64);
        assert!(pool.take_surplus().is_empty());
        let largest = pool.largest_bytes();
        let taken = pool.take().unwrap();
        assert_eq!(taken.heap_bytes() as u64, largest);
        assert!(taken.a.capacity() >= 10);
        assert!(pool.take().is_some());
        assert!(pool.take().is_none(), "the third shell was dropped");
        assert_eq!(pool.idle_bytes(), 0);
        let off = BufferPool::new(0);
        off.put(ProvingAssignment::synthesize(chain(10)).ok());
        assert_eq!(
            off.take_surplus().len(),
            1,
            "kept only until taken as surplus"
        );
        assert!(off.take().is_none());
        pool.put(ProvingAssignment::synthesize(chain(10)).ok());
        assert!(pool.evict_idle(Duration::from_secs(3600)).is_empty());
        assert_eq!(pool.evict_idle(Duration::ZERO).len(), 1);
        assert_eq!(pool.idle_bytes(), 0);
        pool.put(ProvingAssignment::synthesize(chain(10)).ok());
        assert_eq!(pool.evict_all().len(), 1);
    }

    #[test]
    fn an_unused_shell_comes_back_and_the_thread_is_left_clean() {
        let shell = ProvingAssignment::synthesize(chain(10)).unwrap();
        let ((), left) = with_shell(Some(shell), || {});
        assert!(left.is_some());
        assert!(take_shell().is_none());
        let (r, left) = with_shell(None, || ProvingAssignment::synthesize(chain(3)));
        assert!(r.is_ok() && left.is_none());
    }

    #[test]
    fn the_reaper_drops_in_the_background_and_in_order() {
        let reaper = Reaper::default();
        let order = Arc::new(Mutex::new(Vec::new()));
        struct Logged(u32, Arc<Mutex<Vec<u32>>>);
        impl Drop for Logged {
            fn drop(&mut self) {
                self.1.lock().unwrap().push(self.0);
            }
        }
        let (first, guard) = flag();
        let here = std::thread::current().id();
        let dropped_on = Arc::new(Mutex::new(None));
        struct Where(Arc<Mutex<Option<std::thread::ThreadId>>>);
        impl Drop for Where {
            fn drop(&mut self) {
                *self.0.lock().unwrap() = Some(std::thread::current().id());
            }
        }
        reaper.drop_later((guard, Where(dropped_on.clone())));
        for i in 0..5 {
            reaper.drop_later(Logged(i, order.clone()));
        }
        reaper.wait();
        assert!(first.load(Ordering::SeqCst));
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
        let on = dropped_on.lock().unwrap().expect("dropped");
        assert_ne!(on, here, "dropped on another thread");
        reaper.wait(); // nothing left: returns at once
    }

    #[test]
    fn pins_do_not_follow_clones() {
        let asg = ProvingAssignment::synthesize(chain(10)).unwrap();
        let _f = pin_a(&asg);
        let c = asg.clone();
        assert!(c.pins.is_empty());
        assert_eq!(asg.pins.len(), 1);
        assert_eq!(c, asg);
    }
}
