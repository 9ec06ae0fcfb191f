//! PyTorch CUDA memory snapshots: the pickles of
//! `torch.cuda.memory._dump_snapshot()` (and `torch.cuda.memory_snapshot()`),
//! the files of pytorch.org/memory_viz.
//!
//! - [`unpickle`]: a streaming plain-data unpickler (protocols 2 to 5) that
//!   refuses code and never allocates beyond the input;
//! - [`compact`] + [`build`]: the trace as compact columns ([`model`]);
//! - [`timeline`]: MemoryViz.js's Active Memory and Cached Segment Timelines;
//! - [`segsum`]: the state at snapshot time, as `_memory_viz.py segsum`;
//! - [`analysis`]: per device, the report's `MemorySnapshot` with findings.

pub mod analysis;
pub mod build;
pub mod compact;
pub mod error;
pub mod frames;
pub mod input;
pub mod model;
pub mod segsum;
pub mod timeline;
pub mod unpickle;
pub mod value;

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
    build::build(top, compactor).map_err(|problem| SnapshotError { input: input.to_string(), offset: None, problem })
}

/// Every device of a decoded snapshot that has a trace or segments.
pub fn analyze_snapshot(input: &str, snap: &Snapshot) -> Vec<MemorySnapshot> {
    (0..snap.device_count()).map(|d| analysis::analyze_device(input, snap, d)).collect()
}

/// [`read_snapshot`] then [`analyze_snapshot`].
pub fn analyze<R: Read>(input: &str, reader: R, len: u64) -> Result<Vec<MemorySnapshot>, SnapshotError> {
    let snap = read_snapshot(input, reader, len)?;
    Ok(analyze_snapshot(input, &snap))
}
