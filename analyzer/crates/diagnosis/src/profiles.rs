//! What run-time memory profiles say to the runtime nodes: PyTorch memory
//! snapshots (accumulations, buffers lingering after backward, a spike),
//! series of JAX device memory profiles (stacks that grow from profile to
//! profile) and PyTorch memory timelines (what the peak is made of).
//! Each finding keeps the user's numbers and where they came from.

use oomscope_report::{
    DeviceBalance, DeviceMemoryProfile, EvenStack, Frame, LingeringBuffers, MemorySnapshot,
    MemoryTimeline, Report, Spike,
};

use crate::facts::gib;

/// The heaviest device at least this many times the mean is unbalanced.
const UNBALANCED_OVER_MEAN: f64 = 1.5;

/// Stranded inactive bytes at least this share of reserved memory, and at
/// least [`FRAGMENTATION_MIN_BYTES`], are worth a change of allocator setting.
const FRAGMENTATION_SHARE: f64 = 0.10;
const FRAGMENTATION_MIN_BYTES: u64 = 1 << 30;

/// A snapshot spike below this share of the peak does not lift it.
const SPIKE_SHARE_OF_PEAK: f64 = 0.25;

/// `function file:line`, as the snapshot reader writes frames.
pub(crate) fn frame_text(f: &Frame) -> String {
    match (f.file.is_empty(), f.line) {
        (true, _) => f.function.clone(),
        (false, 0) => format!("{} {}", f.function, f.file),
        (false, line) => format!("{} {}:{line}", f.function, f.file),
    }
}

/// Allocations from one line that pile up: from a snapshot, or from a
/// series of device memory profiles.
#[derive(Debug, Clone)]
pub(crate) struct Accumulation {
    pub input: String,
    pub frame: String,
    /// Snapshot: steps; series: profiles.
    pub per: Per,
    pub periods: u64,
    pub count_per_period: f64,
    pub bytes_per_period: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Per {
    Step,
    Profile,
}

impl Per {
    pub fn word(self) -> &'static str {
        match self {
            Per::Step => "step",
            Per::Profile => "profile",
        }
    }
}

/// The accumulation that grows the most, snapshot or profile series.
pub(crate) fn accumulation(report: &Report) -> Option<Accumulation> {
    let from_snapshots = report.memory_snapshots.iter().flat_map(|s| {
        s.accumulations
            .iter()
            .filter(|a| a.steps >= 2 && a.bytes_per_step > 0)
            .map(|a| Accumulation {
                input: s.input.clone(),
                frame: a.frame.clone(),
                per: Per::Step,
                periods: a.steps,
                count_per_period: a.count_per_step,
                bytes_per_period: a.bytes_per_step,
                bytes: a.bytes,
            })
    });
    let from_series = report.device_memory_series.iter().filter_map(|s| {
        let g = s.growing_stacks.first()?;
        let n = g.bytes_per_profile.len() as u64;
        if n < 2 || g.growth_bytes == 0 {
            return None;
        }
        let counts = &g.count_per_profile;
        let count_growth = counts
            .last()
            .zip(counts.first())
            .map_or(0, |(l, f)| l.saturating_sub(*f));
        Some(Accumulation {
            input: s.inputs.join(", "),
            frame: frame_text(&g.frame),
            per: Per::Profile,
            periods: n,
            count_per_period: count_growth as f64 / (n - 1) as f64,
            bytes_per_period: g.growth_bytes / (n - 1),
            bytes: g.bytes_per_profile.last().copied().unwrap_or(0),
        })
    });
    from_snapshots
        .chain(from_series)
        .max_by_key(|a| a.bytes_per_period.saturating_mul(a.periods))
}

/// The snapshot whose backward pass leaves the most bytes alive.
pub(crate) fn lingering(report: &Report) -> Option<(&MemorySnapshot, &LingeringBuffers)> {
    report
        .memory_snapshots
        .iter()
        .filter_map(|s| Some((s, s.lingering_backward.as_ref()?)))
        // Parameters' own `.grad` also outlive the step; only buffers whose
        // allocating Python line is known can be pointed at.
        .filter(|(_, l)| l.bytes > 0 && l.lines.iter().any(|x| x.frame.contains(".py:")))
        .max_by_key(|(_, l)| l.bytes)
}

/// A snapshot spike that lifts the peak by at least a quarter of it.
pub(crate) fn spike(report: &Report) -> Option<(&MemorySnapshot, &Spike)> {
    report
        .memory_snapshots
        .iter()
        .filter_map(|s| Some((s, s.spike.as_ref()?)))
        .filter(|(s, sp)| {
            sp.size_bytes as f64 >= s.peak_allocated_bytes as f64 * SPIKE_SHARE_OF_PEAK
        })
        .max_by_key(|(_, sp)| sp.size_bytes)
}

/// PyTorch's memory categories, as a timeline names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Category {
    Activation,
    OptimizerState,
    Gradient,
    Parameter,
    Unknown,
    Other,
}

impl Category {
    fn from_name(name: &str) -> Category {
        match name {
            "activation" | "temporary" | "autograd_detail" => Category::Activation,
            "optimizer_state" => Category::OptimizerState,
            "gradient" => Category::Gradient,
            "parameter" => Category::Parameter,
            "unknown" => Category::Unknown,
            _ => Category::Other,
        }
    }
    /// The action key of the composition node for this category.
    pub fn action(self) -> &'static str {
        match self {
            Category::Activation => "activations",
            Category::OptimizerState => "optimizer_state",
            Category::Gradient => "gradients",
            Category::Parameter => "parameters",
            Category::Unknown | Category::Other => "snapshot",
        }
    }
}

/// The largest part of a timeline's peak.
#[derive(Debug, Clone)]
pub(crate) struct PeakComposition<'a> {
    pub timeline: &'a MemoryTimeline,
    /// PyTorch's name (`optimizer_state`, …).
    pub name: &'a str,
    pub category: Category,
    pub bytes: u64,
}

/// The timeline with the highest peak that has categories, and its largest category.
pub(crate) fn peak_composition(report: &Report) -> Option<PeakComposition<'_>> {
    let t = report
        .memory_timelines
        .iter()
        .filter(|t| t.peak_by_category.values().any(|b| *b > 0))
        .max_by_key(|t| t.peak_bytes)?;
    let (name, bytes) = t.peak_by_category.iter().max_by_key(|(_, b)| **b)?;
    Some(PeakComposition {
        timeline: t,
        name,
        category: Category::from_name(name),
        bytes: *bytes,
    })
}

/// The device memory profile whose heaviest device is furthest above the
/// mean, and whether that is unbalanced.
pub(crate) fn balance(report: &Report) -> Option<(&DeviceMemoryProfile, &DeviceBalance, bool)> {
    report
        .device_memory_profiles
        .iter()
        .filter_map(|p| Some((p, p.balance.as_ref()?)))
        .filter(|(_, b)| b.mean_bytes > 0)
        .max_by(|a, b| {
            let r = |x: &DeviceBalance| x.max_bytes as f64 / x.mean_bytes as f64;
            r(a.1).total_cmp(&r(b.1))
        })
        .map(|(p, b)| {
            (
                p,
                b,
                b.max_bytes as f64 >= b.mean_bytes as f64 * UNBALANCED_OVER_MEAN,
            )
        })
}

/// A replicated array is worth naming from this size per device.
const REPLICATED_MIN_BYTES: u64 = 1 << 20;

/// One array held alike on every device of a device memory profile: the
/// largest stack with one buffer of the same size on each device (a
/// replicated `jax.Array`, or an evenly sharded one), of at least
/// [`REPLICATED_MIN_BYTES`] per device.
pub(crate) struct Replication<'a> {
    pub devices: u32,
    pub stack: &'a EvenStack,
}

pub(crate) fn replication(report: &Report) -> Option<Replication<'_>> {
    report
        .device_memory_profiles
        .iter()
        .filter_map(|p| p.balance.as_ref())
        .filter(|b| b.devices >= 2)
        .flat_map(|b| {
            b.even_stacks
                .iter()
                .filter(|s| s.count_per_device == 1 && s.bytes_per_device >= REPLICATED_MIN_BYTES)
                .map(|s| Replication {
                    devices: b.devices,
                    stack: s,
                })
        })
        .max_by_key(|r| r.stack.bytes_per_device)
}

/// The finding in words, with its line.
pub(crate) fn replication_text(r: &Replication<'_>) -> String {
    let s = r.stack;
    format!(
        "one array of {} from {} is on each of the {} devices ({} in all): replicated, a whole copy per device, unless it is an array {}× that size sharded evenly",
        gib(s.bytes_per_device),
        frame_text(&s.frame),
        r.devices,
        gib(s.bytes_per_device.saturating_mul(u64::from(r.devices))),
        r.devices
    )
}

/// The snapshot whose inactive blocks stranded between live ones (what
/// expandable segments would return) are the largest, and whether that is
/// worth acting on without an OOM.
pub(crate) fn fragmentation(report: &Report) -> Option<(&MemorySnapshot, bool)> {
    let s = report
        .memory_snapshots
        .iter()
        .filter(|s| s.expandable_segments_would_return_bytes > 0)
        .max_by_key(|s| s.expandable_segments_would_return_bytes)?;
    let w = s.expandable_segments_would_return_bytes;
    Some((
        s,
        w >= FRAGMENTATION_MIN_BYTES && w as f64 >= s.reserved_bytes as f64 * FRAGMENTATION_SHARE,
    ))
}
