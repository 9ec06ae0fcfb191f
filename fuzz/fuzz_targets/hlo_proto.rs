//! `xla.HloProto` bytes (an XLA dump's `*.hlo.pb`) → Memory Viewer analysis
//! and the what-if programs, as the CLI and the page read one (the programs
//! walk the module decoded with prost beside the lazy view).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(hlo) = oomscope_xla::decode_hlo_proto("fuzz.hlo.pb", data) {
        let _ = oomscope_xla::analyze_hlo_with_programs("fuzz.hlo.pb", &hlo, None);
    }
});
