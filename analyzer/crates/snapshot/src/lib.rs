//! PyTorch CUDA memory snapshots: the pickles of
//! `torch.cuda.memory._dump_snapshot()` (and `torch.cuda.memory_snapshot()`),
//! the files of pytorch.org/memory_viz.
//!
//! - [`unpickle`]: a streaming plain-data unpickler (protocols 2 to 5) that
//!   refuses code and never allocates beyond the input;
//! - [`compact`] + [`build`]: the trace as compact columns ([`model`]);
//! - [`timeline`]: MemoryViz.js's Active Memory and Cached Segment Timelines;
//! - [`curve`]: that timeline downsampled for drawing, and the phases;
//! - [`segsum`]: the state at snapshot time, as `_memory_viz.py segsum`;
//! - [`analysis`]: per device, the report's `MemorySnapshot` with findings;
//! - [`whatif`]: the trace replayed with a change (issue 25).

pub mod analysis;
pub mod build;
pub mod compact;
pub mod curve;
pub mod error;
pub mod frames;
pub mod input;
pub mod memo;
pub mod model;
pub mod segsum;
pub mod shape;
pub mod timeline;
pub mod unpickle;
pub mod value;
pub mod whatif;

use std::io::Read;

pub use error::{Problem, SnapshotError};
pub use model::Snapshot;
use oomscope_report::MemorySnapshot;

/// A pickle of protocol 2 to 5 starts with `PROTO n`.
pub fn looks_like_pickle(head: &[u8]) -> bool {
    matches!(head, [0x80, 2..=5, ..])
}

/// Decodes a snapshot streamed from `reader` (`len` bytes). `input` names the
/// file in errors.
pub fn read_snapshot<R: Read>(input: &str, reader: R, len: u64) -> Result<Snapshot, SnapshotError> {
    let mut compactor = compact::Compactor::new();
    let top = unpickle::unpickle(reader, len, &mut compactor).map_err(|e| e.named(input))?;
    build::build(top, compactor).map_err(|problem| SnapshotError {
        input: input.to_string(),
        offset: None,
        problem,
    })
}

/// Every device of a decoded snapshot that has trace entries or segments.
pub fn analyze_snapshot(input: &str, snap: &Snapshot) -> Vec<MemorySnapshot> {
    analysis::analyze_devices(input, snap)
}

/// [`read_snapshot`] then [`analyze_snapshot`].
pub fn analyze<R: Read>(
    input: &str,
    reader: R,
    len: u64,
) -> Result<Vec<MemorySnapshot>, SnapshotError> {
    let snap = read_snapshot(input, reader, len)?;
    Ok(analyze_snapshot(input, &snap))
}

/// [`read_snapshot`], [`analyze_snapshot`], then [`whatif::without_frame`]:
/// each device replayed without the allocations whose stack holds `frame`
/// (`function file:line`, as `top_lines_at_peak` names lines), with its
/// replayed curve.
pub fn without_frame<R: Read>(
    input: &str,
    reader: R,
    len: u64,
    frame: &str,
) -> Result<Vec<oomscope_report::whatif::ReplayedCurve>, SnapshotError> {
    let snap = read_snapshot(input, reader, len)?;
    let devices = analyze_snapshot(input, &snap);
    Ok(whatif::without_frame(&snap, &devices, frame))
}

/// The snapshot's OOM as an `oom_events[]` entry, so the rest of the report
/// (diagnosis, the OOM view, a CUDA OOM log of the same run) sees it like a log's.
pub fn oom_event(snapshot: &MemorySnapshot) -> Option<oomscope_report::OomEvent> {
    use oomscope_report::units::format_bytes;
    let oom = snapshot.oom.as_ref()?;
    let mut extra = std::collections::BTreeMap::new();
    extra.insert("cuda_device".to_string(), snapshot.device as u64);
    extra.insert("trace_event_index".to_string(), oom.event_index);
    Some(oomscope_report::OomEvent {
        kind: oomscope_report::OomKind::TorchCuda,
        memory_space: oomscope_report::MemorySpace::Gpu,
        input: snapshot.input.clone(),
        line: 0,
        repeats: 1,
        message: format!(
            "CUDA out of memory (memory snapshot, device {}): tried to allocate {}; CUDA had {} free; {} allocated, {} reserved",
            snapshot.device,
            format_bytes(oom.requested_bytes),
            format_bytes(oom.device_free_bytes),
            format_bytes(oom.allocated_bytes),
            format_bytes(oom.reserved_bytes)
        ),
        requested_bytes: Some(oom.requested_bytes),
        free_bytes: Some(oom.device_free_bytes),
        reserved_bytes: Some(oom.reserved_bytes),
        allocated_bytes: Some(oom.allocated_bytes),
        reserved_unallocated_bytes: Some(oom.reserved_bytes.saturating_sub(oom.allocated_bytes)),
        extra,
        top_allocations: oom
            .largest_live
            .iter()
            .enumerate()
            .map(|(i, a)| oomscope_report::TopAllocation {
                rank: i as u32 + 1,
                size_bytes: a.size_bytes,
                source: (!a.frame.is_empty()).then(|| a.frame.clone()),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    })
}
