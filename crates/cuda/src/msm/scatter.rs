//! Step 3 of the Pippenger MSM (kernels/msm/msm.cuh): the entries of a window group in
//! bucket order. Two ways, the same result up to the order inside a bucket:
//! - direct (`msm_count`, `msm_scatter`): one global atomic per entry and window for its
//!   bucket's slot and one for the next group's count; any group size;
//! - binned (kernels/msm/bin_scatter.cuh): one window per group, atomics in shared memory and
//!   per block and bin in global memory. On the H200 the atomics with return bounded the
//!   direct scatter of the 2^27 MSM; binned, its scatter took 76 instead of 128 ms. Used
//!   from 2^22 entries ([`super::MsmTuning::BINNED_MIN`]).

use cudarc::driver::{CudaSlice, CudaView, LaunchArgs, PushKernelArg};
use filprove_groth16::ProveError;

use super::{launch_err, scan_u32, windows};
use crate::gpu::{blocks, cfg, Gpu};
use crate::work::Work;

/// Buckets per bin of the binned scatter (1 << BIN_SHIFT in msm/bin_scatter.cuh).
const BIN: usize = 1 << 11;
/// Threads per block of msm_bin_scatter (BIN_THREADS).
const BIN_THREADS: usize = 512;
/// Entries per thread of msm_bin_scatter (its template argument PER).
const BIN_PER_THREAD: usize = 8;
/// The bin pass's kernel.
const BIN_SCATTER: &str = "msm_bin_scatter";
/// Pairs per block of msm_bin_count / msm_bin_place (PLACE_THREADS x PLACE_PER_THREAD).
const PLACE_TILE: usize = 512 * 16;
/// Shared bytes of msm_bin_count / msm_bin_place (PLACE_KEYS words).
const PLACE_SHARED: u32 = 8192 * 4;

/// A window group's entries in bucket order: `sorted` holds "base index | sign << 31"
/// bucket after bucket, bucket k's from offsets[k] (nb + 1 offsets).
pub(super) struct Scattered {
    pub offsets: CudaSlice<u32>,
    pub sorted: CudaSlice<u32>,
}

/// The scalars of one MSM as the digit passes read them.
pub(super) struct Digits<'a> {
    gpu: &'a Gpu,
    /// Kernel name prefix of the direct passes ("g1", "g2").
    prefix: &'static str,
    /// The scalars as integers in entry order: Fr after Fr (direct), or word-transposed
    /// with their digits' carries after them (binned; msm_canonical_planes).
    canon: CudaSlice<u8>,
    /// The entries' bases (a split MSM's index list), or entry i's base is i.
    list: Option<&'a CudaSlice<u32>>,
    n: usize,
    /// Whether the digits are in the binned layout (else the direct one).
    binned: bool,
    /// Window bits, buckets per window (2^(c-1)), number of windows.
    c: u32,
    b: usize,
    windows: u32,
    /// Windows per bucket group: 2 for a folded MSM (binned only; msm/bin_scatter.cuh),
    /// else 1.
    fold: u32,
}

/// Device pointer 0 for an absent buffer.
const NULL: u64 = 0;

impl<'a> Digits<'a> {
    /// Converts the `n` scalars of an MSM (scalars[list[i]], or scalars[i]) for the digit
    /// passes of `c`-bit windows, in the binned layout or the direct one. With `fold` = 2
    /// (binned, no list) each of the ceil(windows / 2) groups takes window w with base i
    /// and window w + ceil(windows / 2) (when there is one) with base n + i.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        gpu: &'a Gpu,
        prefix: &'static str,
        scalars: &CudaView<'_, u8>,
        list: Option<&'a CudaSlice<u32>>,
        n: usize,
        c: u32,
        binned: bool,
        fold: u32,
    ) -> Result<Self, ProveError> {
        if fold != 1 && (fold != 2 || !binned || list.is_some()) {
            return Err(gpu.fault(format!(
                "MSM folded {fold} times (binned {binned}, list {})",
                list.is_some()
            )));
        }
        let mut canon = gpu.alloc::<u8>(Self::canon_bytes(n, binned))?;
        let name = if binned {
            "msm_canonical_planes"
        } else {
            "msm_canonical"
        };
        let n32 = n as u32;
        let mut lb = gpu.stream().launch_builder(gpu.func(name)?);
        lb.arg(scalars);
        match list {
            Some(l) => lb.arg(l),
            None => lb.arg(&NULL),
        };
        lb.arg(&n32);
        if binned {
            lb.arg(&c);
        }
        lb.arg(&mut canon);
        // SAFETY: msm_canonical(const Fr*, const u32*, u32, Fr*) and
        // msm_canonical_planes(const Fr*, const u32*, u32, u32, u32*) as in msm_scalars.cu and
        // msm/bin_scatter.cuh; `scalars` holds n Fr (or `list`'s n indices point into it),
        // `canon` canon_bytes(n).
        unsafe { lb.launch(cfg(blocks(n, 256).min(132 * 32), 256, 0)) }
            .map_err(launch_err(gpu, name))?;
        // One Fr product per scalar (out of Montgomery form), the scalar (and its index)
        // read and its canonical form written.
        let per = 32 + Self::canon_bytes(1, binned) + if list.is_some() { 4 } else { 0 };
        gpu.probe(
            "msm_canonical",
            Work::fr(n as f64).and_bytes((n * per) as f64),
        )?;
        Ok(Self {
            gpu,
            prefix,
            canon,
            list,
            n,
            binned,
            c,
            b: 1 << (c - 1),
            windows: windows(c),
            fold,
        })
    }

    /// Bucket groups of the binned scatter (ceil(windows / fold)) and the entries of each
    /// (fold n).
    pub fn groups(&self) -> u32 {
        self.windows.div_ceil(self.fold)
    }

    /// See [`Digits::groups`].
    pub fn entries(&self) -> usize {
        self.fold as usize * self.n
    }

    /// Modelled work of a pass that reads every converted scalar (and its index): the
    /// whole scalar in the direct layout, in the binned one the three words its windows
    /// lie in and its carries.
    fn read_work(&self) -> Work {
        let per = if self.binned { 16 } else { 32 } + if self.list.is_some() { 4 } else { 0 };
        Work::bytes((self.entries() * per) as f64)
    }

    /// Device bytes of the converted scalars: 32 per scalar, 36 binned (the carries).
    pub fn canon_bytes(n: usize, binned: bool) -> usize {
        n * if binned { 36 } else { 32 }
    }

    /// A launch of the direct pass `name` over windows [w0, w1) with its arguments up to
    /// `counts` pushed.
    fn direct_launch<'b>(
        &'b self,
        name: &'b str,
        (n, w0, w1): &'b (u32, u32, u32),
        counts: &'b mut CudaSlice<u32>,
    ) -> Result<LaunchArgs<'b>, ProveError> {
        let mut lb = self.gpu.stream().launch_builder(self.gpu.func(name)?);
        lb.arg(&self.canon);
        match self.list {
            Some(l) => lb.arg(l),
            None => lb.arg(&NULL),
        };
        lb.arg(n)
            .arg(&NULL)
            .arg(&self.c)
            .arg(w0)
            .arg(w1)
            .arg(counts);
        Ok(lb)
    }

    /// The direct scatter of windows [w0, w1); `counted` holds this group's bucket counts
    /// when the previous group's scatter counted them (else they are counted here), and
    /// receives the next group's, [w1, w2), when w2 > w1.
    pub fn direct(
        &self,
        w0: u32,
        w1: u32,
        w2: u32,
        counted: &mut Option<CudaSlice<u32>>,
    ) -> Result<Scattered, ProveError> {
        let (gpu, s) = (self.gpu, self.gpu.stream());
        let nb = (w1 - w0) as usize * self.b;
        let grid = cfg(blocks(self.n, 256), 256, 0);
        let scatter = format!("{}_msm_scatter", self.prefix);
        let count = format!("{}_msm_count", self.prefix);
        let args = (self.n as u32, w0, w1);
        // The argument lists of both launches (direct_launch pushes the common prefix) match
        // msm.cuh's MSM_KERNELS; counts and offsets hold nb + 1 words, sorted (w1 - w0) n,
        // the next group's counts its buckets + 1; `list`, when given, holds n indices below
        // the bases' count.
        let mut counts = match counted.take() {
            Some(counts) => counts,
            None => {
                let mut counts = gpu.zeros::<u32>(nb + 1)?;
                // SAFETY: the count pass reads the n canonical scalars of windows [w0, w1)
                // (self.canon, sized by canon_bytes for n) and increments counts[bucket]
                // for buckets below nb; counts was just allocated with nb + 1 words (see
                // the argument list above).
                unsafe { self.direct_launch(&count, &args, &mut counts)?.launch(grid) }
                    .map_err(launch_err(gpu, "msm_count"))?;
                gpu.probe("msm_count", self.read_work())?;
                counts
            }
        };
        let mut offsets = gpu.alloc::<u32>(nb + 1)?;
        scan_u32(gpu, &counts, &mut offsets, nb + 1)?;
        s.memcpy_dtod(&offsets, &mut counts)
            .map_err(launch_err(gpu, "copy offsets"))?;
        gpu.probe("msm_scan", scan_work(nb))?;
        let mut sorted = gpu.alloc::<u32>((w1 - w0) as usize * self.n)?;
        let mut next = if w2 > w1 {
            Some(gpu.zeros::<u32>((w2 - w1) as usize * self.b + 1)?)
        } else {
            None
        };
        // SAFETY: the scatter pass reads the same scalars as the count pass and writes each
        // (window, index) entry once at its bucket's cursor in counts (the exclusive scan of
        // the counts, so below (w1 - w0) n) into sorted, allocated with (w1 - w0) n words
        // just above; next, when present, has the next group's buckets + 1 words, and a
        // null pointer tells the kernel there is none. Every buffer outlives the launch on
        // this stream (fill is dropped only after it is queued).
        unsafe {
            let mut lb = self.direct_launch(&scatter, &args, &mut counts)?;
            lb.arg(&mut sorted);
            match next.as_mut() {
                Some(next) => lb.arg(next),
                None => lb.arg(&NULL),
            };
            lb.arg(&w2).launch(grid)
        }
        .map_err(launch_err(gpu, "msm_scatter"))?;
        *counted = next;
        let written = (w1 - w0) as usize * self.n * 4;
        gpu.probe("msm_scatter", self.read_work().and_bytes(written as f64))?;
        Ok(Scattered { offsets, sorted })
    }

    /// Bins of one window's buckets.
    fn bins(&self) -> usize {
        self.b.div_ceil(BIN)
    }

    /// msm_bin_scatter over every entry: group `w` into `pairs` when given (bin_off and
    /// fill as msm/bin_scatter.cuh says), group `cw`'s bins counted into `counted` when given.
    #[allow(clippy::too_many_arguments)]
    fn bin_pass(
        &self,
        w: u32,
        bin_off: Option<&CudaSlice<u32>>,
        fill: Option<&mut CudaSlice<u32>>,
        pairs: Option<&mut CudaSlice<u32>>,
        counted: Option<&mut CudaSlice<u32>>,
        cw: u32,
    ) -> Result<(), ProveError> {
        let gpu = self.gpu;
        let nbins = self.bins() as u32;
        let n32 = self.n as u32;
        let entries = self.entries() as u32;
        // The second half's window offset (0 unfolded: no second half).
        let fw = if self.fold > 1 { self.groups() } else { 0 };
        let kernel = BIN_SCATTER;
        let mut lb = gpu.stream().launch_builder(gpu.func(kernel)?);
        lb.arg(&self.canon);
        match self.list {
            Some(l) => lb.arg(l),
            None => lb.arg(&NULL),
        };
        lb.arg(&n32)
            .arg(&entries)
            .arg(&fw)
            .arg(&self.c)
            .arg(&w)
            .arg(&nbins);
        match bin_off {
            Some(b) => lb.arg(b),
            None => lb.arg(&NULL),
        };
        for buf in [fill, pairs, counted] {
            match buf {
                Some(b) => lb.arg(b),
                None => lb.arg(&NULL),
            };
        }
        lb.arg(&cw);
        let tile = BIN_THREADS * BIN_PER_THREAD;
        let grid = cfg(
            self.entries().div_ceil(tile),
            BIN_THREADS as u32,
            2 * nbins * 4,
        );
        // SAFETY: msm_bin_scatter's signature (msm/bin_scatter.cuh), launched with
        // BIN_THREADS threads and tiles of BIN_PER_THREAD entries as compiled; bin_off holds
        // nbins + 1 words, fill and counted nbins (+ 1), pairs 2 entries; the shared memory
        // is 2 nbins words; `list`, when given (fold 1: entries = n), holds n indices; the
        // planes hold n scalars and entry e reads scalar e mod n, window w or w + fw <= 32
        // (a window past the scalar's reads zero words and no carry: no digit).
        unsafe { lb.launch(grid) }.map_err(launch_err(gpu, kernel))?;
        Ok(())
    }

    /// The binned scatter of group `w` (window w, and w + groups when folded);
    /// `counted` holds its bin counts when the previous group's pass counted them (else
    /// they are counted here), and receives the next group's.
    pub fn binned(
        &self,
        w: u32,
        counted: &mut Option<CudaSlice<u32>>,
    ) -> Result<Scattered, ProveError> {
        let (gpu, s) = (self.gpu, self.gpu.stream());
        if !self.binned {
            return Err(gpu.fault("binned scatter of digits in the direct layout".into()));
        }
        let (nb, nbins) = (self.b, self.bins());
        let bin_counts = match counted.take() {
            Some(c) => c,
            None => {
                let mut c = gpu.zeros::<u32>(nbins + 1)?;
                self.bin_pass(w, None, None, None, Some(&mut c), w)?;
                gpu.probe("msm_count", self.read_work())?;
                c
            }
        };
        let mut bin_off = gpu.alloc::<u32>(nbins + 1)?;
        scan_u32(gpu, &bin_counts, &mut bin_off, nbins + 1)?;
        drop(bin_counts);
        let mut fill = gpu.zeros::<u32>(nbins)?;
        let entries = self.entries();
        let mut pairs = gpu.alloc::<u32>(2 * entries)?;
        let mut next = if w + 1 < self.groups() {
            Some(gpu.zeros::<u32>(nbins + 1)?)
        } else {
            None
        };
        self.bin_pass(
            w,
            Some(&bin_off),
            Some(&mut fill),
            Some(&mut pairs),
            next.as_mut(),
            w + 1,
        )?;
        drop(fill);
        *counted = next;
        // Every entry read, each present one written as a (bucket, index) pair.
        gpu.probe(
            "msm_scatter",
            self.read_work().and_bytes(entries as f64 * 8.0),
        )?;
        let mut counts = gpu.zeros::<u32>(nb + 1)?;
        let grid = cfg(entries.div_ceil(PLACE_TILE), 512, PLACE_SHARED);
        let nbins32 = nbins as u32;
        // SAFETY: signatures as in msm/bin_scatter.cuh; pairs holds
        // bin_off[nbins] <= entries pairs whose buckets are below nb, counts (the cursors)
        // and offsets nb + 1 words, sorted entries; PLACE_SHARED bytes of shared memory.
        unsafe {
            s.launch_builder(gpu.func("msm_bin_count")?)
                .arg(&pairs)
                .arg(&bin_off)
                .arg(&nbins32)
                .arg(&mut counts)
                .launch(grid)
        }
        .map_err(launch_err(gpu, "msm_bin_count"))?;
        let mut offsets = gpu.alloc::<u32>(nb + 1)?;
        scan_u32(gpu, &counts, &mut offsets, nb + 1)?;
        s.memcpy_dtod(&offsets, &mut counts)
            .map_err(launch_err(gpu, "copy offsets"))?;
        // The pairs read to count the buckets, then the scan.
        gpu.probe("msm_scan", scan_work(nb).and_bytes(entries as f64 * 8.0))?;
        let mut sorted = gpu.alloc::<u32>(entries)?;
        // SAFETY: msm_bin_place(pairs, bin_off, nbins, counts, sorted) as in
        // msm/bin_scatter.cuh; it reads the same bin_off[nbins] <= entries pairs as
        // msm_bin_count above and writes each one's index once, at its bucket's cursor in
        // counts (the scanned counts, so below entries), into sorted, which holds entries
        // words; PLACE_SHARED bytes of shared memory, as the kernel declares.
        unsafe {
            s.launch_builder(gpu.func("msm_bin_place")?)
                .arg(&pairs)
                .arg(&bin_off)
                .arg(&nbins32)
                .arg(&mut counts)
                .arg(&mut sorted)
                .launch(grid)
        }
        .map_err(launch_err(gpu, "msm_bin_place"))?;
        // The pairs read, each index written at its bucket's place.
        gpu.probe("msm_bin_place", Work::bytes(entries as f64 * 12.0))?;
        Ok(Scattered { offsets, sorted })
    }

    /// Device bytes of the binned scatter beyond the direct one's (pairs, bin counts and
    /// offsets).
    pub fn binned_bytes(n: usize, b: usize) -> usize {
        n * 8 + 4 * (b.div_ceil(BIN) + 1) * 4
    }
}

/// Modelled work of an exclusive scan of `nb` + 1 bucket counts and the copy of the
/// offsets back into the cursors: three arrays of nb + 1 words.
fn scan_work(nb: usize) -> Work {
    Work::bytes((nb + 1) as f64 * 12.0)
}
