//! Allocator profiles against XProf 2.24.2's `memory_profile` tool on the same
//! real profile (`corpus/xla-runs/tf-cpu-allocator/`: TensorFlow on CPU with
//! the BFC allocator, 292 allocator events; `memory_profile.json` is XProf's
//! output for `vm.xplane.pb`).

use oomscope_steps::allocator_profiles;
use serde_json::Value;

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../../shared/corpus/xla-runs/tf-cpu-allocator/"
);

fn num(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.parse().unwrap_or_else(|_| panic!("not a number: {s}")),
        Value::Number(n) => n.as_u64().unwrap_or_else(|| panic!("not a u64: {n}")),
        other => panic!("not a number: {other}"),
    }
}

fn float(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) => s.parse().unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

#[test]
fn equals_xprof_memory_profile_on_a_real_tf_cpu_profile() {
    let bytes = std::fs::read(format!("{DIR}vm.xplane.pb")).expect("vm.xplane.pb");
    let oracle: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{DIR}memory_profile.json")).expect("oracle"),
    )
    .expect("json");
    let profiles = allocator_profiles("vm.xplane.pb", &bytes).expect("decodes");

    let ids: Vec<&str> = oracle["memoryIds"]
        .as_array()
        .expect("ids")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        profiles
            .iter()
            .map(|p| p.allocator.as_str())
            .collect::<Vec<_>>(),
        ids
    );

    for p in &profiles {
        let o = &oracle["memoryProfilePerAllocator"][&p.allocator];
        let summary = &o["profileSummary"];
        let peak = &summary["peakStats"];
        assert_eq!(p.peak_heap_bytes, num(&peak["heapAllocatedBytes"]));
        assert_eq!(p.peak_stack_bytes, num(&peak["stackReservedBytes"]));
        assert_eq!(p.peak_time_ps, num(&summary["peakStatsTimePs"]));
        assert_eq!(p.capacity_bytes, num(&summary["memoryCapacity"]));
        // XProf stores fragmentation as a float.
        assert!((p.fragmentation_at_peak - float(&peak["fragmentation"])).abs() < 1e-6);

        let timeline = o["sampledTimelineSnapshots"].as_array().expect("timeline");
        assert_eq!(p.timeline.len(), timeline.len());
        for (ours, theirs) in p.timeline.iter().zip(timeline) {
            let stats = &theirs["aggregationStats"];
            assert_eq!(ours.time_ps, num(&theirs["timeOffsetPs"]));
            assert_eq!(ours.heap_bytes, num(&stats["heapAllocatedBytes"]));
            assert_eq!(ours.stack_bytes, num(&stats["stackReservedBytes"]));
            assert_eq!(ours.free_bytes, num(&stats["freeMemoryBytes"]));
        }

        // Active allocations: rows point at saved snapshots or special allocations.
        let snaps = o["memoryProfileSnapshots"].as_array().expect("snapshots");
        let specials = o["specialAllocations"].as_array().expect("specials");
        let rows = o["activeAllocations"].as_array().expect("active");
        assert_eq!(p.active_at_peak.len(), rows.len());
        for (ours, row) in p.active_at_peak.iter().zip(rows) {
            let meta = if row["specialIndex"].as_str() == Some("-1") {
                &snaps[num(&row["snapshotIndex"]) as usize]["activityMetadata"]
            } else {
                &specials[num(&row["specialIndex"]) as usize]
            };
            assert_eq!(ours.allocation_bytes, num(&meta["allocationBytes"]));
            assert_eq!(ours.requested_bytes, num(&meta["requestedBytes"]));
            assert_eq!(ours.op_name, meta["tfOpName"].as_str().unwrap_or(""));
            assert_eq!(ours.shape, meta["tensorShape"].as_str().unwrap_or(""));
            assert_eq!(ours.data_type, meta["dataType"].as_str().unwrap_or(""));
            assert_eq!(ours.occurrences, num(&row["numOccurrences"]));
        }
        // The peak is kept exactly in the timeline.
        assert!(p
            .timeline
            .iter()
            .any(|t| t.time_ps == p.peak_time_ps && t.heap_bytes == p.peak_heap_bytes));
    }
    // Numbers read off the oracle, for the record.
    assert_eq!(profiles[0].peak_heap_bytes, 8_177_920);
    assert_eq!(profiles[0].timeline.len(), 292);
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    assert!(allocator_profiles("x", b"\xff\xff\xff\xff not a protobuf").is_err());
    assert_eq!(allocator_profiles("empty", b"").expect("empty XSpace"), []);
    let bytes = std::fs::read(format!("{DIR}vm.xplane.pb")).expect("vm.xplane.pb");
    for cut in [1, 100, bytes.len() / 2, bytes.len() - 1] {
        let _ = allocator_profiles("truncated", &bytes[..cut]);
    }
}
