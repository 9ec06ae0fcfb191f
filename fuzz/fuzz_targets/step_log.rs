//! Training log / CSV text → step series → trend analysis.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = oomscope_steps::looks_like_step_log(&text);
    for mut series in oomscope_steps::parse_step_log("fuzz.log", &text) {
        oomscope_steps::analyze_series(&mut series);
    }
});
