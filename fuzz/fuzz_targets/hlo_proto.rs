//! `xla.HloProto` bytes (an XLA dump's `*.hlo.pb`) → Memory Viewer analysis.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = oomscope_xla::analyze_hlo_proto("fuzz.hlo.pb", data);
});
