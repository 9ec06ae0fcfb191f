//! Every file of `../shared/corpus/runtime/` loads, with the numbers checked
//! against an independent reading (`tools/fixtures/runtime_oracle.py`, saved
//! in `tests/oracle/corpus.json`): pprof totals per label as `go tool pprof`
//! sums them, timeline peaks as PyTorch's `_coalesce_timeline` computes them,
//! Kineto running totals per device.

use oomscope_runtime::{read_device_memory_profile, read_kineto_trace, read_memory_timeline};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    oomscope_testdata::corpus().join("runtime")
}

fn oracle() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/corpus.json"),
    )
    .unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

#[test]
fn every_corpus_file_loads_with_the_oracles_numbers() {
    let dir = corpus_dir();
    if !dir.exists() {
        eprintln!("skipped: {} is not here", dir.display());
        return;
    }
    let oracle = oracle();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "INDEX.md")
        .collect();
    names.sort();
    assert_eq!(
        names.len(),
        oracle.len(),
        "every corpus file has oracle numbers"
    );
    let mut checked = 0;
    for name in &names {
        let data = std::fs::read(dir.join(name)).unwrap();
        let want = &oracle[name];
        if name.ends_with(".raw.json.gz") {
            let t = read_memory_timeline(name, &data).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(t.events, u(&want["events"]), "{name}: events");
            assert_eq!(t.peak_bytes, u(&want["peak_bytes"]), "{name}: peak");
            assert_eq!(
                t.peak_time,
                want["peak_time"].as_i64().unwrap(),
                "{name}: peak time"
            );
            assert_eq!(t.final_bytes, u(&want["final_bytes"]), "{name}: final");
            for (category, bytes) in want["peak_by_category"].as_object().unwrap() {
                assert_eq!(
                    t.peak_by_category[category],
                    u(bytes),
                    "{name}: {category} at the peak"
                );
            }
            assert!(t.points.len() <= 2049);
        } else if name.ends_with(".pt.trace.json.gz") {
            let timelines = read_kineto_trace(name, &data).unwrap_or_else(|e| panic!("{e}"));
            let want = want.as_array().unwrap();
            assert_eq!(timelines.len(), want.len(), "{name}: devices");
            for (t, w) in timelines.iter().zip(want) {
                assert_eq!(t.events, u(&w["events"]), "{name} {}: events", t.device);
                assert_eq!(
                    t.peak_bytes,
                    u(&w["peak_bytes"]),
                    "{name} {}: peak",
                    t.device
                );
                assert_eq!(
                    t.peak_time,
                    w["peak_time"].as_i64().unwrap(),
                    "{name} {}: peak time",
                    t.device
                );
                assert_eq!(
                    t.final_bytes,
                    u(&w["final_bytes"]),
                    "{name} {}: final",
                    t.device
                );
            }
        } else {
            let p = read_device_memory_profile(name, &data)
                .unwrap_or_else(|e| panic!("{e}"))
                .profile;
            assert_eq!(
                p.buffer_bytes,
                u(&want["buffer_bytes"]),
                "{name}: buffer bytes"
            );
            assert_eq!(
                p.buffer_count,
                u(&want["buffer_count"]),
                "{name}: buffer count"
            );
            assert_eq!(
                p.executable_bytes,
                u(&want["executable_bytes"]),
                "{name}: executable bytes"
            );
            assert_eq!(
                p.executable_count,
                u(&want["executable_count"]),
                "{name}: executable count"
            );
            assert_eq!(
                p.executable_size_unknown_count,
                u(&want["executable_size_unknown_count"]),
                "{name}: executables of unknown size"
            );
            let devices = want["devices"].as_object().unwrap();
            assert_eq!(p.devices.len(), devices.len(), "{name}: devices");
            for d in &p.devices {
                assert_eq!(
                    d.buffer_bytes,
                    u(&devices[&d.device]["buffer_bytes"]),
                    "{name} {}: bytes",
                    d.device
                );
                assert_eq!(
                    d.buffer_count,
                    u(&devices[&d.device]["buffer_count"]),
                    "{name} {}: count",
                    d.device
                );
            }
            // Stacks and lines account for every byte they can: the largest
            // stack is at most the total, the top lines' bytes never exceed it.
            let total = p.buffer_bytes + p.executable_bytes;
            assert!(
                p.top_stacks
                    .first()
                    .is_some_and(|s| s.bytes <= total && s.bytes > 0),
                "{name}: top stack"
            );
            assert!(
                p.top_lines.iter().map(|l| l.bytes).sum::<u64>() <= total,
                "{name}: lines"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 13);
}

#[test]
fn tpu_profiles_name_eight_devices_and_their_balance() {
    let dir = corpus_dir();
    if !dir.exists() {
        return;
    }
    let name = "sholtodouglas__scalingExperiments__memory.prof";
    let p = read_device_memory_profile(name, &std::fs::read(dir.join(name)).unwrap())
        .unwrap()
        .profile;
    assert_eq!(
        p.devices.len(),
        8,
        "{:?}",
        p.devices.iter().map(|d| &d.device).collect::<Vec<_>>()
    );
    assert!(
        p.devices.iter().all(|d| d.device.starts_with("TPU_")),
        "{:?}",
        p.devices
    );
    let balance = p.balance.expect("8 devices have a balance");
    assert_eq!(balance.devices, 8);
    assert!(balance.min_bytes <= balance.mean_bytes && balance.mean_bytes <= balance.max_bytes);
}
