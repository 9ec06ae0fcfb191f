//! Any other text, routed by content (users paste logs into files with any
//! name): OOM messages (`oomscope-logs`), memory per step
//! (`oomscope-steps`), the memory usage lines of a compile that fit.

use super::{is_companion, Offer, Out, Reader};
use crate::InputFile;
use oomscope_report::{InputKind, Report};

#[derive(Default)]
pub struct Text {
    /// Texts named on their own in which nothing was found.
    empty: Vec<String>,
}

impl Reader for Text {
    fn name(&self) -> &'static str {
        "text"
    }

    /// Everything the readers before it declined.
    fn recognises(&self, _input: &Offer) -> bool {
        true
    }

    fn read(&mut self, file: &InputFile, explicit: bool, out: &mut Out) -> InputKind {
        let text = String::from_utf8_lossy(&file.data);
        let events = oomscope_logs::parse_oom_log(&file.name, &text);
        let mut series = oomscope_steps::parse_step_log(&file.name, &text);
        let usages = oomscope_logs::parse_compile_usage(&file.name, &text);
        let kind = if !events.is_empty() {
            InputKind::OomLog
        } else if !series.is_empty() {
            InputKind::StepLog
        } else if !usages.is_empty() {
            InputKind::CompileLog
        } else {
            InputKind::Unknown
        };
        if kind == InputKind::Unknown && explicit && !is_companion(&file.name) {
            self.empty.push(file.name.clone());
        }
        for s in &mut series {
            oomscope_steps::analyze_series(s);
        }
        out.report.oom_events.extend(events);
        out.report.step_series.extend(series);
        out.report.compile_usages.extend(usages);
        kind
    }

    /// A text with nothing to read (the log of a compile that fit, beside
    /// its HloProto) is a problem only when nothing else in the drop
    /// describes memory; otherwise it was read and had nothing to analyse,
    /// as a dump's companion files. Last in the list: every other reader
    /// has added what it read.
    fn finish(&mut self, out: &mut Out) {
        if describes_memory(out.report) {
            return;
        }
        for name in std::mem::take(&mut self.empty) {
            out.error(
                &name,
                format!(
                    "{name}: no out-of-memory error, XLA dump or memory-per-step data found in this text"
                ),
            );
        }
    }
}

/// Whether anything in the report describes memory use.
fn describes_memory(report: &Report) -> bool {
    !report.oom_events.is_empty()
        || !report.modules.is_empty()
        || !report.step_series.is_empty()
        || !report.allocator_profiles.is_empty()
        || !report.memory_snapshots.is_empty()
        || !report.device_memory_profiles.is_empty()
        || !report.memory_timelines.is_empty()
        || !report.compile_usages.is_empty()
}
