//! HloProtos (`*.hlo.pb`, `--xla_dump_hlo_as_proto`): the Memory Viewer of
//! each module, and the program the what-if engine replays.

use super::{Offer, Out, Reader};
use crate::InputFile;
use oomscope_report::InputKind;

pub struct HloProto;

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
            let modules = oomscope_xla::analyze_hlo(&file.name, &hlo, None)?;
            if let Ok(p) = oomscope_xla::heap_programs(&file.name, &hlo, None) {
                out.programs.extend(p);
            }
            Ok(modules)
        });
        match analysed {
            Ok(modules) => out.report.modules.extend(modules),
            Err(e) => out.error(&file.name, e.to_string()),
        }
        InputKind::HloProto
    }
}
