//! What if, for a PyTorch memory snapshot (issue 25): the trace is the
//! program, so a remedy is the trace replayed with a change, from the same
//! Active Memory Timeline that gives MemoryViz's numbers ([`timeline`]).
//!
//! - **without these allocations**: every allocation whose stack holds a
//!   frame is removed and the timeline replayed (the trace with those
//!   entries really removed peaks there: `tests/whatif.rs` builds it);
//! - **expandable_segments**: reserved memory if segments grew and shrank
//!   with the allocations (no fragmentation held): each pool maps pages of
//!   its live blocks (CUDACachingAllocator: blocks rounded to 512 B, the
//!   small pool (≤ 1 MiB) in 2 MiB pages, the large pool in 20 MiB ones);
//! - **the allocation that failed, placed**: with an `oom` entry, the
//!   segment the allocator asked CUDA for (`get_allocation_size`) against
//!   what CUDA had free, after the allocator had released its cached
//!   segments: what had to be freed for it to succeed.
//!
//! [`timeline`]: crate::timeline::timeline

use oomscope_report::units::format_bytes;
use oomscope_report::whatif::{Remedy, ReplayedCurve, WhatIf};
use oomscope_report::{MemoryColor, MemorySnapshot};

use crate::curve::Shrink;
use crate::frames;
use crate::model::{Action, Snapshot};
use crate::timeline::{timeline, Element, Timeline, TimelineKind};
use crate::value::StackId;

/// `kMinBlockSize`: every block is a multiple of 512 bytes.
const MIN_BLOCK: u64 = 512;
/// `kSmallSize`: requests up to 1 MiB come from the small pool.
const SMALL_SIZE: u64 = 1 << 20;
/// `kSmallBuffer`: the small pool's segments (and expandable pages).
const SMALL_BUFFER: u64 = 2 << 20;
/// `kLargeBuffer`: large-pool segments under 10 MiB, and expandable pages.
const LARGE_BUFFER: u64 = 20 << 20;
/// `kMinLargeAlloc`: from here a segment is the request rounded to 2 MiB.
const MIN_LARGE_ALLOC: u64 = 10 << 20;
/// `kRoundLarge`.
const ROUND_LARGE: u64 = 2 << 20;

/// "Without these allocations" for the lines holding most at the peak.
const WITHOUT_LINES: usize = 3;

fn round_up(x: u64, to: u64) -> u64 {
    x.div_ceil(to).saturating_mul(to)
}

/// `round_size`: the block a request gets.
fn block_size(requested: u64) -> u64 {
    round_up(requested.max(1), MIN_BLOCK)
}

/// `get_allocation_size`: the segment the allocator asks CUDA for when no
/// cached block fits a request.
pub fn segment_size(requested: u64) -> u64 {
    let size = block_size(requested);
    if size <= SMALL_SIZE {
        SMALL_BUFFER
    } else if size < MIN_LARGE_ALLOC {
        LARGE_BUFFER
    } else {
        round_up(size, ROUND_LARGE)
    }
}

/// Calls `f(trace index, element, freed)` for each alloc and free of the
/// elements `keep` accepts, in trace order. A trace entry allocates or frees
/// at most one element, so each change is placed at its trace index (4 bytes
/// per trace entry) instead of being sorted: on a 1 GB snapshot the sorted
/// list of changes (16 to 32 bytes each, five million of them) was the
/// analysis's largest allocation and a tenth of its time. Should two changes
/// share an index (no timeline makes that), they are sorted instead.
fn for_each_change(
    tl: &Timeline,
    keep: &dyn Fn(&Element) -> bool,
    f: &mut dyn FnMut(u32, &Element, bool),
) {
    let kept = || tl.elements.iter().enumerate().filter(|(_, e)| keep(e));
    let events = kept()
        .flat_map(|(_, e)| [e.alloc_event, e.free_event])
        .flatten()
        .max()
        .map_or(0, |m| m as usize + 1);
    const EMPTY: u32 = u32::MAX;
    let placed = (tl.elements.len() < (EMPTY / 2) as usize)
        .then(|| {
            let mut slots = vec![EMPTY; events];
            for (i, e) in kept() {
                for (at, freed) in [(e.alloc_event, 0), (e.free_event, 1)] {
                    let Some(slot) = at.and_then(|at| slots.get_mut(at as usize)) else {
                        continue;
                    };
                    if *slot != EMPTY {
                        return None;
                    }
                    *slot = (i as u32) << 1 | freed;
                }
            }
            Some(slots)
        })
        .flatten();
    match placed {
        Some(slots) => {
            for (at, &code) in slots.iter().enumerate() {
                if code != EMPTY {
                    if let Some(e) = tl.elements.get((code >> 1) as usize) {
                        f(at as u32, e, code & 1 == 1);
                    }
                }
            }
        }
        None => {
            let mut changes: Vec<(u32, usize, bool)> = Vec::new();
            for (i, e) in kept() {
                if let Some(at) = e.alloc_event {
                    changes.push((at, i, false));
                }
                if let Some(at) = e.free_event {
                    changes.push((at, i, true));
                }
            }
            changes.sort_unstable_by_key(|&(at, _, _)| at);
            for (at, i, freed) in changes {
                if let Some(e) = tl.elements.get(i) {
                    f(at, e, freed);
                }
            }
        }
    }
}

fn signed(size: u64, freed: bool) -> i128 {
    if freed {
        -i128::from(size)
    } else {
        i128::from(size)
    }
}

/// The Active Memory peak with the elements `keep` says to keep: the
/// timeline's own walk (initial allocations, then each alloc and free in
/// trace order), so with every element kept it is the timeline's peak.
/// Returns (peak bytes, trace index of the event reaching it).
pub fn replay_peak(tl: &Timeline, keep: impl Fn(&Element) -> bool) -> (u64, Option<u32>) {
    let (peak, event, _) = replay(tl, &keep, None);
    (peak, event)
}

/// [`replay_peak`] with the replayed Active Memory curve, shrunk as the
/// report's curve is (`curve::Shrink`; the initial point first): with every
/// element kept it is `MemorySnapshot::active_memory_curve`'s allocated line.
pub fn replay_curve(
    tl: &Timeline,
    keep: impl Fn(&Element) -> bool,
) -> (u64, Option<u32>, Vec<(u64, u64)>) {
    let steps = tl
        .elements
        .iter()
        .filter(|e| keep(e))
        .map(|e| usize::from(e.alloc_event.is_some()) + usize::from(e.free_event.is_some()))
        .sum();
    let mut shrink = Shrink::new(steps);
    let (peak, event, initial) = replay(tl, &keep, Some(&mut shrink));
    let mut curve = vec![(0, initial)];
    curve.extend(
        shrink
            .finish()
            .into_iter()
            .map(|(at, bytes)| (u64::from(at), bytes)),
    );
    (peak, event, curve)
}

/// The walk of [`replay_peak`], feeding each step to `shrink` when given:
/// (peak, its trace index, the initial bytes).
fn replay(
    tl: &Timeline,
    keep: &dyn Fn(&Element) -> bool,
    mut shrink: Option<&mut Shrink>,
) -> (u64, Option<u32>, u64) {
    let initial = tl
        .elements
        .iter()
        .filter(|e| e.alloc_event.is_none() && keep(e))
        .fold(0u64, |acc, e| acc.saturating_add(e.size));
    let bytes = |b: i128| u64::try_from(b.max(0)).unwrap_or(u64::MAX);
    let (mut now, mut peak, mut event) = (i128::from(initial), i128::from(initial), None);
    for_each_change(tl, keep, &mut |at, el, freed| {
        now += signed(el.size, freed);
        if now > peak {
            peak = now;
            event = Some(at);
        }
        if let Some(shrink) = shrink.as_deref_mut() {
            shrink.push((at, bytes(now)));
        }
    });
    (bytes(peak), event, initial)
}

/// Stacks holding a frame whose label (`function file:line`, as the
/// report writes lines) is `frame`.
fn stacks_with(snap: &Snapshot, frame: &str) -> Vec<bool> {
    (0..snap.stacks.len() as StackId)
        .map(|s| {
            snap.stacks.get(s).iter().any(|&f| {
                snap.frames
                    .get(f as usize)
                    .is_some_and(|f| frames::label(snap, f) == frame)
            })
        })
        .collect()
}

fn entry(s: &MemorySnapshot, remedy: Remedy, peak: u64, baseline: u64) -> WhatIf {
    let signed = |b: u64| i64::try_from(b).unwrap_or(i64::MAX);
    WhatIf {
        remedy,
        module: s.input.clone(),
        device: Some(s.device),
        memory_space: MemoryColor::Device,
        predicted_peak_bytes: peak,
        saving_bytes: signed(baseline) - signed(peak),
        ..WhatIf::default()
    }
}

/// Every allocation whose stack holds `frame` removed, the timeline
/// replayed: the new allocated peak. `None` when no allocation has it.
pub fn without(snap: &Snapshot, tl: &Timeline, s: &MemorySnapshot, frame: &str) -> Option<WhatIf> {
    without_curve(snap, tl, s, frame).map(|c| c.what_if)
}

/// [`without`] with the replayed Active Memory curve (trace indices and
/// allocated bytes, shrunk as the report's curve is).
pub fn without_curve(
    snap: &Snapshot,
    tl: &Timeline,
    s: &MemorySnapshot,
    frame: &str,
) -> Option<ReplayedCurve> {
    let marked = stacks_with(snap, frame);
    let hit = |e: &Element| marked.get(e.stack as usize).copied().unwrap_or(false);
    let (count, bytes) = tl
        .elements
        .iter()
        .filter(|e| hit(e))
        .fold((0usize, 0u64), |(n, b), e| {
            (n + 1, b.saturating_add(e.size))
        });
    if count == 0 {
        return None;
    }
    let (peak, event, curve) = replay_curve(tl, |e| !hit(e));
    let mut w = entry(s, Remedy::WithoutAllocations, peak, s.peak_allocated_bytes);
    w.frame = Some(frame.to_string());
    w.scope = format!(
        "the {count} allocations ({} in all) whose stack holds {frame}",
        format_bytes(bytes)
    );
    w.predicted_peak_position = event.map_or(0, u64::from);
    w.how = "those allocations (and their frees) taken out of the trace, the Active Memory Timeline replayed as MemoryViz replays it".into();
    let (positions, heap_bytes) = curve.into_iter().unzip();
    Some(ReplayedCurve {
        what_if: w,
        positions,
        heap_bytes,
    })
}

/// `expandable_segments:True`: reserved memory as the pages of the live
/// blocks of each pool, at the highest point of the trace.
pub fn expandable_segments(tl: &Timeline, s: &MemorySnapshot) -> Option<WhatIf> {
    let reserved = s.reserved_peak_bytes.max(s.reserved_bytes);
    if reserved == 0 || s.expandable_segments > 0 {
        return None;
    }
    // Small and large pool bytes over the trace, in blocks.
    let mut initial = [0u64; 2];
    for el in tl.elements.iter().filter(|e| e.alloc_event.is_none()) {
        let block = block_size(el.size);
        let pool = usize::from(block > SMALL_SIZE);
        initial[pool] = initial[pool].saturating_add(block);
    }
    let mapped = |pools: &[i128; 2]| {
        let bytes = |b: i128| u64::try_from(b.max(0)).unwrap_or(u64::MAX);
        round_up(bytes(pools[0]), SMALL_BUFFER)
            .saturating_add(round_up(bytes(pools[1]), LARGE_BUFFER))
    };
    let mut pools = [i128::from(initial[0]), i128::from(initial[1])];
    let (mut peak, mut event) = (mapped(&pools), None);
    for_each_change(tl, &|_| true, &mut |at, el, freed| {
        let block = block_size(el.size);
        let pool = usize::from(block > SMALL_SIZE);
        pools[pool] += signed(block, freed);
        let now = mapped(&pools);
        if now > peak {
            peak = now;
            event = Some(at);
        }
    });
    if peak >= reserved {
        return None;
    }
    let mut w = entry(s, Remedy::ExpandableSegments, peak, reserved);
    w.scope = format!(
        "reserved memory: {} at its highest today, of which {} is never allocated at once",
        format_bytes(reserved),
        format_bytes(reserved - peak)
    );
    w.predicted_peak_position = event.map_or(0, u64::from);
    w.how = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: each pool maps only the pages its live blocks need (blocks rounded to 512 B; the small pool in 2 MiB pages, the large in 20 MiB), so fragmentation between segments holds nothing; peak of reserved memory".into();
    Some(w)
}

/// The allocation that ran out (the first `oom` entry), placed: the segment
/// the allocator asked for against what CUDA had free once the allocator
/// had released its cached segments.
pub fn failed_allocation_placed(snap: &Snapshot, s: &MemorySnapshot) -> Option<WhatIf> {
    let oom = s.oom.as_ref()?;
    // The entry's stream: the pool of that stream holds the request.
    let event = snap
        .trace(s.device)
        .nth(usize::try_from(oom.event_index).ok()?)
        .filter(|e| e.action == Action::Oom)?;
    // With expandable segments the allocator maps pages onto a segment
    // instead of asking for a new one.
    let expandable = s.expandable_segments > 0;
    let segment = if expandable {
        let block = block_size(event.size);
        round_up(
            block,
            if block <= SMALL_SIZE {
                SMALL_BUFFER
            } else {
                LARGE_BUFFER
            },
        )
    } else {
        segment_size(event.size)
    };
    let must_free = segment.saturating_sub(oom.device_free_bytes);
    let placed = oom.allocated_bytes.saturating_add(oom.requested_bytes);
    let peak = s.peak_allocated_bytes.max(placed);
    let mut w = entry(
        s,
        Remedy::FailedAllocationPlaced,
        peak,
        s.peak_allocated_bytes,
    );
    w.must_free_bytes = Some(must_free);
    w.predicted_peak_position = oom.event_index;
    w.scope = format!(
        "the allocation of {} that ran out (trace entry {}), with {} allocated and {} free on the device",
        format_bytes(oom.requested_bytes),
        oom.event_index,
        format_bytes(oom.allocated_bytes),
        format_bytes(oom.device_free_bytes)
    );
    let asked = if expandable {
        "pages of {} onto its expandable segment"
    } else {
        "a segment of {} (CUDACachingAllocator's get_allocation_size)"
    }
    .replace("{}", &format_bytes(segment));
    w.how = format!(
        "no cached block fitted, so the allocator asked CUDA for {asked} after releasing its unused cached segments; {} had to be freed for it to succeed, and allocated memory would have peaked at {}",
        format_bytes(must_free),
        format_bytes(peak)
    );
    Some(w)
}

/// The snapshot what-ifs of one device: without the allocations of each of
/// the lines holding most at the peak, expandable_segments, and the failed
/// allocation placed; then the replayed curve of each "without" (the
/// replay computes it anyway: keeping it lets the page draw these lines as
/// it draws a line the user replays).
pub fn what_ifs(
    snap: &Snapshot,
    tl: &Timeline,
    s: &MemorySnapshot,
) -> (Vec<WhatIf>, Vec<ReplayedCurve>) {
    let curves: Vec<ReplayedCurve> = s
        .top_lines_at_peak
        .iter()
        .take(WITHOUT_LINES)
        .filter_map(|line| without_curve(snap, tl, s, &line.frame))
        .filter(|c| c.what_if.saving_bytes > 0)
        .collect();
    let mut out: Vec<WhatIf> = curves.iter().map(|c| c.what_if.clone()).collect();
    out.extend(expandable_segments(tl, s));
    out.extend(failed_allocation_placed(snap, s));
    (out, curves)
}

/// "Without these allocations" for a frame the user chose (the CLI's
/// `--without`, a line picked on the page): every device of `devices` (the
/// snapshot's own analysis) whose trace has allocations with `frame` on
/// their stack, replayed without them, each with its replayed curve. Empty
/// when no allocation has it.
pub fn without_frame(
    snap: &Snapshot,
    devices: &[MemorySnapshot],
    frame: &str,
) -> Vec<ReplayedCurve> {
    devices
        .iter()
        .filter_map(|s| {
            let tl = timeline(snap, s.device, TimelineKind::ActiveMemory);
            without_curve(snap, &tl, s, frame)
        })
        .collect()
}
