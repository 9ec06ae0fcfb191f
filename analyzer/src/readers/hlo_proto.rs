//! HloProtos (`*.hlo.pb`, `--xla_dump_hlo_as_proto`): the Memory Viewer of
//! each module, and the program the what-if engine replays.

use super::{Offer, Out, Reader};
use crate::InputFile;
use oomscope_report::InputKind;

#[derive(Default)]
pub struct HloProto {
    /// Folders where an HloProto with a buffer assignment was read.
    read_in: Vec<String>,
    /// HloProtos without one (name, message), said in `finish` unless their
    /// folder had a readable one: XLA's `--xla_dump_hlo_as_proto` writes
    /// `*.before_optimizations.hlo.pb` (no buffer assignment yet) beside
    /// every `*.after_optimizations.hlo.pb`, and a dump folder is not wrong
    /// for holding both. A lone one is still an error, saying what to dump.
    unassigned: Vec<(String, String)>,
}

fn folder_of(name: &str) -> &str {
    name.rfind('/').map_or("", |i| &name[..i])
}

impl Reader for HloProto {
    fn name(&self) -> &'static str {
        "hlo_proto"
    }

    /// By name: a protobuf has no magic number.
    fn recognises(&self, input: &Offer) -> bool {
        let base = input.base;
        base.ends_with(".hlo.pb") || base.ends_with(".hlo_proto.pb") || base.ends_with(".hloproto")
    }

    fn read(&mut self, file: &InputFile, _explicit: bool, out: &mut Out) -> InputKind {
        // Decoded once: the Memory Viewer analysis, and the program the
        // what-if engine replays.
        let analysed = oomscope_xla::decode_hlo_proto(&file.name, &file.data).and_then(|hlo| {
            let (modules, programs) =
                oomscope_xla::analyze_hlo_with_programs(&file.name, &hlo, None)?;
            out.programs.extend(programs);
            Ok(modules)
        });
        match analysed {
            Ok(modules) => {
                self.read_in.push(folder_of(&file.name).to_string());
                out.report.modules.extend(modules);
            }
            Err(e) if e.kind == oomscope_xla::XlaErrorKind::NoBufferAssignment => {
                self.unassigned.push((file.name.clone(), e.to_string()));
            }
            Err(e) => out.error(&file.name, e.to_string()),
        }
        InputKind::HloProto
    }

    fn finish(&mut self, out: &mut Out) {
        for (name, message) in std::mem::take(&mut self.unassigned) {
            if !self.read_in.iter().any(|f| f == folder_of(&name)) {
                out.error(&name, message);
            }
        }
    }
}
