//! A memory curve read one point at a time: the peak (first time reached),
//! the final value, and a thinned copy for drawing, in bounded memory.

use oomscope_report::TimelinePoint;

/// Points kept for drawing; past this, neighbours are merged pairwise.
pub const MAX_POINTS: usize = 2048;

#[derive(Debug, Default)]
pub struct Curve {
    pub peak: Option<TimelinePoint>,
    pub last: Option<TimelinePoint>,
    pub steps: u64,
    points: Vec<TimelinePoint>,
    /// Points merged into each kept point.
    stride: u64,
    /// The highest point of the window being filled, and how many it has seen.
    window: Option<TimelinePoint>,
    window_len: u64,
}

impl Curve {
    pub fn new() -> Self {
        Curve {
            stride: 1,
            ..Default::default()
        }
    }

    pub fn push(&mut self, point: TimelinePoint) {
        self.steps += 1;
        if self.peak.as_ref().is_none_or(|p| point.bytes > p.bytes) {
            self.peak = Some(point.clone());
        }
        // Keep the highest point of every window, so thinning never hides a peak.
        if self.window.as_ref().is_none_or(|w| point.bytes > w.bytes) {
            self.window = Some(point.clone());
        }
        self.last = Some(point);
        self.window_len += 1;
        if self.window_len >= self.stride {
            self.flush_window();
        }
    }

    fn flush_window(&mut self) {
        if let Some(w) = self.window.take() {
            self.points.push(w);
        }
        self.window_len = 0;
        if self.points.len() >= MAX_POINTS {
            let merged = std::mem::take(&mut self.points)
                .chunks(2)
                .filter_map(|pair| pair.iter().max_by_key(|p| p.bytes).cloned())
                .collect();
            self.points = merged;
            self.stride = self.stride.saturating_mul(2);
        }
    }

    /// The thinned points, ending with the last one read.
    pub fn finish(
        mut self,
    ) -> (
        Option<TimelinePoint>,
        Option<TimelinePoint>,
        u64,
        Vec<TimelinePoint>,
    ) {
        self.flush_window();
        if let (Some(last), Some(kept)) = (&self.last, self.points.last()) {
            if kept != last {
                self.points.push(last.clone());
            }
        }
        (self.peak, self.last, self.steps, self.points)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_the_peak_and_the_end_in_bounded_points() {
        let mut c = Curve::new();
        for i in 0..100_000i64 {
            let bytes = if i == 54_321 {
                1_000_000
            } else {
                (i % 1000) as u64
            };
            c.push(TimelinePoint {
                time: i,
                bytes,
                by_category: vec![],
            });
        }
        let (peak, last, steps, points) = c.finish();
        assert_eq!(steps, 100_000);
        assert_eq!(peak.unwrap().time, 54_321);
        assert!(points.len() <= MAX_POINTS + 1, "{}", points.len());
        assert!(points.iter().any(|p| p.time == 54_321));
        assert_eq!(points.last(), last.as_ref());
    }
}
