//! Host-side timestamps of one kernel region, logged at debug level beside the device-event
//! phases: where the region's wall time and its device time part (queueing that blocked,
//! a compute stream that was not idle when the region began) shows here.

use std::time::Instant;

pub struct HostMarks {
    start: Instant,
    marks: Vec<(&'static str, f64)>,
}

impl HostMarks {
    pub fn new(start: Instant) -> Self {
        Self {
            start,
            marks: Vec::with_capacity(16),
        }
    }

    /// Milliseconds since the region began, under `label`.
    pub fn mark(&mut self, label: &'static str) {
        self.marks
            .push((label, self.start.elapsed().as_secs_f64() * 1e3));
    }

    /// "label=ms label=ms ..." in the order marked.
    pub fn render(&self) -> String {
        self.marks
            .iter()
            .map(|(l, ms)| format!("{l}={ms:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_render_in_order_with_growing_offsets() {
        let start = Instant::now();
        let mut hm = HostMarks::new(start);
        hm.mark("a");
        std::thread::yield_now();
        hm.mark("b");
        let text = hm.render();
        let parts: Vec<(&str, f64)> = text
            .split(' ')
            .map(|p| {
                let (l, v) = p.split_once('=').expect("label=ms");
                (l, v.parse().expect("milliseconds"))
            })
            .collect();
        assert_eq!(parts.iter().map(|p| p.0).collect::<Vec<_>>(), ["a", "b"]);
        assert!(parts[0].1 >= 0.0 && parts[1].1 >= parts[0].1);
        assert_eq!(HostMarks::new(start).render(), "");
    }
}
