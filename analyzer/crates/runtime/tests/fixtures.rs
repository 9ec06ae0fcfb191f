//! The project's own JAX-on-CPU profiles (`fixtures/jax-memory-profiles/`,
//! made by `tools/fixtures/jax_memory_profiles.py`): totals equal the
//! independent reading in `expected.json`, the unbalanced shard and the leak
//! are found, and point at the generator's own source lines.

use oomscope_report::FrameKind;
use oomscope_runtime::{device_memory_series, read_device_memory_profile, DecodedDeviceProfile};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    oomscope_testdata::fixtures().join("jax-memory-profiles")
}

fn load(name: &str) -> DecodedDeviceProfile {
    let data = std::fs::read(fixtures().join(name)).unwrap();
    read_device_memory_profile(name, &data).unwrap_or_else(|e| panic!("{e}"))
}

/// 1-based line of the generator that contains `needle`.
fn generator_line(needle: &str) -> u32 {
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../tools/fixtures/jax_memory_profiles.py"),
    )
    .unwrap();
    let index = src
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} not in the generator"));
    index as u32 + 1
}

#[test]
fn totals_match_the_independent_reading() {
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap())
            .unwrap();
    let expected = expected.as_object().unwrap();
    assert_eq!(expected.len(), 5);
    for (name, want) in expected {
        let p = load(name).profile;
        assert_eq!(
            p.buffer_bytes,
            want["buffer_bytes"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            p.buffer_count,
            want["buffer_count"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            p.executable_count,
            want["executable_count"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            p.executable_bytes,
            want["executable_bytes"].as_u64().unwrap(),
            "{name}"
        );
        let devices = want["devices"].as_object().unwrap();
        assert_eq!(p.devices.len(), devices.len(), "{name}");
        for d in &p.devices {
            assert_eq!(
                d.buffer_bytes,
                devices[&d.device]["buffer_bytes"].as_u64().unwrap(),
                "{name} {}",
                d.device
            );
        }
    }
}

#[test]
fn the_user_line_comes_first_and_jax_internals_are_framework() {
    let p = load("mlp_1dev.prof").profile;
    let top = &p.top_lines[0];
    assert!(
        top.frame.file.ends_with("jax_memory_profiles.py"),
        "{:?}",
        top.frame
    );
    assert_eq!(top.frame.kind, FrameKind::Python);
    assert!(p
        .top_stacks
        .iter()
        .flat_map(|s| &s.frames)
        .any(|f| f.kind == FrameKind::Framework && f.file.contains("jax")));
}

#[test]
fn the_unbalanced_shard_stands_out_and_replicas_are_even() {
    let p = load("sharded_8dev.prof").profile;
    let balance = p.balance.expect("8 devices");
    assert_eq!(balance.devices, 8);
    assert_eq!(balance.heaviest_device, "cpu:3");
    assert!(
        balance.even_bytes > 0,
        "the replicated and the evenly sharded arrays are even"
    );
    let worst = &balance.uneven_stacks[0];
    assert_eq!(
        worst.frame.line,
        generator_line("extra_on_3 = jax.device_put")
    );
    assert_eq!(worst.bytes_by_device["cpu:3"], worst.max_bytes);
    assert_eq!(worst.bytes_by_device.len(), 8);
}

#[test]
fn the_leaking_loop_is_a_series_with_its_line() {
    // Given out of order: the step numbers order them.
    let profiles: Vec<DecodedDeviceProfile> = [60, 20, 40]
        .iter()
        .map(|s| load(&format!("leak/memory_step_{s}.prof")))
        .collect();
    let series = device_memory_series(&profiles);
    assert_eq!(series.len(), 1);
    let s = &series[0];
    assert_eq!(
        s.inputs,
        [
            "leak/memory_step_20.prof",
            "leak/memory_step_40.prof",
            "leak/memory_step_60.prof"
        ]
    );
    assert!(
        s.buffer_bytes.windows(2).all(|w| w[1] > w[0]),
        "{:?}",
        s.buffer_bytes
    );
    let leak = &s.growing_stacks[0];
    assert_eq!(leak.frame.line, generator_line("state = step(state)"));
    assert_eq!(leak.frame.function, "leak_8dev");
    // One step's output per step: the leak grows by the same amount each time.
    let b = &leak.bytes_per_profile;
    assert_eq!(b[1] - b[0], b[2] - b[1]);
    assert_eq!(leak.growth_bytes, b[2] - b[0]);
}

#[test]
fn profiles_of_different_programs_are_no_series() {
    let profiles = vec![load("mlp_1dev.prof"), load("sharded_8dev.prof")];
    assert!(device_memory_series(&profiles).is_empty());
}

/// The source lines holding the most: one row per line, each holding bytes.
/// The 8-device profile reaches its lines through several locations each,
/// and its executables hold no bytes: the table listed lines 61 and 62
/// twice, once with 0 B.
#[test]
fn each_source_line_is_listed_once_with_its_bytes() {
    for name in ["sharded_8dev.prof", "mlp_1dev.prof"] {
        let p = load(name).profile;
        assert!(!p.top_lines.is_empty(), "{name}");
        let mut seen = std::collections::HashSet::new();
        for l in &p.top_lines {
            assert!(l.bytes > 0, "{name}: {l:?}");
            assert!(seen.insert((l.frame.file.clone(), l.frame.line)), "{name}: {l:?} twice");
        }
    }
    let p = load("sharded_8dev.prof").profile;
    let replicated = p
        .top_lines
        .iter()
        .find(|l| l.frame.line == generator_line("replicated = jax.device_put"))
        .unwrap_or_else(|| panic!("{:?}", p.top_lines));
    assert_eq!(replicated.bytes, 8 << 20);
}
