//! PyTorch `export_memory_timeline` JSON (raw, or `[times, sizes]`).

use super::{Offer, Out, Reader};
use crate::InputFile;
use oomscope_report::InputKind;

pub struct MemoryTimeline;

impl Reader for MemoryTimeline {
    fn name(&self) -> &'static str {
        "memory_timeline"
    }

    /// A `.json` name, or a text that starts as a list of lists, whose
    /// form PyTorch writes.
    fn recognises(&self, input: &Offer) -> bool {
        let head = &input.data[..input.data.len().min(64 * 1024)];
        let starts_as_list_of_lists = head
            .iter()
            .filter(|b| !b.is_ascii_whitespace())
            .take(2)
            .eq(b"[[".iter());
        (input.base.ends_with(".json") || starts_as_list_of_lists)
            && oomscope_runtime::torch_timeline_form(input.data).is_some()
    }

    fn read(&mut self, file: &InputFile, _explicit: bool, out: &mut Out) -> InputKind {
        match oomscope_runtime::read_memory_timeline(&file.name, &file.data) {
            Ok(t) => out.report.memory_timelines.push(t),
            Err(e) => out.error(&file.name, e.to_string()),
        }
        InputKind::MemoryTimeline
    }
}
