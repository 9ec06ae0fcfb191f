//! The Active Memory Timeline shrunk to a picture's worth of points, and the
//! `external_annotations` phases placed on the trace, for the page to draw.
//!
//! A real trace has up to millions of steps; the page needs about one point
//! per pixel. The steps are cut into equal buckets and each bucket keeps its
//! lowest and its highest point, in trace order, so a one-event spike
//! survives and the peak is kept exactly.

use oomscope_report::{CurvePoint, PhaseSpan, CURVE_MAX_POINTS};

use crate::model::Snapshot;
use crate::timeline::Timeline;

/// Phases listed at most (a training loop can open one per step).
const PHASES_KEPT: usize = 500;

/// `reserved_before[i]`: reserved bytes before trace event `i` (one more
/// entry than the trace: the last is the end state).
pub fn active_memory_curve(tl: &Timeline, reserved_before: &[u64]) -> Vec<CurvePoint> {
    let reserved_after = |event: u32| -> u64 {
        let i = event as usize + 1;
        reserved_before
            .get(i)
            .or(reserved_before.last())
            .copied()
            .unwrap_or(0)
    };
    let mut points = Vec::with_capacity(CURVE_MAX_POINTS.min(tl.steps.len() + 1));
    points.push(CurvePoint {
        event_index: 0,
        allocated_bytes: tl.initial_bytes,
        reserved_bytes: reserved_before.first().copied().unwrap_or(0),
    });
    // Two points per bucket; one slot for the initial point, one for the last.
    let buckets = (CURVE_MAX_POINTS - 2) / 2;
    let per_bucket = tl.steps.len().div_ceil(buckets).max(1);
    for bucket in tl.steps.chunks(per_bucket) {
        let low = bucket
            .iter()
            .enumerate()
            .min_by_key(|(_, &(_, b))| b)
            .map(|(i, _)| i);
        // max_by_key returns the last maximum; the first one is the peak event.
        let high = bucket
            .iter()
            .enumerate()
            .rev()
            .max_by_key(|(_, &(_, b))| b)
            .map(|(i, _)| i);
        let (Some(low), Some(high)) = (low, high) else {
            continue;
        };
        let mut keep = [low, high];
        keep.sort_unstable();
        for (n, &i) in keep.iter().enumerate() {
            if n == 1 && keep[0] == keep[1] {
                break;
            }
            let (event, bytes) = bucket[i];
            points.push(CurvePoint {
                event_index: u64::from(event),
                allocated_bytes: bytes,
                reserved_bytes: reserved_after(event),
            });
        }
    }
    // The end state, so the curve ends where the trace does.
    if let Some(&(event, bytes)) = tl.steps.last() {
        if points
            .last()
            .is_none_or(|p| p.event_index != u64::from(event))
        {
            points.push(CurvePoint {
                event_index: u64::from(event),
                allocated_bytes: bytes,
                reserved_bytes: reserved_after(event),
            });
        }
    }
    points
}

/// Each START..END pair of `external_annotations` on this device, placed at
/// the first trace event at or after its time. Annotations or traces without
/// times give nothing (there is nothing to place them by).
pub fn phases(snap: &Snapshot, device: u32) -> Vec<PhaseSpan> {
    let times: Vec<i64> = snap
        .trace(device)
        .map(|e| e.time_us().unwrap_or(i64::MIN))
        .collect();
    if times.is_empty() || !times.is_sorted() || times[0] == i64::MIN {
        return Vec::new();
    }
    let at = |t: i64| times.partition_point(|&x| x < t) as u64;
    let mut spans: Vec<PhaseSpan> = Vec::new();
    // Open phases: (name, index into spans).
    let mut open: Vec<(u32, usize)> = Vec::new();
    for a in snap.annotations.iter().filter(|a| a.device == device) {
        let Some(time) = a.time_us else { continue };
        match snap.strings.get(a.stage) {
            "START" if spans.len() < PHASES_KEPT => {
                spans.push(PhaseSpan {
                    name: snap.strings.get(a.name).to_string(),
                    start_event_index: at(time),
                    end_event_index: None,
                });
                open.push((a.name, spans.len() - 1));
            }
            "END" => {
                if let Some(i) = open.iter().rposition(|&(n, _)| n == a.name) {
                    let (_, span) = open.remove(i);
                    spans[span].end_event_index = Some(at(time));
                }
            }
            _ => {}
        }
    }
    spans
}
