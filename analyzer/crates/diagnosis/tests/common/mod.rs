//! Shared by the real-data tests: whole folders and files run through the
//! whole pipeline (`oomscope_analyzer::analyze`), as the CLI and the app do.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use oomscope_analyzer::{analyze, InputFile};
use oomscope_report::{Diagnosis, DiagnosisNode, Report};

pub fn corpus() -> PathBuf {
    oomscope_testdata::corpus()
}

pub fn fixtures() -> PathBuf {
    oomscope_testdata::fixtures()
}

pub fn samples() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../logs/tests/samples"
    ))
}

fn input(path: &Path) -> InputFile {
    InputFile {
        name: path.file_name().unwrap().to_string_lossy().into_owned(),
        data: std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    }
}

/// The report of one file.
pub fn analyze_file(path: &Path) -> Report {
    analyze(vec![input(path)], &mut |_| {})
}

/// The report of every plain file of a folder, as if dropped together.
pub fn analyze_dir(dir: &Path) -> Report {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    analyze(paths.iter().map(|p| input(p)).collect(), &mut |_| {})
}

pub fn node<'a>(d: &'a Diagnosis, id: &str) -> &'a DiagnosisNode {
    d.nodes.iter().find(|n| n.id == id).unwrap_or_else(|| {
        panic!(
            "no node {id} in {:?}",
            d.nodes.iter().map(|n| &n.id).collect::<Vec<_>>()
        )
    })
}

pub fn within_25_percent(estimate: u64, real: u64, what: &str) {
    let err = (estimate as f64 - real as f64).abs() / real as f64;
    eprintln!(
        "{what}: estimate {estimate} vs real {real} ({:+.1}%)",
        (estimate as f64 / real as f64 - 1.0) * 100.0
    );
    assert!(
        err <= 0.25,
        "{what}: estimate {estimate} vs real {real} ({:.0}% off)",
        err * 100.0
    );
}
