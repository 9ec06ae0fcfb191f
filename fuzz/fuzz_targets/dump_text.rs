//! XLA dump text files → `oomscope_dump::analyze_dump`.
//!
//! The input is cut at NUL bytes into up to one part per dump file kind (HLO
//! text, buffer assignment, live range, memory-usage report, …), which are
//! analysed together as one module, the way a dump folder arrives. Then the
//! whole input is analysed alone under each kind's file name.
#![no_main]
use libfuzzer_sys::fuzz_target;

const NAMES: &[&str] = &[
    "module_0000.jit_f.after_optimizations.txt",
    "module_0000.jit_f.after_optimizations-buffer-assignment.txt",
    "module_0000.jit_f.after_optimizations-live-range.txt",
    "module_0000.jit_f.after_optimizations-memory-usage-report.txt",
    "module_0000.jit_f.after_optimizations-buffer-assignment-values.txt",
    "module_0000.jit_f.after_optimizations_after_buffer_assignment.txt",
];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let together: Vec<(&str, &str)> = NAMES.iter().copied().zip(text.split('\0')).collect();
    let _ = oomscope_dump::analyze_dump(&together);
    if together.len() > 1 {
        for name in NAMES {
            let _ = oomscope_dump::analyze_dump(&[(name, &text)]);
        }
    }
});
