//! Permalink text (a URL, `#r=…` fragment) → report; a decoded report is
//! diagnosed and encoded again, as the app does with a shared link.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(report) = oomscope_permalink::decode(&text) {
        let _ = oomscope_diagnosis::diagnose(&report);
        let _ = oomscope_permalink::encode_link(&report, "https://example.org/oomscope/");
    }
});
