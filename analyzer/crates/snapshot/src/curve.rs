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

/// The report's curve from the timeline's shrunk steps; `reserved_before(i)`:
/// reserved bytes before trace event `i` (at or past the trace's end, the
/// end state).
pub fn active_memory_curve(
    tl: &Timeline,
    reserved_before: &dyn Fn(usize) -> u64,
) -> Vec<CurvePoint> {
    let mut points = Vec::with_capacity(tl.curve.len() + 1);
    points.push(CurvePoint {
        event_index: 0,
        allocated_bytes: tl.initial_bytes,
        reserved_bytes: reserved_before(0),
    });
    points.extend(tl.curve.iter().map(|&(event, bytes)| CurvePoint {
        event_index: u64::from(event),
        allocated_bytes: bytes,
        reserved_bytes: reserved_before(event as usize + 1),
    }));
    points
}

/// The steps `(trace index, bytes after it)` of a curve, fed in trace order,
/// shrunk to what a picture needs: the steps are cut into equal buckets and
/// each keeps its lowest and its highest step (the first of equals), in
/// trace order, then the last step. Fed one step at a time, it holds only
/// the points it keeps, so a replay ([`crate::whatif`]) draws its curve
/// without listing its millions of steps.
pub struct Shrink<T = u64> {
    per_bucket: usize,
    /// Steps fed so far into the open bucket.
    in_bucket: usize,
    /// The open bucket's lowest and highest step, with their order in it.
    low: (usize, (u32, T)),
    high: (usize, (u32, T)),
    last: Option<(u32, T)>,
    kept: Vec<(u32, T)>,
}

/// A step's bytes: `u64`, or (the timeline's walk) `i128` relative to the
/// initial bytes, which buckets the same (a constant added to every step
/// changes no lowest or highest).
impl<T: Copy + Ord + Default> Shrink<T> {
    /// For a curve of `steps` steps in all; it keeps at most
    /// [`CURVE_MAX_POINTS`] - 1 of them (the curve's initial point is the
    /// caller's).
    pub fn new(steps: usize) -> Self {
        // Two points per bucket; one slot for the initial point, one for the last.
        let buckets = (CURVE_MAX_POINTS - 2) / 2;
        Shrink {
            per_bucket: steps.div_ceil(buckets).max(1),
            in_bucket: 0,
            low: (0, (0, T::default())),
            high: (0, (0, T::default())),
            last: None,
            kept: Vec::with_capacity(CURVE_MAX_POINTS.min(steps)),
        }
    }

    pub fn push(&mut self, step: (u32, T)) {
        let n = self.in_bucket;
        if n == 0 || step.1 < self.low.1 .1 {
            self.low = (n, step);
        }
        if n == 0 || step.1 > self.high.1 .1 {
            self.high = (n, step);
        }
        self.in_bucket += 1;
        self.last = Some(step);
        if self.in_bucket == self.per_bucket {
            self.close_bucket();
        }
    }

    fn close_bucket(&mut self) {
        if self.in_bucket == 0 {
            return;
        }
        let (first, second) = if self.low.0 <= self.high.0 {
            (self.low, self.high)
        } else {
            (self.high, self.low)
        };
        self.kept.push(first.1);
        if second.0 != first.0 {
            self.kept.push(second.1);
        }
        self.in_bucket = 0;
    }

    /// The kept steps, in trace order, ending with the last step fed.
    pub fn finish(mut self) -> Vec<(u32, T)> {
        self.close_bucket();
        // The end state, so the curve ends where the trace does.
        if let Some(last) = self.last {
            if self.kept.last().is_none_or(|p| p.0 != last.0) {
                self.kept.push(last);
            }
        }
        self.kept
    }
}

/// Each START..END pair of `external_annotations` on this device, placed at
/// the first trace event at or after its time. Annotations or traces without
/// times give nothing (there is nothing to place them by).
pub fn phases(snap: &Snapshot, device: u32) -> Vec<PhaseSpan> {
    // The times are read in place (a list of them was 8 bytes per trace
    // entry): checked sorted once, then searched by index.
    let time = |e: &crate::model::TraceEvent| e.time_us().unwrap_or(i64::MIN);
    let len = snap.trace_len(device);
    let first = snap.trace_event(device, 0).map(time);
    if first.is_none_or(|t| t == i64::MIN) || !snap.trace(device).map(time).is_sorted() {
        return Vec::new();
    }
    let at = |t: i64| {
        // `partition_point` over the trace: the first entry at or after `t`.
        let (mut lo, mut hi) = (0, len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if snap.trace_event(device, mid).map_or(i64::MIN, time) < t {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo as u64
    };
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
