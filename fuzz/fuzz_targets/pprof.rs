//! JAX device memory profile bytes (pprof `profile.proto`, plain or gzipped)
//! → the checked decoder, the per-device summary, and the series analysis
//! (the input read twice under step-numbered names).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(profile) = oomscope_runtime::read_device_memory_profile("memory_1.prof", data) {
        let mut second = profile.clone();
        second.profile.input = "memory_2.prof".into();
        let _ = oomscope_runtime::device_memory_series(&[profile, second]);
    }
});
