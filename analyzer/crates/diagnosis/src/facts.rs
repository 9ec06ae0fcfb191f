//! The facts the tree is evaluated on, gathered once from every input of a
//! report: the compile-time OOM event that matters, its limit, use and
//! excess, the module analysis that matches it and one list of allocations
//! (complete from a module analysis, or the top-N listing of the log).

use oomscope_report::{
    BufferCategory, BufferLifetime, CitedBuffer, DeviceLimit, MemoryColor, MemorySpace,
    ModuleReport, OomEvent, OomKind, PeakKind, Report,
};

use crate::shape::{parse_array, ArrayShape};

/// One allocation, whichever input listed it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Alloc {
    /// Buffer name or XLA label (what the timeline and padding views cite).
    pub name: String,
    pub shape: String,
    /// The shape for sentences when it differs from `shape` (a usage
    /// report's `2×f32[…]`: one chunk two values use in turn).
    pub shape_words: String,
    pub size: u64,
    pub unpadded: Option<u64>,
    pub op_name: String,
    /// `file:line` when known.
    pub source: String,
    /// The XLA label as printed (may carry `sharding=` and callback targets).
    pub label: String,
    pub category: Option<BufferCategory>,
    pub array: Option<ArrayShape>,
    /// Where the views find it: the module's display name, memory space and
    /// logical buffer id, or the rank in the log's listing.
    pub module: String,
    pub memory_space: MemoryColor,
    pub buffer_id: Option<i64>,
    pub listing_rank: Option<u32>,
}

impl Alloc {
    /// Where the allocation comes from, for sentences: source line, else op.
    pub fn origin(&self) -> String {
        let mut parts = Vec::new();
        if !self.op_name.is_empty() {
            parts.push(format!("op {}", self.op_name));
        }
        if !self.source.is_empty() {
            parts.push(format!("at {}", self.source));
        }
        if parts.is_empty() && !self.label.is_empty() {
            parts.push(format!("label {}", truncate(&self.label, 120)));
        }
        parts.join(" ")
    }

    /// The shape if known, else the name.
    pub fn what(&self) -> String {
        if !self.shape_words.is_empty() {
            self.shape_words.clone()
        } else if !self.shape.is_empty() {
            self.shape.clone()
        } else if !self.name.is_empty() {
            self.name.clone()
        } else {
            "(unnamed)".to_string()
        }
    }

    pub fn padding(&self) -> Option<u64> {
        self.unpadded.map(|u| self.size.saturating_sub(u))
    }

    /// This allocation as a node cites it (the node sets the role).
    pub fn cited(&self) -> CitedBuffer {
        CitedBuffer {
            role: String::new(),
            name: self.name.clone(),
            shape: self.shape.clone(),
            size_bytes: self.size,
            source: self.source.clone(),
            module: self.module.clone(),
            memory_space: self.memory_space,
            buffer_id: self.buffer_id,
            listing_rank: self.listing_rank,
        }
    }
}

/// Where the allocation list came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AllocSource {
    /// Every buffer live at the peak, from a module analysis.
    ModulePeak,
    /// The log's "largest allocations" listing: only the top entries.
    LogListing,
    /// The single allocation request the error names.
    SingleRequest,
    /// Nothing lists allocations.
    None,
}

/// Facts of a compile-time OOM.
#[derive(Debug, Clone)]
pub(crate) struct CompileFacts<'a> {
    pub event: &'a OomEvent,
    /// `hbm`, `vmem`, ...
    pub space: MemorySpace,
    pub limit: Option<u64>,
    pub used: Option<u64>,
    pub excess: Option<u64>,
    pub module: Option<&'a ModuleReport>,
    /// Largest first.
    pub allocs: Vec<Alloc>,
    pub allocs_source: AllocSource,
    /// The device the user picked, when the event is predicted from its
    /// limit (no message).
    pub picked: Option<&'a DeviceLimit>,
}

/// How many chips the failing program runs on, as far as the inputs show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chips {
    /// Collectives in the module, shardings that name devices, or a module
    /// compiled for more than one replica or partition: several.
    Several,
    /// The module was compiled for one replica and one partition (its
    /// HloProto's device assignment, or a dump's `HloModule` header).
    One,
    /// Nothing shows: a program without collectives or device shardings
    /// may run on one chip, or replicate everything over several.
    Unknown,
}

/// What the inputs show of the program's chip count.
pub(crate) fn chips(f: &CompileFacts<'_>) -> Chips {
    let collective = oomscope_report::is_collective;
    let in_module = f.module.is_some_and(|m| {
        m.instructions.iter().any(|i| collective(i))
            || m.buffers
                .iter()
                .any(|b| collective(&b.name) || collective(&b.opcode))
            || m.peak_buffers
                .iter()
                .any(|b| collective(&b.name) || collective(&b.opcode))
    });
    let in_listing = f.allocs.iter().any(|a| {
        collective(&a.name)
            || a.label.contains("devices=[")
            || a.label.contains("all-gather")
            || a.label.contains("all-reduce")
    });
    let compiled_for = f.module.and_then(|m| m.chips);
    if in_module || in_listing || compiled_for.is_some_and(|n| n > 1) {
        Chips::Several
    } else if compiled_for == Some(1) {
        Chips::One
    } else {
        Chips::Unknown
    }
}

pub(crate) fn is_compile_kind(kind: OomKind) -> bool {
    matches!(
        kind,
        OomKind::TpuCompileHbm
            | OomKind::TpuCompileOtherSpace
            | OomKind::TpuScopedVmem
            | OomKind::TpuSparsecore
    )
}

/// The compile-time event that matters most: HBM first, then the one that
/// states the most numbers.
pub(crate) fn primary_compile_event(report: &Report) -> Option<&OomEvent> {
    report
        .oom_events
        .iter()
        .filter(|e| is_compile_kind(e.kind))
        .max_by_key(|e| {
            (
                e.memory_space == MemorySpace::Hbm || e.kind == OomKind::TpuSparsecore,
                e.limit().is_some(),
                e.used_bytes.is_some(),
                e.top_allocations.len(),
            )
        })
}

/// The module analysis of the failing program: same memory space, the
/// largest peak.
pub(crate) fn matching_module<'a>(
    report: &'a Report,
    space: &MemorySpace,
) -> Option<&'a ModuleReport> {
    let color = space.color()?;
    report
        .modules
        .iter()
        .filter(|m| m.memory_space == color && !m.peak_buffers.is_empty())
        // The compiler's live-range peak counts unpadded logical sizes; the
        // heap analyses (XProf's, the dump's buffer liveness) are preferred.
        .max_by_key(|m| (m.peak_kind != PeakKind::LiveRange, m.peak_bytes))
}

/// The memory an event ran out of; a message that names no space is about HBM.
pub(crate) fn event_space(event: &OomEvent) -> MemorySpace {
    match &event.memory_space {
        MemorySpace::Other(word) if word.is_empty() => MemorySpace::Hbm,
        space => space.clone(),
    }
}

/// The facts of `event` (a compile-time OOM of `report`, or one the caller
/// made for a module that exceeds a device limit the user picked).
pub(crate) fn compile_facts<'a>(
    report: &'a Report,
    event: &'a OomEvent,
    picked: Option<&'a DeviceLimit>,
) -> CompileFacts<'a> {
    let space = event_space(event);
    let limit = event.limit();
    let used = event.used();
    let excess = event.excess();
    // "Allocation (size=N) would exceed memory": the failing allocation is
    // the one the error names, which a dumped module need not contain (the
    // compiler may have been retrying a variant of it).
    let single_request = event.used_bytes.is_none() && event.requested_bytes.is_some();
    let module = if single_request {
        None
    } else {
        matching_module(report, &space)
    };
    let (mut allocs, allocs_source) = if let Some(m) = module {
        (
            m.peak_buffers
                .iter()
                .map(|b| alloc_from_peak(m, b))
                .collect(),
            AllocSource::ModulePeak,
        )
    } else if !event.top_allocations.is_empty() {
        (
            event
                .top_allocations
                .iter()
                .map(alloc_from_listing)
                .collect(),
            AllocSource::LogListing,
        )
    } else if let Some(requested) = event.requested_bytes {
        (
            vec![Alloc {
                name: "requested allocation".into(),
                size: requested,
                ..Default::default()
            }],
            AllocSource::SingleRequest,
        )
    } else {
        (Vec::new(), AllocSource::None)
    };
    allocs.sort_by_key(|a| std::cmp::Reverse(a.size));
    CompileFacts {
        event,
        space,
        limit,
        used,
        excess,
        module,
        allocs,
        allocs_source,
        picked,
    }
}

pub(crate) fn alloc_from_peak(m: &ModuleReport, b: &oomscope_report::PeakBuffer) -> Alloc {
    Alloc {
        module: m.display_name(),
        memory_space: m.memory_space,
        buffer_id: b.logical_buffer_id,
        listing_rank: None,
        name: b.name.clone(),
        shape: b.shape.clone(),
        shape_words: String::new(),
        size: b.size_bytes,
        unpadded: Some(b.unpadded_bytes),
        op_name: b.op_name.clone(),
        source: b.source.clone(),
        label: String::new(),
        category: Some(b.category),
        array: parse_array(&b.shape),
    }
}

/// A module's buffer with a lifetime, as a node cites it (the node sets the role).
pub(crate) fn cite_lifetime(m: &ModuleReport, b: &BufferLifetime) -> CitedBuffer {
    CitedBuffer {
        role: String::new(),
        name: b.name.clone(),
        shape: b.shape.clone(),
        size_bytes: b.size_bytes,
        source: b.source.clone(),
        module: m.display_name(),
        memory_space: m.memory_space,
        buffer_id: Some(b.id),
        listing_rank: None,
    }
}

fn alloc_from_listing(t: &oomscope_report::TopAllocation) -> Alloc {
    let category = t.allocation_type.as_deref().and_then(|a| {
        let a = a.to_ascii_lowercase();
        if a.contains("temp") {
            Some(BufferCategory::Temporary)
        } else if a.contains("argument") || a.contains("parameter") {
            Some(BufferCategory::Parameter)
        } else if a.contains("output") {
            Some(BufferCategory::Output)
        } else {
            None
        }
    });
    let label = t.xla_label.clone().unwrap_or_default();
    // `2×f32[…]` (an E1000 usage report) is one chunk two values share: the
    // array the size estimates read is f32[…]; cited, it keeps the shape
    // as listed, and sentences say it in words.
    let one = match t.shape.split_once('×') {
        Some((n, one))
            if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !one.contains(", ") =>
        {
            one
        }
        _ => t.shape.as_str(),
    };
    let words = t.shape_words();
    Alloc {
        name: label_name(&label),
        array: parse_array(one),
        shape_words: if words == t.shape {
            String::new()
        } else {
            words
        },
        shape: t.shape.clone(),
        size: t.size_bytes,
        unpadded: t
            .unpadded_bytes
            .or_else(|| t.padding_bytes.map(|p| t.size_bytes.saturating_sub(p))),
        op_name: t.op_name.clone().unwrap_or_default(),
        source: t.source.clone().unwrap_or_default(),
        label,
        category,
        module: String::new(),
        memory_space: MemoryColor::Device,
        buffer_id: None,
        listing_rank: Some(t.rank),
    }
}

/// `%fusion.1668 = f32[...] fusion(...)` → `fusion.1668`.
fn label_name(label: &str) -> String {
    label
        .split('=')
        .next()
        .unwrap_or("")
        .trim()
        .trim_start_matches('%')
        .to_string()
}

/// `x` as a percentage of `of` (0 when `of` is 0).
pub(crate) fn pct(x: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        x as f64 * 100.0 / of as f64
    }
}

/// A percentage rounded to one decimal, for the JSON facts.
pub(crate) fn pct_fact(x: u64, of: u64) -> f64 {
    (pct(x, of) * 10.0).round() / 10.0
}

/// A percentage for sentences: `108%`, `0.04%` for tiny shares.
pub(crate) fn pct_text(x: u64, of: u64) -> String {
    let p = pct(x, of);
    if p > (oomscope_report::IMPOSSIBLE_OVER_LIMIT * 100) as f64 {
        // 25713486054% says nothing a reader can use.
        "far over 100%".to_string()
    } else if p > 0.0 && p < 1.0 {
        format!("{p:.2}%")
    } else {
        format!("{p:.0}%")
    }
}

/// A count that may be an average, for sentences: `20` when whole (an
/// average of whole counts usually is), else one decimal (`2.5`).
pub(crate) fn count_text(n: f64) -> String {
    if (n - n.round()).abs() < 0.05 {
        format!("{:.0}", n.round())
    } else {
        format!("{n:.1}")
    }
}

/// `1 allocation`, `20 allocations`, `2.5 allocations`.
pub(crate) fn counted(n: f64, one: &str, many: &str) -> String {
    let text = count_text(n);
    format!("{text} {}", if text == "1" { one } else { many })
}

pub(crate) fn gib(bytes: u64) -> String {
    oomscope_report::units::format_bytes(bytes)
}

pub(crate) fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        text.to_string()
    } else {
        let cut: String = text.chars().take(max_chars).collect();
        format!("{cut}…")
    }
}

/// Σ of byte counts, saturating (sizes come from untrusted input).
pub(crate) fn total(sizes: impl IntoIterator<Item = u64>) -> u64 {
    sizes.into_iter().fold(0, u64::saturating_add)
}

/// Saturating `u64` → `i64` for estimates.
pub(crate) fn signed(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}
