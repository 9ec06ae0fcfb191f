//! What if, on real snapshots (issue 25). "Without these allocations" is
//! held to a second trace built from the first with those allocations
//! really removed (`tools/fixtures/snapshot_without.py`, files in
//! `tests/samples/without/`): the replay of the original must peak exactly
//! where the rewritten trace peaks, along the same curve.

use std::path::PathBuf;

use oomscope_report::whatif::{Remedy, ReplayedCurve, WhatIf};
use oomscope_report::MemorySnapshot;
use oomscope_snapshot::timeline::{timeline, TimelineKind};
use oomscope_snapshot::whatif;

const SOURCE: &str = "silmont2000__assignment2-systems__mem_snapshot.pickle";
const FILE: &str = "/root/autodl-tmp/assignment2-systems/cs336_systems/trace_peak_memory.py";

fn read(path: PathBuf) -> (oomscope_snapshot::Snapshot, Vec<MemorySnapshot>) {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let data = std::fs::read(&path).unwrap();
    let snap = oomscope_snapshot::read_snapshot(&name, &data[..], data.len() as u64).unwrap();
    let analysed = oomscope_snapshot::analyze_snapshot(&name, &snap);
    (snap, analysed)
}

fn corpus(name: &str) -> PathBuf {
    oomscope_testdata::corpus().join("snapshots").join(name)
}

fn sample(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/samples/without")
        .join(name)
}

/// The rewritten samples: a frame of [`SOURCE`], and its trace with every
/// allocation holding it really removed.
fn rewritten() -> [(String, &'static str); 2] {
    [
        (
            format!("custom_softmax {FILE}:7"),
            "silmont2000-mem_snapshot-without-softmax7.pickle",
        ),
        (
            format!("main {FILE}:43"),
            "silmont2000-mem_snapshot-without-main43.pickle",
        ),
    ]
}

/// `replayed` (the original without `frame`'s allocations) peaks where the
/// trace `rewritten` (those allocations really removed) peaks, along the
/// same curve.
fn holds_to_the_rewritten_trace(
    replayed: &ReplayedCurve,
    original: &MemorySnapshot,
    frame: &str,
    rewritten: &str,
) {
    let predicted = &replayed.what_if;
    let (_, really) = read(sample(rewritten));
    let really = &really[0];
    // Its curve is the rewritten trace's: that trace lost entries, so
    // its trace indices differ, but both are small enough to be drawn
    // whole, so their bytes agree step for step.
    let really_curve: Vec<u64> = really
        .active_memory_curve
        .iter()
        .map(|p| p.allocated_bytes)
        .collect();
    assert!(really_curve.len() > 2 && really_curve.len() < oomscope_report::CURVE_MAX_POINTS);
    assert_eq!(replayed.heap_bytes, really_curve, "{frame}");
    assert_eq!(replayed.positions.len(), replayed.heap_bytes.len());
    assert!(replayed.positions.is_sorted());
    assert_eq!(
        predicted.predicted_peak_bytes, really.peak_allocated_bytes,
        "{frame}"
    );
    // It is a real change, not the original peak.
    assert!(
        predicted.predicted_peak_bytes < original.peak_allocated_bytes,
        "{frame}"
    );
    assert_eq!(
        predicted.saving_bytes,
        (original.peak_allocated_bytes - really.peak_allocated_bytes) as i64
    );
    assert_eq!(predicted.frame.as_deref(), Some(frame));
    assert_eq!(predicted.remedy, Remedy::WithoutAllocations);
}

#[test]
fn without_these_allocations_peaks_where_the_trace_without_them_peaks() {
    let (snap, analysed) = read(corpus(SOURCE));
    let original = &analysed[0];
    let tl = timeline(&snap, original.device, TimelineKind::ActiveMemory);
    for (frame, rewritten) in rewritten() {
        let replayed = whatif::without_curve(&snap, &tl, original, &frame).unwrap();
        holds_to_the_rewritten_trace(&replayed, original, &frame, rewritten);
    }
    // A frame no allocation has gives no prediction.
    assert!(whatif::without(&snap, &tl, original, "nowhere x.py:1").is_none());
}

#[test]
fn the_report_carries_the_curve_of_each_line_it_replays_without() {
    let (_, analysed) = read(corpus(SOURCE));
    let original = &analysed[0];
    let replayed: Vec<&WhatIf> = original
        .what_if
        .iter()
        .filter(|w| w.remedy == Remedy::WithoutAllocations)
        .collect();
    // One curve per line replayed, in the same order, its entry beside it.
    let carried: Vec<&WhatIf> = original.what_if_curves.iter().map(|c| &c.what_if).collect();
    assert_eq!(carried, replayed);
    let mut held = 0;
    for curve in &original.what_if_curves {
        let frame = curve.what_if.frame.as_deref().unwrap();
        if let Some((_, file)) = rewritten().into_iter().find(|(f, _)| f == frame) {
            holds_to_the_rewritten_trace(curve, original, frame, file);
            held += 1;
        }
        // The initial point first, the peak kept exactly, as the report's curve.
        assert_eq!(curve.positions.first(), Some(&0));
        assert_eq!(
            curve.heap_bytes.iter().max(),
            Some(&curve.what_if.predicted_peak_bytes)
        );
    }
    assert!(held > 0, "no line the report replays has a rewritten trace");
}

#[test]
fn the_replay_with_every_allocation_kept_is_the_timeline() {
    // One snapshot small enough to be drawn whole, one shrunk to buckets:
    // the replayed curve is the report's curve, point for point.
    for name in [
        SOURCE,
        "Charan6924__assignment2-systems__cs336_systems__memory_snapshot.pickle",
    ] {
        let (snap, analysed) = read(corpus(name));
        for s in &analysed {
            let tl = timeline(&snap, s.device, TimelineKind::ActiveMemory);
            assert_eq!(
                whatif::replay_peak(&tl, |_| true).0,
                s.peak_allocated_bytes,
                "{name}"
            );
            let (peak, _, curve) = whatif::replay_curve(&tl, |_| true);
            let report: Vec<(u64, u64)> = s
                .active_memory_curve
                .iter()
                .map(|p| (p.event_index, p.allocated_bytes))
                .collect();
            assert_eq!(curve, report, "{name} cuda:{}", s.device);
            assert_eq!(peak, s.peak_allocated_bytes);
        }
    }
}

#[test]
fn the_report_lists_without_for_the_lines_at_the_peak() {
    let (_, analysed) = read(corpus(SOURCE));
    let s = &analysed[0];
    let without: Vec<_> = s
        .what_if
        .iter()
        .filter(|w| w.remedy == Remedy::WithoutAllocations)
        .collect();
    assert!(!without.is_empty());
    for w in without {
        let frame = w.frame.as_ref().unwrap();
        assert!(
            s.top_lines_at_peak.iter().any(|l| &l.frame == frame),
            "{frame}"
        );
        assert!(w.saving_bytes > 0 && w.predicted_peak_bytes < s.peak_allocated_bytes);
        assert_eq!(w.device, Some(s.device));
        assert_eq!(w.module, SOURCE);
    }
}

#[test]
fn expandable_segments_reserve_no_more_than_today_and_no_less_than_allocated() {
    let (_, analysed) = read(corpus("LfieLike__SketchKV2__my_snapshot.pickle"));
    let mut seen = 0;
    for s in &analysed {
        let Some(w) = s
            .what_if
            .iter()
            .find(|w| w.remedy == Remedy::ExpandableSegments)
        else {
            continue;
        };
        seen += 1;
        let reserved = s.reserved_peak_bytes.max(s.reserved_bytes);
        assert!(w.predicted_peak_bytes < reserved, "{w:?}");
        assert!(w.predicted_peak_bytes >= s.peak_allocated_bytes, "{w:?}");
        assert_eq!(w.saving_bytes, (reserved - w.predicted_peak_bytes) as i64);
    }
    assert!(seen > 0);
    // A process already on expandable segments gets no such prediction.
    let (_, analysed) = read(corpus(
        "Constructor-Sun__code_location__memory_snapshot.pickle",
    ));
    assert!(analysed.iter().all(|s| s.expandable_segments == 0
        || s.what_if
            .iter()
            .all(|w| w.remedy != Remedy::ExpandableSegments)));
}

#[test]
fn the_failed_allocation_placed_says_what_had_to_be_freed() {
    // PyTorch's own numbers for this OOM (corpus expected.json, MemoryViz's
    // `oom` entries): the request and what CUDA had free.
    let expected: serde_json::Value = serde_json::from_slice(
        &std::fs::read(oomscope_testdata::corpus().join("snapshots/expected.json")).unwrap(),
    )
    .unwrap();
    let name = "Constructor-Sun__code_location__memory_snapshot.pickle";
    let (_, analysed) = read(corpus(name));
    let s = analysed.iter().find(|s| s.oom.is_some()).unwrap();
    let oom = &expected[name]["memoryviz"]["devices"][s.device.to_string()]["oom"][0];
    let size = oom["size"].as_u64().unwrap();
    let free = oom["device_free"].as_u64().unwrap();
    let w = s
        .what_if
        .iter()
        .find(|w| w.remedy == Remedy::FailedAllocationPlaced)
        .unwrap();
    // Expandable segments: the request's blocks in 20 MiB pages (2 MiB when small).
    let block = size.div_ceil(512) * 512;
    let page: u64 = if block <= 1 << 20 { 2 << 20 } else { 20 << 20 };
    assert_eq!(w.must_free_bytes, Some(block.div_ceil(page) * page - free));
    assert_eq!(
        w.predicted_peak_bytes,
        s.peak_allocated_bytes
            .max(s.oom.as_ref().unwrap().allocated_bytes + size)
    );
    // Without an OOM there is nothing to place.
    let (_, analysed) = read(corpus(SOURCE));
    assert!(analysed[0]
        .what_if
        .iter()
        .all(|w| w.remedy != Remedy::FailedAllocationPlaced));
}

#[test]
fn segment_sizes_follow_the_caching_allocator() {
    assert_eq!(whatif::segment_size(1), 2 << 20);
    assert_eq!(whatif::segment_size(1 << 20), 2 << 20);
    assert_eq!(whatif::segment_size((1 << 20) + 1), 20 << 20);
    assert_eq!(whatif::segment_size(10 << 20), 10 << 20);
    assert_eq!(whatif::segment_size((10 << 20) + 1), 12 << 20);
}
