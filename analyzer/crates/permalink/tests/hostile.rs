//! Links are untrusted input: every damaged or hostile link gives a clear
//! error, never a panic, a hang or a huge allocation.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use oomscope_permalink::{decode, encode_fragment, LinkError, MAX_BUDGET};
use oomscope_proto::oomscope::report as pb;
use oomscope_proto::prost::Message;
use oomscope_report::*;
use std::io::Write;

/// A report shaped like a real TPU compile OOM (numbers from corpus log 01).
fn sample_report() -> Report {
    let mut r = Report::new();
    r.inputs.push(InputInfo {
        name: "train.log".into(),
        kind: InputKind::OomLog,
        size_bytes: 12345,
        content_hash: "00ff".into(),
    });
    r.oom_events.push(OomEvent {
        kind: OomKind::TpuCompileHbm,
        memory_space: oomscope_report::MemorySpace::Hbm,
        input: "train.log".into(),
        line: 3,
        repeats: 2,
        message: "Ran out of memory in memory space hbm. Used 17.60G of 16.00G hbm.".into(),
        used_bytes: Some(units::parse_binary_size("17.60G").unwrap()),
        limit_bytes: Some(16 << 30),
        exceeded_bytes: Some(units::parse_binary_size("1.60G").unwrap()),
        extra: [("largest_free_chunk_bytes".to_string(), 42u64)]
            .into_iter()
            .collect(),
        top_allocations: vec![TopAllocation {
            rank: 1,
            size_bytes: 512 << 20,
            shape: "f32[4,128,128,9,18]{4,3,0,2,1:T(8,128)}".into(),
            unpadded_bytes: Some(units::parse_binary_size("40.50M").unwrap()),
            op_name: Some("one_hot".into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    let heap: Vec<u64> = (0..5000u64).map(|i| (i % 97) << 20).collect();
    r.modules.push(ModuleReport {
        name: "jit_f".into(),
        program_id: Some(8),
        peak_bytes: 96 << 20,
        peak_position: 96,
        unpadded_heap_bytes: heap.clone(),
        heap_bytes: heap,
        peak_buffers: (0..50)
            .map(|i| PeakBuffer {
                name: format!("fusion.{i}"),
                shape: "f32[1024,1024]{1,0}".into(),
                size_bytes: 4 << 20,
                unpadded_bytes: 4 << 20,
                category: BufferCategory::Temporary,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    });
    r.diagnosis = Diagnosis {
        tree: TreeKind::CompileHbmOom,
        path: vec!["aggregate".into()],
        nodes: vec![DiagnosisNode {
            id: "aggregate".into(),
            selected: true,
            reason: "sum too big".into(),
            ..Default::default()
        }],
        headline: None,
        what_if: Vec::new(),
    };
    r
}

fn view() -> ViewState {
    ViewState {
        view: "timeline".into(),
        module: 0,
        selection: "fusion.3".into(),
        device: None,
        what_if: None,
        snapshot_without: Vec::new(),
    }
}

/// The message a link's fragment carries (to alter it as a hostile or an
/// old link would).
fn shared_of(fragment: &str) -> pb::SharedReport {
    let payload = fragment.split_once('.').unwrap().1;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::ZlibDecoder::new(&URL_SAFE_NO_PAD.decode(payload).unwrap()[..]),
        &mut bytes,
    )
    .unwrap();
    pb::SharedReport::decode(&bytes[..]).unwrap()
}

fn raw_link(shared: &pb::SharedReport) -> String {
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&shared.encode_to_vec()).unwrap();
    format!("r=1.{}", URL_SAFE_NO_PAD.encode(enc.finish().unwrap()))
}

#[test]
fn round_trip_keeps_the_verdict_numbers_and_marks_the_report_shared() {
    let r = sample_report();
    let (fragment, reductions) = encode_fragment(&r, &view(), 1_700_000_000_000).unwrap();
    assert!(
        fragment.len() <= oomscope_permalink::TYPICAL_BUDGET,
        "{} bytes",
        fragment.len()
    );
    let back = decode(&format!("http://127.0.0.1:8080/#{fragment}")).unwrap();
    assert_eq!(back.oom_events[0].used_bytes, r.oom_events[0].used_bytes);
    assert_eq!(back.oom_events[0].limit_bytes, r.oom_events[0].limit_bytes);
    assert_eq!(back.oom_events[0].extra, r.oom_events[0].extra);
    assert_eq!(
        back.oom_events[0].top_allocations,
        r.oom_events[0].top_allocations
    );
    assert_eq!(back.modules[0].peak_bytes, r.modules[0].peak_bytes);
    // The curve may be downsampled, but its peak survives exactly.
    assert_eq!(
        back.modules[0].heap_bytes.iter().max(),
        r.modules[0].heap_bytes.iter().max()
    );
    assert_eq!(back.diagnosis, r.diagnosis);
    let shared = back.shared.unwrap();
    assert_eq!(shared.created_unix_ms, 1_700_000_000_000);
    assert_eq!(shared.view, view());
    assert_eq!(shared.reductions, reductions);
}

#[test]
fn the_headline_and_the_picked_device_travel_with_the_link() {
    let mut r = sample_report();
    r.diagnosis.headline = Some(Headline {
        node: "aggregate.config".into(),
        text: "Next step: donate the parameters (saves about 8.00 GiB)".into(),
        estimate_bytes: Some(8 << 30),
        severity: Severity::Failure,
        confidence: Some(Confidence::Medium),
    });
    let view = ViewState {
        device: Some(devices::known_device("TPU v6e").unwrap().limit()),
        ..view()
    };
    let (fragment, _) = encode_fragment(&r, &view, 0).unwrap();
    let back = decode(&fragment).unwrap();
    assert_eq!(back.diagnosis.headline, r.diagnosis.headline);
    assert_eq!(back.shared.unwrap().view, view);
    // A headline without an estimate has no confidence either.
    r.diagnosis.headline = Some(Headline {
        node: "verdict.no_limit".into(),
        text: "pick the device".into(),
        ..Default::default()
    });
    let back = decode(&encode_fragment(&r, &view, 0).unwrap().0).unwrap();
    assert_eq!(back.diagnosis.headline, r.diagnosis.headline);
}

/// A link made before the headline and the device existed (fields 4 of
/// `Diagnosis`, 4 and 5 of `ViewState` absent) still opens, without them.
#[test]
fn old_links_without_a_headline_or_device_still_open() {
    let mut r = sample_report();
    r.diagnosis.headline = Some(Headline {
        node: "aggregate".into(),
        text: "x".into(),
        ..Default::default()
    });
    let (fragment, _) = encode_fragment(&r, &view(), 0).unwrap();
    let mut old = shared_of(&fragment);
    old.diagnosis.as_mut().unwrap().headline = None;
    let back = decode(&raw_link(&old)).unwrap();
    assert_eq!(back.diagnosis.headline, None);
    assert_eq!(back.diagnosis.path, r.diagnosis.path);
    assert_eq!(back.shared.unwrap().view.device, None);
}

/// What an event's message says travels as a word (fields 11–14): an
/// empty word is none, a word this version does not know is refused.
#[test]
fn typed_event_words_round_trip_and_unknown_ones_are_invalid() {
    let mut r = sample_report();
    r.oom_events[0].kind = OomKind::TpuRuntime;
    r.oom_events[0].tpu_runtime_failure = Some(TpuRuntimeFailure::BufferAllocation);
    let (fragment, _) = encode_fragment(&r, &view(), 0).unwrap();
    let back = decode(&fragment).unwrap();
    assert_eq!(
        back.oom_events[0].tpu_runtime_failure,
        Some(TpuRuntimeFailure::BufferAllocation)
    );
    assert_eq!(back.oom_events[0].gpu_platform, None);
    let mut s = shared_of(&fragment);
    s.oom_events[0].gpu_platform = Some("cuda<script>".into());
    assert!(matches!(decode(&raw_link(&s)), Err(LinkError::Invalid(_))));
    s.oom_events[0].gpu_platform = Some(String::new());
    assert_eq!(
        decode(&raw_link(&s)).unwrap().oom_events[0].early_abort,
        None
    );
    s.oom_events[0].early_abort = Some("gave_up".into());
    assert!(matches!(decode(&raw_link(&s)), Err(LinkError::Invalid(_))));
}

#[test]
fn a_device_without_a_limit_or_a_bad_severity_is_invalid() {
    let mut r = sample_report();
    r.diagnosis.headline = Some(Headline {
        node: "aggregate".into(),
        text: "x".into(),
        ..Default::default()
    });
    let (fragment, _) = encode_fragment(&r, &view(), 0).unwrap();
    let good = shared_of(&fragment);
    let mut s = good.clone();
    s.view.as_mut().unwrap().device_name = "TPU v5e".into();
    assert!(matches!(decode(&raw_link(&s)), Err(LinkError::Invalid(_))));
    let mut s = good.clone();
    s.diagnosis
        .as_mut()
        .unwrap()
        .headline
        .as_mut()
        .unwrap()
        .severity = "fatal<script>".into();
    assert!(matches!(decode(&raw_link(&s)), Err(LinkError::Invalid(_))));
}

#[test]
fn truncated_links_are_refused_clearly() {
    let (fragment, _) = encode_fragment(&sample_report(), &view(), 0).unwrap();
    for cut in [fragment.len() / 2, fragment.len() - 3, 6, 4] {
        let err = decode(&fragment[..cut]).unwrap_err();
        assert!(
            matches!(err, LinkError::Corrupt(_)),
            "cut at {cut}: {err:?}"
        );
        assert!(err.to_string().contains("damaged or incomplete"));
    }
    assert_eq!(
        decode("https://example.org/#view=1").unwrap_err(),
        LinkError::NotALink
    );
}

/// Every changed character of a link is refused, or (when it only touches the
/// unused low bits of the last base64 character) decodes to the same report:
/// a damaged link never shows altered numbers.
#[test]
fn bit_flips_are_refused_never_shown_altered() {
    let report = sample_report();
    let (fragment, _) = encode_fragment(&report, &view(), 0).unwrap();
    let original = decode(&fragment).unwrap();
    let bytes = fragment.as_bytes();
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for i in 4..bytes.len() {
        for delta in [1, 17, 32] {
            let mut b = bytes.to_vec();
            b[i] = ALPHABET[(ALPHABET.iter().position(|&c| c == b[i]).unwrap_or(0) + delta) % 64];
            let s = String::from_utf8(b).unwrap();
            if let Ok(r) = decode(&s) {
                assert_eq!(
                    r, original,
                    "a change at {i} was accepted with different content"
                );
            }
        }
    }
}

#[test]
fn newer_versions_are_refused_with_a_clear_message() {
    let err = decode("r=2.AAAA").unwrap_err();
    assert_eq!(err, LinkError::NewerVersion(2));
    assert!(err.to_string().contains("newer oomscope"));
    let mut s = pb::SharedReport {
        version: 9,
        ..Default::default()
    };
    s.view = Some(pb::ViewState::default());
    assert_eq!(
        decode(&raw_link(&s)).unwrap_err(),
        LinkError::NewerVersion(9)
    );
}

#[test]
fn decompression_bombs_are_bounded() {
    // 64 MiB of zeros deflates to ~64 KiB; the decoder must stop at 1 MiB.
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&vec![0u8; 64 << 20]).unwrap();
    let payload = URL_SAFE_NO_PAD.encode(enc.finish().unwrap());
    let err = decode(&format!("r=1.{payload}")).unwrap_err();
    assert!(matches!(err, LinkError::Corrupt(_)), "{err:?}");
}

#[test]
fn huge_declared_lengths_are_refused() {
    // A protobuf length prefix claiming 2^40 bytes of modules.
    let mut bytes = vec![0x08, 0x01, 0x2a];
    let mut n: u64 = 1 << 40;
    while n >= 0x80 {
        bytes.push((n as u8) | 0x80);
        n >>= 7;
    }
    bytes.push(n as u8);
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&bytes).unwrap();
    let err = decode(&format!(
        "r=1.{}",
        URL_SAFE_NO_PAD.encode(enc.finish().unwrap())
    ))
    .unwrap_err();
    assert!(matches!(err, LinkError::Corrupt(_)), "{err:?}");
}

#[test]
fn inconsistent_fields_are_invalid() {
    let base = || pb::SharedReport {
        version: 1,
        view: Some(pb::ViewState::default()),
        diagnosis: Some(pb::Diagnosis {
            tree: "none".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut s = base();
    s.modules.push(pb::Module {
        heap_bytes: vec![1, 2],
        unpadded_heap_bytes: vec![1],
        heap_positions: vec![0, 1],
        program_points: 2,
        ..Default::default()
    });
    assert!(matches!(
        decode(&raw_link(&s)).unwrap_err(),
        LinkError::Invalid(_)
    ));
    let mut s = base();
    s.oom_events.push(pb::OomEvent {
        kind: "<script>alert(1)</script>".into(),
        ..Default::default()
    });
    assert!(matches!(
        decode(&raw_link(&s)).unwrap_err(),
        LinkError::Invalid(_)
    ));
    let mut s = base();
    s.view = Some(pb::ViewState {
        module: 7,
        ..Default::default()
    });
    assert!(matches!(
        decode(&raw_link(&s)).unwrap_err(),
        LinkError::Invalid(_)
    ));
}

#[test]
fn a_hostile_what_if_panel_is_refused() {
    let base = || {
        let (fragment, _) = encode_fragment(&sample_report(), &view(), 0).unwrap();
        shared_of(&fragment)
    };
    let panel = |p: pb::WhatIfPanel| {
        let mut s = base();
        s.view.as_mut().unwrap().what_if = Some(p);
        decode(&raw_link(&s))
    };
    // A sound panel opens with its choice.
    let ok = panel(pb::WhatIfPanel {
        remedies: vec!["donation".into(), "batch".into()],
        donation: "optimizer_state".into(),
        batch_divisor: 4,
        devices: 2,
        ..Default::default()
    })
    .unwrap();
    let choice = ok.shared.unwrap().view.what_if.unwrap().choice;
    assert_eq!(choice.batch_divisor, 4);
    assert_eq!(choice.donation, whatif::DonationScope::OptimizerState);
    let refused = [
        pb::WhatIfPanel {
            remedies: vec!["<b>fast</b>".into()],
            ..Default::default()
        },
        pb::WhatIfPanel {
            donation: "everything".into(),
            ..Default::default()
        },
        pb::WhatIfPanel {
            batch_divisor: u32::MAX,
            ..Default::default()
        },
        pb::WhatIfPanel {
            replay_json: "{".into(),
            ..Default::default()
        },
        pb::WhatIfPanel {
            replay_json: r#"{"remedy":"donation","module":"m","memory_space":0,"scope":"","predicted_peak_bytes":1,"predicted_peak_position":0,"saving_bytes":1,"how":""}"#.into(),
            x: vec![1, 2],
            y: vec![1],
            ..Default::default()
        },
        pb::WhatIfPanel {
            replay_json: r#"{"remedy":"donation","module":"m","memory_space":0,"scope":"","predicted_peak_bytes":1,"predicted_peak_position":0,"saving_bytes":1,"how":""}"#.into(),
            x: vec![-5],
            y: vec![1],
            ..Default::default()
        },
    ];
    for p in refused {
        let what = format!("{p:?}");
        assert!(matches!(panel(p), Err(LinkError::Invalid(_))), "{what}");
    }
}

#[test]
fn strings_are_carried_as_data_not_markup() {
    // Markup in a string survives as text: the app renders strings as text only.
    let mut r = sample_report();
    r.oom_events[0].message = "<img src=x onerror=alert(1)>".into();
    let (fragment, _) = encode_fragment(&r, &view(), 0).unwrap();
    assert_eq!(
        decode(&fragment).unwrap().oom_events[0].message,
        "<img src=x onerror=alert(1)>"
    );
}

#[test]
fn a_huge_report_is_reduced_to_fit_and_says_so() {
    let mut r = sample_report();
    for m in 0..30 {
        let mut module = r.modules[0].clone();
        module.name = format!("module_{m}");
        module.heap_bytes = (0..200_000u64)
            .map(|i| (i * 2654435761) % (1 << 30))
            .collect();
        module.unpadded_heap_bytes = module.heap_bytes.clone();
        r.modules.push(module);
    }
    let (fragment, reductions) = encode_fragment(&r, &view(), 0).unwrap();
    assert!(fragment.len() <= MAX_BUDGET, "{}", fragment.len());
    assert!(!reductions.is_empty());
    let back = decode(&fragment).unwrap();
    assert_eq!(back.shared.unwrap().reductions, reductions);
    assert_eq!(back.modules.len(), r.modules.len());
    for (a, b) in back.modules.iter().zip(&r.modules) {
        assert_eq!(
            a.heap_bytes.iter().max(),
            b.heap_bytes.iter().max(),
            "peak kept exactly"
        );
    }
}

/// Cites name a carried peak buffer instead of repeating it; a link that
/// cites one long-named buffer very many times is refused, not expanded
/// into gigabytes of text.
#[test]
fn cites_that_expand_too_far_are_refused() {
    let long = "x".repeat(4000);
    let module = pb::Module {
        name: "jit_f".into(),
        peak_buffers: vec![pb::PeakBuffer {
            name: long.clone(),
            shape: long,
            logical_buffer_id: Some(7),
            category: "temporary".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let cite = pb::CitedBuffer {
        role: "r".into(),
        module: "jit_f".into(),
        buffer_id: Some(7),
        ..Default::default()
    };
    let node = |n: usize| pb::DiagnosisNode {
        id: "aggregate".into(),
        facts_json: "{}".into(),
        cites: vec![cite.clone(); n],
        ..Default::default()
    };
    let shared = |n: usize| pb::SharedReport {
        version: 1,
        modules: vec![module.clone()],
        view: Some(pb::ViewState::default()),
        diagnosis: Some(pb::Diagnosis {
            tree: "compile_hbm_oom".into(),
            nodes: vec![node(n)],
            ..Default::default()
        }),
        ..Default::default()
    };
    // A few are restored from the peak buffer they name.
    let back = decode(&raw_link(&shared(3))).unwrap();
    assert_eq!(back.diagnosis.nodes[0].cites.len(), 3);
    assert_eq!(back.diagnosis.nodes[0].cites[0].name.len(), 4000);
    // 50,000 of them would be 400 MB of text.
    let err = decode(&raw_link(&shared(50_000))).unwrap_err();
    assert!(matches!(err, LinkError::Invalid(_)), "{err:?}");
    assert!(err.to_string().contains("cited buffers"), "{err}");
}

/// A report with one PyTorch memory snapshot device and one memory timeline.
fn runtime_report() -> Report {
    let mut r = Report::new();
    let curve: Vec<CurvePoint> = (0..2000u64)
        .map(|i| CurvePoint {
            event_index: i * 3,
            allocated_bytes: ((i * 7919) % 1000) << 20,
            reserved_bytes: 2 << 30,
        })
        .chain([CurvePoint {
            event_index: 7000,
            allocated_bytes: 1500 << 20,
            reserved_bytes: 2 << 30,
        }])
        .collect();
    r.memory_snapshots.push(MemorySnapshot {
        input: "snap.pickle".into(),
        device: 0,
        peak_allocated_bytes: 1500 << 20,
        peak_event_index: Some(7000),
        reserved_bytes: 2 << 30,
        reserved_peak_bytes: 2 << 30,
        oom: Some(SnapshotOom {
            event_index: 7001,
            requested_bytes: 512 << 20,
            device_free_bytes: 100 << 20,
            allocated_bytes: 1500 << 20,
            reserved_bytes: 2 << 30,
            largest_live: Vec::new(),
        }),
        stacks_at_peak: (0..40)
            .map(|i| StackSample {
                frames: (0..60)
                    .map(|j| Frame {
                        function: format!("layer_{i}_{j}"),
                        file: "model.py".into(),
                        line: j,
                        kind: FrameKind::Python,
                    })
                    .collect(),
                bytes: 1000 - i,
                count: 1,
            })
            .collect(),
        active_memory_curve: curve,
        ..Default::default()
    });
    r.memory_timelines.push(MemoryTimeline {
        input: "t.json".into(),
        device: "cuda:0".into(),
        peak_bytes: 9 << 20,
        peak_time: 500,
        points: (0..3000i64)
            .map(|t| TimelinePoint {
                time: t,
                bytes: if t == 500 {
                    9 << 20
                } else {
                    (t as u64 % 7) << 20
                },
                by_category: vec![1, 2],
            })
            .collect(),
        ..Default::default()
    });
    r
}

#[test]
fn run_time_sections_travel_downsampled_with_the_exact_peak() {
    let r = runtime_report();
    let (fragment, reductions) = encode_fragment(&r, &view(), 0).unwrap();
    assert!(
        fragment.len() <= oomscope_permalink::TYPICAL_BUDGET,
        "{}",
        fragment.len()
    );
    let back = decode(&fragment).unwrap();
    let (a, b) = (&back.memory_snapshots[0], &r.memory_snapshots[0]);
    assert_eq!(
        (
            a.peak_allocated_bytes,
            a.peak_event_index,
            a.reserved_peak_bytes,
            &a.oom
        ),
        (
            b.peak_allocated_bytes,
            b.peak_event_index,
            b.reserved_peak_bytes,
            &b.oom
        )
    );
    assert!(a.active_memory_curve.len() <= 200);
    assert!(a.active_memory_curve.contains(&b.active_memory_curve[2000]));
    assert_eq!(a.active_memory_curve.first(), b.active_memory_curve.first());
    assert!(a.stacks_at_peak.len() <= 5);
    assert!(a.stacks_at_peak.iter().all(|s| s.frames.len() <= 12));
    let t = &back.memory_timelines[0];
    assert_eq!((t.peak_bytes, t.peak_time), (9 << 20, 500));
    assert!(t.points.iter().any(|p| p.time == 500 && p.bytes == 9 << 20));
    assert!(t.points.len() <= 200);
    // Only reductions that changed something are recorded, and the page is told.
    assert!(
        reductions.iter().all(|x| x.starts_with("run-time")),
        "{reductions:?}"
    );
    assert_eq!(back.shared.unwrap().reductions, reductions);
}

#[test]
fn a_big_run_time_report_drops_stacks_then_lines_then_curve_points() {
    let mut r = runtime_report();
    // Many devices, each with long distinct stacks and lines.
    let one = r.memory_snapshots[0].clone();
    r.memory_snapshots = (0..8u32)
        .map(|d| {
            let mut m = one.clone();
            m.device = d;
            for (i, s) in m.stacks_at_peak.iter_mut().enumerate() {
                for f in &mut s.frames {
                    f.function = format!("{d}_{i}_{}_{}", f.function, f.line * 7919 % 1013);
                }
            }
            m.top_lines_at_peak = (0..30)
                .map(|i| SnapshotLine {
                    frame: format!("f{d}_{i} file_{}.py:{}", i * 31 % 17, i * 7),
                    bytes: 100 - i,
                    count: 1,
                })
                .collect();
            m
        })
        .collect();
    let (fragment, reductions) = encode_fragment(&r, &view(), 0).unwrap();
    assert!(fragment.len() <= MAX_BUDGET, "{}", fragment.len());
    assert_eq!(reductions[0], oomscope_permalink::RUNTIME_DETAIL);
    assert_eq!(
        reductions[1], "run-time sections: stacks at the peak dropped",
        "{reductions:?}"
    );
    let back = decode(&fragment).unwrap();
    for (a, b) in back.memory_snapshots.iter().zip(&r.memory_snapshots) {
        assert!(a.stacks_at_peak.is_empty());
        assert_eq!(a.peak_allocated_bytes, b.peak_allocated_bytes);
        assert!(a.active_memory_curve.contains(&b.active_memory_curve[2000]));
    }
}

#[test]
fn a_non_finite_rate_does_not_stop_the_link_from_opening() {
    let mut r = runtime_report();
    r.memory_snapshots[0].accumulations.push(Accumulation {
        frame: "f x.py:1".into(),
        count: 3,
        count_per_step: f64::NAN,
        ..Default::default()
    });
    let (fragment, _) = encode_fragment(&r, &view(), 0).unwrap();
    let back = decode(&fragment).unwrap();
    assert_eq!(back.memory_snapshots[0].accumulations[0].count, 3);
}

/// A snapshot line replayed without: a `without_allocations` what-if of
/// `input`'s `device`, with its columns.
fn replay(input: &str, device: u32, x: Vec<i64>, y: Vec<u64>) -> pb::SnapshotReplay {
    let what_if = format!(
        r#"{{"remedy":"without_allocations","module":"{input}","device":{device},"frame":"f a.py:1","memory_space":0,"scope":"","predicted_peak_bytes":1,"predicted_peak_position":0,"saving_bytes":1,"how":""}}"#
    );
    pb::SnapshotReplay {
        what_if_json: what_if,
        x,
        y,
    }
}

/// Adds a snapshot line replayed without on the page to the link's view.
fn replayed(s: &mut pb::SharedReport, input: &str, device: u32, x: Vec<i64>, y: Vec<u64>) {
    s.view
        .get_or_insert_with(Default::default)
        .snapshot_without
        .push(replay(input, device, x, y));
}

/// Adds a line the analyzer replayed to the link's first snapshot section.
fn replayed_by_the_analyzer(
    s: &mut pb::SharedReport,
    input: &str,
    device: u32,
    x: Vec<i64>,
    y: Vec<u64>,
) {
    s.memory_snapshots[0]
        .replays
        .push(replay(input, device, x, y));
}

#[test]
fn hostile_run_time_sections_are_refused() {
    let good = {
        let r = runtime_report();
        let (fragment, _) = encode_fragment(&r, &view(), 0).unwrap();
        shared_of(&fragment)
    };
    let cases: Vec<(&str, Box<dyn Fn(&mut pb::SharedReport)>)> = vec![
        (
            "columns",
            Box::new(|s| s.memory_snapshots[0].z.pop().map(|_| ()).unwrap()),
        ),
        (
            "huge count",
            Box::new(|s| {
                let t = &mut s.memory_timelines[0];
                t.x = vec![1; 200_001];
                t.y = vec![1; 200_001];
            }),
        ),
        (
            "back in time",
            Box::new(|s| s.memory_timelines[0].x[3] = -1_000_000),
        ),
        (
            "overflow",
            Box::new(|s| s.memory_timelines[0].x[3] = i64::MAX),
        ),
        (
            "not json",
            Box::new(|s| s.memory_snapshots[0].json = "{\"peak".into()),
        ),
        (
            "deep json",
            Box::new(|s| {
                s.device_memory_profiles.push(pb::RuntimeSection {
                    json: "[".repeat(100_000),
                    ..Default::default()
                })
            }),
        ),
        (
            "wrong type",
            Box::new(|s| s.memory_snapshots[0].json = "{\"peak_allocated_bytes\":-1}".into()),
        ),
        (
            "series columns",
            Box::new(|s| {
                s.device_memory_series.push(pb::RuntimeSection {
                    json: r#"{"inputs":["a","b"],"buffer_bytes":[1],"growing_stacks":[]}"#.into(),
                    ..Default::default()
                })
            }),
        ),
    ];
    // Lines replayed without, on the page (the view's) or by the analyzer
    // (a snapshot section's), are held to the same bounds.
    type Add = fn(&mut pb::SharedReport, &str, u32, Vec<i64>, Vec<u64>);
    let mut lines: Vec<(String, Box<dyn Fn(&mut pb::SharedReport)>)> = Vec::new();
    for (whose, add) in [
        ("the page's", replayed as Add),
        ("the analyzer's", replayed_by_the_analyzer as Add),
    ] {
        let edits: [(&str, Box<dyn Fn(&mut pb::SharedReport)>); 5] = [
            (
                "line of no snapshot carried",
                Box::new(move |s| add(s, "other.pickle", 0, vec![1], vec![1])),
            ),
            (
                "line of another device",
                Box::new(move |s| add(s, "snap.pickle", 3, vec![1], vec![1])),
            ),
            (
                "line's columns",
                Box::new(move |s| add(s, "snap.pickle", 0, vec![1, 2], vec![1])),
            ),
            (
                "line's negative position",
                Box::new(move |s| add(s, "snap.pickle", 0, vec![-5], vec![1])),
            ),
            (
                "lines, too many",
                Box::new(move |s| {
                    for _ in 0..33 {
                        add(s, "snap.pickle", 0, vec![1], vec![1]);
                    }
                }),
            ),
        ];
        lines.extend(
            edits
                .into_iter()
                .map(|(what, edit)| (format!("{whose} {what}"), edit)),
        );
    }
    let cases = cases
        .into_iter()
        .map(|(what, edit)| (what.to_string(), edit))
        .chain(lines);
    // A sound snapshot line opens.
    let mut s = good.clone();
    replayed(&mut s, "snap.pickle", 0, vec![0, 5], vec![7, 3]);
    let carried = decode(&raw_link(&s)).unwrap().shared.unwrap().view;
    assert_eq!(carried.snapshot_without[0].positions, vec![0, 5]);
    assert_eq!(carried.snapshot_without[0].heap_bytes, vec![7, 3]);
    // So does a sound line the analyzer replayed, into its snapshot.
    let mut s = good.clone();
    replayed_by_the_analyzer(&mut s, "snap.pickle", 0, vec![0, 5], vec![7, 3]);
    let back = decode(&raw_link(&s)).unwrap();
    let curves = &back.memory_snapshots[0].what_if_curves;
    assert_eq!(curves.len(), 1);
    assert_eq!(
        (&curves[0].positions, &curves[0].heap_bytes),
        (&vec![0, 5], &vec![7, 3])
    );
    for (what, edit) in cases {
        let mut s = good.clone();
        edit(&mut s);
        match decode(&raw_link(&s)) {
            Err(LinkError::Invalid(_)) | Err(LinkError::Corrupt(_)) => {}
            other => panic!("{what}: {other:?}"),
        }
    }
    // Cut anywhere: refused, never a panic.
    let (fragment, _) = encode_fragment(&runtime_report(), &view(), 0).unwrap();
    for cut in (10..fragment.len()).step_by(97) {
        assert!(decode(&fragment[..cut]).is_err(), "cut at {cut}");
    }
}
