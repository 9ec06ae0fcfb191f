//! Bytes dropped as an archive (`x.zip`, `x.tar.gz`, `x.gz`) → the whole
//! facade pipeline: expansion under limits, sniffing, every decoder, diagnosis.
#![no_main]
use libfuzzer_sys::fuzz_target;
use oomscope_analyzer::{analyze, InputFile};

fuzz_target!(|data: &[u8]| {
    for name in ["x.zip", "x.tar.gz", "x.gz"] {
        let file = InputFile {
            name: name.to_string(),
            data: data.to_vec(),
        };
        let _ = analyze(vec![file], &mut |_| {});
    }
});
