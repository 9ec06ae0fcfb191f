//! Runtime memory profiles (issue 17): JAX device memory profiles (pprof)
//! and PyTorch profiler memory timelines (export_memory_timeline, Kineto).
//! Field names are the stable JSON interface; add fields, never rename.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::stacks::StackSample;

/// One `jax.profiler.save_device_memory_profile()` file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceMemoryProfile {
    pub input: String,
    pub devices: Vec<DeviceMemory>,
    /// Largest stacks first (all devices together).
    pub top_stacks: Vec<StackSample>,
}

/// Totals of one device (pprof `device` label).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceMemory {
    pub device: String,
    pub buffer_bytes: u64,
    pub buffer_count: u64,
    #[serde(default)]
    pub executable_bytes: u64,
    pub executable_count: u64,
}

/// Where a memory timeline came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelineSource {
    /// `export_memory_timeline("x.raw.json.gz")`: `[time_ns, action, bytes, category]`.
    #[default]
    TorchMemoryTimelineRaw,
    /// `export_memory_timeline("x.json")`: `[times, sizes_by_category]`.
    TorchMemoryTimelineJson,
    /// Kineto Chrome trace `[memory]` instant events.
    Kineto,
}

/// Memory over time from a profiler, per device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryTimeline {
    pub input: String,
    pub source: TimelineSource,
    pub device: String,
    pub peak_bytes: u64,
    /// In the file's own time unit (ns for the memory timeline, µs for Kineto).
    pub peak_time: i64,
    /// Category → bytes at the peak (PyTorch's 8 categories); empty for Kineto.
    #[serde(default)]
    pub peak_by_category: BTreeMap<String, u64>,
    pub final_bytes: u64,
}
