//! Every real snapshot of `../shared/corpus/snapshots/` against PyTorch's own
//! numbers for it (`expected.json`: MemoryViz.js run under node, and
//! `torch/cuda/_memory_viz.py` of torch 2.15.0). Prints how many of each
//! figure match, then fails on any mismatch.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;

use oomscope_report::MemorySnapshot;
use serde_json::Value;

fn corpus() -> PathBuf {
    oomscope_testdata::corpus().join("snapshots")
}

/// MemoryViz names a frame `file:line name`; the report says `name file:line`.
fn report_frame(memoryviz: &str) -> String {
    match memoryviz.rsplit_once(' ') {
        Some((at, name)) => format!("{name} {at}"),
        None => memoryviz.to_string(),
    }
}

#[derive(Default)]
struct Tally {
    checked: BTreeMap<&'static str, (u32, u32)>,
    failures: Vec<String>,
}

impl Tally {
    fn check<T: PartialEq + std::fmt::Debug>(
        &mut self,
        what: &'static str,
        file: &str,
        device: &str,
        ours: T,
        theirs: T,
    ) {
        let slot = self.checked.entry(what).or_default();
        slot.1 += 1;
        if ours == theirs {
            slot.0 += 1;
        } else {
            self.failures.push(format!(
                "{file} device {device}: {what}: ours {ours:?}, PyTorch {theirs:?}"
            ));
        }
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

#[test]
fn every_corpus_snapshot_matches_pytorch() {
    let expected: Value =
        serde_json::from_reader(File::open(corpus().join("expected.json")).expect("expected.json"))
            .unwrap();
    let files = expected.as_object().unwrap();
    assert_eq!(files.len(), 65, "the corpus has 65 snapshots");
    let mut tally = Tally::default();
    let mut loaded = 0;
    for (name, exp) in files {
        let path = corpus().join(name);
        let len = std::fs::metadata(&path).unwrap().len();
        let reader = std::io::BufReader::new(File::open(&path).unwrap());
        let reports = match oomscope_snapshot::analyze(name, reader, len) {
            Ok(r) => r,
            Err(e) => {
                tally.failures.push(format!("{name}: does not load: {e}"));
                continue;
            }
        };
        loaded += 1;
        let by_device: BTreeMap<String, &MemorySnapshot> =
            reports.iter().map(|r| (r.device.to_string(), r)).collect();
        for (device, dev) in exp["memoryviz"]["devices"].as_object().unwrap() {
            let amt = &dev["active_memory_timeline"];
            let Some(ours) = by_device.get(device) else {
                // We leave out devices with neither trace entries nor segments.
                let empty = u(&amt["peak_bytes"]) == 0
                    && u(&amt["final_bytes"]) == 0
                    && dev["trace"]["raw_len"].as_u64() == Some(0);
                tally.check("empty device left out", name, device, true, empty);
                continue;
            };
            tally.check(
                "peak bytes",
                name,
                device,
                ours.peak_allocated_bytes,
                u(&amt["peak_bytes"]),
            );
            let peak_event = amt["peak"]["event"]["raw_idx"].as_u64();
            tally.check(
                "peak event index",
                name,
                device,
                ours.peak_event_index,
                peak_event,
            );
            tally.check(
                "initial bytes",
                name,
                device,
                ours.initial_allocated_bytes,
                u(&amt["initial_bytes"]),
            );
            tally.check(
                "final bytes",
                name,
                device,
                ours.final_allocated_bytes,
                u(&amt["final_bytes"]),
            );

            // Top live allocations at the peak: the sizes in order; and which
            // allocations they are, except among equal sizes at the cut-off
            // (any of them may be listed).
            let top = amt["live_at_peak_top"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let cutoff = amt["live_at_peak_top_cutoff"]["size"].as_u64().unwrap_or(0);
            let their_sizes: Vec<u64> = top.iter().map(|a| u(&a["size"])).collect();
            let our_sizes: Vec<u64> = ours
                .live_at_peak
                .iter()
                .take(top.len())
                .map(|a| a.size_bytes)
                .collect();
            tally.check("live-at-peak sizes", name, device, our_sizes, their_sizes);
            let mut theirs: Vec<(u64, u64, Option<u64>, String)> = top
                .iter()
                .filter(|a| u(&a["size"]) > cutoff)
                .map(|a| {
                    (
                        u(&a["size"]),
                        u(&a["addr"]),
                        a["alloc_raw_idx"].as_u64(),
                        a["first_py_frame"]
                            .as_str()
                            .map(report_frame)
                            .unwrap_or_default(),
                    )
                })
                .collect();
            let mut ours_top: Vec<(u64, u64, Option<u64>, String)> = ours
                .live_at_peak
                .iter()
                .filter(|a| a.size_bytes > cutoff)
                .take(theirs.len())
                .map(|a| {
                    (
                        a.size_bytes,
                        a.address,
                        a.alloc_event_index,
                        a.frame.clone(),
                    )
                })
                .collect();
            theirs.sort();
            ours_top.sort();
            tally.check("live-at-peak allocations", name, device, ours_top, theirs);

            let ooms = dev["oom"].as_array().cloned().unwrap_or_default();
            let their_oom = ooms
                .first()
                .map(|o| (u(&o["raw_idx"]), u(&o["size"]), u(&o["device_free"])));
            let our_oom = ours
                .oom
                .as_ref()
                .map(|o| (o.event_index, o.requested_bytes, o.device_free_bytes));
            tally.check("oom", name, device, our_oom, their_oom);

            let seg = &dev["active_cached_segment_timeline"];
            if !seg.is_null() {
                tally.check(
                    "segment timeline peak (MemoryViz)",
                    name,
                    device,
                    ours.memoryviz_segment_peak_bytes,
                    u(&seg["peak_bytes"]),
                );
            }
        }
        let py = &exp["memory_viz_py"];
        for (device, state) in py["per_device"].as_object().into_iter().flatten() {
            let Some(ours) = by_device.get(device) else {
                tally.check(
                    "empty device left out (segments)",
                    name,
                    device,
                    0,
                    u(&state["segments"]),
                );
                continue;
            };
            tally.check(
                "reserved bytes",
                name,
                device,
                ours.reserved_bytes,
                u(&state["reserved_bytes"]),
            );
            tally.check(
                "active allocated bytes",
                name,
                device,
                ours.active_allocated_bytes,
                u(&state["active_allocated_bytes"]),
            );
            tally.check(
                "active pending free bytes",
                name,
                device,
                ours.active_pending_free_bytes,
                u(&state["active_pending_free_bytes"]),
            );
            tally.check(
                "inactive bytes",
                name,
                device,
                ours.inactive_bytes,
                u(&state["inactive_bytes"]),
            );
            tally.check(
                "segments",
                name,
                device,
                (ours.segments, ours.expandable_segments),
                (u(&state["segments"]), u(&state["expandable_segments"])),
            );
        }
        for (device, segsum) in py["segsum_exact_per_device"]
            .as_object()
            .into_iter()
            .flatten()
        {
            let Some(ours) = by_device.get(device) else {
                continue;
            };
            tally.check(
                "segsum totals",
                name,
                device,
                (
                    ours.reserved_bytes,
                    ours.allocated_requested_bytes,
                    ours.free_internal_bytes,
                    ours.free_external_bytes,
                ),
                (
                    u(&segsum["total_reserved"]),
                    u(&segsum["total_allocated"]),
                    u(&segsum["free_internal_bytes"]),
                    u(&segsum["free_external_bytes"]),
                ),
            );
        }
    }
    println!("{loaded}/{} snapshots load", files.len());
    for (what, (ok, n)) in &tally.checked {
        println!("{what:40} {ok:4}/{n:<4} equal");
    }
    for f in tally.failures.iter().take(40) {
        println!("MISMATCH {f}");
    }
    assert_eq!(loaded, files.len());
    assert!(
        tally.failures.is_empty(),
        "{} mismatches",
        tally.failures.len()
    );
}
