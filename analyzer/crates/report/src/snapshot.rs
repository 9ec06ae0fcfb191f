//! PyTorch CUDA caching-allocator memory snapshots
//! (`torch.cuda.memory._dump_snapshot()`), per device. Field names are the
//! stable JSON interface of issue 16; add fields, never rename.

use serde::{Deserialize, Serialize};

use crate::stacks::StackSample;

/// One snapshot file's analysis for one device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySnapshot {
    /// Input file name.
    pub input: String,
    /// CUDA device index (position in `device_traces`).
    pub device: u32,
    /// Active Memory Timeline (MemoryViz.js `process_alloc_data` semantics).
    pub peak_allocated_bytes: u64,
    /// Index in this device's `device_traces` list of the event reaching the peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_event_index: Option<u64>,
    pub initial_allocated_bytes: u64,
    pub final_allocated_bytes: u64,
    /// Allocations live at the peak, largest first.
    #[serde(default)]
    pub live_at_peak: Vec<LiveAllocation>,
    /// State at snapshot time (from `segments`, as `_memory_viz.segsum`).
    pub reserved_bytes: u64,
    pub active_allocated_bytes: u64,
    pub inactive_bytes: u64,
    pub active_pending_free_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom: Option<SnapshotOom>,
    /// Live bytes at the peak by call stack.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks_at_peak: Vec<StackSample>,

    /// Which `_dump_snapshot` generation wrote the file.
    #[serde(default)]
    pub format: SnapshotFormat,
    /// Entries in this device's `device_traces` list.
    #[serde(default)]
    pub trace_events: u64,
    /// Requested bytes of the `active_allocated` blocks (`_memory_viz segsum`'s
    /// `total_allocated`); `active_allocated_bytes` is after rounding.
    #[serde(default)]
    pub allocated_requested_bytes: u64,
    /// Free bytes inside blocks because the allocator rounded requests up
    /// (segsum's "internal").
    #[serde(default)]
    pub free_internal_bytes: u64,
    /// Free bytes between blocks: blocks not `active_allocated` (segsum's "external").
    #[serde(default)]
    pub free_external_bytes: u64,
    #[serde(default)]
    pub segments: u64,
    #[serde(default)]
    pub expandable_segments: u64,
    /// Reserved in private pools (CUDA graphs, `segment_pool_id != (0, 0)`).
    #[serde(default)]
    pub private_pool_bytes: u64,
    /// Inactive bytes stranded between live blocks of ordinary segments: an
    /// estimate of what `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`
    /// would return (`empty_cache()` cannot).
    #[serde(default)]
    pub expandable_segments_would_return_bytes: u64,
    /// Highest reserved (segment) bytes over the trace, counting
    /// `segment_map`/`segment_unmap` (MemoryViz's segment timeline ignores them).
    #[serde(default)]
    pub reserved_peak_bytes: u64,
    /// MemoryViz's own Cached Segment Timeline peak (ignores `segment_map`).
    #[serde(default)]
    pub memoryviz_segment_peak_bytes: u64,
    /// Source lines holding the most bytes at the peak.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_lines_at_peak: Vec<SnapshotLine>,
    /// Allocations from one source line that pile up over the trace and are never freed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accumulations: Vec<Accumulation>,
    /// Buffers allocated during the backward pass that are still live at the end of the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lingering_backward: Option<LingeringBuffers>,
    /// One short-lived allocation that lifts the peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike: Option<Spike>,
    /// `external_annotations` phase names, in order of first start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<String>,
    /// The Active Memory Timeline downsampled for drawing (at most
    /// [`CURVE_MAX_POINTS`] points, the peak kept exactly), with the reserved
    /// line. The first point is the state before the trace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active_memory_curve: Vec<CurvePoint>,
    /// `external_annotations` phases placed on the trace's event indices.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseSpan>,
    /// The trace replayed with a change (issue 25): without the
    /// allocations of the lines holding most at the peak,
    /// expandable_segments, the failed allocation placed. The report lists
    /// them in `diagnosis.what_if`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub what_if: Vec<crate::whatif::WhatIf>,
    /// The replayed Active Memory curve of each `what_if` entry that
    /// replays the allocations (`without_allocations`), in `what_if`'s
    /// order: the trace indices and allocated bytes, shrunk as
    /// `active_memory_curve` is (the peak kept exactly), the entry repeated
    /// beside them. The page draws them over the curve as it draws a line
    /// the user replays without.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub what_if_curves: Vec<crate::whatif::ReplayedCurve>,
}

/// Most points in [`MemorySnapshot::active_memory_curve`].
pub const CURVE_MAX_POINTS: usize = 2000;

/// The [`SnapshotLine`] of the allocations whose trace recorded no frames:
/// no line of code, so none to replay without.
pub const NO_STACK_LINE: &str = "<no stack recorded>";

/// One point of the downsampled Active Memory curve: the bytes after trace
/// event `event_index`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub event_index: u64,
    pub allocated_bytes: u64,
    /// Reserved (segment) bytes after the same event, counting `segment_map`.
    pub reserved_bytes: u64,
}

/// One `external_annotations` phase (`record_function` START..END).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseSpan {
    pub name: String,
    /// First trace event at or after the phase's START.
    pub start_event_index: u64,
    /// First trace event at or after its END; `None` when still open at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_event_index: Option<u64>,
}

/// The generation of `torch.cuda.memory._dump_snapshot()` output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SnapshotFormat {
    /// `segments` + `device_traces` with per-entry `frames` (PyTorch 2.1+).
    #[default]
    SegmentsAndTraces,
    /// PyTorch 2.0: blocks carry `history[]`.
    BlocksWithHistory,
    /// `torch.cuda.memory_snapshot()`: a bare list of segments, no trace.
    BareSegmentList,
}

/// Bytes and allocation count attributed to one source line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SnapshotLine {
    /// `function file:line`, or [`NO_STACK_LINE`].
    pub frame: String,
    pub bytes: u64,
    pub count: u64,
}

/// Allocations of one source line that are never freed and keep coming.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Accumulation {
    /// `function file:line` (first user frame).
    pub frame: String,
    /// How many of its allocations are still live at the end.
    pub count: u64,
    pub bytes: u64,
    /// Repetitions of the trace's busiest allocating line between the first
    /// and the last of these allocations: the "steps" they accumulate over.
    pub steps: u64,
    pub count_per_step: f64,
    pub bytes_per_step: u64,
    pub first_event_index: u64,
    pub last_event_index: u64,
}

/// Buffers allocated in backward (autograd engine on the stack) still live at the end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LingeringBuffers {
    pub count: u64,
    pub bytes: u64,
    /// The allocating lines, most bytes first.
    pub lines: Vec<SnapshotLine>,
}

/// An allocation alive at the peak and freed soon after: the peak's spike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spike {
    pub size_bytes: u64,
    pub alloc_event_index: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_event_index: Option<u64>,
    /// `function file:line`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub frame: String,
    /// Allocated bytes at the end of the trace, the steady state it rises from.
    pub final_allocated_bytes: u64,
    /// The `external_annotations` phase open when it was allocated, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
}

/// An allocation live at the peak.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveAllocation {
    pub size_bytes: u64,
    pub address: u64,
    /// Index in `device_traces` of its `alloc` event; `None` when it was live
    /// before the trace started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_event_index: Option<u64>,
    /// The allocating frame, `function file:line` (first user frame when known).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub frame: String,
}

/// An `oom` trace event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SnapshotOom {
    pub event_index: u64,
    pub requested_bytes: u64,
    pub device_free_bytes: u64,
    /// Allocated bytes (Active Memory Timeline) when the OOM happened.
    #[serde(default)]
    pub allocated_bytes: u64,
    /// Reserved (segment) bytes when the OOM happened.
    #[serde(default)]
    pub reserved_bytes: u64,
    /// The largest allocations live at that moment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub largest_live: Vec<LiveAllocation>,
}
