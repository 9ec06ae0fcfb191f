//! Trend, spikes, sawtooth and projection of one memory-per-step series.
//!
//! - **Slope**: Theil–Sen (median of pairwise slopes) in bytes per step. Up to
//!   [`EXACT_PAIRS_MAX_POINTS`] points every pair is used; beyond, a fixed
//!   number of pairs is drawn with a deterministic generator, so the cost is
//!   O(n log n) for sorting plus O(pairs). Persistent upward level shifts
//!   (change points) are removed before the slope is taken, so one big
//!   allocation that stays is a spike, not a leak.
//! - **Change points**: a difference between consecutive points that is far
//!   outside the typical step-to-step change (median ± 6 robust sigmas) and
//!   above a floor (3 print quanta and 1% of the median level). Only upward
//!   jumps are reported as spikes (downward ones are releases).
//! - **Sawtooth**: the first local maximum ≥ 0.5 of the autocorrelation of the
//!   detrended series, resampled on a uniform step grid, with at least three
//!   periods in the data and an amplitude above the floor.
//! - **Growth** is called when the trend's rise over the series exceeds both
//!   3 robust sigmas of the residuals and the floor; only then is the
//!   projection to the limit made (`projected_limit_step`: at this slope, the
//!   first step at which the limit is reached).

use oomscope_report::{StepPoint, StepSeries};

/// What a series shows, in the decision tree's terms.
#[derive(Debug, Clone, PartialEq)]
pub enum Trend {
    /// Memory rises steadily: small allocations accumulate (a leak).
    SteadyGrowth {
        slope_bytes_per_step: f64,
        /// At this slope, the step at which `limit_bytes` is reached (when known).
        projected_limit_step: Option<u64>,
        /// A sawtooth riding on the growth (seed 003: the log interval).
        sawtooth_period_steps: Option<u64>,
    },
    /// One or more sudden jumps (one large allocation each).
    Spike {
        /// Steps at which memory jumped up, in step order.
        steps: Vec<u64>,
        /// The largest jump.
        largest_jump_bytes: u64,
    },
    /// Memory rises and falls with a period and no net growth.
    Sawtooth {
        period_steps: u64,
        amplitude_bytes: u64,
    },
    /// No growth, jump or period that stands out (or too few points to tell).
    Flat,
}

/// Fills the analysis fields of `s` (slope, projection, sawtooth period,
/// spikes) from its points, then sorts the points by step (for a repeated step
/// the later point wins: a restarted run) and downsamples them to at most
/// [`MAX_POINTS`] for the report, keeping the first, the last and the peak.
pub fn analyze_series(s: &mut StepSeries) {
    normalize_points(&mut s.points);
    let a = analyze_points(&s.points, s.limit_bytes);
    s.slope_bytes_per_step = a.slope;
    s.spikes = a.spikes.iter().map(|j| j.step).collect();
    s.sawtooth_period_steps = a.sawtooth.map(|(p, _)| p);
    s.projected_limit_step = match &a.trend {
        Trend::SteadyGrowth {
            projected_limit_step,
            ..
        } => *projected_limit_step,
        _ => None,
    };
    let last_step = s.points.last().map(|p| p.step);
    s.projected_limit_seconds = match (s.projected_limit_step, last_step, s.seconds_per_step) {
        (Some(limit), Some(last), Some(secs)) if secs.is_finite() && secs > 0.0 => {
            Some(limit.saturating_sub(last) as f64 * secs)
        }
        _ => None,
    };
    s.points = downsample(&s.points, MAX_POINTS);
}

/// The class of a series, for the decision tree. Works on the points as they
/// are (sorted or not, downsampled or not).
pub fn classify(s: &StepSeries) -> Trend {
    let mut points = s.points.clone();
    normalize_points(&mut points);
    analyze_points(&points, s.limit_bytes).trend
}

/// Points kept in a report series.
pub const MAX_POINTS: usize = 2000;
/// Up to this many points, Theil–Sen uses every pair.
pub const EXACT_PAIRS_MAX_POINTS: usize = 700;
/// Pairs drawn for Theil–Sen on longer series.
const SAMPLED_PAIRS: usize = 250_000;
/// At most this many spikes are reported (the largest).
const MAX_SPIKES: usize = 100;
/// Grid size for the autocorrelation.
const MAX_GRID: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Jump {
    step: u64,
    index: usize,
    bytes: f64,
}

struct Analysis {
    slope: Option<f64>,
    spikes: Vec<Jump>,
    sawtooth: Option<(u64, u64)>,
    trend: Trend,
}

/// Sorted by step, one point per step (the last one given).
fn normalize_points(points: &mut Vec<StepPoint>) {
    // Stable sort keeps log order within a step, so the last is the newest.
    points.sort_by_key(|p| p.step);
    let mut out: Vec<StepPoint> = Vec::with_capacity(points.len());
    for p in points.drain(..) {
        match out.last_mut() {
            Some(last) if last.step == p.step => *last = p,
            _ => out.push(p),
        }
    }
    *points = out;
}

fn analyze_points(points: &[StepPoint], limit: Option<u64>) -> Analysis {
    let n = points.len();
    if n < 3 {
        return Analysis {
            slope: None,
            spikes: Vec::new(),
            sawtooth: None,
            trend: Trend::Flat,
        };
    }
    let xs: Vec<f64> = points.iter().map(|p| p.step as f64).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.bytes as f64).collect();
    let level = median(&mut ys.clone()).unwrap_or(0.0);
    let quantum = print_quantum(&ys);
    let floor = (3.0 * quantum).max(0.01 * level.abs());

    let mut spikes: Vec<Jump> = change_points(&ys, floor)
        .into_iter()
        .filter(|j| j.bytes > 0.0)
        .map(|j| Jump {
            step: points[j.index].step,
            ..j
        })
        .collect();

    // Remove persistent upward shifts before the slope: a jump that is still
    // there a few points later (not undone by a drop of similar size).
    let mut dejumped = ys.clone();
    for j in &spikes {
        let after = &ys[j.index..(j.index + 4).min(n)];
        let before = ys[j.index.saturating_sub(1)];
        let stays = after.iter().all(|v| v - before > 0.5 * j.bytes);
        if stays && after.len() >= 2 {
            for v in &mut dejumped[j.index..] {
                *v -= j.bytes;
            }
        }
    }
    let slope = theil_sen(&xs, &dejumped);
    let intercept = {
        let mut r: Vec<f64> = xs
            .iter()
            .zip(&dejumped)
            .map(|(x, y)| y - slope * x)
            .collect();
        median(&mut r).unwrap_or(0.0)
    };
    let residuals: Vec<f64> = xs
        .iter()
        .zip(&dejumped)
        .map(|(x, y)| y - (intercept + slope * x))
        .collect();
    let sigma = robust_sigma(&residuals);

    let span = xs[n - 1] - xs[0];
    let rise = slope * span;
    let growing = slope > 0.0 && rise > floor && rise > 3.0 * sigma;

    let sawtooth = find_sawtooth(&xs, &residuals, floor);

    spikes.sort_by(|a, b| b.bytes.total_cmp(&a.bytes));
    spikes.truncate(MAX_SPIKES);
    spikes.sort_by_key(|j| j.step);

    let trend = if growing {
        let last = ys[n - 1].max(intercept + slope * xs[n - 1]);
        let projected_limit_step = limit.map(|l| {
            let remaining = l as f64 - last;
            let last_step = points[n - 1].step;
            if remaining <= 0.0 {
                last_step
            } else {
                let steps = (remaining / slope).ceil();
                if steps >= (u64::MAX - last_step) as f64 {
                    u64::MAX
                } else {
                    last_step + steps as u64
                }
            }
        });
        Trend::SteadyGrowth {
            slope_bytes_per_step: slope,
            projected_limit_step,
            sawtooth_period_steps: sawtooth.map(|(p, _)| p),
        }
    } else if !spikes.is_empty() && sawtooth.is_none() {
        let largest = spikes.iter().map(|j| j.bytes).fold(0.0, f64::max);
        Trend::Spike {
            steps: spikes.iter().map(|j| j.step).collect(),
            largest_jump_bytes: largest as u64,
        }
    } else if let Some((period_steps, amplitude_bytes)) = sawtooth {
        Trend::Sawtooth {
            period_steps,
            amplitude_bytes,
        }
    } else {
        Trend::Flat
    };
    Analysis {
        slope: Some(slope),
        spikes,
        sawtooth,
        trend,
    }
}

/// Median of pairwise slopes; all pairs for short series, a deterministic
/// sample of pairs for long ones. Pairs at the same step are skipped.
fn theil_sen(xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len();
    let mut slopes: Vec<f64> = Vec::new();
    let push = |i: usize, j: usize, slopes: &mut Vec<f64>| {
        let dx = xs[j] - xs[i];
        if dx != 0.0 {
            slopes.push((ys[j] - ys[i]) / dx);
        }
    };
    if n <= EXACT_PAIRS_MAX_POINTS {
        slopes.reserve(n * (n - 1) / 2);
        for i in 0..n {
            for j in i + 1..n {
                push(i, j, &mut slopes);
            }
        }
    } else {
        slopes.reserve(SAMPLED_PAIRS);
        let mut rng = SplitMix64(0x9e37_79b9_7f4a_7c15 ^ n as u64);
        for _ in 0..SAMPLED_PAIRS {
            let i = (rng.next() % n as u64) as usize;
            let j = (rng.next() % n as u64) as usize;
            let (i, j) = if i < j { (i, j) } else { (j, i) };
            push(i, j, &mut slopes);
        }
    }
    median(&mut slopes).unwrap_or(0.0)
}

/// Upward and downward jumps between consecutive points that stand out from
/// the typical step-to-step change.
fn change_points(ys: &[f64], floor: f64) -> Vec<Jump> {
    let diffs: Vec<f64> = ys.windows(2).map(|w| w[1] - w[0]).collect();
    let center = median(&mut diffs.clone()).unwrap_or(0.0);
    let sigma = robust_sigma(&diffs);
    let threshold = (6.0 * sigma).max(floor);
    diffs
        .iter()
        .enumerate()
        .filter(|(_, d)| (**d - center).abs() > threshold)
        .map(|(i, d)| Jump {
            step: 0,
            index: i + 1,
            bytes: *d,
        })
        .collect()
}

/// The smallest non-zero difference between distinct values: the resolution
/// the log printed with (0.01 GiB for torchtitan).
fn print_quantum(ys: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = ys.to_vec();
    sorted.sort_by(f64::total_cmp);
    let q = sorted
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0.0)
        .fold(f64::INFINITY, f64::min);
    if q.is_finite() {
        q
    } else {
        0.0
    }
}

/// Period (steps) and amplitude (bytes) of a sawtooth in the residuals.
fn find_sawtooth(xs: &[f64], residuals: &[f64], floor: f64) -> Option<(u64, u64)> {
    let n = xs.len();
    let first = *xs.first()?;
    let last = *xs.last()?;
    let mut step_diffs: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
    let mut spacing = median(&mut step_diffs)?.max(1.0);
    if (last - first) / spacing > MAX_GRID as f64 {
        spacing = (last - first) / MAX_GRID as f64;
    }
    let m = ((last - first) / spacing).floor() as usize + 1;
    if m < 8 {
        return None;
    }
    // Linear interpolation of the residuals on the uniform grid.
    let mut grid = Vec::with_capacity(m);
    let mut k = 0;
    for g in 0..m {
        let x = first + g as f64 * spacing;
        while k + 1 < n && xs[k + 1] < x {
            k += 1;
        }
        let (x0, x1) = (xs[k], xs[(k + 1).min(n - 1)]);
        let (y0, y1) = (residuals[k], residuals[(k + 1).min(n - 1)]);
        let y = if x1 > x0 {
            y0 + (y1 - y0) * ((x - x0) / (x1 - x0)).clamp(0.0, 1.0)
        } else {
            y0
        };
        grid.push(y);
    }
    let mean = grid.iter().sum::<f64>() / m as f64;
    let centered: Vec<f64> = grid.iter().map(|v| v - mean).collect();
    let var: f64 = centered.iter().map(|v| v * v).sum();
    if var <= 0.0 {
        return None;
    }
    let acf = |lag: usize| -> f64 {
        centered
            .iter()
            .zip(&centered[lag..])
            .map(|(a, b)| a * b)
            .sum::<f64>()
            / var
    };
    let max_lag = m / 3;
    let mut prev = acf(1);
    let mut lag = 2;
    while lag < max_lag {
        let cur = acf(lag);
        let next = acf(lag + 1);
        if cur >= 0.5 && cur >= prev && cur >= next {
            // Amplitude: median over whole periods of (max - min).
            let mut ranges: Vec<f64> = centered
                .chunks_exact(lag)
                .map(|c| {
                    c.iter().fold(f64::MIN, |a, b| a.max(*b))
                        - c.iter().fold(f64::MAX, |a, b| a.min(*b))
                })
                .collect();
            let amplitude = median(&mut ranges).unwrap_or(0.0);
            if amplitude <= floor {
                return None;
            }
            let period = (lag as f64 * spacing).round();
            return Some((period as u64, amplitude as u64));
        }
        prev = cur;
        lag += 1;
    }
    None
}

/// At most `max` points: the first, the last, and per bucket its minimum and
/// maximum (so the peak, spikes and sawtooth troughs survive), in step order.
fn downsample(points: &[StepPoint], max: usize) -> Vec<StepPoint> {
    if points.len() <= max || max < 4 {
        return points.to_vec();
    }
    let n = points.len();
    let inner = &points[1..n - 1];
    let buckets = (max - 2) / 2;
    let mut out = Vec::with_capacity(max);
    out.push(points[0]);
    for b in 0..buckets {
        let lo = b * inner.len() / buckets;
        let hi = ((b + 1) * inner.len() / buckets)
            .max(lo + 1)
            .min(inner.len());
        let chunk = &inner[lo..hi];
        let (mut imin, mut imax) = (0, 0);
        for (i, p) in chunk.iter().enumerate() {
            if p.bytes < chunk[imin].bytes {
                imin = i;
            }
            if p.bytes > chunk[imax].bytes {
                imax = i;
            }
        }
        let (a, c) = if imin <= imax {
            (imin, imax)
        } else {
            (imax, imin)
        };
        out.push(chunk[a]);
        if c != a {
            out.push(chunk[c]);
        }
    }
    out.push(points[n - 1]);
    out
}

/// 1.4826 × median absolute deviation: a standard deviation robust to outliers.
fn robust_sigma(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    let Some(m) = median(&mut v) else { return 0.0 };
    let mut dev: Vec<f64> = values.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&mut dev).unwrap_or(0.0)
}

/// Median (lower middle for even counts), O(n) by selection; NaN-free input.
fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mid = (v.len() - 1) / 2;
    let (_, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    Some(*m)
}

/// Small deterministic generator for pair sampling (SplitMix64).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
