//! PyTorch memory snapshots through the facade and the CLI: routed by
//! content and by name, streamed from a `ReadAt` source like a profile, the
//! OOM joined into `oom_events[]`, and a pickle that is not a snapshot named
//! in `errors[]`.

mod common;

use common::*;
use oomscope_analyzer::{analyze, analyze_inputs, InputFile, InputSource};
use oomscope_report::{InputKind, OomKind, Report};

const OOM_SNAPSHOT: &str = "snapshots/Constructor-Sun__code_location__memory_snapshot.pickle";

fn expected_oom() -> (u64, u64) {
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(corpus().join("snapshots/expected.json")).unwrap())
            .unwrap();
    let oom = &v["Constructor-Sun__code_location__memory_snapshot.pickle"]["memoryviz"]["devices"]
        ["1"]["oom"][0];
    (
        oom["size"].as_u64().unwrap(),
        oom["device_free"].as_u64().unwrap(),
    )
}

fn summary(r: &Report) -> Vec<(u32, u64, Option<u64>, u64)> {
    r.memory_snapshots
        .iter()
        .map(|m| {
            (
                m.device,
                m.peak_allocated_bytes,
                m.peak_event_index,
                m.reserved_bytes,
            )
        })
        .collect()
}

#[test]
fn cli_json_has_memory_snapshots_and_the_oom() {
    let path = corpus().join(OOM_SNAPSHOT);
    let cli: Report = serde_json::from_value(cli_analyze_json(&[&path])).unwrap();
    assert_eq!(cli.inputs[0].kind, InputKind::MemorySnapshot);
    assert!(cli.errors.is_empty(), "{:?}", cli.errors);
    let lib = analyze(
        vec![InputFile {
            name: "s.pickle".into(),
            data: std::fs::read(&path).unwrap(),
        }],
        &mut |_| {},
    );
    assert_eq!(summary(&cli), summary(&lib));
    let (size, free) = expected_oom();
    let oom = cli
        .oom_events
        .iter()
        .find(|e| e.kind == OomKind::TorchCuda)
        .expect("the snapshot's OOM is an oom_event");
    assert_eq!(
        (
            oom.requested_bytes,
            oom.free_bytes,
            oom.memory_space.as_str()
        ),
        (Some(size), Some(free), "gpu")
    );
    let device = cli
        .memory_snapshots
        .iter()
        .find(|m| m.oom.is_some())
        .unwrap();
    assert_eq!(device.device, 1);
}

#[test]
fn pickles_are_found_by_content_and_streamed_from_sources() {
    let data = std::fs::read(corpus().join(OOM_SNAPSHOT)).unwrap();
    let whole = analyze(
        vec![InputFile {
            name: "renamed.bin".into(),
            data: data.clone(),
        }],
        &mut |_| {},
    );
    assert_eq!(whole.inputs[0].kind, InputKind::MemorySnapshot);
    assert_eq!(whole.memory_snapshots.len(), 3);
    let streamed = analyze_inputs(
        Vec::new(),
        vec![InputSource {
            name: "big.pickle".into(),
            source: Box::new(data),
        }],
        &mut |_| {},
    );
    assert!(streamed.errors.is_empty(), "{:?}", streamed.errors);
    assert_eq!(summary(&streamed), summary(&whole));
}

#[test]
fn a_pickle_that_is_not_a_snapshot_says_so() {
    // pickle.dumps({'a': 1}, protocol=4)
    let data = b"\x80\x04\x95\n\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01a\x94K\x01s.".to_vec();
    let r = analyze(
        vec![InputFile {
            name: "weights.pkl".into(),
            data,
        }],
        &mut |_| {},
    );
    assert!(r.memory_snapshots.is_empty());
    assert_eq!(r.errors.len(), 1);
    assert!(
        r.errors[0]
            .message
            .starts_with("weights.pkl: a Python pickle, but not a PyTorch memory snapshot"),
        "{}",
        r.errors[0].message
    );
    // A class reference is refused with its offset.
    let r = analyze(
        vec![InputFile {
            name: "evil.pickle".into(),
            data: b"\x80\x02cos\nsystem\n.".to_vec(),
        }],
        &mut |_| {},
    );
    assert!(
        r.errors[0]
            .message
            .starts_with("evil.pickle: at byte 2: opcode GLOBAL"),
        "{}",
        r.errors[0].message
    );
}
