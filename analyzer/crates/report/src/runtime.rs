//! Runtime memory profiles (issue 17): JAX device memory profiles (pprof)
//! and PyTorch profiler memory timelines (export_memory_timeline, Kineto).
//! Field names are the stable JSON interface; add fields, never rename.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::stacks::{Frame, StackSample};

/// One `jax.profiler.save_device_memory_profile()` file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceMemoryProfile {
    pub input: String,
    pub devices: Vec<DeviceMemory>,
    /// Largest stacks first (all devices together).
    pub top_stacks: Vec<StackSample>,
    /// Live buffer bytes and count of all devices (pprof `kind=buffer`).
    #[serde(default)]
    pub buffer_bytes: u64,
    #[serde(default)]
    pub buffer_count: u64,
    /// Compiled programs (pprof `kind=executable`; they carry no device).
    #[serde(default)]
    pub executable_bytes: u64,
    #[serde(default)]
    pub executable_count: u64,
    /// Executables whose code size the runtime could not tell (TPU runtimes
    /// write -1); counted in `executable_count` with 0 bytes.
    #[serde(default)]
    pub executable_size_unknown_count: u64,
    /// Source lines holding the most bytes, largest first. Each sample is
    /// charged to its innermost user frame (JAX internals are skipped), or to
    /// its innermost frame when it has no user frame.
    #[serde(default)]
    pub top_lines: Vec<SourceLineBytes>,
    /// How evenly the devices hold their buffers; absent with fewer than two devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance: Option<DeviceBalance>,
}

/// Bytes held by buffers created at one source line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceLineBytes {
    pub frame: Frame,
    pub bytes: u64,
    pub count: u64,
}

/// Buffer bytes across devices: a replicated array is N equal copies, a
/// badly sharded one makes one device heavier than the others.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceBalance {
    pub devices: u32,
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub mean_bytes: u64,
    pub heaviest_device: String,
    pub lightest_device: String,
    /// Bytes of stacks held in equal amounts on every device (replicated
    /// arrays, or evenly sharded ones), all copies counted.
    pub even_bytes: u64,
    /// Stacks whose bytes differ between devices, most uneven first
    /// (largest gap between the heaviest and lightest device).
    pub uneven_stacks: Vec<UnevenStack>,
    /// Stacks held in the same amount on every device, largest first: a
    /// replicated array (a whole copy per device), or an evenly sharded one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub even_stacks: Vec<EvenStack>,
}

/// One stack whose bytes are the same on every device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvenStack {
    /// Where the buffers were created (innermost user frame).
    pub frame: Frame,
    /// Bytes on each device (all devices hold this much).
    pub bytes_per_device: u64,
    /// Buffers on each device.
    pub count_per_device: u64,
}

/// One stack whose bytes are not the same on every device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UnevenStack {
    /// Where the buffers were created (innermost user frame).
    pub frame: Frame,
    /// Device → bytes; devices holding none of it are listed with 0.
    pub bytes_by_device: BTreeMap<String, u64>,
    pub max_bytes: u64,
    pub min_bytes: u64,
}

/// Two or more device memory profiles of one run (same name but for the
/// step number: `memory_20.prof`, `memory_40.prof`, …), in step order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceMemorySeries {
    /// The profiles' inputs, in order.
    pub inputs: Vec<String>,
    /// Live buffer bytes of all devices, one per profile.
    pub buffer_bytes: Vec<u64>,
    /// Stacks whose bytes never shrink and end higher than they began,
    /// largest growth first: the leak, with its line.
    pub growing_stacks: Vec<GrowingStack>,
}

/// A stack whose live buffer bytes grow across a series of profiles.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GrowingStack {
    /// Innermost first, as in `StackSample`.
    pub frames: Vec<Frame>,
    /// Where the buffers were created (innermost user frame).
    pub frame: Frame,
    /// One per profile of the series (0 where the stack is absent).
    pub bytes_per_profile: Vec<u64>,
    pub count_per_profile: Vec<u64>,
    /// Last minus first.
    pub growth_bytes: u64,
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
    /// PyTorch's device name for Kineto (`cuda:0`, `cpu`); empty for the
    /// `export_memory_timeline` forms, which do not record it.
    pub device: String,
    pub peak_bytes: u64,
    /// In `time_unit`: microseconds for all three sources (PyTorch's JSON
    /// export coalesces the raw form's nanoseconds to microseconds, and the
    /// peak is read the same way; Kineto's `ts` is in microseconds).
    pub peak_time: i64,
    /// Category → bytes at the peak (PyTorch's 8 categories: `parameter`,
    /// `optimizer_state`, `input`, `temporary`, `activation`, `gradient`,
    /// `autograd_detail`, `unknown`); empty for Kineto.
    #[serde(default)]
    pub peak_by_category: BTreeMap<String, u64>,
    pub final_bytes: u64,
    /// The unit of `peak_time`.
    #[serde(default)]
    pub time_unit: TimeUnit,
    /// Memory events (or timeline steps) read.
    #[serde(default)]
    pub events: u64,
    /// The running total over time, thinned to at most a few thousand points
    /// for drawing (the peak is always kept): `(time, bytes)`.
    #[serde(default)]
    pub points: Vec<TimelinePoint>,
}

/// The unit of a timeline's times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeUnit {
    #[default]
    Nanoseconds,
    Microseconds,
}

/// One point of a memory timeline: total bytes, and bytes by category when
/// the source has categories (PyTorch's order: parameter, optimizer state,
/// input, temporary, activation, gradient, autograd detail, unknown).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    pub time: i64,
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_category: Vec<u64>,
}
