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
}
