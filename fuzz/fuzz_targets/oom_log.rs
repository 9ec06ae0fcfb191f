//! OOM error log text → `oomscope_logs::parse_oom_log`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = oomscope_logs::looks_like_oom_log(&text);
    let _ = oomscope_logs::parse_oom_log("fuzz.log", &text);
});
