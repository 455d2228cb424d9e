//! The two priority queues of the pipeline (partitions waiting for synthesis, synthesized
//! partitions waiting for a prover) and the host memory budget they share.
//!
//! Order: priority first (CRITICAL > HIGH > NORMAL > LOW), then submission order. A
//! partition's memory is reserved when it leaves the synthesis queue and released when its
//! proof is made, so admission never runs the host out of memory. Head of line: when the
//! top partition does not fit, nothing behind it starts (a large job is not starved), except
//! that HIGH and CRITICAL work may use an extra eighth of the budget, so PoSt never waits
//! behind PoRep memory.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use filprove_groth16::recycle::BufferPool;
use filprove_groth16::ProvingAssignment;

use crate::job::Priority;
use crate::memory::MemoryBudget;
use crate::placement::Placement;
use crate::tracker::JobEntry;

/// Ordering key of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TaskKey {
    pub priority: Priority,
    pub seq: Reverse<u64>,
}

/// A partition waiting for synthesis.
pub(crate) struct SynthTask {
    pub key: TaskKey,
    pub job: Arc<JobEntry>,
    pub attempt: u32,
    pub partition: usize,
}

/// A synthesized partition waiting for a prover; holds its memory reservation.
pub(crate) struct ProveTask {
    pub key: TaskKey,
    pub job: Arc<JobEntry>,
    pub attempt: u32,
    pub partition: usize,
    pub assignment: ProvingAssignment,
    pub reservation: Reservation,
}

macro_rules! ord_by_key {
    ($t:ty) => {
        impl PartialEq for $t {
            fn eq(&self, o: &Self) -> bool {
                self.key == o.key
            }
        }
        impl Eq for $t {}
        impl PartialOrd for $t {
            fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
                Some(self.cmp(o))
            }
        }
        impl Ord for $t {
            fn cmp(&self, o: &Self) -> Ordering {
                self.key.cmp(&o.key)
            }
        }
    };
}
ord_by_key!(SynthTask);
ord_by_key!(ProveTask);

pub(crate) struct SchedState {
    pub synth: BinaryHeap<SynthTask>,
    pub prove: BinaryHeap<ProveTask>,
    pub budget: MemoryBudget,
    pub stopping: bool,
    seq: u64,
}

/// Queues, budget and the condition variables workers sleep on.
pub(crate) struct Scheduler {
    state: Mutex<SchedState>,
    /// Proved partitions' assignments kept for reuse; their bytes count against the
    /// budget while idle.
    pub buffers: Arc<BufferPool>,
    /// Kept assignments idle this long are freed (None: kept until needed elsewhere).
    buffer_idle: Option<Duration>,
    /// Which device takes which synthesized partition.
    pub placement: Arc<Placement>,
    synth_ready: Condvar,
    prove_ready: Condvar,
}

/// Host memory reserved for one partition; given back on drop.
pub(crate) struct Reservation {
    sched: Arc<Scheduler>,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.sched.lock().budget.release(self.bytes);
        self.sched.synth_ready.notify_all();
    }
}

impl Scheduler {
    pub fn new(
        memory_limit: u64,
        buffers: Arc<BufferPool>,
        buffer_idle: Option<Duration>,
        placement: Arc<Placement>,
    ) -> Arc<Self> {
        Arc::new(Self {
            buffers,
            buffer_idle,
            placement,
            state: Mutex::new(SchedState {
                synth: BinaryHeap::new(),
                prove: BinaryHeap::new(),
                budget: MemoryBudget::new(memory_limit),
                stopping: false,
                seq: 0,
            }),
            synth_ready: Condvar::new(),
            prove_ready: Condvar::new(),
        })
    }

    pub fn lock(&self) -> MutexGuard<'_, SchedState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues every partition of `job` (attempt `attempt`) for synthesis.
    pub fn enqueue_job(&self, job: &Arc<JobEntry>, attempt: u32) {
        let mut st = self.lock();
        for partition in 0..job.partitions {
            st.seq += 1;
            let key = TaskKey {
                priority: job.priority,
                seq: Reverse(st.seq),
            };
            st.synth.push(SynthTask {
                key,
                job: job.clone(),
                attempt,
                partition,
            });
        }
        drop(st);
        self.synth_ready.notify_all();
    }

    /// Blocks until a partition can start synthesis (its memory reserved), or returns
    /// `None` when stopping. An express worker takes only HIGH and CRITICAL work. Hands
    /// out a kept assignment to refill when one fits the partition's reservation; the
    /// other kept assignments count against the budget, and are freed when they are all
    /// that keeps a partition from starting.
    pub fn next_synth(
        self: &Arc<Self>,
        express: bool,
    ) -> Option<(SynthTask, Reservation, Option<ProvingAssignment>)> {
        let mut st = self.lock();
        loop {
            if st.stopping {
                return None;
            }
            if let Some(max_idle) = self.buffer_idle {
                // Kept buffers nobody refilled for a while go back to the system.
                let old = self.buffers.evict_idle(max_idle);
                if !old.is_empty() {
                    st = self.free_unlocked(st, old);
                    continue;
                }
            }
            while st.synth.peek().is_some_and(|t| !t.job.is_live(t.attempt)) {
                st.synth.pop();
            }
            if let Some(top) = st.synth.peek() {
                let urgent = top.key.priority >= Priority::High;
                let bytes = top.job.partition_bytes;
                let extra = if urgent { st.budget.limit() / 8 } else { 0 };
                if !express || urgent {
                    // The largest kept assignment becomes part of this reservation
                    // (a put racing with this may add one more, counted next time).
                    let shell = self.buffers.largest_bytes();
                    let reserve = bytes.max(shell);
                    let others = self.buffers.idle_bytes().saturating_sub(shell);
                    if st.budget.try_reserve_over(reserve, others, extra) {
                        let task = st.synth.pop().expect("peeked");
                        let shell = self.buffers.take_at_most(reserve);
                        return Some((
                            task,
                            Reservation {
                                sched: self.clone(),
                                bytes: reserve,
                            },
                            shell,
                        ));
                    }
                    if shell > 0 && st.budget.fits_over(bytes, extra) {
                        // Only kept assignments are in the way: free them and try again.
                        st = self.free_unlocked(st, self.buffers.evict_all());
                        continue;
                    }
                }
            }
            st = match self.buffer_idle {
                // Wakes up to free idle kept buffers even when no work comes.
                Some(d) => {
                    self.synth_ready
                        .wait_timeout(st, d.max(Duration::from_millis(10)))
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.synth_ready.wait(st).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }

    /// Frees evicted kept assignments with the lock released (unpinning a 32 GiB PoRep
    /// partition's 11.7 GiB takes a while) and takes the lock again.
    fn free_unlocked<'a>(
        &'a self,
        st: MutexGuard<'a, SchedState>,
        freed: Vec<ProvingAssignment>,
    ) -> MutexGuard<'a, SchedState> {
        drop(st);
        drop(freed);
        self.lock()
    }

    /// Queues a synthesized partition for a prover.
    pub fn push_prove(&self, task: ProveTask) {
        self.lock().prove.push(task);
        // All: a woken worker may have to leave the task to another device.
        self.prove_ready.notify_all();
    }

    /// Wakes the prover workers to look at the queue again (a device was taken out of
    /// rotation or brought back).
    pub fn wake_provers(&self) {
        let _st = self.lock();
        self.prove_ready.notify_all();
    }

    /// Blocks until a synthesized partition is ready for device `device`, or returns
    /// `None` when stopping. The partition is one [`Placement::takes`] gives this device:
    /// a quarantined device takes none; a retried job's partitions are left to other
    /// devices than the ones of its failed attempt. Stale tasks are returned too (the
    /// caller drops them outside the lock).
    pub fn next_prove(&self, device: usize) -> Option<ProveTask> {
        let mut st = self.lock();
        loop {
            if st.stopping {
                return None;
            }
            let mut skipped = Vec::new();
            let mut found = None;
            while let Some(t) = st.prove.pop() {
                if t.job.is_live(t.attempt) && !self.placement.takes(device, &t.job) {
                    skipped.push(t);
                } else {
                    found = Some(t);
                    break;
                }
            }
            st.prove.extend(skipped);
            if let Some(t) = found {
                return Some(t);
            }
            st = self.prove_ready.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Removes queued tasks of jobs that ended; their reservations are dropped by the
    /// caller after the lock is released (returned here).
    pub fn purge_dead(&self) -> Vec<ProveTask> {
        let mut st = self.lock();
        let synth = std::mem::take(&mut st.synth);
        st.synth = synth
            .into_iter()
            .filter(|t| t.job.is_live(t.attempt))
            .collect();
        let prove = std::mem::take(&mut st.prove);
        let (live, dead): (Vec<_>, Vec<_>) =
            prove.into_iter().partition(|t| t.job.is_live(t.attempt));
        st.prove = live.into_iter().collect();
        dead
    }

    /// Wakes every worker and makes them exit.
    pub fn stop(&self) {
        self.lock().stopping = true;
        self.synth_ready.notify_all();
        self.prove_ready.notify_all();
    }

    /// (partitions waiting for synthesis, waiting for a prover, bytes reserved, limit).
    pub fn depths(&self) -> (usize, usize, u64, u64) {
        let st = self.lock();
        (
            st.synth.len(),
            st.prove.len(),
            st.budget.reserved(),
            st.budget.limit(),
        )
    }
}
