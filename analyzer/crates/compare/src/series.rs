//! Memory over time on both sides: step series (growth per step A vs B),
//! allocator profiles and profiler memory timelines (peaks).

use crate::module_diff::{signed, signed_difference};
use oomscope_report::compare::{PeakComparison, SeriesComparison};
use oomscope_report::units::format_signed_bytes;
use oomscope_report::{AllocatorProfile, MemoryTimeline, StepSeries};
use std::collections::HashSet;

/// Pair series by device and metric (then by order among the rest).
pub fn compare_series(a: &[StepSeries], b: &[StepSeries]) -> Vec<SeriesComparison> {
    let mut used_b = vec![false; b.len()];
    let mut pairs = Vec::new();
    for (i, sa) in a.iter().enumerate() {
        if let Some(j) = (0..b.len())
            .find(|&j| !used_b[j] && b[j].device == sa.device && b[j].metric == sa.metric)
        {
            used_b[j] = true;
            pairs.push((i, j));
        }
    }
    let paired_a: HashSet<usize> = pairs.iter().map(|p| p.0).collect();
    let rest_a = (0..a.len()).filter(|i| !paired_a.contains(i));
    let rest_b: Vec<usize> = (0..b.len()).filter(|&j| !used_b[j]).collect();
    pairs.extend(rest_a.zip(rest_b));
    pairs
        .into_iter()
        .map(|(i, j)| compare_one(&a[i], &b[j]))
        .collect()
}

fn compare_one(a: &StepSeries, b: &StepSeries) -> SeriesComparison {
    let max = |s: &StepSeries| s.points.iter().map(|p| p.bytes).max().unwrap_or(0);
    let steps_a: HashSet<u64> = a.points.iter().map(|p| p.step).collect();
    let common = b
        .points
        .iter()
        .filter(|p| steps_a.contains(&p.step))
        .count() as u64;
    let (max_a, max_b) = (max(a), max(b));
    let slope = |s: Option<f64>| {
        s.map(|v| format!("{}/step", format_signed_bytes(v.round() as i64)))
            .unwrap_or_else(|| "unknown".into())
    };
    let summary = format!(
        "growth {} (A) vs {} (B); largest value {} ({})",
        slope(a.slope_bytes_per_step),
        slope(b.slope_bytes_per_step),
        oomscope_report::units::format_bytes(max_b),
        signed(signed_difference(max_a, max_b))
    );
    SeriesComparison {
        device: a.device.clone(),
        metric: a.metric.clone(),
        input_a: a.input.clone(),
        input_b: b.input.clone(),
        slope_bytes_per_step_a: a.slope_bytes_per_step,
        slope_bytes_per_step_b: b.slope_bytes_per_step,
        max_bytes_a: max_a,
        max_bytes_b: max_b,
        max_difference_bytes: signed_difference(max_a, max_b),
        common_steps: common,
        projected_limit_step_a: a.projected_limit_step,
        projected_limit_step_b: b.projected_limit_step,
        summary,
    }
}

/// Pair allocator profiles by allocator name and compare their peaks.
pub fn compare_allocators(a: &[AllocatorProfile], b: &[AllocatorProfile]) -> Vec<PeakComparison> {
    let mut used_b = vec![false; b.len()];
    let mut out = Vec::new();
    for pa in a {
        if let Some(j) = (0..b.len()).find(|&j| !used_b[j] && b[j].allocator == pa.allocator) {
            used_b[j] = true;
            out.push(PeakComparison {
                name: pa.allocator.clone(),
                peak_bytes_a: pa.peak_heap_bytes,
                peak_bytes_b: b[j].peak_heap_bytes,
                difference_bytes: signed_difference(pa.peak_heap_bytes, b[j].peak_heap_bytes),
            });
        }
    }
    out
}

/// Pair memory timelines by device and source and compare their peaks.
pub fn compare_timelines(a: &[MemoryTimeline], b: &[MemoryTimeline]) -> Vec<PeakComparison> {
    let mut used_b = vec![false; b.len()];
    let mut out = Vec::new();
    for ta in a {
        if let Some(j) = (0..b.len())
            .find(|&j| !used_b[j] && b[j].device == ta.device && b[j].source == ta.source)
        {
            used_b[j] = true;
            out.push(PeakComparison {
                name: ta.device.clone(),
                peak_bytes_a: ta.peak_bytes,
                peak_bytes_b: b[j].peak_bytes,
                difference_bytes: signed_difference(ta.peak_bytes, b[j].peak_bytes),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomscope_report::StepPoint;

    fn series(device: &str, points: &[(u64, u64)], slope: f64) -> StepSeries {
        StepSeries {
            device: device.into(),
            metric: "memory".into(),
            points: points
                .iter()
                .map(|&(step, bytes)| StepPoint { step, bytes })
                .collect(),
            slope_bytes_per_step: Some(slope),
            ..StepSeries::default()
        }
    }

    #[test]
    fn series_pair_by_device_and_compare_growth() {
        let a = [
            series("rank 0", &[(1, 100), (2, 200), (3, 300)], 100.0),
            series("rank 1", &[(1, 50)], 0.0),
        ];
        let b = [
            series("rank 1", &[(1, 60)], 0.0),
            series("rank 0", &[(2, 120), (3, 140), (4, 160)], 20.0),
        ];
        let c = compare_series(&a, &b);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].device, "rank 0");
        assert_eq!(
            (
                c[0].max_bytes_a,
                c[0].max_bytes_b,
                c[0].max_difference_bytes
            ),
            (300, 160, -140)
        );
        assert_eq!(c[0].common_steps, 2);
        assert_eq!(
            (c[0].slope_bytes_per_step_a, c[0].slope_bytes_per_step_b),
            (Some(100.0), Some(20.0))
        );
        assert_eq!(c[1].max_difference_bytes, 10);
    }

    #[test]
    fn timelines_pair_by_device_and_source() {
        use oomscope_report::TimelineSource;
        let t = |device: &str, source, peak| MemoryTimeline {
            device: device.into(),
            source,
            peak_bytes: peak,
            ..MemoryTimeline::default()
        };
        let a = [
            t("cuda:0", TimelineSource::Kineto, 100),
            t("cuda:1", TimelineSource::Kineto, 50),
        ];
        let b = [
            t("cuda:1", TimelineSource::TorchMemoryTimelineRaw, 10),
            t("cuda:0", TimelineSource::Kineto, 70),
        ];
        let c = compare_timelines(&a, &b);
        assert_eq!(
            c.len(),
            1,
            "a Kineto trace is not paired with a memory timeline"
        );
        assert_eq!((c[0].name.as_str(), c[0].difference_bytes), ("cuda:0", -30));
    }
}
