//! Helpers shared by the what-if tests.
#![allow(dead_code)] // (each test file uses some of them)

use std::path::{Path, PathBuf};

/// Every file under `dir` whose name ends with `suffix`, recursively.
pub fn files_ending(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_ending(&p, suffix, out);
        } else if p.to_string_lossy().ends_with(suffix) {
            out.push(p);
        }
    }
}

/// The device-memory (HBM) program of an HloProto file, if it has one.
pub fn device_program(path: &Path) -> Option<oomscope_report::program::HeapProgram> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).ok()?;
    let hlo = oomscope_xla::decode_hlo_proto(&name, &bytes).ok()?;
    oomscope_xla::heap_programs(&name, &hlo, None)
        .ok()?
        .into_iter()
        .find(|p| p.memory_space == oomscope_report::MemoryColor::Device)
}
