//! The text files of an XLA dump folder (HLO text, buffer assignment, live
//! ranges, memory usage report), recognised by name; read together once
//! every input is read, since a module's files complete each other. A
//! module with live ranges also gives its program to the what-if replay.

use super::{Offer, Out, Reader};
use crate::{InputFile, Progress};
use oomscope_report::InputKind;

#[derive(Default)]
pub struct Dump {
    texts: Vec<(String, String)>,
}

impl Reader for Dump {
    fn name(&self) -> &'static str {
        "xla_dump_text"
    }

    fn recognises(&self, input: &Offer) -> bool {
        oomscope_dump::is_dump_file(input.name)
    }

    fn read(&mut self, file: &InputFile, _explicit: bool, _out: &mut Out) -> InputKind {
        // Valid UTF-8 (all XLA writes) is checked by the faster of std's
        // two validators; only other bytes are replaced, as before.
        let text = match std::str::from_utf8(&file.data) {
            Ok(text) => text.to_owned(),
            Err(_) => String::from_utf8_lossy(&file.data).into_owned(),
        };
        self.texts.push((file.name.clone(), text));
        InputKind::XlaDumpText
    }

    fn finish(&mut self, out: &mut Out) {
        if self.texts.is_empty() {
            return;
        }
        (out.progress)(Progress {
            input: "XLA dump".into(),
            done_bytes: out.done_bytes,
            total_bytes: out.total_bytes,
            stage: "analysing dump".into(),
        });
        let borrowed: Vec<(&str, &str)> = self
            .texts
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        let (modules, errors, programs) = oomscope_dump::analyze_dump_keeping_programs(&borrowed);
        let kept = merge_dump_modules(out.report, modules);
        // A module's program from the text, unless its HloProto gave one
        // (the proto's report and program win together).
        out.programs
            .extend(programs.into_iter().filter(|p| kept.contains(&p.module)));
        out.report.errors.extend(errors);
    }
}

/// A module present both as HloProto and as dump text is reported once: the
/// proto analysis (it is what XProf shows) wins, and keeps the compiler's own
/// peak from the text when the proto lacks it. Twins are recognised by
/// folder and `module_NNNN` prefix, so equally named modules of different
/// dumps stay apart.
/// Returns the names of the text modules kept (those without a twin).
fn merge_dump_modules(
    report: &mut oomscope_report::Report,
    text_modules: Vec<oomscope_report::ModuleReport>,
) -> std::collections::HashSet<String> {
    let mut kept = std::collections::HashSet::new();
    for text in text_modules {
        let key = dump_module_key(&text.input);
        let twin = report.modules.iter_mut().find(|m| {
            m.source_kind == oomscope_report::SourceKind::HloProto
                && m.memory_space == text.memory_space
                && dump_module_key(&m.input) == key
        });
        match twin {
            Some(proto) => {
                if proto.compiler_peak_bytes.is_none() {
                    proto.compiler_peak_bytes = text.compiler_peak_bytes;
                }
            }
            None => {
                kept.insert(text.display_name());
                report.modules.push(text)
            }
        }
    }
    kept
}

/// `dir/module_0000.jit_f.cl_1.after_optimizations.txt, …` → `("dir", "module_0000")`.
fn dump_module_key(inputs: &str) -> (String, String) {
    let first = inputs.split(", ").next().unwrap_or(inputs);
    let (dir, base) = first.rsplit_once('/').unwrap_or(("", first));
    (
        dir.to_string(),
        base.split('.').next().unwrap_or(base).to_string(),
    )
}
