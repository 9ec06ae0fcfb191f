//! The Active Memory Timeline and the Cached Segment Timeline, exactly as
//! MemoryViz.js computes them (`annotate_snapshot` + `process_alloc_data`,
//! pytorch/pytorch `torch/utils/viz/MemoryViz.js`):
//!
//! - a `free_requested` immediately followed by the `free_completed` of the
//!   same address is one free; a lone `free_requested` changes nothing and
//!   its later `free_completed` is the free;
//! - a free whose address has no alloc earlier in the trace is an allocation
//!   live from the start; so is every `active_allocated` block of the
//!   snapshot (every segment, for the segment timeline) whose address has no
//!   alloc left unfreed in the trace;
//! - with no alloc or free at all, the picture is one flat step holding the
//!   initial allocations.
//!
//! One difference, on purpose: MemoryViz's y-axis maximum only looks at the
//! memory after each action, so it misses a peak that lies in the initial
//! state; our peak includes it (the peak event is then the first action).

use crate::model::{Action, BlockState, Snapshot};
use crate::value::{FxHashMap, StackId};

/// Which of MemoryViz's two timelines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineKind {
    /// Tensors: `alloc` / `free_requested` / `free_completed`, snapshot blocks.
    ActiveMemory,
    /// Segments: `segment_alloc` / `segment_free`, snapshot segments
    /// (MemoryViz ignores `segment_map`/`segment_unmap` here).
    CachedSegments,
}

/// One allocation drawn on the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    pub addr: u64,
    pub size: u64,
    /// Index in the device's trace of its alloc; `None` when live from the start.
    pub alloc_event: Option<u32>,
    /// Index in the device's trace of its free (the `free_requested` of a
    /// merged pair); `None` when live at the end.
    pub free_event: Option<u32>,
    pub stack: StackId,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Timeline {
    pub elements: Vec<Element>,
    /// Bytes live before the first action.
    pub initial_bytes: u64,
    pub final_bytes: u64,
    pub peak_bytes: u64,
    /// Trace index of the event that reaches the peak: after an alloc, or the
    /// first action when the peak is the initial state. `None` when the trace
    /// has no alloc or free.
    pub peak_event: Option<u32>,
    /// True when the peak is the state before the first action.
    pub peak_is_initial: bool,
    /// Elements live at the peak (indices into `elements`).
    pub live_at_peak: Vec<usize>,
    /// `(trace index, bytes after it)` for every alloc and free, in order.
    pub steps: Vec<(u32, u64)>,
}

pub fn timeline(snap: &Snapshot, device: u32, kind: TimelineKind) -> Timeline {
    let (alloc, free) = match kind {
        TimelineKind::ActiveMemory => (Action::Alloc, Action::FreeCompleted),
        TimelineKind::CachedSegments => (Action::SegmentAlloc, Action::SegmentFree),
    };
    // Walked with a look-ahead of one, not collected: a list of five
    // million references was the analysis's second-largest allocation.
    let mut trace = snap.trace(device).peekable();
    // Sized by a first count (a few milliseconds), not grown by doubling:
    // in wasm a growing `Vec` holds its old and new buffers at once and
    // the old one is never returned. Every alloc is an element and an
    // action; a free is at most one of each.
    let (allocs, frees) = snap.trace(device).fold((0, 0), |(a, f), e| {
        (a + (e.action == alloc) as usize, f + (e.action == free) as usize)
    });
    let mut elements: Vec<Element> = Vec::with_capacity(allocs);
    let mut initially: Vec<usize> = Vec::new();
    // (element, trace index) in order; 8 bytes each (elements and trace
    // indices are u32: the trace's ids are).
    let mut actions: Vec<(u32, u32)> = Vec::with_capacity(allocs + frees);
    let mut addr_to_alloc: FxHashMap<u64, usize> = FxHashMap::default();
    let mut i = 0usize;
    while let Some(e) = trace.next() {
        let at = i as u32;
        let mut action = e.action;
        if kind == TimelineKind::ActiveMemory && action == Action::FreeRequested {
            // Merged with an immediately following free_completed of the same
            // address; otherwise a lone request that changes nothing.
            match trace.peek() {
                Some(next) if next.action == Action::FreeCompleted && next.addr == e.addr => {
                    action = Action::FreeCompleted;
                    trace.next();
                    i += 1;
                }
                _ => {
                    i += 1;
                    continue;
                }
            }
        }
        if action == alloc {
            elements.push(Element {
                addr: e.addr,
                size: e.size,
                alloc_event: Some(at),
                free_event: None,
                stack: e.stack,
            });
            addr_to_alloc.insert(e.addr, elements.len() - 1);
            actions.push(((elements.len() - 1) as u32, at));
        } else if action == free {
            match addr_to_alloc.remove(&e.addr) {
                Some(el) => {
                    elements[el].free_event = Some(at);
                    actions.push((el as u32, at));
                }
                None => {
                    elements.push(Element {
                        addr: e.addr,
                        size: e.size,
                        alloc_event: None,
                        free_event: Some(at),
                        stack: e.stack,
                    });
                    initially.push(elements.len() - 1);
                    actions.push(((elements.len() - 1) as u32, at));
                }
            }
        }
        i += 1;
    }
    for seg in snap.segments.iter().filter(|s| s.device == device) {
        match kind {
            TimelineKind::CachedSegments => {
                if !addr_to_alloc.contains_key(&seg.address) {
                    elements.push(Element {
                        addr: seg.address,
                        size: seg.total_size,
                        alloc_event: None,
                        free_event: None,
                        stack: 0,
                    });
                    initially.push(elements.len() - 1);
                }
            }
            TimelineKind::ActiveMemory => {
                for b in snap.segment_blocks(seg) {
                    if b.state == BlockState::ActiveAllocated
                        && !addr_to_alloc.contains_key(&b.addr)
                    {
                        elements.push(Element {
                            addr: b.addr,
                            size: b.requested_size,
                            alloc_event: None,
                            free_event: None,
                            stack: b.stack,
                        });
                        initially.push(elements.len() - 1);
                    }
                }
            }
        }
    }

    let initial_bytes: u64 = initially
        .iter()
        .map(|&e| elements[e].size)
        .fold(0, u64::saturating_add);
    let mut live = vec![false; elements.len()];
    for &e in &initially {
        live[e] = true;
    }
    let mut total = initial_bytes;
    let mut best_after: Option<(u64, usize)> = None;
    let mut steps = Vec::with_capacity(actions.len());
    for (n, &(el, at)) in actions.iter().enumerate() {
        let el = el as usize;
        let size = elements[el].size;
        if live[el] {
            live[el] = false;
            total = total.saturating_sub(size);
        } else {
            live[el] = true;
            total = total.saturating_add(size);
        }
        steps.push((at, total));
        if best_after.is_none_or(|(b, _)| total > b) {
            best_after = Some((total, n));
        }
    }
    let final_bytes = total;

    let (peak_bytes, peak_action, peak_is_initial) = match best_after {
        None => (initial_bytes, None, false),
        Some((b, _)) if initial_bytes > b => (initial_bytes, Some(0), true),
        Some((b, n)) => (b, Some(n), false),
    };
    let peak_event = peak_action.map(|n| actions[n].1);

    // Live set at the peak: replay up to (and including) the peak action.
    let mut live = vec![false; elements.len()];
    for &e in &initially {
        live[e] = true;
    }
    let replay = match (peak_action, peak_is_initial) {
        (Some(n), false) => n + 1,
        _ => 0,
    };
    for &(el, _) in &actions[..replay] {
        let el = el as usize;
        live[el] = !live[el];
    }
    let live_at_peak = (0..elements.len()).filter(|&e| live[e]).collect();
    Timeline {
        elements,
        initial_bytes,
        final_bytes,
        peak_bytes,
        peak_event,
        peak_is_initial,
        live_at_peak,
        steps,
    }
}
