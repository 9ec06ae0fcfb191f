//! Run-time memory profiles through the facade (issue 17): gzipped pprof and
//! JSON timelines reach the runtime crate whatever their names, profiles of
//! one run become a series with its leak, and the CLI prints them.

mod common;

use common::*;
use oomscope_analyzer::{analyze, InputFile};
use oomscope_report::{InputKind, Report, TimelineSource};

fn run(files: Vec<InputFile>) -> Report {
    analyze(files, &mut |_| {})
}

fn file(path: &std::path::Path, name: &str) -> InputFile {
    InputFile {
        name: name.into(),
        data: std::fs::read(path).unwrap(),
    }
}

#[test]
fn the_fixture_folder_gives_five_profiles_and_the_leaking_series() {
    let report = run(load_folder(&fixtures().join("jax-memory-profiles")));
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.device_memory_profiles.len(), 5);
    assert_eq!(
        report
            .inputs
            .iter()
            .filter(|i| i.kind == InputKind::DeviceMemoryProfile)
            .count(),
        5
    );
    assert_eq!(report.device_memory_series.len(), 1);
    let series = &report.device_memory_series[0];
    assert_eq!(series.inputs.len(), 3);
    assert!(
        series.inputs[0].ends_with("memory_step_20.prof"),
        "{:?}",
        series.inputs
    );
    assert_eq!(series.growing_stacks[0].frame.function, "leak_8dev");
}

#[test]
fn every_runtime_corpus_file_loads_through_the_facade() {
    let dir = corpus().join("runtime");
    if !dir.exists() {
        return;
    }
    let files: Vec<InputFile> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != "INDEX.md")
        .map(|e| file(&e.path(), &e.file_name().to_string_lossy()))
        .collect();
    let report = run(files);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    // 7 pprof (one named `memory.prof@664e8b17`, found by content), 4 raw
    // timelines and 2 Kineto traces of 2 devices each.
    assert_eq!(report.device_memory_profiles.len(), 7);
    let of = |s: TimelineSource| {
        report
            .memory_timelines
            .iter()
            .filter(|t| t.source == s)
            .count()
    };
    assert_eq!(of(TimelineSource::TorchMemoryTimelineRaw), 4);
    assert_eq!(of(TimelineSource::Kineto), 4);
}

#[test]
fn a_gzipped_pprof_is_found_by_content_and_a_truncated_one_is_named() {
    let path = fixtures().join("jax-memory-profiles/mlp_1dev.prof");
    let report = run(vec![file(&path, "heap.pb.gz")]);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.device_memory_profiles.len(), 1);

    let mut data = std::fs::read(&path).unwrap();
    data.truncate(data.len() / 2);
    let report = run(vec![InputFile {
        name: "memory.prof".into(),
        data,
    }]);
    assert!(report.device_memory_profiles.is_empty());
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    assert!(
        report.errors[0].message.starts_with("memory.prof"),
        "{:?}",
        report.errors
    );
}

#[test]
fn the_cli_prints_the_series_with_the_leaking_line() {
    let dir = fixtures().join("jax-memory-profiles/leak");
    let paths: Vec<String> = [20, 40, 60]
        .iter()
        .map(|s| {
            dir.join(format!("memory_step_{s}.prof"))
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let report: Report = serde_json::from_value(cli_analyze_json(&paths)).unwrap();
    assert_eq!(report.device_memory_profiles.len(), 3);
    let leak = &report.device_memory_series[0].growing_stacks[0];
    assert!(
        leak.frame.file.ends_with("jax_memory_profiles.py"),
        "{:?}",
        leak.frame
    );
    assert!(leak.frame.line > 0);
    assert_eq!(leak.bytes_per_profile.len(), 3);
}
