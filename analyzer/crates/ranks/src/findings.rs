//! The ranks that differ from the median rank, and the line that makes the
//! difference.
//!
//! - **growth**: a rank whose total grows per step (least squares over its
//!   inputs) by more than the median rank's growth, enough to matter over
//!   the steps seen; its line is the stack that grew most between its first
//!   and its last input.
//! - **excess**: a rank without growth whose peak is above the median
//!   rank's; its line is the stack it holds (at its peak) beyond what the
//!   median rank holds at its own.
//!
//! Stacks are matched as the comparison of two runs matches them
//! (`oomscope_compare::stacks::compare_stacks`: same frames, same lines).

use crate::Item;
use oomscope_compare::stacks::compare_stacks;
use oomscope_report::compare::StackProfileKind;
use oomscope_report::units::format_bytes;
use oomscope_report::{Frame, FrameKind, RankFinding, RankFindingKind, RankPer, RankSummary};

/// A difference smaller than this is noise whatever the sizes.
const MIN_BYTES: u64 = 64 << 10;
/// An excess is a finding from this fraction of the median rank's peak.
const EXCESS_FRACTION: f64 = 0.10;
/// Growth is a finding once it adds this fraction of the median peak over the steps seen.
const GROWTH_FRACTION: f64 = 0.05;

/// Least-squares slope of `ys` over `xs`; `None` with fewer than two
/// distinct x.
pub fn slope(xs: &[f64], ys: &[u64]) -> Option<f64> {
    let n = xs.len().min(ys.len());
    if n < 2 {
        return None;
    }
    let mx = xs[..n].iter().sum::<f64>() / n as f64;
    let my = ys[..n].iter().map(|&y| y as f64).sum::<f64>() / n as f64;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for i in 0..n {
        let dx = xs[i] - mx;
        sxy += dx * (ys[i] as f64 - my);
        sxx += dx * dx;
    }
    (sxx > 0.0).then(|| sxy / sxx)
}

/// Index of the median rank by peak (the lower median of an even count,
/// so the reference is a real rank; ties by rank number).
pub fn median_rank(ranks: &[RankSummary]) -> Option<usize> {
    if ranks.is_empty() {
        return None;
    }
    let mut order: Vec<usize> = (0..ranks.len()).collect();
    order.sort_by_key(|&i| (ranks[i].peak_bytes, ranks[i].rank));
    order.get((ranks.len() - 1) / 2).copied()
}

/// Growth and excess findings of `ranks` against the median rank `m`.
/// `members` are the run's items (for stacks); `limit` the device's memory
/// when an OOM message of the job gives it.
pub fn find(
    ranks: &[RankSummary],
    members: &[&Item],
    m: usize,
    limit: Option<u64>,
) -> Vec<RankFinding> {
    let median = &ranks[m];
    let mut growths: Vec<i64> = ranks
        .iter()
        .map(|r| r.growth_per_step_bytes.unwrap_or(0))
        .collect();
    growths.sort_unstable();
    let median_growth = growths[(growths.len() - 1) / 2];
    let items_of = |rank: u32| -> Vec<&Item> {
        let mut v: Vec<&Item> = members
            .iter()
            .copied()
            .filter(|i| i.rank.as_ref().map(|r| r.0) == Some(rank))
            .collect();
        v.sort_by(|a, b| (a.step, a.input).cmp(&(b.step, b.input)));
        v
    };
    let mut out = Vec::new();
    for r in ranks {
        let items = items_of(r.rank);
        let per = if r.steps.is_empty() {
            RankPer::Profile
        } else {
            RankPer::Step
        };
        let span = match (r.steps.first(), r.steps.last()) {
            (Some(a), Some(b)) => b.saturating_sub(*a),
            _ => r.bytes_per_input.len().saturating_sub(1) as u64,
        };
        let extra_growth = r
            .growth_per_step_bytes
            .unwrap_or(0)
            .saturating_sub(median_growth);
        let grown = (extra_growth.max(0) as u64).saturating_mul(span);
        let growth_floor = MIN_BYTES.max((median.peak_bytes as f64 * GROWTH_FRACTION) as u64);
        if extra_growth > 0 && grown >= growth_floor && items.len() >= 2 {
            let (first, last) = (items[0], items[items.len() - 1]);
            let site = grown_site(first, last);
            let unit = if per == RankPer::Step {
                "step"
            } else {
                "profile"
            };
            let limit_step = match (limit, r.steps.last()) {
                (Some(limit), Some(&last_step))
                    if per == RankPer::Step && limit > r.final_bytes =>
                {
                    Some(
                        last_step
                            .saturating_add((limit - r.final_bytes).div_ceil(extra_growth as u64)),
                    )
                }
                _ => None,
            };
            out.push(RankFinding {
                kind: RankFindingKind::Growth,
                rank: r.rank,
                bytes: extra_growth as u64,
                per,
                text: format!(
                    "rank {} grows by {} per {unit} while the median rank (rank {}) {}{}{}",
                    r.rank,
                    format_bytes(extra_growth as u64),
                    median.rank,
                    if median_growth == 0 {
                        "stays flat".to_string()
                    } else {
                        format!(
                            "grows by {} per {unit}",
                            format_bytes(median_growth.max(0) as u64)
                        )
                    },
                    if site.is_empty() {
                        String::new()
                    } else {
                        format!("; what accumulates is allocated at {site}")
                    },
                    limit_step.map_or(String::new(), |s| format!(
                        "; at this rate it reaches the {} limit at step {s}",
                        format_bytes(limit.unwrap_or(0))
                    )),
                ),
                line: site,
                limit_step,
                time: None,
            });
            continue;
        }
        let excess = r.peak_bytes.saturating_sub(median.peak_bytes);
        let excess_floor = MIN_BYTES.max((median.peak_bytes as f64 * EXCESS_FRACTION) as u64);
        if excess >= excess_floor {
            let median_items = items_of(median.rank);
            let site = match (peak_item(&median_items), peak_item(&items)) {
                (Some(a), Some(b)) => grown_site(a, b),
                _ => String::new(),
            };
            out.push(RankFinding {
                kind: RankFindingKind::Excess,
                rank: r.rank,
                bytes: excess,
                per,
                text: format!(
                    "rank {} holds {} more than the median rank (rank {}) at its peak{}",
                    r.rank,
                    format_bytes(excess),
                    median.rank,
                    if site.is_empty() {
                        String::new()
                    } else {
                        format!(", allocated at {site}")
                    }
                ),
                line: site,
                limit_step: None,
                time: None,
            });
        }
    }
    out
}

/// The input at which a rank's total is highest.
fn peak_item<'a>(items: &[&'a Item<'a>]) -> Option<&'a Item<'a>> {
    items.iter().copied().max_by_key(|i| i.total)
}

/// `file.py:N` of the stack holding most more bytes in `b` than in `a`.
fn grown_site(a: &Item, b: &Item) -> String {
    let cmp = compare_stacks(
        StackProfileKind::DeviceMemoryProfile,
        String::new(),
        (a.input, a.total, a.stacks),
        (b.input, b.total, b.stacks),
    );
    cmp.stacks
        .iter()
        .filter(|s| s.bytes_b > s.bytes_a)
        .max_by_key(|s| s.bytes_b - s.bytes_a)
        .and_then(|s| site(&s.frames))
        .unwrap_or_default()
}

/// The innermost frame of the user's own code (`file.py:N`, the file's base
/// name), else the innermost frame with a line.
pub fn site(frames: &[Frame]) -> Option<String> {
    let with_line = |f: &&Frame| f.line > 0 && !f.file.is_empty();
    let frame = frames
        .iter()
        .filter(with_line)
        .find(|f| f.kind == FrameKind::Python)
        .or_else(|| frames.iter().find(with_line))?;
    let base = frame.file.rsplit(['/', '\\']).next().unwrap_or(&frame.file);
    Some(format!("{base}:{}", frame.line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_is_least_squares() {
        assert_eq!(slope(&[20.0, 40.0, 60.0], &[10, 30, 50]), Some(1.0));
        assert_eq!(slope(&[0.0, 1.0, 2.0], &[7, 7, 7]), Some(0.0));
        assert_eq!(slope(&[5.0], &[7]), None);
        assert_eq!(slope(&[5.0, 5.0], &[7, 9]), None);
    }

    #[test]
    fn the_median_is_a_real_rank() {
        let r = |rank, peak_bytes| RankSummary {
            rank,
            peak_bytes,
            ..Default::default()
        };
        let ranks = [r(0, 2), r(1, 2), r(2, 1), r(3, 1)];
        assert_eq!(median_rank(&ranks), Some(3));
        let ranks = [r(0, 1), r(1, 5), r(2, 1)];
        assert_eq!(median_rank(&ranks), Some(2));
    }
}
