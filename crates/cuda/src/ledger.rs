//! Device-memory accounting of one device, against one budget: the resident parameter
//! sets, reservations (partitions staged ahead of their region, the running region's
//! working memory, parameters on their way up) and claims.
//!
//! A partition is staged before its worker takes the kernel lock. When its bytes are not
//! free it waits there, holding nothing but a claim, until they are
//! ([`Ledger::reserve_slot`]): a partition staged by the other worker holds them until its
//! own region has run its H MSM (a and b) or ended (the rest), and that region needs the
//! lock. (Taking the lock first and waiting or failing there is what an 80 GB card, where
//! one 32 GiB partition fits at a time, did to every proof.) The claim is room that
//! staging another partition must leave free, or a worker that stages its next partition
//! as soon as its region ends would keep the waiting one out for good.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::resident::{DeviceSrs, ResidentSet};

/// The budget and what holds it.
pub(crate) struct Ledger {
    budget: u64,
    shared: Arc<Shared>,
}

/// The counts and the signal that a reservation was released.
#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    released: Condvar,
}

/// Resident sets and the byte counts of reservations and claims.
#[derive(Default)]
pub(crate) struct State {
    pub resident: ResidentSet,
    /// Every reservation, the running region's working memory included.
    reserved: u64,
    /// Of `reserved`, the working memory of the region that runs (one at a time).
    working: u64,
    /// Room promised to partitions waiting for their staging room.
    claimed: u64,
    /// Reservations released so far (what a waiting reservation watches).
    releases: u64,
}

impl State {
    fn used(&self) -> u64 {
        self.resident.bytes() + self.reserved
    }
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Bytes reserved against the budget until dropped.
pub(crate) struct Reservation {
    shared: Arc<Shared>,
    bytes: u64,
    /// A region's working memory (counted in `State::working` too).
    working: bool,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut st = lock(&self.shared.state);
        st.reserved = st.reserved.saturating_sub(self.bytes);
        if self.working {
            st.working = st.working.saturating_sub(self.bytes);
        }
        st.releases += 1;
        drop(st);
        self.shared.released.notify_all();
    }
}

impl Reservation {
    /// Splits `bytes` off into a reservation of their own (released on its own).
    pub fn split_off(&mut self, bytes: u64) -> Reservation {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        Reservation {
            shared: self.shared.clone(),
            bytes,
            working: self.working,
        }
    }
}

/// Room that staging leaves free for a partition waiting for it, until dropped (once
/// the wait has reserved it, or given up).
struct Claim {
    shared: Arc<Shared>,
    bytes: u64,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut st = lock(&self.shared.state);
        st.claimed = st.claimed.saturating_sub(self.bytes);
    }
}

impl Ledger {
    pub fn new(budget: u64) -> Self {
        Self {
            budget,
            shared: Arc::new(Shared::default()),
        }
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// The resident sets and counts, locked.
    pub fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.state)
    }

    /// Bytes neither resident nor reserved.
    pub fn free(&self) -> u64 {
        self.budget.saturating_sub(self.state().used())
    }

    /// Reserves `bytes`, evicting idle resident parameters if needed and allowed.
    pub fn reserve(&self, bytes: u64, evict: bool) -> Option<Reservation> {
        self.reserve_as(bytes, evict, false)
    }

    /// Reserves a region's working memory (evicting idle resident parameters if needed).
    pub fn reserve_working(&self, bytes: u64) -> Option<Reservation> {
        self.reserve_as(bytes, true, true)
    }

    fn reserve_as(&self, bytes: u64, evict: bool, working: bool) -> Option<Reservation> {
        let mut st = self.state();
        self.make_room(&mut st, bytes, 0, evict)
            .then(|| self.hold(&mut st, bytes, working))
    }

    /// Whether `bytes` fit as [`Self::fits`] says, evicting idle resident parameters
    /// until they do when `evict`.
    fn make_room(&self, st: &mut State, bytes: u64, working_extra: u64, evict: bool) -> bool {
        while !self.fits(st, bytes, working_extra) {
            if !evict || st.resident.evict_one().is_none() {
                return false;
            }
        }
        true
    }

    /// Reserves `bytes` for a partition waiting for its staging room, when one region's
    /// working memory (the running one's, or `working_extra`) still fits beside them,
    /// evicting idle resident parameters if needed; waits up to `slice` for a reservation
    /// to be released when they do not fit yet. `Err(true)`: not yet, call again (after
    /// releasing what may be released); `Err(false)`: they cannot fit, nothing reserved
    /// is left to wait for.
    fn reserve_waiting(
        &self,
        bytes: u64,
        working_extra: u64,
        slice: Duration,
    ) -> Result<Reservation, bool> {
        let until = Instant::now() + slice;
        let mut st = self.state();
        loop {
            if self.make_room(&mut st, bytes, working_extra, true) {
                return Ok(self.hold(&mut st, bytes, false));
            }
            if st.reserved == 0 {
                return Err(false);
            }
            let seen = st.releases;
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(true);
            }
            st = self
                .shared
                .released
                .wait_timeout_while(st, left, |st| st.releases == seen)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Whether `bytes` more leave room for one region's working memory (with
    /// `working_extra` 0: whether they fit beside what is resident and reserved).
    fn fits(&self, st: &State, bytes: u64, working_extra: u64) -> bool {
        let others = st.reserved - st.working;
        st.resident.bytes() + others + bytes + st.working.max(working_extra) <= self.budget
    }

    fn hold(&self, st: &mut State, bytes: u64, working: bool) -> Reservation {
        st.reserved += bytes;
        if working {
            st.working += bytes;
        }
        Reservation {
            shared: self.shared.clone(),
            bytes,
            working,
        }
    }

    /// Reserves `need` bytes for a partition staged ahead of its region, when what stays
    /// free afterwards still holds one region's working memory (the running one's, or
    /// `working_extra` for the next), `srs_to_come` (parameters not yet uploaded) and
    /// every claim. None: not now.
    fn reserve_staging(
        &self,
        need: u64,
        srs_to_come: u64,
        working_extra: u64,
    ) -> Option<Reservation> {
        let mut st = self.state();
        if !self.fits(&st, need + srs_to_come + st.claimed, working_extra) {
            return None;
        }
        Some(self.hold(&mut st, need, false))
    }

    /// Reserves `need` bytes for a partition staged ahead of its region: at once when
    /// [`Self::reserve_staging`] allows, else waiting (in `slice`s, holding a claim) until
    /// they fit beside one region's working memory, for at most `limit`. `before_try`
    /// runs before every attempt: it frees partitions whose region has ended and returns
    /// the bytes of parameters still to come. Returns the reservation and the time
    /// waited; `None` when the bytes cannot fit (nothing reserved is left to wait for) or
    /// `limit` passed.
    pub fn reserve_slot(
        &self,
        need: u64,
        working_extra: u64,
        slice: Duration,
        limit: Duration,
        mut before_try: impl FnMut() -> u64,
    ) -> Option<(Reservation, Duration)> {
        let t = Instant::now();
        let mut srs_to_come = before_try();
        if let Some(hold) = self.reserve_staging(need, srs_to_come, working_extra) {
            return Some((hold, Duration::ZERO));
        }
        let _claim = self.claim(need);
        loop {
            match self.reserve_waiting(need, working_extra + srs_to_come, slice) {
                Ok(hold) => return Some((hold, t.elapsed())),
                Err(true) if t.elapsed() < limit => srs_to_come = before_try(),
                Err(_) => return None,
            }
        }
    }

    /// Promises `bytes` to a partition waiting for its staging room.
    fn claim(&self, bytes: u64) -> Claim {
        self.state().claimed += bytes;
        Claim {
            shared: self.shared.clone(),
            bytes,
        }
    }

    /// Makes `dev` resident in place of the reservation that made room for it.
    pub fn make_resident(&self, mut hold: Reservation, dev: Arc<DeviceSrs>) {
        let mut st = self.state();
        st.reserved = st.reserved.saturating_sub(hold.bytes);
        hold.bytes = 0;
        st.resident.insert(dev);
        drop(st);
    }

    /// Adds `dev` to the resident sets when it fits; otherwise the bytes free.
    pub fn insert_resident(&self, dev: DeviceSrs) -> Result<(), u64> {
        let mut st = self.state();
        if !self.fits(&st, dev.bytes(), 0) {
            return Err(self.budget.saturating_sub(st.used()));
        }
        st.resident.insert(Arc::new(dev));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{plan, PlanInput, Shape, STAGED_AB};

    const GIB: u64 = 1 << 30;

    /// A 32 GiB PoRep partition on an 80 GB card (figures of the plan, rounded): room for
    /// the working memory and one staged partition beside the resident parameters.
    fn one_slot_card() -> (Ledger, Reservation) {
        let ledger = Ledger::new(75 * GIB);
        let resident = ledger.reserve(44 * GIB, false).unwrap();
        (ledger, resident)
    }

    #[test]
    fn a_waiting_partition_keeps_its_room_from_staging() {
        let (ledger, _params) = one_slot_card();
        let (slot, work) = (16 * GIB, 14 * GIB);
        // Worker A's partition is staged; it has not taken the region lock yet.
        let a1 = ledger.reserve_staging(slot, 0, work).unwrap();
        // Worker B finds no room: it claims it and waits, before the lock.
        assert!(ledger.reserve_staging(slot, 0, work).is_none());
        let b_claim = ledger.claim(slot);
        assert!(matches!(
            ledger.reserve_waiting(slot, work, Duration::ZERO),
            Err(true)
        ));
        // A's region runs and ends; its partition is freed. A stages its next partition
        // before B's wait has reserved: refused, the room is B's.
        let a_work = ledger.reserve_working(work).unwrap();
        drop(a_work);
        drop(a1);
        assert!(ledger.reserve_staging(slot, 0, work).is_none());
        let b_staged = ledger
            .reserve_waiting(slot, work, Duration::ZERO)
            .ok()
            .unwrap();
        drop(b_claim);
        // B's region: its partition and working memory leave no room to stage.
        let b_work = ledger.reserve_working(work).unwrap();
        assert!(ledger.reserve_staging(slot, 0, work).is_none());
        drop(b_work);
        drop(b_staged);
        assert!(ledger.reserve_staging(slot, 0, work).is_some());
    }

    #[test]
    fn a_waiting_reservation_gets_the_room_another_thread_releases() {
        let (ledger, _params) = one_slot_card();
        let slot = 16 * GIB;
        let staged = ledger.reserve(slot, false).unwrap();
        let other = ledger.reserve(10 * GIB, false).unwrap();
        // Nothing released within the slice: not yet.
        assert!(matches!(
            ledger.reserve_waiting(slot, 0, Duration::from_millis(20)),
            Err(true)
        ));
        std::thread::scope(|s| {
            let waiting = s.spawn(|| ledger.reserve_waiting(slot, 0, Duration::from_secs(60)));
            // A release that does not make room, then the one that does.
            drop(other);
            drop(staged);
            let t = Instant::now();
            let got = waiting.join().unwrap().ok().unwrap();
            assert!(t.elapsed() < Duration::from_secs(30));
            assert_eq!(ledger.free(), 75 * GIB - 44 * GIB - slot);
            drop(got);
        });
        assert_eq!(ledger.free(), 75 * GIB - 44 * GIB);
    }

    #[test]
    fn a_waiting_partition_leaves_room_for_the_staged_partition_s_region() {
        // Two partitions fit beside the parameters, not two and a region's working
        // memory: the waiting partition must not take what the staged one's region needs.
        let ledger = Ledger::new(95 * GIB);
        let _params = ledger.reserve(54 * GIB, false).unwrap();
        let (slot, work) = (16 * GIB, 14 * GIB);
        let staged = ledger.reserve_staging(slot, 0, work).unwrap();
        assert!(ledger.reserve_staging(slot, 0, work).is_none());
        assert!(matches!(
            ledger.reserve_waiting(slot, work, Duration::ZERO),
            Err(true)
        ));
        let region = ledger.reserve_working(work).unwrap();
        drop(region);
        drop(staged);
        assert!(ledger.reserve_waiting(slot, work, Duration::ZERO).is_ok());
    }

    /// Two prover workers on a card with room for one staged partition, as the engine
    /// runs them: each stages (waiting for its room) before it takes the kernel lock,
    /// reserves its region's working memory inside it, and frees its partition after it.
    /// Every region must find its memory; none may wait for the other worker's.
    #[test]
    fn two_workers_with_one_slot_prove_every_partition() {
        let (ledger, _params) = one_slot_card();
        let (slot, work) = (16 * GIB, 14 * GIB);
        let kernel_lock = Mutex::new(());
        let finished: Mutex<Vec<Reservation>> = Mutex::new(Vec::new());
        let release = || std::mem::take(&mut *finished.lock().unwrap());
        let waited = Mutex::new(Duration::ZERO);
        let worker = || {
            for _ in 0..25 {
                let (part, w) = ledger
                    .reserve_slot(
                        slot,
                        work,
                        Duration::from_millis(5),
                        Duration::from_secs(60),
                        || {
                            drop(release());
                            0
                        },
                    )
                    .expect("the room of a staging slot");
                *waited.lock().unwrap() += w;
                let region = kernel_lock.lock().unwrap();
                let working = ledger.reserve_working(work).expect("the region's memory");
                drop(working);
                finished.lock().unwrap().push(part);
                drop(region);
                drop(release());
            }
        };
        std::thread::scope(|s| {
            s.spawn(worker);
            s.spawn(worker);
        });
        assert_eq!(ledger.free(), 75 * GIB - 44 * GIB);
        let st = ledger.state();
        assert_eq!((st.reserved, st.working, st.claimed), (44 * GIB, 0, 0));
    }

    #[test]
    fn the_next_partition_stages_once_the_running_one_s_a_and_b_are_freed() {
        // An 80 GB card: parameters, one partition (a and b 8 GiB, aux 4 GiB) and a
        // region's working memory; the next partition fits once a and b are freed.
        let (ledger, _params) = one_slot_card();
        let (ab, aux, work) = (8 * GIB, 4 * GIB, 14 * GIB);
        let mut running = ledger.reserve_staging(ab + aux, 0, work).unwrap();
        let ab_hold = running.split_off(ab);
        let region = ledger.reserve_working(work).unwrap();
        assert!(ledger.reserve_staging(ab + aux, 0, work).is_none());
        // The H MSM has run: a and b go, aux and the working memory stay.
        drop(ab_hold);
        let next = ledger.reserve_staging(ab + aux, 0, work).unwrap();
        // The next region's working memory fits once the running one has ended.
        drop(region);
        drop(running);
        let next_region = ledger.reserve_working(work).unwrap();
        drop((next, next_region));
        assert_eq!(ledger.free(), 75 * GIB - 44 * GIB);
    }

    /// The backend's reservations for one partition of a plan, as it takes them: the
    /// staging room, the region's working memory, a and b released after the H MSM but
    /// for what the later phases keep. Each phase's allocations must be covered by what
    /// the partition and the region hold then, and everything must fit the budget.
    fn plan_is_admitted(shape: Shape, budget: u64) {
        let p = plan(
            shape,
            PlanInput {
                budget,
                staging_slots: 2,
                allow_resident: true,
                allow_folded_h: true,
                max_batch: 0,
            },
        )
        .unwrap();
        let ledger = Ledger::new(budget);
        let _params = p
            .resident
            .then(|| ledger.reserve(p.srs_bytes, false).unwrap());
        let slice = Duration::from_millis(1);
        let (mut part, _) = ledger
            .reserve_slot(p.staged_bytes, p.working_extra(), slice, slice, || 0)
            .unwrap_or_else(|| panic!("no staging room for\n{p}"));
        let ab = part.split_off(p.released_after_h());
        let work = ledger
            .reserve_working(p.working_extra())
            .unwrap_or_else(|| panic!("no working memory for\n{p}"));
        let held = |ab: u64| part.bytes + ab + work.bytes;
        for phase in &p.phases {
            let before_h = phase.live.iter().any(|a| a.name == STAGED_AB);
            let covered = held(if before_h { ab.bytes } else { 0 });
            assert!(phase.bytes() <= covered, "{}: {covered}\n{p}", phase.phase);
        }
        drop(ab);
        assert!(ledger.state().used() <= budget);
    }

    #[test]
    fn every_plan_s_partition_finds_its_reservations() {
        // WindowPoSt's B MSMs (dense B) need more working memory than the region reserves
        // beside a and b: on an 80 GB card its B MSMs take over part of a and b's bytes.
        for shape in [Shape::porep_32g(), Shape::wpost_32g(), Shape::snap_32g()] {
            for budget_mib in [75_100 * 1024 / 1000, 136 * 1024, 44 * 1024] {
                plan_is_admitted(shape, budget_mib * (1 << 20));
            }
        }
    }

    #[test]
    fn a_slot_wait_gives_up_when_nothing_can_free_the_room() {
        let ledger = Ledger::new(30 * GIB);
        let t = Instant::now();
        // 20 GiB beside a region's 14 GiB: never, and nothing reserved can change that.
        let got = ledger.reserve_slot(
            20 * GIB,
            14 * GIB,
            Duration::from_millis(5),
            Duration::from_secs(60),
            || 0,
        );
        assert!(got.is_none());
        assert!(t.elapsed() < Duration::from_secs(10));
        assert_eq!(ledger.state().claimed, 0);
    }

    #[test]
    fn a_wait_with_nothing_reserved_fails_at_once() {
        let ledger = Ledger::new(10 * GIB);
        let t = Instant::now();
        assert!(matches!(
            ledger.reserve_waiting(11 * GIB, 0, Duration::from_secs(60)),
            Err(false)
        ));
        assert!(t.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn without_the_wait_the_room_is_taken() {
        // What a region that uploads its partition itself finds while the other worker's
        // staged partition still holds the room: it does not fit.
        let (ledger, _params) = one_slot_card();
        let (slot, work) = (16 * GIB, 14 * GIB);
        let a1 = ledger.reserve_staging(slot, 0, work).unwrap();
        assert!(ledger.reserve(slot, true).is_none());
        drop(a1);
        assert!(ledger.reserve(slot, true).is_some());
    }

    #[test]
    fn two_slots_stage_beside_a_claim() {
        // Where two partitions and a working set fit, a claim leaves staging possible.
        let ledger = Ledger::new(139 * GIB);
        let _params = ledger.reserve(60 * GIB, false).unwrap();
        let (slot, work) = (16 * GIB, 35 * GIB);
        let _claim = ledger.claim(slot);
        let staged = ledger.reserve_staging(slot, 0, work).unwrap();
        assert!(ledger.reserve_staging(slot, 0, work).is_none());
        drop(staged);
        assert_eq!(ledger.free(), 79 * GIB);
    }

    #[test]
    fn counts_return_to_zero() {
        let ledger = Ledger::new(10 * GIB);
        {
            let _c = ledger.claim(3 * GIB);
            let _w = ledger.reserve_working(2 * GIB).unwrap();
            let _r = ledger.reserve(4 * GIB, false).unwrap();
            assert!(ledger.reserve(5 * GIB, false).is_none());
            assert_eq!(ledger.free(), 4 * GIB);
        }
        let st = ledger.state();
        assert_eq!((st.reserved, st.working, st.claimed), (0, 0, 0));
    }
}
