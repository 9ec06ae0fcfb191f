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

/// PyTorch's MPS allocator: `MPS allocated` (the heaps it holds, as
/// `reserved`), `other allocations` and `max allowed` (the watermark, as
/// `limit`), then the request; `GB`/`MB` of PyTorch ≤ 2.2 are binary too.
#[test]
fn torch_mps_every_form_posted() {
    // (file, events, [MPS allocated, other allocations, max allowed, request])
    let cases: [(&str, usize, [u64; 4]); 7] = [
        (
            "mps_repeated_gib_comfyui7440.txt",
            1,
            [g(9.57), g(17.35), g(27.20), m(292.50)],
        ),
        (
            "mps_gb_comfyui7372.txt",
            1,
            [g(17.68), m(3.95), g(18.13), m(1024.00)],
        ),
        (
            "mps_shared_pool_bytes_pinokio941.txt",
            1,
            [g(16.00), g(3.31), g(18.13), 256],
        ),
        (
            "mps_two_errors_rlswarm341.txt",
            2,
            [g(15.05), g(11.91), g(27.20), g(1.16)],
        ),
        (
            "mps_cut_after_watermark_comfyui2489.txt",
            1,
            [g(5.56), g(1.10), g(6.80), m(768.00)],
        ),
        (
            "mps_fenced_traceback_surya254.txt",
            1,
            [g(7.23), g(1.54), g(9.07), m(896.00)],
        ),
        (
            "mps_no_final_period_clipinterrogator74.txt",
            1,
            [g(6.04), g(1.04), g(6.77), m(459.07)],
        ),
    ];
    for (name, count, [mps, other, allowed, req]) in cases {
        let events = check(
            name,
            OomKind::TorchCuda,
            count,
            &[
                ("reserved_bytes", mps),
                ("extra.other_allocations_bytes", other),
                ("limit_bytes", allowed),
                ("requested_bytes", req),
            ],
        );
        let e = &events[0];
        assert_eq!(e.memory_space, oomscope_report::MemorySpace::Mps, "{name}");
        assert!(e.missing.is_empty(), "{name}: {:?}", e.missing);
        // Nothing the MPS message does not print.
        assert_eq!(e.total_capacity_bytes, None, "{name}");
        assert_eq!(e.free_bytes, None, "{name}");
        assert_eq!(e.allocated_bytes, None, "{name}");
    }
    // The same message pasted five times (the last copy cut after the
    // request) is one error, counted five times.
    let e = &parse_oom_log("7440", &sample("mps_repeated_gib_comfyui7440.txt"))[0];
    assert_eq!(e.repeats, 5);
    // Two different failures of one run stay two.
    let events = parse_oom_log("341", &sample("mps_two_errors_rlswarm341.txt"));
    assert_eq!(events[1].line, 6);
    assert_eq!(events[1].reserved_bytes, Some(g(13.36)));
    assert_eq!(events[1].extra["other_allocations_bytes"], g(13.77));
    assert_eq!(events[1].requested_bytes, Some(m(583.07)));
}

/// XPU: Intel's extension prints the old form without a free clause (not
/// missing: never printed), PyTorch's own XPU allocator the newest form,
/// with `allowed` when a per-process fraction is set. pytest's summary line
/// repeats the error cut inside a number: no number is read from it.
#[test]
fn torch_xpu_generations() {
    let events = check(
        "xpu_ipex_no_free_clause_ipex629.txt",
        OomKind::TorchCuda,
        2,
        &[
            ("requested_bytes", g(1.71)),
            ("total_capacity_bytes", g(15.56)),
            ("allocated_bytes", 0),
            ("reserved_bytes", 0),
        ],
    );
    // "Current platform can NOT allocate memory block with size larger than
    // 4GB!" is a platform limit, not an out-of-memory: no event.
    assert_eq!(events[0].line, 10);
    assert_eq!(events[1].allocated_bytes, Some(m(176.00)));
    assert_eq!(events[1].reserved_bytes, Some(m(176.00)));
    for e in &events {
        assert_eq!(e.memory_space, oomscope_report::MemorySpace::Xpu);
        assert_eq!(e.free_bytes, None);
        assert!(e.missing.is_empty(), "{:?}", e.missing);
    }
    let events = check(
        "xpu_newest_kib_xpuops3011.txt",
        OomKind::TorchCuda,
        1,
        &[
            ("requested_bytes", g(4.66)),
            ("total_capacity_bytes", g(5.65)),
            ("free_bytes", g(5.65)),
            ("allocated_bytes", k(195.50)),
            ("reserved_unallocated_bytes", m(1.81)),
            ("reserved_bytes", k(195.50) + m(1.81)),
        ],
    );
    assert!(events[0].missing.is_empty(), "{:?}", events[0].missing);
    let events = check(
        "xpu_allowed_and_summary_xpuops2392.txt",
        OomKind::TorchCuda,
        1,
        &[
            ("requested_bytes", g(8.11)),
            ("total_capacity_bytes", g(16.54)),
            ("free_bytes", g(16.54)),
            ("extra.allowed_bytes", g(8.27)),
            ("limit_bytes", g(8.27)),
            ("allocated_bytes", 0),
            ("reserved_unallocated_bytes", 0),
            ("reserved_bytes", 0),
        ],
    );
    assert_eq!(
        events[0].repeats, 1,
        "the cut summary line is no second reading"
    );
    // pytest's repro hint on the same line as the message adds nothing.
    let events = check(
        "xpu_test_repro_same_line_xpuops3157.txt",
        OomKind::TorchCuda,
        1,
        &[
            ("requested_bytes", g(32.00)),
            ("total_capacity_bytes", g(11.59)),
            ("free_bytes", g(9.01)),
            ("allocated_bytes", 0),
            ("reserved_unallocated_bytes", 0),
            ("reserved_bytes", 0),
        ],
    );
    assert_eq!(events[0].memory_space, oomscope_report::MemorySpace::Xpu);
    assert!(events[0].missing.is_empty(), "{:?}", events[0].missing);
}

/// PyTorch CUDA messages of 1.10 – 2.4 as posted: the `max_split_size_mb`
/// hint after the old form, `GPU 1`, `0 bytes free`, 2.1's "capacty" with
/// another process named by NVML, the `expandable_segments` hint, a message
/// wrapped at words by its author, one cut inside its hint, one pasted with
/// only its request.
#[test]
#[allow(clippy::approx_constant)] // "3.14 GiB" is a size as printed, not π
fn torch_cuda_posted_generations() {
    let old_form: [(&str, u64, [u64; 5]); 3] = [
        (
            "torch_reserved_max_split_zero_free_compvis702.txt",
            0,
            [m(192.00), g(4.00), g(3.08), 0, g(3.47)],
        ),
        (
            "torch_reserved_gpu1_stripformer21.txt",
            1,
            [g(1.65), g(7.79), g(3.53), g(1.40), g(5.28)],
        ),
        (
            "torch_cut_env_name_torchxla4662.txt",
            0,
            [m(52.00), g(79.20), m(752.52), m(27.25), m(886.00)],
        ),
    ];
    for (name, device, [req, cap, alloc, free, reserved]) in old_form {
        let events = check(
            name,
            OomKind::TorchCuda,
            1,
            &[
                ("requested_bytes", req),
                ("total_capacity_bytes", cap),
                ("limit_bytes", cap),
                ("allocated_bytes", alloc),
                ("free_bytes", free),
                ("reserved_bytes", reserved),
                ("extra.device", device),
            ],
        );
        assert!(
            events[0].missing.is_empty(),
            "{name}: {:?}",
            events[0].missing
        );
    }
    // A later comment quoting part of the message (no keyword) adds nothing.
    let e = &parse_oom_log(
        "702",
        &sample("torch_reserved_max_split_zero_free_compvis702.txt"),
    )[0];
    assert_eq!(e.repeats, 1);

    // (file, [request, capacity, free, by PyTorch, unallocated], this process, other process)
    type NewForm<'a> = (&'a str, [u64; 5], Option<u64>, Option<(&'a str, u64)>);
    let new_form: [NewForm; 4] = [
        (
            "torch_capacty_other_process_generateu10.txt",
            [m(496.00), g(14.75), m(235.06), g(14.06), m(330.42)],
            None,
            Some(("extra.process_20398_in_use_bytes", g(14.52))),
        ),
        (
            "torch_capacty_this_process_mygirlgpt11.txt",
            [m(32.00), g(4.00), m(41.56), g(2.58), m(1.90)],
            Some(g(3.44)),
            None,
        ),
        (
            "torch_expandable_segments_hint_cads4.txt",
            [g(22.78), g(31.47), g(12.73), g(9.08), g(9.35)],
            Some(g(18.73)),
            None,
        ),
        (
            "torch_nvml_wrapped_at_words_pytorch99699.txt",
            [m(138.00), g(15.90), m(8.44), g(14.12), m(410.41)],
            Some(g(15.32)),
            Some(("extra.process_1246069_in_use_bytes", m(577.00))),
        ),
    ];
    for (name, [req, cap, free, by_pytorch, unallocated], this, other) in new_form {
        let mut want = vec![
            ("requested_bytes", req),
            ("total_capacity_bytes", cap),
            ("limit_bytes", cap),
            ("free_bytes", free),
            ("allocated_bytes", by_pytorch),
            ("reserved_unallocated_bytes", unallocated),
            ("reserved_bytes", by_pytorch + unallocated),
        ];
        if let Some(p) = this {
            want.push(("extra.process_in_use_bytes", p));
        }
        if let Some(o) = other {
            want.push(o);
        }
        let events = check(name, OomKind::TorchCuda, 1, &want);
        assert!(
            events[0].missing.is_empty(),
            "{name}: {:?}",
            events[0].missing
        );
        if this.is_none() {
            assert!(
                !events[0].extra.contains_key("process_in_use_bytes"),
                "{name}"
            );
        }
    }

    // PyTorch ≥ 2.2 as posted: several processes named by NVML (every one
    // kept, by pid), behind vLLM's logger header with private pools, a
    // request above the capacity, 0 bytes free with more allocated than the
    // capacity (Windows shared memory), a line pasted from its middle,
    // Jira `{code}` markup.
    type Newest<'a> = (&'a str, [u64; 5], Option<u64>, Vec<(&'a str, u64)>);
    let newest: [Newest; 6] = [
        (
            "torch_three_processes_rlinf255.txt",
            [m(86.00), g(23.64), m(264.00), g(7.63), m(40.11)],
            Some(g(8.04)),
            vec![
                ("extra.process_2086283_in_use_bytes", m(419.48)),
                ("extra.process_2797307_in_use_bytes", g(14.85)),
            ],
        ),
        (
            "torch_private_pools_vllm_logger_kaito976.txt",
            [m(546.00), g(15.77), m(514.19), g(13.73), m(736.86)],
            None,
            vec![
                ("extra.process_562167_in_use_bytes", g(15.25)),
                ("private_pools_bytes", m(46.00)),
            ],
        ),
        (
            "torch_request_over_capacity_qwen240.txt",
            [g(124.68), g(95.22), g(51.23), g(25.50), g(3.14)],
            None,
            vec![
                ("extra.process_608946_in_use_bytes", g(14.91)),
                ("extra.process_734147_in_use_bytes", g(29.07)),
            ],
        ),
        (
            "torch_zero_free_shared_memory_meshgen7.txt",
            [m(1002.00), g(8.00), 0, g(13.98), m(129.48)],
            None,
            vec![],
        ),
        (
            "torch_ellipsis_prefix_framepack369.txt",
            [g(30.29), g(10.74), g(3.69), g(6.10), m(396.58)],
            Some(g(6.68)),
            vec![],
        ),
        (
            "torch_jira_code_markup_hunyuan238.txt",
            [m(20.00), g(15.48), m(17.75), g(14.85), m(278.23)],
            Some(g(15.45)),
            vec![],
        ),
    ];
    for (name, [req, cap, free, by_pytorch, unallocated], this, more) in newest {
        let mut want = vec![
            ("requested_bytes", req),
            ("total_capacity_bytes", cap),
            ("limit_bytes", cap),
            ("free_bytes", free),
            ("allocated_bytes", by_pytorch),
            ("reserved_unallocated_bytes", unallocated),
            ("reserved_bytes", by_pytorch + unallocated),
        ];
        if let Some(p) = this {
            want.push(("extra.process_in_use_bytes", p));
        }
        want.extend(more);
        let events = check(name, OomKind::TorchCuda, 1, &want);
        assert!(
            events[0].missing.is_empty(),
            "{name}: {:?}",
            events[0].missing
        );
    }

    // Only the request was pasted: the rest is missing, none invented.
    let events = check(
        "torch_request_only_controlnet50.txt",
        OomKind::TorchCuda,
        1,
        &[("requested_bytes", g(218.96))],
    );
    let e = &events[0];
    for key in [
        "total_capacity_bytes",
        "free_bytes",
        "allocated_bytes",
        "reserved_bytes",
        "limit_bytes",
    ] {
        assert_eq!(number(e, key), None, "{key}");
        assert!(e.missing.iter().any(|m| m == key), "{key}: {:?}", e.missing);
    }
    // Which generation it was is unknown: the field only ≥ 2.1 prints is
    // not claimed missing.
    assert!(!e.missing.iter().any(|m| m == "reserved_unallocated_bytes"));
}

/// TPU compile messages of other eras: the VMEM report cut after its first
/// line (`Program vmem requirement`), and TF ≤ 2.2's VMEM failure printed
/// without any size (an event naming the memory space, with nothing
/// claimed missing: that form prints no number).
#[test]
fn tpu_vmem_posted_forms() {
    let events = check(
        "tpu_vmem_program_requirement_torchxla7962.txt",
        OomKind::TorchXla,
        1,
        &[
            ("used_bytes", m(29.96)),
            ("limit_bytes", m(16.00)),
            ("exceeded_bytes", m(13.96)),
            ("program_bytes", m(29.96)),
        ],
    );
    assert_eq!(events[0].memory_space, oomscope_report::MemorySpace::Vmem);
    for name in [
        "tpu_vmem_no_numbers_tf38272.txt",
        "tpu_vmem_no_numbers_title_tf26893.txt",
    ] {
        let events = check(name, OomKind::TpuCompileOtherSpace, 1, &[]);
        let e = &events[0];
        assert_eq!(e.memory_space, oomscope_report::MemorySpace::Vmem, "{name}");
        assert_eq!(event_numbers(e), 0, "{name}: {e:#?}");
        assert!(e.missing.is_empty(), "{name}: {:?}", e.missing);
    }
}

/// TF 2.x's retry warning says "not a failure" when the caller copes: no
/// event, even when a wrap puts that sentence on the next line.
#[test]
fn tf_retry_warnings_are_no_failure() {
    let text = sample("tf_bfc_freed_by_count_not_a_failure_tf43546.txt");
    assert!(parse_oom_log("43546", &text).is_empty());
    let wrapped: String = text
        .lines()
        .flat_map(|l| {
            let chars: Vec<char> = l.chars().collect();
            chars
                .chunks(150)
                .map(|c| c.iter().collect::<String>() + "\n")
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(parse_oom_log("43546", &wrapped).is_empty(), "{wrapped}");
    // Without the sentence, the same warning is a failed allocation.
    let failed = text
        .lines()
        .next()
        .unwrap()
        .split(" The caller")
        .next()
        .unwrap()
        .to_string();
    let events = parse_oom_log("43546", &failed);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].requested_bytes, Some(g(1.02)));
}

/// Every number an event holds (fields, extras, listed allocations).
fn event_numbers(e: &OomEvent) -> usize {
    let mut n = e.extra.len() + e.top_allocations.len() + e.top_arguments.len();
    if let Ok(serde_json::Value::Object(obj)) = serde_json::to_value(e) {
        n += obj
            .iter()
            .filter(|(k, v)| k.ends_with("_bytes") && v.is_u64())
            .count();
    }
    n
}

/// TensorFlow's BFC allocator before 2.x: TF 1.0 names no allocator and its
/// log lines carry no date (`W tensorflow/...cc:217] `); TF 1.2 prints no
/// rounding, and bins with `client-requested for chunks`. The retry warning
/// that is "not a failure" stays none in both.
#[test]
fn tf1_bfc_allocator_generations() {
    let events = check(
        "xla_tf10_bfc_no_allocator_name_fasterrcnn7.txt",
        OomKind::XlaGpu,
        1,
        &[("requested_bytes", m(392.00))],
    );
    assert_eq!(events[0].line, 1);
    let events = check(
        "xla_tf12_bfc_host_allocator_tf11915.txt",
        OomKind::XlaGpu,
        1,
        &[("requested_bytes", g(3.72))],
    );
    assert_eq!(events[0].line, 2);
    // `cuda_host_bfc` is the pinned host memory, not the GPU's.
    assert_eq!(events[0].memory_space, oomscope_report::MemorySpace::Host);
    assert!(parse_oom_log("5326", &sample("xla_tf10_bfc_not_a_failure_keras5326.txt")).is_empty());
    // The old bins are read, not skipped: a bin with chunks gives its bytes
    // (two real lines of the same TF 1.0 generation put together: the
    // posted dumps above only show empty bins).
    let text = format!(
        "{}\n{}",
        sample("xla_tf10_bfc_no_allocator_name_fasterrcnn7.txt")
            .lines()
            .next()
            .unwrap(),
        sample("xla_tf10_bfc_not_a_failure_keras5326.txt")
            .lines()
            .nth(3)
            .unwrap()
    );
    let e = &parse_oom_log("bins", &text)[0];
    assert_eq!(e.extra.get("bin_256_allocated_bytes"), Some(&512), "{e:#?}");
    assert_eq!(e.extra.get("bin_256_in_use_bytes"), Some(&0));
}

/// XLA on GPU through JAX: PJRT's `Out of memory allocating N bytes.`, the
/// adapter's wording inside an IPython traceback, and the old `Resource
/// exhausted:` wording before the CUDA driver's own failures (which are not
/// the error: the allocator retries).
#[test]
fn xla_gpu_wordings_through_jax() {
    for (name, bytes) in [
        (
            "xla_pjrt_out_of_memory_allocating_llnerf9.txt",
            20_029_400_304u64,
        ),
        ("xla_ipython_traceback_colabfold65.txt", 14_285_187_448),
        ("xla_old_wording_cuda_driver_alphafold197.txt", 12_582_912),
    ] {
        let events = check(name, OomKind::XlaGpu, 1, &[("requested_bytes", bytes)]);
        assert_eq!(
            events[0].memory_space,
            oomscope_report::MemorySpace::Gpu,
            "{name}"
        );
    }
    // Other programs print the same words without XLA's status code.
    assert!(parse_oom_log(
        "gdal",
        "ERROR 2: Out of memory allocating 4096 bytes for mask."
    )
    .is_empty());
}

/// A PyTorch message pasted without its first words is read from the
/// allocator's grammar after the request; the same words on the line after
/// a wrapped headline are that message's rest, not a second error.
#[test]
fn torch_message_without_its_first_words() {
    let events = check(
        "torch_first_words_cut_shannonai6.txt",
        OomKind::TorchCuda,
        1,
        &[
            ("requested_bytes", m(20.00)),
            ("total_capacity_bytes", g(1.96)),
            ("allocated_bytes", g(1.24)),
            ("free_bytes", m(2.88)),
            ("reserved_bytes", g(1.25)),
        ],
    );
    assert!(events[0].missing.is_empty(), "{:?}", events[0].missing);
    let wrapped = format!(
        "RuntimeError: CUDA out of memory.\n{}",
        sample("torch_first_words_cut_shannonai6.txt")
    );
    let events = parse_oom_log("wrapped", &wrapped);
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].repeats, 1);
    assert_eq!(events[0].line, 1);
    // Other allocators' "tried to allocate" is no PyTorch message.
    assert!(parse_oom_log(
        "cpu",
        "RuntimeError: [enforce fail at alloc_cpu.cpp:114] DefaultCPUAllocator: can't allocate memory: you tried to allocate 1125899906842624 bytes."
    )
    .is_empty());
}

/// OpenXLA E1001 (one instruction's scoped VMEM) in each form posted: the
/// numbers on the instruction's line or on the line after it, without the
/// excess, quoted alone, and the documentation's sample with no numbers.
#[test]
fn tpu_scoped_vmem_every_form_posted() {
    let cases: [(&str, u64, Option<u64>, Option<u64>, Option<&str>); 5] = [
        (
            "tpu_scoped_vmem_e1001_splash.txt",
            m(19.85),
            Some(m(16.00)),
            Some(m(3.85)),
            Some("%splash_mha_fwd"),
        ),
        (
            "tpu_scoped_vmem_megablox_gmm.txt",
            m(18.00),
            Some(m(16.00)),
            Some(m(2.00)),
            Some("%gmm.1"),
        ),
        (
            "tpu_scoped_vmem_ragged_paged_attention.txt",
            m(37.54),
            Some(m(16.00)),
            None,
            Some("ragged_paged_attention"),
        ),
        (
            "tpu_scoped_vmem_pallas_one_line.txt",
            m(36.25),
            Some(m(32.00)),
            Some(m(4.25)),
            Some("%_fwd.1"),
        ),
        (
            "tpu_scoped_vmem_numbers_only.txt",
            m(34.08),
            Some(m(32.00)),
            Some(m(2.08)),
            None,
        ),
    ];
    for (name, need, limit, over, label) in cases {
        let events = check(
            name,
            OomKind::TpuScopedVmem,
            1,
            &[("requested_bytes", need)],
        );
        let e = &events[0];
        assert_eq!(e.memory_space, oomscope_report::MemorySpace::Vmem, "{name}");
        assert_eq!(e.limit_bytes, limit, "{name}");
        assert_eq!(e.exceeded_bytes, over, "{name}");
        assert!(e.missing.is_empty(), "{name}: {:?}", e.missing);
        assert_eq!(
            e.top_allocations
                .first()
                .and_then(|t| t.xla_label.as_deref()),
            label,
            "{name}"
        );
    }
    let kernel = &parse_oom_log("k", &sample("tpu_scoped_vmem_pallas_one_line.txt"))[0];
    let t = &kernel.top_allocations[0];
    assert_eq!(t.shape, "bf16[16384,6144]{1,0:T(8,128)(2,1)}");
    assert_eq!(
        t.op_name.as_deref(),
        Some("jit(call)/call_exported/jit(kernel)/jit(_fwd)/pallas_call")
    );
    assert_eq!(
        t.allocation_type.as_deref(),
        Some("scoped stack of custom-call tpu_custom_call")
    );
    let gmm = &parse_oom_log("g", &sample("tpu_scoped_vmem_megablox_gmm.txt"))[0];
    assert_eq!(gmm.top_allocations[0].shape, "f32[16384,512]{1,0:T(8,128)}");
    // The documentation's sample: the form, with no number to read.
    let events = check(
        "tpu_scoped_vmem_docs_no_numbers.txt",
        OomKind::TpuScopedVmem,
        1,
        &[],
    );
    assert_eq!(event_numbers(&events[0]), 0);
    assert!(events[0].missing.is_empty());
}
