//! The stacked memory-over-time chart's data: each category's cumulative
//! top over time (PyTorch's order, bottom up), on a time axis in the unit
//! that reads best. Pure functions, so the bands are tested without a
//! browser; the page's one line chart draws them.

use oomscope_report::TimelinePoint;

/// The unit of the time axis: seconds, milliseconds or microseconds since
/// the first event, whichever keeps the axis's numbers short.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeAxis {
    /// The first event's time (µs).
    pub origin: i64,
    /// Microseconds per axis unit.
    pub per_unit: f64,
    pub unit: &'static str,
}

impl TimeAxis {
    pub fn of(points: &[TimelinePoint]) -> Self {
        let lo = points.iter().map(|p| p.time).min().unwrap_or(0);
        let hi = points.iter().map(|p| p.time).max().unwrap_or(0);
        let span = hi.saturating_sub(lo);
        let (per_unit, unit) = if span >= 10_000_000 {
            (1e6, "s")
        } else if span >= 10_000 {
            (1e3, "ms")
        } else {
            (1.0, "µs")
        };
        TimeAxis {
            origin: lo,
            per_unit,
            unit,
        }
    }

    /// `time` (µs) on the axis.
    pub fn x(&self, time: i64) -> f64 {
        time.saturating_sub(self.origin) as f64 / self.per_unit
    }

    pub fn label(&self) -> String {
        format!("time since the first event ({})", self.unit)
    }
}

/// Per band, its cumulative top at each point: band `i` lies between the
/// sum of bands `0..i` and `0..=i`. Without categories there is one band,
/// the total.
pub fn stacked_tops(
    points: &[TimelinePoint],
    bands: usize,
    axis: &TimeAxis,
) -> Vec<Vec<(f64, f64)>> {
    let value = |p: &TimelinePoint, band: usize| -> f64 {
        if p.by_category.is_empty() {
            p.bytes as f64
        } else {
            p.by_category.get(band).copied().unwrap_or(0) as f64
        }
    };
    let mut below = vec![0.0f64; points.len()];
    (0..bands)
        .map(|band| {
            let tops: Vec<(f64, f64)> = points
                .iter()
                .zip(&below)
                .map(|(p, b)| (axis.x(p.time), b + value(p, band)))
                .collect();
            below = tops.iter().map(|t| t.1).collect();
            tops
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(time: i64, cats: &[u64]) -> TimelinePoint {
        TimelinePoint {
            time,
            bytes: cats.iter().sum(),
            by_category: cats.to_vec(),
        }
    }

    #[test]
    fn bands_stack_on_a_readable_time_axis() {
        let points = vec![p(1_000_000, &[10, 0]), p(1_050_000, &[10, 10])];
        let axis = TimeAxis::of(&points);
        assert_eq!((axis.unit, axis.per_unit), ("ms", 1e3));
        let tops = stacked_tops(&points, 2, &axis);
        assert_eq!(tops[0], [(0.0, 10.0), (50.0, 10.0)]);
        assert_eq!(tops[1], [(0.0, 10.0), (50.0, 20.0)]);
        assert_eq!(TimeAxis::of(&[p(0, &[1]), p(20_000_000, &[1])]).unit, "s");
        assert_eq!(
            TimeAxis::of(&[p(5, &[1])]).label(),
            "time since the first event (µs)"
        );
    }
}
