//! PyTorch memory snapshots (`_dump_snapshot` pickles), streamed: one
//! `memory_snapshots[]` entry per device, and its OOM (if any) in
//! `oom_events[]`.

use super::{Access, Offer, Out, Reader};
use crate::{InputFile, ReadAt};
use oomscope_report::InputKind;

pub struct Snapshot;

impl Reader for Snapshot {
    fn name(&self) -> &'static str {
        "memory_snapshot"
    }

    /// Pickles by content (PROTO 2..5), or by name when no bytes are given
    /// yet (sources read by slices are offered before they are read).
    fn recognises(&self, input: &Offer) -> bool {
        let pickle_name = input.base.ends_with(".pickle") || input.base.ends_with(".pkl");
        oomscope_snapshot::looks_like_pickle(input.data) || (pickle_name && input.data.is_empty())
    }

    fn access(&self) -> Access {
        Access::Slices
    }

    fn analysed_alone(&self) -> bool {
        true
    }

    fn read(&mut self, file: &InputFile, _explicit: bool, out: &mut Out) -> InputKind {
        read_snapshot(&file.name, &file.data[..], file.data.len() as u64, out);
        InputKind::MemorySnapshot
    }

    fn read_slices(&mut self, name: &str, src: &dyn ReadAt, out: &mut Out) -> InputKind {
        let reader = oomscope_xla::source::SequentialReader::new(src);
        read_snapshot(name, reader, src.len(), out);
        InputKind::MemorySnapshot
    }
}

fn read_snapshot(name: &str, reader: impl std::io::Read, len: u64, out: &mut Out) {
    match oomscope_snapshot::analyze(name, reader, len) {
        Ok(devices) => {
            out.report
                .oom_events
                .extend(devices.iter().filter_map(oomscope_snapshot::oom_event));
            out.report.memory_snapshots.extend(devices);
        }
        Err(e) => out.error(name, e.to_string()),
    }
}
