//! The timing of one kernel region, kept beside its maths: device events between the
//! steps (the phase times of [`ProveReport`], read once the proof's kernels completed),
//! host marks (logged at debug level: when each step was queued) and the per-kernel step
//! probes of [`crate::CudaOptions::step_timings`].

use std::time::{Duration, Instant};

use cudarc::driver::CudaEvent;
use filprove_groth16::{ProveError, ProveReport};

use crate::gpu::Gpu;
use crate::host_marks::HostMarks;
use crate::work::{StepSum, Work};

/// The clock of one kernel region, from the request for its lock to its end.
pub(crate) struct PhaseClock<'g> {
    gpu: &'g Gpu,
    /// When the region lock was taken.
    locked: Instant,
    host: HostMarks,
    /// The device mark before the first step.
    first: Option<CudaEvent>,
    /// Each step's name and the device mark at its end.
    steps: Vec<(&'static str, CudaEvent)>,
    /// When the host began its wait for the results.
    waiting: Instant,
    /// When the region's tail (after the results) began.
    tail: Instant,
}

impl<'g> PhaseClock<'g> {
    /// A clock for a region whose lock was requested at `requested` and has just been
    /// taken.
    pub fn locked(gpu: &'g Gpu, requested: Instant) -> Self {
        let locked = Instant::now();
        let mut host = HostMarks::new(requested);
        host.mark("region_lock");
        Self {
            gpu,
            locked,
            host,
            first: None,
            steps: Vec::new(),
            waiting: locked,
            tail: locked,
        }
    }

    /// The device work begins: the host setup is accounted ("region_setup") and the first
    /// device mark queued.
    pub fn begin(&mut self, report: &mut ProveReport) -> Result<(), ProveError> {
        let gpu = self.gpu;
        if gpu.probing() {
            gpu.take_probes()?; // drop steps of earlier work
            gpu.probe("region_start", Work::NONE)?;
        }
        // Host time in the region before the first kernel is queued (plan, parameters,
        // working memory), not covered by the device-event phases.
        report.add_phase("region_setup", self.locked.elapsed());
        // Whether other work held the compute stream (a driver query: only when logged).
        if log::log_enabled!(log::Level::Debug) {
            self.host.mark(if gpu.compute_idle() {
                "setup_idle"
            } else {
                "setup_busy"
            });
        }
        self.first = Some(gpu.mark()?);
        self.host.mark("first_mark");
        Ok(())
    }

    /// Runs step `name` (which queues its device work), then marks its end: a device
    /// event for its time, a host mark for when it was queued.
    pub fn phase<T>(
        &mut self,
        name: &'static str,
        step: impl FnOnce() -> Result<T, ProveError>,
    ) -> Result<T, ProveError> {
        let out = step()?;
        self.steps.push((name, self.gpu.mark()?));
        self.host.mark(name);
        Ok(out)
    }

    /// Runs `wait`, the host's wait for the device ("result_wait" from here until
    /// [`Self::read`] returns).
    pub fn host_wait(
        &mut self,
        wait: impl FnOnce() -> Result<(), ProveError>,
    ) -> Result<(), ProveError> {
        self.waiting = Instant::now();
        wait()?;
        self.host.mark("synced");
        Ok(())
    }

    /// Once the device completed: the kernel steps logged (when probing), each step's
    /// device time and the staged copies' ("stage_copy") into `report`, then
    /// "result_wait".
    pub fn read(
        &mut self,
        report: &mut ProveReport,
        staged_copy: Option<&(CudaEvent, CudaEvent)>,
    ) -> Result<(), ProveError> {
        let gpu = self.gpu;
        if gpu.probing() {
            log_kernel_steps(gpu.name(), &gpu.take_probe_sums()?);
        }
        let first = self
            .first
            .as_ref()
            .ok_or_else(|| ProveError::Invalid("region clock read before it began".into()))?;
        let mut prev = first;
        for (name, e) in &self.steps {
            let ms = prev.elapsed_ms(e).map_err(|e| gpu.err("event timing", e))?;
            report.add_phase(name, millis(ms));
            prev = e;
        }
        if let Some((s0, s1)) = staged_copy {
            if let Ok(ms) = s0.elapsed_ms(s1) {
                report.add_phase("stage_copy", millis(ms));
            }
        }
        report.add_phase("result_wait", self.waiting.elapsed());
        self.tail = Instant::now();
        Ok(())
    }

    /// The region ends: its tail since [`Self::read`] ("region_tail") and its whole time
    /// from the lock ("region") into `report`; the host marks logged.
    pub fn end(&mut self, report: &mut ProveReport) {
        report.add_phase("region_tail", self.tail.elapsed());
        report.add_phase("region", self.locked.elapsed());
        self.host.mark("end");
        log::debug!(
            "{}: region host marks (ms from the region lock request; a phase's mark: its work queued): {}",
            self.gpu.name(),
            self.host.render()
        );
    }
}

fn millis(ms: f32) -> Duration {
    Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3)
}

/// One log line with the time of every kernel step of a proof, summed per step name
/// ([`crate::CudaOptions::step_timings`]; the steps are marked by `Gpu::probe`).
fn log_kernel_steps(device: &str, sums: &[StepSum]) {
    let text: Vec<String> = sums
        .iter()
        .map(|s| format!("{}={:.2}ms/{}", s.label, s.ms, s.calls))
        .collect();
    log::info!("{device}: kernel steps {}", text.join(" "));
}
