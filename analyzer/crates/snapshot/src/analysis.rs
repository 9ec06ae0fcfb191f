//! One device of a snapshot → the report's [`MemorySnapshot`]: the Active
//! Memory Timeline, the state at snapshot time, where the peak's bytes come
//! from, and the findings the diagnosis reads (OOM, fragmentation,
//! accumulation, lingering backward buffers, spike).

use std::collections::HashMap;

use oomscope_report::{
    Accumulation, LingeringBuffers, LiveAllocation, MemorySnapshot, SnapshotFormat, SnapshotLine,
    SnapshotOom, Spike, StackSample,
};

use crate::curve;
use crate::frames;
use crate::model::{Action, Generation, Snapshot};
use crate::segsum::segment_state;
use crate::timeline::{timeline, Element, Timeline, TimelineKind};

/// Largest allocations listed at the peak and at an OOM.
const LIVE_LISTED: usize = 20;
/// Stacks kept for the stack view (largest first).
const STACKS_KEPT: usize = 200;
/// Frames kept per stack.
const FRAMES_PER_STACK: usize = 48;
const LINES_LISTED: usize = 20;
/// Never-freed allocations of one line must come in at least this many
/// separate bursts to count as accumulating across steps.
const MIN_ACCUMULATION_STEPS: u64 = 3;

/// Per stack, what the findings ask of it again and again: its line (first
/// user frame) and whether it is in backward. Computed once per stack.
struct StackFacts {
    line: Vec<String>,
    backward: Vec<bool>,
}

impl StackFacts {
    fn new(snap: &Snapshot) -> Self {
        let n = snap.stacks.len() as u32;
        StackFacts {
            line: (0..n)
                .map(|s| {
                    frames::first_user(snap, s)
                        .map(|f| frames::label(snap, f))
                        .unwrap_or_default()
                })
                .collect(),
            backward: (0..n).map(|s| frames::in_backward(snap, s)).collect(),
        }
    }

    fn line(&self, el: &Element) -> &str {
        self.line.get(el.stack as usize).map_or("", |s| s)
    }

    fn backward(&self, el: &Element) -> bool {
        self.backward
            .get(el.stack as usize)
            .copied()
            .unwrap_or(false)
    }
}

/// Every device that has trace entries or segments (snapshots list a trace
/// for every visible device, most of them empty).
pub fn analyze_devices(input: &str, snap: &Snapshot) -> Vec<MemorySnapshot> {
    let facts = StackFacts::new(snap);
    (0..snap.device_count())
        .filter(|&d| snap.trace(d).next().is_some() || snap.segments.iter().any(|s| s.device == d))
        .map(|d| analyze_device(input, snap, &facts, d))
        .collect()
}

fn analyze_device(input: &str, snap: &Snapshot, facts: &StackFacts, device: u32) -> MemorySnapshot {
    let tl = timeline(snap, device, TimelineKind::ActiveMemory);
    let segments_tl = timeline(snap, device, TimelineKind::CachedSegments);
    let state = segment_state(snap, device);
    // Reserved bytes are wanted before the first entry, after each point
    // of the curve, and at the OOM.
    let wanted: Vec<usize> = std::iter::once(0)
        .chain(tl.curve.iter().map(|&(at, _)| at as usize + 1))
        .chain(tl.first_oom.map(|(at, _)| at as usize))
        .collect();
    let reserved = ReservedTimeline::new(snap, device, state.reserved_bytes, wanted);
    let trace_len = snap.trace_len(device) as u64;

    let mut live = tl.live_at_peak.clone();
    sort_largest_first(&tl, &mut live);
    let live_at_peak = live
        .iter()
        .take(LIVE_LISTED)
        .map(|&e| live_allocation(snap, &tl.elements[e]))
        .collect();

    let mut m = MemorySnapshot {
        input: input.to_string(),
        device,
        peak_allocated_bytes: tl.peak_bytes,
        peak_event_index: tl.peak_event.map(u64::from),
        initial_allocated_bytes: tl.initial_bytes,
        final_allocated_bytes: tl.final_bytes,
        live_at_peak,
        reserved_bytes: state.reserved_bytes,
        active_allocated_bytes: state.active_allocated_bytes,
        inactive_bytes: state.inactive_bytes,
        active_pending_free_bytes: state.active_pending_free_bytes,
        oom: oom(snap, device, &tl, &reserved),
        stacks_at_peak: stacks_at_peak(snap, &tl, &live),
        format: match snap.generation {
            Some(Generation::BlocksWithHistory) => SnapshotFormat::BlocksWithHistory,
            Some(Generation::BareSegmentList) => SnapshotFormat::BareSegmentList,
            _ => SnapshotFormat::SegmentsAndTraces,
        },
        trace_events: trace_len,
        allocated_requested_bytes: state.allocated_requested_bytes,
        free_internal_bytes: state.free_internal_bytes,
        free_external_bytes: state.free_external_bytes,
        segments: state.segments,
        expandable_segments: state.expandable_segments,
        private_pool_bytes: state.private_pool_bytes,
        expandable_segments_would_return_bytes: state.stranded_inactive_bytes,
        reserved_peak_bytes: reserved.peak,
        memoryviz_segment_peak_bytes: segments_tl.peak_bytes,
        top_lines_at_peak: top_lines(facts, &tl, &live),
        accumulations: accumulations(facts, &tl),
        lingering_backward: lingering_backward(facts, &tl),
        spike: spike(snap, facts, device, &tl, &live),
        annotations: annotation_names(snap, device),
        active_memory_curve: curve::active_memory_curve(&tl, &|i| reserved.before(i)),
        phases: curve::phases(snap, device),
        what_if: Vec::new(),
        what_if_curves: Vec::new(),
    };
    (m.what_if, m.what_if_curves) = crate::whatif::what_ifs(snap, &tl, &m);
    m
}

fn sort_largest_first(tl: &Timeline, elements: &mut [usize]) {
    elements.sort_by(|&a, &b| {
        tl.elements[b]
            .size
            .cmp(&tl.elements[a].size)
            .then(a.cmp(&b))
    });
}

fn live_allocation(snap: &Snapshot, el: &Element) -> LiveAllocation {
    LiveAllocation {
        size_bytes: el.size,
        address: el.addr,
        alloc_event_index: el.alloc_event.map(u64::from),
        frame: frames::first_python(snap, el.stack)
            .map(|f| frames::label(snap, f))
            .unwrap_or_default(),
    }
}

fn stacks_at_peak(snap: &Snapshot, tl: &Timeline, live: &[usize]) -> Vec<StackSample> {
    let mut by_stack: HashMap<u32, (u64, u64)> = HashMap::new();
    for &e in live {
        let el = &tl.elements[e];
        let slot = by_stack.entry(el.stack).or_default();
        slot.0 = slot.0.saturating_add(el.size);
        slot.1 += 1;
    }
    // Stacks that differ only in folded frames become one sample.
    let mut merged: HashMap<Vec<oomscope_report::Frame>, (u64, u64)> = HashMap::new();
    for (stack, (bytes, count)) in by_stack {
        let slot = merged
            .entry(frames::report_stack(snap, stack, FRAMES_PER_STACK))
            .or_default();
        slot.0 = slot.0.saturating_add(bytes);
        slot.1 += count;
    }
    let mut samples: Vec<StackSample> = merged
        .into_iter()
        .map(|(frames, (bytes, count))| StackSample {
            frames,
            bytes,
            count,
        })
        .collect();
    // A total order: ties in bytes would otherwise keep the hash map's
    // (random) order, and which tied stacks survive the cut changed from run
    // to run on the same file.
    samples.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| a.frames.len().cmp(&b.frames.len()))
            .then_with(|| b.count.cmp(&a.count))
            .then_with(|| frame_key(a).cmp(frame_key(b)))
    });
    samples.truncate(STACKS_KEPT);
    samples
}

/// A stack's frames as comparable keys (file, line, function), borrowed.
fn frame_key(s: &StackSample) -> impl Iterator<Item = (&str, u32, &str)> {
    s.frames
        .iter()
        .map(|f| (f.file.as_str(), f.line, f.function.as_str()))
}

fn group_by_line<'a>(
    facts: &StackFacts,
    elements: impl Iterator<Item = &'a Element>,
) -> Vec<SnapshotLine> {
    let mut by_line: HashMap<String, (u64, u64)> = HashMap::new();
    for el in elements {
        let slot = by_line.entry(facts.line(el).to_string()).or_default();
        slot.0 = slot.0.saturating_add(el.size);
        slot.1 += 1;
    }
    let mut lines: Vec<SnapshotLine> = by_line
        .into_iter()
        .map(|(frame, (bytes, count))| SnapshotLine {
            frame: if frame.is_empty() {
                oomscope_report::NO_STACK_LINE.into()
            } else {
                frame
            },
            bytes,
            count,
        })
        .collect();
    lines.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.frame.cmp(&b.frame)));
    lines.truncate(LINES_LISTED);
    lines
}

fn top_lines(facts: &StackFacts, tl: &Timeline, live: &[usize]) -> Vec<SnapshotLine> {
    group_by_line(facts, live.iter().map(|&e| &tl.elements[e]))
}

/// Reserved bytes over the trace, walked back from the snapshot's segments
/// (so a trace that starts mid-run is still right), counting maps and unmaps.
struct ReservedTimeline {
    /// `(i, reserved bytes before trace event i)` for the indices asked
    /// for (past the last event: the end state), sorted. Only those are
    /// kept: the whole list was 8 bytes per trace entry.
    before: Vec<(usize, u64)>,
    /// Trace entries.
    len: usize,
    peak: u64,
}

impl ReservedTimeline {
    fn new(snap: &Snapshot, device: u32, final_reserved: u64, mut wanted: Vec<usize>) -> Self {
        let len = snap.trace_len(device);
        for w in &mut wanted {
            *w = (*w).min(len);
        }
        wanted.sort_unstable();
        wanted.dedup();
        let mut before = Vec::with_capacity(wanted.len());
        // Walked backwards through the ids, taking the wanted indices as
        // they pass (the largest first).
        let mut next = wanted.iter().rev().peekable();
        let mut r = final_reserved;
        if next.next_if_eq(&&len).is_some() {
            before.push((len, r));
        }
        let mut peak = r;
        for (i, e) in snap
            .trace(device)
            .rev()
            .enumerate()
            .map(|(k, e)| (len - 1 - k, e))
        {
            r = match e.action {
                Action::SegmentAlloc | Action::SegmentMap => r.saturating_sub(e.size),
                Action::SegmentFree | Action::SegmentUnmap => r.saturating_add(e.size),
                _ => r,
            };
            if next.next_if_eq(&&i).is_some() {
                before.push((i, r));
            }
            peak = peak.max(r);
        }
        before.reverse();
        ReservedTimeline { before, len, peak }
    }

    /// Reserved bytes before trace event `i` (at or past the end, the end
    /// state), for an `i` that was asked for; 0 for any other.
    fn before(&self, i: usize) -> u64 {
        self.before
            .binary_search_by_key(&i.min(self.len), |&(n, _)| n)
            .map_or(0, |k| self.before[k].1)
    }
}

fn oom(
    snap: &Snapshot,
    device: u32,
    tl: &Timeline,
    reserved: &ReservedTimeline,
) -> Option<SnapshotOom> {
    let (at, allocated) = tl.first_oom?;
    let index = at as usize;
    let event = snap.trace_event(device, index)?;
    let mut live: Vec<usize> = (0..tl.elements.len())
        .filter(|&e| {
            let el = &tl.elements[e];
            el.alloc_event.is_none_or(|a| a < at) && el.free_event.is_none_or(|f| f > at)
        })
        .collect();
    sort_largest_first(tl, &mut live);
    Some(SnapshotOom {
        event_index: index as u64,
        requested_bytes: event.size,
        device_free_bytes: event.device_free(),
        allocated_bytes: allocated,
        reserved_bytes: reserved.before(index),
        largest_live: live
            .iter()
            .take(LIVE_LISTED)
            .map(|&e| live_allocation(snap, &tl.elements[e]))
            .collect(),
    })
}

/// Lines whose allocations are never freed and arrive in separate steps:
/// e.g. a loss kept on the device every iteration. When the trace has a
/// backward pass, a step boundary is a backward-pass allocation between two
/// of the line's allocations (so forward activations of successive layers,
/// freed by the backward, do not count); without one (inference), any free
/// between them. `steps` is the number of such separated groups; per-step
/// figures divide by it.
fn accumulations(facts: &StackFacts, tl: &Timeline) -> Vec<Accumulation> {
    let backward: Vec<u32> = tl
        .elements
        .iter()
        .filter(|e| facts.backward(e))
        .filter_map(|e| e.alloc_event)
        .collect();
    let mut boundaries: Vec<u32> = if backward.is_empty() {
        tl.elements.iter().filter_map(|e| e.free_event).collect()
    } else {
        backward
    };
    boundaries.sort_unstable();
    let boundary_between = |a: u32, b: u32| {
        let i = boundaries.partition_point(|&f| f <= a);
        boundaries.get(i).is_some_and(|&f| f < b)
    };
    let mut by_line: HashMap<String, Vec<&Element>> = HashMap::new();
    for el in tl
        .elements
        .iter()
        .filter(|e| e.alloc_event.is_some() && e.free_event.is_none())
    {
        let line = facts.line(el);
        if !line.is_empty() {
            by_line.entry(line.to_string()).or_default().push(el);
        }
    }
    let mut out: Vec<Accumulation> = by_line
        .into_iter()
        .filter_map(|(frame, els)| {
            let mut steps = 1u64;
            for w in els.windows(2) {
                if boundary_between(w[0].alloc_event.unwrap_or(0), w[1].alloc_event.unwrap_or(0)) {
                    steps += 1;
                }
            }
            if steps < MIN_ACCUMULATION_STEPS {
                return None;
            }
            let count = els.len() as u64;
            let bytes = els.iter().map(|e| e.size).fold(0u64, u64::saturating_add);
            Some(Accumulation {
                frame,
                count,
                bytes,
                steps,
                count_per_step: count as f64 / steps as f64,
                bytes_per_step: bytes / steps,
                first_event_index: els.first().and_then(|e| e.alloc_event).unwrap_or(0) as u64,
                last_event_index: els.last().and_then(|e| e.alloc_event).unwrap_or(0) as u64,
            })
        })
        .collect();
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.frame.cmp(&b.frame)));
    out.truncate(5);
    out
}

fn lingering_backward(facts: &StackFacts, tl: &Timeline) -> Option<LingeringBuffers> {
    let lingering: Vec<&Element> = tl
        .elements
        .iter()
        .filter(|e| e.alloc_event.is_some() && e.free_event.is_none() && facts.backward(e))
        .collect();
    if lingering.is_empty() {
        return None;
    }
    Some(LingeringBuffers {
        count: lingering.len() as u64,
        bytes: lingering
            .iter()
            .map(|e| e.size)
            .fold(0u64, u64::saturating_add),
        lines: group_by_line(facts, lingering.iter().copied()),
    })
}

/// The largest allocation live at the peak that is freed before the end,
/// when it alone is at least a quarter of how far the peak rises above the
/// final state, and that rise is at least a tenth of the peak.
fn spike(
    snap: &Snapshot,
    facts: &StackFacts,
    device: u32,
    tl: &Timeline,
    live_sorted: &[usize],
) -> Option<Spike> {
    let rise = tl.peak_bytes.saturating_sub(tl.final_bytes);
    if rise == 0 || rise < tl.peak_bytes / 10 {
        return None;
    }
    let el = live_sorted
        .iter()
        .map(|&e| &tl.elements[e])
        .find(|e| e.free_event.is_some() && e.alloc_event.is_some())?;
    if el.size.saturating_mul(4) < rise {
        return None;
    }
    let alloc = el.alloc_event?;
    let time = snap
        .trace(device)
        .nth(alloc as usize)
        .and_then(|e| e.time_us());
    Some(Spike {
        size_bytes: el.size,
        alloc_event_index: alloc as u64,
        free_event_index: el.free_event.map(u64::from),
        frame: facts.line(el).to_string(),
        final_allocated_bytes: tl.final_bytes,
        phase: time
            .map(|t| open_phase(snap, device, t))
            .unwrap_or_default(),
    })
}

/// The innermost `external_annotations` phase open at `time_us`.
fn open_phase(snap: &Snapshot, device: u32, time_us: i64) -> String {
    let mut open: Vec<u32> = Vec::new();
    for a in snap.annotations.iter().filter(|a| a.device == device) {
        if a.time_us.is_none_or(|t| t > time_us) {
            continue;
        }
        match snap.strings.get(a.stage) {
            "START" => open.push(a.name),
            "END" => {
                if let Some(i) = open.iter().rposition(|&n| n == a.name) {
                    open.remove(i);
                }
            }
            _ => {}
        }
    }
    open.last()
        .map(|&n| snap.strings.get(n).to_string())
        .unwrap_or_default()
}

fn annotation_names(snap: &Snapshot, device: u32) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for a in snap.annotations.iter().filter(|a| a.device == device) {
        let n = snap.strings.get(a.name);
        if names.len() < 200 && !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    }
    names
}
