//! The `oomscope` command line, run as a user runs it: the JSON report of a
//! folder (with its XProf profile read by slices) equals the library's
//! analysis of the same files; `--link` prints a link that decodes to the
//! same verdict; `size` prints the compiler's sizes; bad paths and options
//! give clear errors and the documented exit codes.

mod common;

use common::*;
use std::process::{Command, Output};

fn oomscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oomscope")).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn analyze_json_equals_the_library_on_a_profile_folder() {
    let dir = fixtures().join("cpu-profile");
    let out = oomscope(&["analyze", dir.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cli: oomscope_report::Report = serde_json::from_str(&stdout(&out)).unwrap();
    let lib = oomscope_analyzer::analyze(load_folder(&dir), &mut |_| {});
    let modules = |r: &oomscope_report::Report| {
        let mut m: Vec<_> = r.modules.iter().map(|m| (m.display_name(), m.memory_space, m.peak_bytes, m.heap_bytes.clone(), m.peak_buffers.len())).collect();
        m.sort();
        m
    };
    assert!(!cli.modules.is_empty());
    assert_eq!(modules(&cli), modules(&lib));
    let names = |r: &oomscope_report::Report| {
        let mut n: Vec<_> = r.inputs.iter().map(|i| (i.name.clone(), i.kind.as_str(), i.size_bytes)).collect();
        n.sort();
        n
    };
    assert_eq!(names(&cli), names(&lib));
    assert_eq!(cli.diagnosis.path, lib.diagnosis.path);
}

#[test]
fn analyze_link_decodes_to_the_same_verdict() {
    let log = corpus().join("logs/01_tpu_compile_hbm.txt");
    let out = oomscope(&["analyze", log.to_str().unwrap(), "--link", "--base-url", "https://example.org/oomscope/"]);
    assert!(out.status.success());
    let text = stdout(&out);
    let link = text.lines().find(|l| l.starts_with("https://example.org/oomscope/#r=1.")).unwrap_or_else(|| panic!("no link in {text}"));
    let shared = oomscope_permalink::decode(link).unwrap();
    let direct = oomscope_analyzer::analyze(vec![oomscope_analyzer::InputFile { name: "01_tpu_compile_hbm.txt".into(), data: std::fs::read(&log).unwrap() }], &mut |_| {});
    assert_eq!(shared.oom_events[0].used_bytes, direct.oom_events[0].used_bytes);
    assert_eq!(shared.oom_events[0].limit_bytes, direct.oom_events[0].limit_bytes);
    assert_eq!(shared.diagnosis.path, direct.diagnosis.path);
}

#[test]
fn size_prints_the_padded_and_unpadded_bytes() {
    // 129 rows pad to 136 (8-row tiles): 136 × 1024 × 4 bytes.
    let out = oomscope(&["size", "f32[129,1024]{1,0:T(8,128)}", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let first = if v.is_array() { &v[0] } else { &v };
    assert_eq!(first["padded_bytes"], 136 * 1024 * 4, "{v}");
    assert_eq!(first["unpadded_bytes"], 129 * 1024 * 4, "{v}");
}

#[test]
fn bad_paths_and_options_are_clear_errors() {
    let out = oomscope(&["analyze", "/nonexistent/oom.log"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/oom.log"));
    let out = oomscope(&["analyze", "--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown option --frobnicate"));
    assert_eq!(oomscope(&[]).status.code(), Some(2));
}
