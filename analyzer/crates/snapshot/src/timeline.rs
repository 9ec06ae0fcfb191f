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

use crate::curve::Shrink;
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
    /// Allocs and frees in the trace: the timeline's steps.
    pub step_count: usize,
    /// The steps `(trace index, bytes after it)` shrunk to a picture's worth
    /// ([`Shrink`]), in trace order. The whole list (16 bytes a step, five
    /// million on a 1 GB snapshot) is never held: the report keeps only
    /// this.
    pub curve: Vec<(u32, u64)>,
    /// The first `oom` entry: its trace index and the bytes live just
    /// before it.
    pub first_oom: Option<(u32, u64)>,
}

/// Bytes as `u64`: the walk adds and subtracts in `i128`, so it is the
/// sum of the live sizes whatever the order (only a sum beyond `u64`, which
/// no device holds, is cut at `u64::MAX`).
fn bytes(b: i128) -> u64 {
    u64::try_from(b.max(0)).unwrap_or(u64::MAX)
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
    // the old one is never returned. Every alloc is an element and a step;
    // every free is a step (the `free_requested` of a merged pair takes
    // the place of its `free_completed`) and at most one element.
    let (allocs, frees) = snap.trace(device).fold((0, 0), |(a, f), e| {
        (
            a + (e.action == alloc) as usize,
            f + (e.action == free) as usize,
        )
    });
    let step_count = allocs + frees;
    // Elements live from the start that the snapshot's segments add.
    let from_segments: usize = snap
        .segments
        .iter()
        .filter(|s| s.device == device)
        .map(|seg| match kind {
            TimelineKind::CachedSegments => 1,
            TimelineKind::ActiveMemory => snap
                .segment_blocks(seg)
                .iter()
                .filter(|b| b.state == BlockState::ActiveAllocated)
                .count(),
        })
        .sum();
    // Exactly what the allocs and the segments add, so a 1 GB snapshot's
    // 64 MB of elements is not doubled by the few pushed past it (which
    // held 127 MB, and 190 MB while it moved). A free without an alloc
    // (a trace that starts mid-run) is one element more: those grow the
    // list by an eighth at a time.
    let mut elements: Vec<Element> = Vec::with_capacity(allocs + from_segments);
    let push = |elements: &mut Vec<Element>, el: Element| {
        if elements.len() == elements.capacity() {
            elements.reserve_exact((elements.capacity() / 8).max(1024));
        }
        elements.push(el);
    };
    let mut addr_to_alloc: FxHashMap<u64, usize> = FxHashMap::default();
    // The bytes live after each step, less the initial bytes (known only
    // once the whole trace is read: a free without an alloc was live from
    // the start). Each step goes to the curve as it is made, and the peak
    // is followed, so no list of steps or actions is kept.
    let mut delta: i128 = 0;
    let mut shrink: Shrink<i128> = Shrink::new(step_count);
    // The highest delta after a step (the first of equals) and its trace index.
    let mut best: Option<(i128, u32)> = None;
    let mut first_oom: Option<(u32, i128)> = None;
    let mut first_step: Option<u32> = None;
    let mut i = 0usize;
    while let Some(e) = trace.next() {
        let at = i as u32;
        let mut action = e.action;
        if action == Action::Oom && first_oom.is_none() {
            first_oom = Some((at, delta));
        }
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
        let change = if action == alloc {
            push(
                &mut elements,
                Element {
                    addr: e.addr,
                    size: e.size,
                    alloc_event: Some(at),
                    free_event: None,
                    stack: e.stack,
                },
            );
            addr_to_alloc.insert(e.addr, elements.len() - 1);
            Some(i128::from(e.size))
        } else if action == free {
            match addr_to_alloc.remove(&e.addr) {
                Some(el) => {
                    elements[el].free_event = Some(at);
                    Some(-i128::from(elements[el].size))
                }
                None => {
                    // Live from the start: counted in the initial bytes.
                    push(
                        &mut elements,
                        Element {
                            addr: e.addr,
                            size: e.size,
                            alloc_event: None,
                            free_event: Some(at),
                            stack: e.stack,
                        },
                    );
                    Some(-i128::from(e.size))
                }
            }
        } else {
            None
        };
        if let Some(change) = change {
            delta += change;
            first_step.get_or_insert(at);
            shrink.push((at, delta));
            if best.is_none_or(|(b, _)| delta > b) {
                best = Some((delta, at));
            }
        }
        i += 1;
    }
    for seg in snap.segments.iter().filter(|s| s.device == device) {
        match kind {
            TimelineKind::CachedSegments => {
                if !addr_to_alloc.contains_key(&seg.address) {
                    push(
                        &mut elements,
                        Element {
                            addr: seg.address,
                            size: seg.total_size,
                            alloc_event: None,
                            free_event: None,
                            stack: 0,
                        },
                    );
                }
            }
            TimelineKind::ActiveMemory => {
                for b in snap.segment_blocks(seg) {
                    if b.state == BlockState::ActiveAllocated
                        && !addr_to_alloc.contains_key(&b.addr)
                    {
                        push(
                            &mut elements,
                            Element {
                                addr: b.addr,
                                size: b.requested_size,
                                alloc_event: None,
                                free_event: None,
                                stack: b.stack,
                            },
                        );
                    }
                }
            }
        }
    }
    drop(addr_to_alloc);

    // Live from the start: every element without an alloc.
    let initial: i128 = elements
        .iter()
        .filter(|e| e.alloc_event.is_none())
        .map(|e| i128::from(e.size))
        .sum();
    let initial_bytes = bytes(initial);
    let (peak_bytes, peak_event, peak_is_initial) = match best {
        None => (initial_bytes, None, false),
        // The first action's index: where the first step is.
        Some((b, _)) if b < 0 => (initial_bytes, first_step, true),
        Some((b, at)) => (bytes(initial + b), Some(at), false),
    };
    // Live at the peak: live from the start (no alloc) or allocated by
    // then, and not freed by then. Before any action, those without an alloc.
    let live_at_peak = match (peak_event, peak_is_initial) {
        (Some(p), false) => (0..elements.len())
            .filter(|&e| {
                let el = &elements[e];
                el.alloc_event.is_none_or(|a| a <= p) && el.free_event.is_none_or(|f| f > p)
            })
            .collect(),
        _ => (0..elements.len())
            .filter(|&e| elements[e].alloc_event.is_none())
            .collect(),
    };
    let curve = shrink
        .finish()
        .into_iter()
        .map(|(at, d)| (at, bytes(initial + d)))
        .collect();
    Timeline {
        elements,
        initial_bytes,
        final_bytes: bytes(initial + delta),
        peak_bytes,
        peak_event,
        peak_is_initial,
        live_at_peak,
        step_count,
        curve,
        first_oom: first_oom.map(|(at, d)| (at, bytes(initial + d))),
    }
}
