//! Kineto Chrome traces (`*.pt.trace.json`): their `[memory]` events, as
//! memory timelines per device.

use super::{Offer, Out, Reader};
use crate::InputFile;
use oomscope_report::InputKind;

pub struct Kineto;

impl Reader for Kineto {
    fn name(&self) -> &'static str {
        "kineto_trace"
    }

    fn recognises(&self, input: &Offer) -> bool {
        let head = &input.data[..input.data.len().min(64 * 1024)];
        oomscope_runtime::is_chrome_trace(head)
    }

    fn read(&mut self, file: &InputFile, _explicit: bool, out: &mut Out) -> InputKind {
        match oomscope_runtime::read_kineto_trace(&file.name, &file.data) {
            Ok(t) => out.report.memory_timelines.extend(t),
            Err(e) => out.error(&file.name, e.to_string()),
        }
        InputKind::MemoryTimeline
    }
}
