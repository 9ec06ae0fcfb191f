//! XProf `XSpace` bytes (`*.xplane.pb`, plain or gzipped) → the plane reader
//! and the Memory Viewer analysis of every profiled module.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = oomscope_xla::analyze_xspace("fuzz.xplane.pb", &data, &mut |_, _| {});
    if let Ok(Some(plane)) =
        oomscope_xla::read_plane("fuzz.xplane.pb", &data, oomscope_xla::HOST_CPU_PLANE)
    {
        let _ = oomscope_xla::allocator_profiles_from_plane("fuzz.xplane.pb", &plane);
    }
});
