//! Device-memory accounting of one device, against one budget: the resident parameter
//! sets, reservations (partitions staged ahead of their region, the running region's
//! working memory, parameters on their way up) and claims.
//!
//! A claim is the room promised to a partition that found no staging slot and will be
//! uploaded inside its kernel region. Staging another partition must leave that room:
//! otherwise a worker staging its next partition between a region's end and the waiting
//! worker's upload takes the memory the upload needs, and the upload fails for lack of
//! device memory (seen on an 80 GB card, where one partition fits at a time).

use std::sync::{Arc, Mutex, MutexGuard};

use crate::resident::{DeviceSrs, ResidentSet};

/// The budget and what holds it.
pub(crate) struct Ledger {
    budget: u64,
    state: Arc<Mutex<State>>,
}

/// Resident sets and the byte counts of reservations and claims.
#[derive(Default)]
pub(crate) struct State {
    pub resident: ResidentSet,
    /// Every reservation, the running region's working memory included.
    reserved: u64,
    /// Of `reserved`, the working memory of the region that runs (one at a time).
    working: u64,
    /// Room promised to partitions that will upload inside their region.
    claimed: u64,
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
    state: Arc<Mutex<State>>,
    bytes: u64,
    /// A region's working memory (counted in `State::working` too).
    working: bool,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut st = lock(&self.state);
        st.reserved = st.reserved.saturating_sub(self.bytes);
        if self.working {
            st.working = st.working.saturating_sub(self.bytes);
        }
    }
}

/// Room that staging leaves free for a partition's upload inside its region, until
/// dropped (once that upload has reserved it, or with the partition).
pub(crate) struct Claim {
    state: Arc<Mutex<State>>,
    bytes: u64,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut st = lock(&self.state);
        st.claimed = st.claimed.saturating_sub(self.bytes);
    }
}

impl Ledger {
    pub fn new(budget: u64) -> Self {
        Self {
            budget,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// The resident sets and counts, locked.
    pub fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
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
        while st.used() + bytes > self.budget {
            if !evict || st.resident.evict_one().is_none() {
                return None;
            }
        }
        Some(self.hold(&mut st, bytes, working))
    }

    fn hold(&self, st: &mut State, bytes: u64, working: bool) -> Reservation {
        st.reserved += bytes;
        if working {
            st.working += bytes;
        }
        Reservation {
            state: self.state.clone(),
            bytes,
            working,
        }
    }

    /// Reserves `need` bytes for a partition staged ahead of its region, when what stays
    /// free afterwards still holds one region's working memory (the running one's, or
    /// `working_extra` for the next), `srs_to_come` (parameters not yet uploaded) and
    /// every claim. None: the partition uploads inside its region.
    pub fn reserve_staging(
        &self,
        need: u64,
        srs_to_come: u64,
        working_extra: u64,
    ) -> Option<Reservation> {
        let mut st = self.state();
        let others = st.reserved - st.working;
        let working = st.working.max(working_extra);
        let after = st.resident.bytes() + others + need + srs_to_come + working + st.claimed;
        if after > self.budget {
            return None;
        }
        Some(self.hold(&mut st, need, false))
    }

    /// Promises `bytes` to a partition that will upload inside its region.
    pub fn claim(&self, bytes: u64) -> Claim {
        self.state().claimed += bytes;
        Claim {
            state: self.state.clone(),
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
        if st.used() + dev.bytes() > self.budget {
            return Err(self.budget.saturating_sub(st.used()));
        }
        st.resident.insert(Arc::new(dev));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// A 32 GiB PoRep partition on an 80 GB card (figures of the plan, rounded): room for
    /// the working memory and one staged partition beside the resident parameters.
    fn one_slot_card() -> (Ledger, Reservation) {
        let ledger = Ledger::new(75 * GIB);
        let resident = ledger.reserve(44 * GIB, false).unwrap();
        (ledger, resident)
    }

    #[test]
    fn staging_leaves_room_for_a_claimed_upload() {
        let (ledger, _params) = one_slot_card();
        let (slot, work) = (16 * GIB, 14 * GIB);
        // Worker A's partition is staged; its region runs.
        let a1 = ledger.reserve_staging(slot, 0, work).unwrap();
        let a_work = ledger.reserve_working(work).unwrap();
        // Worker B finds no slot: its partition will upload inside its region.
        assert!(ledger.reserve_staging(slot, 0, work).is_none());
        let b_claim = ledger.claim(slot);
        // A's region ends and its partition is freed; A stages its next partition before
        // B's region has reserved its upload: refused, the room is B's.
        drop(a_work);
        drop(a1);
        assert!(ledger.reserve_staging(slot, 0, work).is_none());
        // B's region reserves its upload and working memory, then lets the claim go.
        let b_upload = ledger.reserve(slot, true).unwrap();
        drop(b_claim);
        let b_work = ledger.reserve_working(work).unwrap();
        assert!(ledger.reserve_staging(slot, 0, work).is_none());
        drop(b_work);
        drop(b_upload);
        // Everything released: a partition stages again.
        assert!(ledger.reserve_staging(slot, 0, work).is_some());
    }

    #[test]
    fn without_the_claim_staging_takes_the_upload_s_room() {
        // The same sequence without B's claim: A's next partition is staged and B's upload
        // no longer fits. This is the failure the claim prevents.
        let (ledger, _params) = one_slot_card();
        let (slot, work) = (16 * GIB, 14 * GIB);
        let a2 = ledger.reserve_staging(slot, 0, work).unwrap();
        assert!(ledger.reserve(slot, true).is_none());
        drop(a2);
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
