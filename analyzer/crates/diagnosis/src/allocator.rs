//! What a runtime allocator timeline shows (XProf's `/host:CPU`
//! MemoryAllocation events, `Report::allocator_profiles`): steady growth,
//! one spike, or nothing. Allocator timelines saw-tooth within every step,
//! so the shape is read from quarter means (growth) and from how few points
//! reach the maximum (a spike), never from single points.

use oomscope_report::AllocatorProfile;

/// Fewer points than this say nothing about a trend.
const MIN_POINTS: usize = 8;
/// The second half's mean at least this share of the highest quarter's mean
/// above the first half's is steady growth (when no quarter falls below the
/// first: a program's teardown may free a little at the end).
const MIN_GROWTH_FRACTION: f64 = 0.10;
/// A spike rises at least this share of the median level above it...
const MIN_SPIKE_FRACTION: f64 = 0.5;
/// ...and at most this share of the points reach its upper half.
const MAX_SPIKE_POINTS_FRACTION: f64 = 0.05;

/// The shape of one allocator's timeline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AllocatorShape {
    SteadyGrowth {
        /// Least-squares slope of heap + stack bytes over time.
        bytes_per_second: f64,
        /// Mean level of the first and last quarters.
        first_quarter: u64,
        last_quarter: u64,
        seconds: f64,
    },
    Spike {
        /// Peak − median level.
        bytes: u64,
        median: u64,
        peak: u64,
        /// Seconds from the first event.
        at_seconds: f64,
    },
    Flat {
        min: u64,
        max: u64,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct AllocatorTrend<'a> {
    pub profile: &'a AllocatorProfile,
    pub shape: AllocatorShape,
}

impl AllocatorTrend<'_> {
    pub fn name(&self) -> String {
        if self.profile.allocator.is_empty() {
            "the allocator".to_string()
        } else {
            format!("allocator {}", self.profile.allocator)
        }
    }
}

fn level(p: &oomscope_report::AllocatorPoint) -> u64 {
    p.heap_bytes.saturating_add(p.stack_bytes)
}

/// The shape of `p`'s timeline; `None` with too few points.
pub(crate) fn allocator_trend(p: &AllocatorProfile) -> Option<AllocatorTrend<'_>> {
    let points = &p.timeline;
    let n = points.len();
    if n < MIN_POINTS {
        return None;
    }
    let t0 = points[0].time_ps;
    let secs = |t: u64| t.saturating_sub(t0) as f64 * 1e-12;
    let levels: Vec<u64> = points.iter().map(level).collect();
    let mut sorted = levels.clone();
    sorted.sort_unstable();
    let median = sorted[n / 2];
    let (peak_i, &peak) = levels.iter().enumerate().max_by_key(|(_, l)| **l)?;

    // One spike: far above the median, and only a few points near it.
    let rise = peak.saturating_sub(median);
    let upper_half = median + rise / 2;
    let near_peak = levels.iter().filter(|l| **l > upper_half).count();
    if rise > 0
        && rise as f64 >= median as f64 * MIN_SPIKE_FRACTION
        && near_peak as f64 <= (n as f64 * MAX_SPIKE_POINTS_FRACTION).max(1.0)
    {
        return Some(AllocatorTrend {
            profile: p,
            shape: AllocatorShape::Spike {
                bytes: rise,
                median,
                peak,
                at_seconds: secs(points[peak_i].time_ps),
            },
        });
    }

    // Steady growth: the second half above the first, no quarter below the first.
    let quarter = |q: usize| -> f64 {
        let part = &levels[q * n / 4..(q + 1) * n / 4];
        part.iter().map(|l| *l as f64).sum::<f64>() / part.len().max(1) as f64
    };
    let q: Vec<f64> = (0..4).map(quarter).collect();
    let top = q.iter().copied().fold(0.0, f64::max);
    let rising = q[1..].iter().all(|x| *x >= q[0])
        && (q[2] + q[3]) / 2.0 - (q[0] + q[1]) / 2.0 >= top * MIN_GROWTH_FRACTION;
    let seconds = secs(points[n - 1].time_ps);
    if rising && seconds > 0.0 {
        let xs: Vec<f64> = points.iter().map(|pt| secs(pt.time_ps)).collect();
        let mean_x = xs.iter().sum::<f64>() / n as f64;
        let mean_y = levels.iter().map(|l| *l as f64).sum::<f64>() / n as f64;
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for (x, y) in xs.iter().zip(&levels) {
            sxy += (x - mean_x) * (*y as f64 - mean_y);
            sxx += (x - mean_x) * (x - mean_x);
        }
        if sxx > 0.0 {
            return Some(AllocatorTrend {
                profile: p,
                shape: AllocatorShape::SteadyGrowth {
                    bytes_per_second: sxy / sxx,
                    first_quarter: q[0] as u64,
                    last_quarter: q[3] as u64,
                    seconds,
                },
            });
        }
    }
    Some(AllocatorTrend {
        profile: p,
        shape: AllocatorShape::Flat {
            min: sorted[0],
            max: peak,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomscope_report::AllocatorPoint;

    fn profile(levels: &[u64]) -> AllocatorProfile {
        AllocatorProfile {
            allocator: "test".into(),
            timeline: levels
                .iter()
                .enumerate()
                .map(|(i, l)| AllocatorPoint {
                    time_ps: i as u64 * 1_000_000_000_000,
                    heap_bytes: *l,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn flat_growth_and_spike_are_told_apart() {
        // A saw-tooth around 100 MB: flat.
        let flat: Vec<u64> = (0..40).map(|i| 100_000_000 + (i % 4) * 5_000_000).collect();
        assert!(matches!(
            allocator_trend(&profile(&flat)).unwrap().shape,
            AllocatorShape::Flat { .. }
        ));
        // The same saw-tooth on a 2 MB/s ramp.
        let growth: Vec<u64> = flat
            .iter()
            .enumerate()
            .map(|(i, l)| l + i as u64 * 2_000_000)
            .collect();
        match allocator_trend(&profile(&growth)).unwrap().shape {
            AllocatorShape::SteadyGrowth {
                bytes_per_second, ..
            } => {
                assert!(
                    (bytes_per_second - 2_000_000.0).abs() < 200_000.0,
                    "{bytes_per_second}"
                )
            }
            s => panic!("{s:?}"),
        }
        // One point 300 MB up at t = 20 s.
        let mut spike = flat.clone();
        spike[20] += 300_000_000;
        match allocator_trend(&profile(&spike)).unwrap().shape {
            AllocatorShape::Spike {
                bytes, at_seconds, ..
            } => {
                // 400 MB over the median of the 40 points, 110 MB.
                assert_eq!(bytes, 290_000_000);
                assert_eq!(at_seconds, 20.0);
            }
            s => panic!("{s:?}"),
        }
        assert!(allocator_trend(&profile(&flat[..5])).is_none());
    }
}
