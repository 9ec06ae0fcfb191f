//! Allocator profiles against XProf 2.24.2's `memory_profile` tool on the same
//! real profile (`corpus/xla-runs/tf-cpu-allocator/`: TensorFlow on CPU with
//! the BFC allocator, 292 allocator events; `memory_profile.json` is XProf's
//! output for `vm.xplane.pb`).

use oomscope_xla::allocator_profiles;
use serde_json::Value;

/// The TensorFlow CPU run with allocator events, in the shared corpus.
fn dir() -> std::path::PathBuf {
    oomscope_testdata::corpus().join("xla-runs/tf-cpu-allocator")
}

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
    let bytes = std::fs::read(dir().join("vm.xplane.pb")).expect("vm.xplane.pb");
    let oracle: Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("memory_profile.json")).expect("oracle"),
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
fn gzipped_profile_gives_the_same_profiles() {
    use std::io::Write;
    let bytes = std::fs::read(dir().join("vm.xplane.pb")).expect("vm.xplane.pb");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&bytes).expect("gzip");
    let gzipped = gz.finish().expect("gzip");
    assert_eq!(
        allocator_profiles("vm.xplane.pb.gz", &gzipped),
        allocator_profiles("vm.xplane.pb.gz", &bytes)
    );
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    assert!(allocator_profiles("x", b"\xff\xff\xff\xff not a protobuf").is_err());
    assert_eq!(allocator_profiles("empty", b"").expect("empty XSpace"), []);
    let bytes = std::fs::read(dir().join("vm.xplane.pb")).expect("vm.xplane.pb");
    for cut in [1, 100, bytes.len() / 2, bytes.len() - 1] {
        let _ = allocator_profiles("truncated", &bytes[..cut]);
    }
}

mod built {
    //! Planes built by hand for what the TF profile does not exercise: names by
    //! `ref_value`, `device_ordinal` ids, stack bytes, unmapped heap, a stat of
    //! the wrong type, and the peak moving to the last event that reaches it.
    use oomscope_proto::tensorflow::profiler::{
        x_event, x_stat, XEvent, XEventMetadata, XLine, XPlane, XStat, XStatMetadata,
    };
    use oomscope_xla::allocator_profiles_from_plane;

    const NAMES: [(i64, &str); 14] = [
        (10, "allocator_name"),
        (11, "bytes_reserved"),
        (12, "bytes_allocated"),
        (13, "bytes_available"),
        (14, "peak_bytes_in_use"),
        (15, "requested_bytes"),
        (16, "allocation_bytes"),
        (17, "addr"),
        (18, "tf_op"),
        (19, "data_type"),
        (20, "shape"),
        (21, "GPU_0_bfc"),
        (22, "region_type"),
        (23, "device_ordinal"),
    ];

    fn int(id: i64, v: i64) -> XStat {
        XStat {
            metadata_id: id,
            value: Some(x_stat::Value::Int64Value(v)),
        }
    }
    fn text(id: i64, v: &str) -> XStat {
        XStat {
            metadata_id: id,
            value: Some(x_stat::Value::StrValue(v.to_string())),
        }
    }
    fn event(kind: i64, t: i64, stats: Vec<XStat>) -> XEvent {
        XEvent {
            metadata_id: kind,
            data: Some(x_event::Data::OffsetPs(t)),
            stats,
            ..Default::default()
        }
    }
    /// (stack, heap, free, requested, allocation, address) of one event on GPU_0_bfc.
    fn bfc(kind: i64, t: i64, v: [i64; 6], op: &str, dtype: i64, shape: &str) -> XEvent {
        let mut stats = vec![XStat {
            metadata_id: 10,
            value: Some(x_stat::Value::RefValue(21)),
        }];
        stats.extend(
            [11, 12, 13, 15, 16, 17]
                .iter()
                .zip(v)
                .map(|(id, v)| int(*id, v)),
        );
        stats.extend([
            text(18, op),
            int(19, dtype),
            text(20, shape),
            text(22, "output"),
        ]);
        event(kind, t, stats)
    }

    fn plane() -> XPlane {
        let mut p = XPlane {
            name: "/host:CPU".into(),
            ..Default::default()
        };
        for (id, name) in [
            (1, "MemoryAllocation"),
            (2, "MemoryDeallocation"),
            (3, "SomethingElse"),
        ] {
            p.event_metadata.insert(
                id,
                XEventMetadata {
                    id,
                    name: name.into(),
                    ..Default::default()
                },
            );
        }
        for (id, name) in NAMES {
            p.stat_metadata.insert(
                id,
                XStatMetadata {
                    id,
                    name: name.into(),
                    ..Default::default()
                },
            );
        }
        let gpu = vec![
            bfc(1, 1000, [100, 1000, 9000, 900, 1000, 1], "a", 1, "[10]"),
            bfc(1, 2000, [100, 3000, 7000, 2000, 2000, 2], "b", 14, "[20]"),
            event(3, 2500, vec![int(12, 1 << 40)]),
            bfc(2, 3000, [100, 1000, 9000, 0, 2000, 2], "", 0, ""),
            bfc(1, 4000, [100, 3000, 7000, 2000, 2000, 3], "b", 14, "[20]"),
        ];
        let ordinal = vec![
            event(
                1,
                500,
                vec![
                    int(23, 0),
                    int(12, 500),
                    int(13, 100),
                    int(15, 100),
                    int(16, 200),
                    int(17, 9),
                ],
            ),
            // bytes_allocated as uint64: XProf's IntValue reads 0 from it.
            event(
                1,
                600,
                vec![
                    int(23, 0),
                    XStat {
                        metadata_id: 12,
                        value: Some(x_stat::Value::Uint64Value(999)),
                    },
                ],
            ),
        ];
        p.lines = vec![
            XLine {
                events: gpu,
                ..Default::default()
            },
            XLine {
                events: ordinal,
                ..Default::default()
            },
        ];
        p
    }

    #[test]
    fn by_hand() {
        let profiles = allocator_profiles_from_plane("built", &plane());
        let names: Vec<&str> = profiles.iter().map(|p| p.allocator.as_str()).collect();
        assert_eq!(names, ["0", "GPU_0_bfc"]);

        let gpu = &profiles[1];
        // 3100 in use at t=2000 and again at t=4000: the later one is the peak.
        assert_eq!(
            (
                gpu.peak_heap_bytes,
                gpu.peak_stack_bytes,
                gpu.peak_time_ps,
                gpu.capacity_bytes
            ),
            (3000, 100, 4000, 10100)
        );
        assert_eq!(
            gpu.timeline.len(),
            4,
            "the non-allocator event is not a snapshot"
        );
        let rows: Vec<(u64, u64, &str, &str, &str, u64)> = gpu
            .active_at_peak
            .iter()
            .map(|a| {
                (
                    a.allocation_bytes,
                    a.requested_bytes,
                    a.op_name.as_str(),
                    a.data_type.as_str(),
                    a.shape.as_str(),
                    a.occurrences,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (2000, 2000, "b", "bfloat16", "[20]", 1),
                (1000, 900, "a", "float", "[10]", 1),
                (100, 100, "stack", "INVALID", "unknown", 1)
            ]
        );

        let ordinal = &profiles[0];
        assert_eq!(ordinal.peak_heap_bytes, 500);
        assert_eq!(
            ordinal.timeline[1].heap_bytes, 0,
            "uint64 stat read as XProf does"
        );
        let rows: Vec<(u64, &str)> = ordinal
            .active_at_peak
            .iter()
            .map(|a| (a.allocation_bytes, a.op_name.as_str()))
            .collect();
        assert_eq!(
            rows,
            [(300, "unused preallocated device memory"), (200, "")]
        );
    }
}
