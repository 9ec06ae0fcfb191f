//! Shared helpers of the facade's integration tests: where the real data is
//! and how to load a folder the way the CLI and the app do.

// Each test binary uses some of these helpers.
#![allow(dead_code)]

use oomscope_analyzer::InputFile;
use std::path::{Path, PathBuf};

/// The shared corpus (`oomscope_testdata`: `../shared/corpus`, or `OOMSCOPE_CORPUS`).
pub fn corpus() -> PathBuf {
    oomscope_testdata::corpus()
}

/// The project's committed fixtures.
pub fn fixtures() -> PathBuf {
    oomscope_testdata::fixtures()
}

/// Every file below `dir`, named `<dir name>/<relative path>` as when a folder is dropped.
pub fn load_folder(dir: &Path) -> Vec<InputFile> {
    let base = dir.file_name().unwrap().to_string_lossy().into_owned();
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push(InputFile {
                    name: format!("{base}/{rel}"),
                    data: std::fs::read(&p).unwrap(),
                });
            }
        }
    }
    out
}

/// Fixture folders (each one compiler or profiler run). `corpus-oracles/`
/// is not one: it holds XProf's answers for the corpus's inputs, which stay in
/// the corpus (`oomscope-xla`'s oracle test reads both).
pub fn fixture_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !p.ends_with("corpus-oracles"))
        .collect();
    dirs.sort();
    dirs
}

/// `oomscope analyze --json PATH...` run as a user runs it, its report as
/// JSON; the test fails with the command's stderr when it does not succeed.
pub fn cli_analyze_json<P: AsRef<std::ffi::OsStr>>(paths: &[P]) -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .args(["analyze", "--json"])
        .args(paths)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
