//! Real messages posted in public issues (`tests/samples/`, each file's first
//! line names its source), one per generation and variant of each printer:
//! every number the message states is checked, converted by hand (`GiB`,
//! `MiB`, `KiB` and TPU `G`/`M`/`K` are binary; a rounded value is
//! round(value × unit)).

use oomscope_logs::parse_oom_log;
use oomscope_report::{OomEvent, OomKind};

/// The text of a sample, without its source line.
fn sample(name: &str) -> String {
    let path = format!("{}/tests/samples/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let body = text.split_once('\n').map_or("", |(_, b)| b);
    body.to_string()
}

fn g(v: f64) -> u64 {
    (v * (1u64 << 30) as f64).round() as u64
}
fn m(v: f64) -> u64 {
    (v * (1u64 << 20) as f64).round() as u64
}
fn k(v: f64) -> u64 {
    (v * 1024.0).round() as u64
}

/// The number named `key` (`requested_bytes`, `extra.device`) of an event.
fn number(e: &OomEvent, key: &str) -> Option<u64> {
    if let Some(extra) = key.strip_prefix("extra.") {
        return e.extra.get(extra).copied();
    }
    serde_json::to_value(e).ok()?.get(key)?.as_u64()
}

/// Parses a sample, expects `count` events and checks `numbers` on the first.
fn check(name: &str, kind: OomKind, count: usize, numbers: &[(&str, u64)]) -> Vec<OomEvent> {
    let events = parse_oom_log(name, &sample(name));
    assert_eq!(events.len(), count, "{name}: {events:#?}");
    let e = &events[0];
    assert_eq!(e.kind, kind, "{name}");
    for (key, want) in numbers {
        assert_eq!(number(e, key), Some(*want), "{name}: {key} in {e:#?}");
    }
    events
}

/// ≤ 1.3: `...; W free; V cached)`: cached is the total reserved.
#[test]
fn torch_oldest_generation_cached() {
    let cases: [(&str, [u64; 5]); 8] = [
        (
            "torch_cached_structureflow35.txt",
            [m(8.13 * 1024.0), g(10.76), m(643.57), g(8.20), m(32.43)],
        ),
        (
            "torch_cached_kib_rcf4.txt",
            [m(24.00), g(3.95), g(3.46), m(1.06), k(60.00)],
        ),
        (
            "torch_cached_kib_generativegraph5.txt",
            [k(1024.00), g(11.17), g(10.90), k(576.00), m(30.96)],
        ),
        (
            "torch_cached_neurosim28.txt",
            [m(1.12), g(22.37), g(15.87), m(3.56), m(787.74)],
        ),
        (
            "torch_cached_traceback_pytorch18853.txt",
            [m(1024.00), g(15.90), g(14.25), m(991.56), k(607.00)],
        ),
        (
            "torch_cached_semseg188.txt",
            [m(74.00), g(1.96), g(1.46), m(71.50), m(38.53)],
        ),
        (
            "torch_cached_benchmark1.txt",
            [m(32.00), g(7.79), g(6.64), m(21.00), m(150.86)],
        ),
        (
            "torch_cached_and_new_pytorch16417.txt",
            [m(12.50), g(10.92), m(8.57), g(9.28), m(4.68)],
        ),
    ];
    for (name, [req, cap, alloc, free, reserved]) in cases {
        let count = if name.contains("and_new") { 2 } else { 1 };
        let events = check(
            name,
            OomKind::TorchCuda,
            count,
            &[
                ("requested_bytes", req),
                ("total_capacity_bytes", cap),
                ("limit_bytes", cap),
                ("allocated_bytes", alloc),
                ("free_bytes", free),
                ("reserved_bytes", reserved),
                ("extra.device", 0),
            ],
        );
        assert!(
            events[0].missing.is_empty(),
            "{name}: {:?}",
            events[0].missing
        );
        assert_eq!(
            events[0].reserved_unallocated_bytes, None,
            "{name}: not printed"
        );
    }
}

#[test]
fn torch_first_and_newest_generation_in_one_thread() {
    let events = parse_oom_log("16417", &sample("torch_cached_and_new_pytorch16417.txt"));
    let e = &events[1];
    assert_eq!(e.line, 4);
    assert_eq!(e.requested_bytes, Some(m(22.00)));
    assert_eq!(e.total_capacity_bytes, Some(g(23.65)));
    assert_eq!(e.free_bytes, Some(m(11.06)));
    assert_eq!(number(e, "extra.process_in_use_bytes"), Some(g(23.60)));
    assert_eq!(e.allocated_bytes, Some(g(22.90)));
    assert_eq!(e.reserved_unallocated_bytes, Some(m(194.87)));
    assert_eq!(e.reserved_bytes, Some(g(22.90) + m(194.87)));
    assert!(e.missing.is_empty(), "{:?}", e.missing);
}

/// 1.4 – 2.0: `...; W free; V reserved in total by PyTorch)`.
#[test]
fn torch_reserved_in_total_generation() {
    let cases: [(&str, [u64; 5]); 5] = [
        (
            "torch_reserved_unclosed_resumener4.txt",
            [m(92.00), g(1.96), g(1.46), m(16.38), g(1.51)],
        ),
        (
            "torch_reserved_mmseg944.txt",
            [m(1006.00), g(10.91), g(9.18), m(569.81), g(9.49)],
        ),
        (
            "torch_reserved_backticks_shiftgcn34.txt",
            [m(236.00), g(15.78), g(14.25), m(183.50), g(14.34)],
        ),
        (
            "torch_reserved_maddog11.txt",
            [g(2.87), g(14.76), g(8.77), m(19.75), g(13.71)],
        ),
        (
            "torch_reserved_vdsr2.txt",
            [m(512.00), g(15.90), g(13.13), m(415.88), g(14.80)],
        ),
    ];
    for (name, [req, cap, alloc, free, reserved]) in cases {
        let events = check(
            name,
            OomKind::TorchCuda,
            1,
            &[
                ("requested_bytes", req),
                ("total_capacity_bytes", cap),
                ("allocated_bytes", alloc),
                ("free_bytes", free),
                ("reserved_bytes", reserved),
            ],
        );
        assert!(
            events[0].missing.is_empty(),
            "{name}: {:?}",
            events[0].missing
        );
    }
}

/// ≥ 2.1 on ROCm (`HIP out of memory`, same allocator code): reserved is
/// allocated + reserved but unallocated.
#[test]
fn torch_hip_newest_generation() {
    let cases: [(&str, u64, [u64; 5]); 6] = [
        (
            "torch_hip_strixhalo3.txt",
            0,
            [g(3.31), g(128.00), m(780.24), g(57.70), m(75.82)],
        ),
        (
            "torch_hip_comfyui9529.txt",
            0,
            [m(432.00), g(15.92), g(7.12), g(8.08), m(321.96)],
        ),
        (
            "torch_hip_zero_bytes_therock1054.txt",
            0,
            [g(16.00), g(15.24), g(15.09), 0, 0],
        ),
        (
            "torch_hip_quoted_fluxwebui25.txt",
            0,
            [m(80.00), g(15.98), m(84.00), g(15.44), m(267.59)],
        ),
        (
            "torch_hip_gpu7_pytorch175431.txt",
            7,
            [m(2.00), g(287.98), g(203.49), g(68.63), g(14.93)],
        ),
        (
            "torch_hip_zimage103.txt",
            0,
            [g(1.88), g(23.98), g(1.70), g(21.65), m(279.78)],
        ),
    ];
    for (name, device, [req, cap, free, alloc, unalloc]) in cases {
        let events = check(
            name,
            OomKind::TorchCuda,
            1,
            &[
                ("requested_bytes", req),
                ("total_capacity_bytes", cap),
                ("free_bytes", free),
                ("allocated_bytes", alloc),
                ("reserved_unallocated_bytes", unalloc),
                ("reserved_bytes", alloc + unalloc),
                ("extra.device", device),
            ],
        );
        assert!(
            events[0].missing.is_empty(),
            "{name}: {:?}",
            events[0].missing
        );
    }
}

/// CI log: the same error printed twice (second copy cut by the excerpt):
/// one event, counted twice, with the allowed fraction and private pools.
#[test]
fn torch_hip_private_pools_in_ci_log() {
    let name = "torch_hip_private_pools_ci_therock2118.txt";
    let events = check(
        name,
        OomKind::TorchCuda,
        1,
        &[
            ("requested_bytes", m(2.00)),
            ("total_capacity_bytes", g(287.98)),
            ("free_bytes", g(275.86)),
            ("extra.allowed_bytes", g(1.05)),
            ("limit_bytes", g(1.05)),
            ("allocated_bytes", m(1017.01)),
            ("private_pools_bytes", m(17.00)),
            ("reserved_unallocated_bytes", m(54.99)),
        ],
    );
    assert_eq!(events[0].repeats, 2);
}

/// PyTorch/XLA's runtime OOM with the runtime's memory breakdown.
#[test]
fn tpu_runtime_breakdown() {
    let name = "tpu_runtime_breakdown_torchxla1735.txt";
    let events = check(
        name,
        OomKind::TpuRuntime,
        1,
        &[
            ("requested_bytes", 4_237_689_856),
            ("free_bytes", g(1.92)),
            ("reserved_bytes", 0),
            ("extra.reservable_bytes", g(1.92)),
            ("total_capacity_bytes", g(8.00)),
            ("extra.top_of_memory_reserved_bytes", 554_696_704),
            ("allocated_bytes", 6_532_939_776),
            ("exceeded_bytes", 2_735_391_744),
            ("program_bytes", g(4.34)),
            ("extra.largest_free_chunk_bytes", g(1.92)),
            ("arguments_bytes", m(478.07)),
            ("output_bytes", g(5.06)),
            ("hlo_temp_bytes", g(3.93)),
            ("hlo_temp_unpadded_bytes", g(3.81)),
            ("hlo_temp_padded_bytes", g(3.92)),
            ("fragmentation_bytes", m(14.68)),
            ("extra.scoped_bytes", m(17.43)),
        ],
    );
    assert!(events[0].missing.is_empty(), "{:?}", events[0].missing);
}

/// `Error loading program '<name>': Attempting to reserve X at the bottom of
/// memory. That was not possible.`: no free/reserved/reservable clause, and
/// none reported missing (the message does not print them).
#[test]
fn tpu_runtime_cut_short_by_the_runtime() {
    let events = check(
        "tpu_runtime_cut_short_tpurecipes151.txt",
        OomKind::TpuRuntime,
        1,
        &[("requested_bytes", g(6.14))],
    );
    assert_eq!(events[0].free_bytes, None);
    assert!(events[0].missing.is_empty(), "{:?}", events[0].missing);
}

/// A compiler report posted without its headline (issue 15 item 1).
#[test]
fn tpu_headless_usage_report() {
    let events = check(
        "tpu_headless_usage_torchxla3041.txt",
        OomKind::TpuCompileHbm,
        1,
        &[
            ("extra.total_usage_bytes", g(8.74)),
            ("reserved_bytes", m(18.00)),
            ("program_bytes", g(1.68)),
            ("arguments_bytes", g(7.04)),
            ("output_bytes", k(6.0)),
            ("extra.output_shared_with_arguments_bytes", 0),
            ("extra.global_bytes", k(4.0)),
            ("hlo_temp_bytes", g(1.68)),
            ("hlo_temp_unpadded_bytes", g(1.12)),
            ("hlo_temp_padded_bytes", g(1.67)),
            ("fragmentation_bytes", m(7.92)),
        ],
    );
    let e = &events[0];
    assert_eq!(e.line, 3);
    let sizes: Vec<(u64, Option<u64>)> = e
        .top_allocations
        .iter()
        .map(|t| (t.size_bytes, t.padding_bytes))
        .collect();
    assert_eq!(sizes, [(m(570.00), None), (m(570.00), Some(m(285.00)))]);
    assert_eq!(e.used_bytes, None, "no headline, no invented usage");
}

#[test]
fn tpu_exceeded_on_its_own_line() {
    check(
        "tpu_exceeded_next_line_lwm60.txt",
        OomKind::TpuCompileHbm,
        1,
        &[
            ("used_bytes", g(21.95)),
            ("limit_bytes", g(15.48)),
            ("exceeded_bytes", g(6.47)),
            ("extra.total_usage_bytes", g(22.47)),
            ("reserved_bytes", m(530.00)),
            ("program_bytes", g(21.95)),
            ("arguments_bytes", 0),
        ],
    );
}

/// Pre-PJRT wording (`Resource exhausted:`, lowercase) and the PJRT one.
#[test]
fn xla_out_of_memory_while_trying_to_allocate() {
    for (name, bytes) in [
        ("xla_old_wording_dle405.txt", 68_852_648_264),
        ("xla_gpu_alphafold1023.txt", 7_406_166_528),
    ] {
        check(name, OomKind::XlaGpu, 1, &[("requested_bytes", bytes)]);
    }
}

/// XLA's BufferAssignment report, with spaces or tabs, whole or cut.
#[test]
fn xla_buffer_assignment_reports() {
    let events = check(
        "xla_gpu_elixir_xla32.txt",
        OomKind::XlaGpu,
        1,
        &[
            ("requested_bytes", 58_982_400),
            ("arguments_bytes", m(56.25)),
            ("output_bytes", m(56.25)),
            ("hlo_temp_bytes", 0),
            ("fragmentation_bytes", 0),
            ("extra.total_allocation_bytes", m(112.50)),
        ],
    );
    assert_eq!(events[0].top_allocations[0].size_bytes, m(56.25));
    for name in ["xla_gpu_tabs_nx1093.txt", "xla_gpu_openxla10660.txt"] {
        check(
            name,
            OomKind::XlaGpu,
            1,
            &[
                ("requested_bytes", 117_964_800),
                ("arguments_bytes", m(112.50)),
                ("output_bytes", m(112.50)),
                ("extra.total_allocation_bytes", m(225.00)),
            ],
        );
    }
    let tabs = parse_oom_log("nx", &sample("xla_gpu_tabs_nx1093.txt"));
    assert_eq!(tabs[0].top_allocations[0].size_bytes, m(112.50));
    assert_eq!(tabs[0].top_allocations[0].shape, "f32[29491200]");
}

/// TensorFlow's `OOM when allocating tensor with shape[...]` (and TF 1.x
/// `of shape [...]`): the request is elements × element size.
#[test]
fn tf_oom_when_allocating_tensor() {
    check(
        "tf_oom_tensor_yolov4_39.txt",
        OomKind::XlaGpu,
        1,
        &[("requested_bytes", 8 * 64 * 256 * 256 * 4)],
    );
    check(
        "tf_oom_tensor_of_shape_seq2seq19.txt",
        OomKind::XlaGpu,
        1,
        &[("requested_bytes", 4096 * 4)],
    );
    let events = check(
        "tf_oom_tensor_cpu_tf45238.txt",
        OomKind::XlaGpu,
        3,
        &[("requested_bytes", 416 * 416 * 3 * 4)],
    );
    assert_eq!(events[0].memory_space, oomscope_report::MemorySpace::Cpu);
    assert_eq!(events[0].repeats, 2);
    assert_eq!(events[1].requested_bytes, Some(559 * 512 * 3 * 4));
    assert_eq!(events[2].requested_bytes, Some(640 * 494 * 3 * 4));
}

#[test]
fn xla_buffer_assignment_stats_without_peak_buffers() {
    check(
        "xla_gpu_afprofile8.txt",
        OomKind::XlaGpu,
        1,
        &[
            ("requested_bytes", 4_770_354_232),
            ("arguments_bytes", m(372.76)),
            ("extra.constant_allocation_bytes", k(48.5)),
            ("output_bytes", g(9.64)),
            ("hlo_temp_bytes", g(4.44)),
            ("extra.total_allocation_bytes", g(14.44)),
            ("fragmentation_bytes", m(680.30)),
        ],
    );
}

/// Raised and logged: one error, the exact byte count kept.
#[test]
fn xla_failed_request_raised_and_logged() {
    check(
        "xla_failed_request_meshtransformer66.txt",
        OomKind::XlaGpu,
        1,
        &[("requested_bytes", 33_554_432)],
    );
}

#[test]
fn torch_xla_runtime_allocate() {
    let events = check(
        "torch_xla_runtime_allocate8020.txt",
        OomKind::TorchXla,
        1,
        &[("requested_bytes", m(196.00)), ("free_bytes", m(134.44))],
    );
    assert!(events[0].missing.is_empty(), "{:?}", events[0].missing);
}

#[test]
fn tpu_compile_headlines_in_posts() {
    check(
        "tpu_compile_easydel78.txt",
        OomKind::TpuCompileHbm,
        1,
        &[
            ("used_bytes", g(21.90)),
            ("limit_bytes", g(7.48)),
            ("exceeded_bytes", g(14.42)),
        ],
    );
    let events = check(
        "torch_xla_vmem9524.txt",
        OomKind::TorchXla,
        1,
        &[
            ("used_bytes", m(32.42)),
            ("limit_bytes", m(16.00)),
            ("exceeded_bytes", m(16.42)),
        ],
    );
    assert_eq!(events[0].memory_space, oomscope_report::MemorySpace::Vmem);
}
