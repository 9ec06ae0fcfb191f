//! PyTorch memory snapshot pickle → unpickler → snapshot → per-device analysis.
//!
//! Seeds (fuzz/corpus/snapshot/) are small snapshots of each generation
//! written by CPython's `pickle` (protocols 2 to 5): segments + device_traces
//! with every trace action, frames and annotations; PyTorch 2.0 history
//! blocks; a bare list of segments.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(devices) = oomscope_snapshot::analyze("fuzz.pickle", data, data.len() as u64) {
        for d in &devices {
            let _ = oomscope_snapshot::oom_event(d);
        }
    }
});
