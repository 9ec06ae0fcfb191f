//! Every real log of the shared corpus (`../shared/corpus/logs`, read in
//! place): the numbers of each file's `# expect:` line, converted by hand
//! (TPU `G`/`M`/`K` and PyTorch `GiB`/`MiB` are binary; a rounded value is
//! round(value × unit)), and the negative controls that must yield nothing.

use oomscope_logs::parse_oom_log;
use oomscope_report::{OomEvent, OomKind};

fn read(rel: &str) -> String {
    let path = oomscope_testdata::corpus().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The log text of a corpus file: what follows its `# ---` header line.
fn body(rel: &str) -> String {
    let text = read(rel);
    match text.find("\n# ---\n") {
        Some(i) => text[i + 7..].to_string(),
        None => panic!("{rel}: no header"),
    }
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

fn only(rel: &str, events: &[OomEvent]) -> OomEvent {
    assert_eq!(events.len(), 1, "{rel}: events {events:#?}");
    events[0].clone()
}

fn extra(e: &OomEvent, key: &str) -> Option<u64> {
    e.extra.get(key).copied()
}

#[test]
fn conversions_match_hand_computed_values() {
    assert_eq!(g(15.75), 16_911_433_728);
    assert_eq!(g(16.00), 17_179_869_184);
    assert_eq!(m(528.00), 553_648_128);
    assert_eq!(k(980.0), 1_003_520);
}

#[test]
fn log_01_classic_tf1_compilation_failure() {
    let rel = "logs/01_tpu_compile_hbm.txt";
    let e = only(rel, &parse_oom_log("01", &body(rel)));
    assert_eq!(e.kind, OomKind::TpuCompileHbm);
    assert_eq!(e.memory_space, oomscope_report::MemorySpace::Hbm);
    assert_eq!(e.line, 2);
    assert_eq!(e.repeats, 1);
    assert!(e
        .message
        .starts_with("Compilation failure: Ran out of memory in memory space hbm."));
    assert_eq!(e.used_bytes, Some(g(17.60)));
    assert_eq!(e.limit_bytes, Some(g(16.00)));
    assert_eq!(e.exceeded_bytes, Some(g(1.60)));
    assert_eq!(extra(&e, "total_usage_bytes"), Some(g(17.60)));
    assert_eq!(e.reserved_bytes, Some(m(528.00)));
    assert_eq!(e.program_bytes, Some(g(17.08)));
    assert_eq!(e.arguments_bytes, None, "'unknown size'");
    assert_eq!(e.output_bytes, None, "'Output size unknown.'");
    assert_eq!(extra(&e, "program_reserved_bytes"), Some(k(12.0)));
    assert_eq!(extra(&e, "global_bytes"), Some(k(980.0)));
    assert_eq!(extra(&e, "scoped_bytes"), Some(m(5.41)));
    assert_eq!(e.hlo_temp_bytes, Some(g(17.08)));
    assert_eq!(e.fragmentation_bytes, Some(m(53.61)));
    assert_eq!(e.hlo_temp_unpadded_bytes, None);
    assert_eq!(e.top_allocations.len(), 20);
    let t = &e.top_allocations[0];
    assert_eq!((t.rank, t.size_bytes), (1, m(512.00)));
    assert_eq!(t.op_name.as_deref(), Some("one_hot"));
    assert_eq!(t.shape, "f32[4,128,128,9,18]{4,3,0,2,1:T(8,128)}");
    assert_eq!(t.unpadded_bytes, Some(m(40.50)));
    assert_eq!(t.padding_bytes, Some(m(471.50)));
    assert!(t
        .xla_label
        .as_deref()
        .unwrap_or("")
        .starts_with("%fusion.1668 = f32[4,128,128,9,18]"));
    assert_eq!(t.allocation_type.as_deref(), Some("HLO temp"));
    let t2 = &e.top_allocations[1];
    assert_eq!(
        (t2.rank, t2.size_bytes, t2.op_name.as_deref()),
        (2, m(256.00), None)
    );
    assert_eq!(t2.shape, "bf16[4,512,512,64]{3,0,2,1:T(4,128)(2,1)}");
    let t20 = &e.top_allocations[19];
    assert_eq!((t20.rank, t20.size_bytes), (20, m(128.00)));
    assert_eq!(t20.op_name.as_deref(), Some("resnet152/MaxPool_36"));
}

#[test]
fn log_38_xla_gpu_bfc_dump() {
    let rel = "logs/38_xla_gpu.txt";
    let e = only(rel, &parse_oom_log("38", &body(rel)));
    assert_eq!(e.kind, OomKind::XlaGpu);
    assert_eq!(e.memory_space, oomscope_report::MemorySpace::Gpu);
    assert_eq!(e.line, 1);
    // The BFC warning, XLA's error via glog and again via Julia: one error.
    assert_eq!(e.repeats, 1);
    assert_eq!(
        e.requested_bytes,
        Some(4_000_000_000),
        "exact count wins over 3.72GiB"
    );
    assert_eq!(extra(&e, "rounded_request_bytes"), Some(4_000_000_000));
    assert_eq!(e.limit_bytes, Some(18_995_773_440));
    assert_eq!(e.used_bytes, Some(16_000_000_000));
    assert_eq!(e.reserved_bytes, Some(0));
    assert_eq!(extra(&e, "max_in_use_bytes"), Some(16_000_000_000));
    assert_eq!(extra(&e, "num_allocs"), Some(4));
    assert_eq!(extra(&e, "max_alloc_size_bytes"), Some(4_000_000_000));
    assert_eq!(extra(&e, "peak_reserved_bytes"), Some(0));
    assert_eq!(extra(&e, "largest_free_block_bytes"), Some(0));
    assert_eq!(extra(&e, "pool_bytes"), Some(18_995_773_440));
    assert_eq!(extra(&e, "pool_available_bytes"), Some(0));
    assert_eq!(extra(&e, "regions_bytes"), Some(18_995_773_440));
    assert_eq!(extra(&e, "in_use_chunks"), Some(4));
    assert_eq!(extra(&e, "in_use_chunks_bytes"), Some(16_000_000_000));
    assert_eq!(extra(&e, "free_chunks"), Some(1));
    assert_eq!(extra(&e, "largest_free_chunk_bytes"), Some(2_995_773_440));
    assert_eq!(extra(&e, "sum_in_use_chunks_bytes"), Some(g(14.90)));
    assert_eq!(extra(&e, "bin_268435456_allocated_bytes"), Some(g(17.69)));
    assert_eq!(extra(&e, "bin_268435456_in_use_bytes"), Some(g(14.90)));
    assert_eq!(
        extra(&e, "bin_256_allocated_bytes"),
        None,
        "empty bins are not kept"
    );
}

#[test]
fn log_58_sparsecore() {
    let rel = "logs/58_tpu_sparsecore.txt";
    let e = only(rel, &parse_oom_log("58", &body(rel)));
    assert_eq!(e.kind, OomKind::TpuSparsecore);
    assert_eq!(e.tensorcore_bytes, Some(g(34.82)));
    assert_eq!(e.sparsecore_bytes, Some(g(174.10)));
    assert_eq!(e.limit_bytes, Some(g(95.74)));
    assert_eq!(e.used_bytes, None, "the sum is not printed");
}

#[test]
fn log_62_e1000_listing_multiline_labels_and_escaped_trailer() {
    let rel = "logs/62_tpu_compile_hbm.txt";
    let e = only(rel, &parse_oom_log("62", &body(rel)));
    assert_eq!(e.kind, OomKind::TpuCompileHbm);
    assert_eq!(e.line, 1);
    assert_eq!(
        e.repeats, 1,
        "the escaped trailer is the same message, not a repeat"
    );
    assert!(e
        .message
        .starts_with("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom:"));
    assert_eq!(e.used_bytes, Some(g(94.77)));
    assert_eq!(e.limit_bytes, Some(g(94.74)));
    assert_eq!(e.exceeded_bytes, Some(m(33.31)));
    assert_eq!(extra(&e, "total_usage_bytes"), Some(g(94.47)));
    assert_eq!(e.reserved_bytes, Some(m(268.00)));
    assert_eq!(e.program_bytes, Some(g(87.73)));
    assert_eq!(e.arguments_bytes, Some(g(6.47)));
    assert_eq!(e.output_bytes, Some(g(6.47)));
    assert_eq!(
        extra(&e, "output_shared_with_arguments_bytes"),
        Some(g(6.47))
    );
    assert_eq!(extra(&e, "program_reserved_bytes"), Some(m(121.03)));
    assert_eq!(extra(&e, "global_bytes"), Some(m(649.73)));
    assert_eq!(extra(&e, "scoped_bytes"), Some(m(1.30)));
    assert_eq!(e.hlo_temp_bytes, Some(g(86.98)));
    assert_eq!(e.hlo_temp_unpadded_bytes, Some(g(63.89)));
    assert_eq!(e.hlo_temp_padded_bytes, Some(g(63.90)));
    assert_eq!(e.fragmentation_bytes, Some(g(23.08)));
    assert_eq!(e.top_allocations.len(), 20);
    let t = &e.top_allocations[0];
    assert_eq!(t.size_bytes, g(36.00));
    assert!(t
        .op_name
        .as_deref()
        .unwrap_or("")
        .ends_with("/splash_mha_dkv_segmented_no_residuals/pallas_call"));
    assert_eq!(t.shape, "f32[8,12,8,24576,512]{4,3,2,1,0:T(8,128)}");
    assert_eq!(t.unpadded_bytes, Some(g(36.00)));
    assert_eq!(t.allocation_type.as_deref(), Some("HLO temp"));
    let label = t.xla_label.as_deref().unwrap_or("");
    assert_eq!(
        label.lines().count(),
        3,
        "label spans 3 physical lines: {label}"
    );
    assert!(label.starts_with("splash_mha_dkv_segmented_no_residuals.22 = custom-call("));
    assert!(label.ends_with(r#"},skip-simplify-while-loops_trip-count-one="true"}"#));
    for t in &e.top_allocations[1..4] {
        assert_eq!(
            (t.size_bytes, t.shape.as_str()),
            (g(2.25), "bf16[8,24576,6144]{2,1,0:T(16,128)(2,1)}")
        );
    }
    assert_eq!(e.top_allocations[19].size_bytes, m(192.00));
    // "Largest program arguments and outputs in hbm:"
    assert_eq!(e.top_arguments.len(), 20);
    let a = &e.top_arguments[0];
    assert_eq!(
        (a.rank, a.size_bytes, a.shape.as_str()),
        (1, g(1.09), "f32[262144,1120]{0,1:T(8,128)}")
    );
    assert_eq!(a.xla_label.as_deref(), Some("Argument 758 index {}"));
    for a in &e.top_arguments[12..] {
        assert_eq!(a.size_bytes, m(9.00));
        assert_eq!(
            (a.unpadded_bytes, a.allocation_type.as_deref()),
            (None, None)
        );
    }
    assert_eq!(
        e.top_arguments[12].xla_label.as_deref(),
        Some("Output index {1184}")
    );
    assert_eq!(
        e.top_arguments[15].xla_label.as_deref(),
        Some("Argument 1525 index {}")
    );
}

#[test]
fn log_63_memory_usage_report_and_hlo_temporaries_summary() {
    let rel = "logs/63_tpu_compile_hbm.txt";
    let e = only(rel, &parse_oom_log("63", &body(rel)));
    assert_eq!(e.kind, OomKind::TpuCompileHbm);
    assert_eq!(e.line, 1);
    assert_eq!(
        e.repeats, 1,
        "the final E1000 summary restates the glog error"
    );
    assert!(e
        .message
        .starts_with("XLA:TPU compile permanent error. Ran out of memory"));
    assert_eq!(e.used_bytes, Some(g(381.60)));
    assert_eq!(e.limit_bytes, Some(g(94.74)));
    assert_eq!(e.exceeded_bytes, Some(g(286.86)));
    // "Total bytes: 409748396288 (381.61GiB)" is the report's own total, not "Used".
    assert_eq!(
        extra(&e, "memory_report_total_bytes"),
        Some(409_748_396_288)
    );
    assert_eq!(
        e.top_allocations.len(),
        116,
        "complete rows; the truncated last row is not one"
    );
    let first = &e.top_allocations[0];
    assert_eq!(first.size_bytes, g(12.00));
    assert_eq!(
        first.shape,
        "bf16[1536,24576], bf16[24576,262144], f32[262144,1536]"
    );
    assert_eq!(e.top_allocations[2].size_bytes, g(4.50));
    assert_eq!(e.top_allocations[115].size_bytes, m(768.00));
}

#[test]
fn log_64_memory_usage_report() {
    let rel = "logs/64_tpu_compile_hbm.txt";
    let e = only(rel, &parse_oom_log("64", &body(rel)));
    assert_eq!(e.used_bytes, Some(g(129.44)));
    assert_eq!(e.limit_bytes, Some(g(94.74)));
    assert_eq!(e.exceeded_bytes, Some(g(34.70)));
    assert_eq!(
        extra(&e, "memory_report_total_bytes"),
        Some(138_989_709_056)
    );
    assert_eq!(e.top_allocations.len(), 118);
    assert_eq!(e.top_allocations[0].size_bytes, g(12.00));
    assert_eq!(e.top_allocations[1].size_bytes, g(12.00));
    assert_eq!(e.top_allocations[2].size_bytes, g(4.50));
}

#[test]
fn log_65_vmem_listing_with_tags() {
    let rel = "logs/65_tpu_compile_hbm.txt";
    let e = only(rel, &parse_oom_log("65", &body(rel)));
    assert_eq!(e.kind, OomKind::TpuCompileOtherSpace);
    assert_eq!(e.memory_space, oomscope_report::MemorySpace::Vmem);
    assert_eq!(e.repeats, 1);
    assert_eq!(e.used_bytes, Some(m(66.93)));
    assert_eq!(e.limit_bytes, Some(m(63.94)));
    assert_eq!(e.exceeded_bytes, Some(m(2.99)));
    assert_eq!(e.program_bytes, Some(m(66.93)));
    assert_eq!(extra(&e, "scoped_bytes"), Some(m(66.93)));
    assert_eq!(extra(&e, "total_usage_bytes"), None, "no Total-usage block");
    assert_eq!(e.top_allocations.len(), 19);
    assert!(e
        .top_allocations
        .iter()
        .all(|t| t.allocation_type.as_deref() == Some("scoped")));
    for t in &e.top_allocations[..5] {
        assert_eq!(
            (t.size_bytes, t.shape.as_str()),
            (m(8.00), "u8[8388608]{0}")
        );
    }
    for t in &e.top_allocations[5..7] {
        assert_eq!(
            (t.size_bytes, t.shape.as_str()),
            (m(4.00), "f32[4096,256]{1,0:T(8,128)}")
        );
    }
    // #11 has no Operator/Shape lines and a one-line label; the others' labels span 3 lines.
    let spill = &e.top_allocations[10];
    assert_eq!(
        (spill.rank, spill.size_bytes, spill.shape.as_str()),
        (11, m(1.74), "")
    );
    assert_eq!(
        spill.xla_label.as_deref(),
        Some("register allocator spill slots in HLO :: splash_mha_dkv_segmented_no_residuals.18")
    );
    for t in &e.top_allocations[16..] {
        assert_eq!(t.size_bytes, k(64.0));
    }
    for t in e.top_allocations.iter().filter(|t| t.rank != 11) {
        assert_eq!(
            t.xla_label.as_deref().unwrap_or("").lines().count(),
            3,
            "#{}",
            t.rank
        );
    }
}

#[test]
fn log_72_allocation_would_exceed_memory() {
    let rel = "logs/72_tpu_compile_hbm.txt";
    let e = only(rel, &parse_oom_log("72", &body(rel)));
    assert_eq!(e.kind, OomKind::TpuCompileHbm);
    assert_eq!(e.memory_space, oomscope_report::MemorySpace::Hbm);
    assert_eq!(e.requested_bytes, Some(107_374_182_400));
    assert_eq!(e.limit_bytes, Some(17_179_869_184));
    let t = &e.top_allocations[0];
    assert_eq!(t.size_bytes, 107_374_182_400);
    assert_eq!(t.shape, "u8[327680,327680]{1,0:T(8,128)(4,1)}");
    assert_eq!(
        t.allocation_type.as_deref(),
        Some("output of xor_convert_fusion@{}")
    );
    assert_eq!(t.xla_label.as_deref(), Some("#allocation7"));
}

#[test]
fn negative_controls_yield_nothing() {
    for rel in [
        "logs/66_tpu_compile_hbm.txt",
        "logs/59_train_step_memory.txt",
        "logs/60_train_step_memory.txt",
        "logs/61_train_step_memory.txt",
        "logs/67_train_step_memory.txt",
        "xla-runs/new-libtpu-fits/new_fits.log",
    ] {
        let text = read(rel);
        assert_eq!(parse_oom_log(rel, &text), vec![], "{rel}");
    }
}

#[test]
fn xla_run_new_libtpu_oom() {
    let rel = "xla-runs/new-libtpu-oom/new_oom.log";
    let e = only(rel, &parse_oom_log(rel, &read(rel)));
    assert_eq!(e.kind, OomKind::TpuCompileHbm);
    assert_eq!(e.line, 68);
    assert_eq!(
        e.repeats, 1,
        "the ERR: E1000 summary restates the glog error"
    );
    assert_eq!(e.used_bytes, Some(g(17.67)));
    assert_eq!(e.limit_bytes, Some(g(15.75)));
    assert_eq!(e.exceeded_bytes, Some(g(1.92)));
    assert_eq!(extra(&e, "memory_report_total_bytes"), Some(18_968_126_464));
    // Rows of the default (HBM) space only; vmem and smem tables are other spaces.
    let sizes: Vec<u64> = e.top_allocations.iter().map(|t| t.size_bytes).collect();
    assert_eq!(
        sizes,
        vec![g(17.09), m(267.09), m(250.00), m(36.32), m(34.00), 512, 512]
    );
    assert_eq!(e.top_allocations[0].shape, "f32[65536,70001]");
}

#[test]
fn xla_run_old_libtpu_oom() {
    let rel = "xla-runs/old-libtpu-oom/old_oom.log";
    let e = only(rel, &parse_oom_log(rel, &read(rel)));
    assert_eq!(e.kind, OomKind::TpuCompileHbm);
    assert_eq!(e.line, 131);
    assert_eq!(e.used_bytes, Some(g(25.64)));
    assert_eq!(e.limit_bytes, Some(g(15.75)));
    assert_eq!(e.exceeded_bytes, Some(g(9.89)));
    assert_eq!(extra(&e, "total_usage_bytes"), Some(g(25.89)));
    assert_eq!(e.reserved_bytes, Some(m(258.00)));
    assert_eq!(e.program_bytes, Some(g(25.64)));
    assert_eq!(e.arguments_bytes, Some(0));
    assert_eq!(e.output_bytes, Some(0));
    assert_eq!(e.hlo_temp_bytes, Some(g(25.64)));
    assert_eq!(e.hlo_temp_unpadded_bytes, Some(g(25.63)));
    assert_eq!(e.hlo_temp_padded_bytes, Some(g(25.64)));
    assert_eq!(e.fragmentation_bytes, Some(k(31.0)));
    assert_eq!(e.top_allocations.len(), 5);
    let t = &e.top_allocations[0];
    assert_eq!(t.size_bytes, g(8.55));
    assert_eq!(t.op_name.as_deref(), Some("jit(f)/jit(main)/dot_general"));
    assert_eq!(
        t.source.as_deref(),
        Some("/home/user/project/two_temps.py:7")
    );
    assert_eq!(t.shape, "f32[32768,70001]{0,1:T(8,128)}");
    assert_eq!(t.unpadded_bytes, Some(g(8.54)));
    assert_eq!(t.padding_bytes, Some(k(896.0)));
    assert_eq!(
        t.xla_label.as_deref(),
        Some("fusion.5 = fusion(Arg_0.1, Arg_1.2), kind=kOutput, calls=fused_computation.5")
    );
    assert_eq!(
        e.top_allocations[2].source.as_deref(),
        Some("/home/user/project/two_temps.py:8")
    );
    let t5 = &e.top_allocations[4];
    assert_eq!((t5.size_bytes, t5.op_name.as_deref()), (512, None));
    assert_eq!(
        t5.shape,
        "(f32[70001,129]{0,1:T(8,128)S(1)}, f32[70001,129]{0,1:T(8,128)}, u32[]{:S(2)})"
    );
}

/// Compiler stderr of our own fixtures (`fixtures/*/compile.log`, written by
/// `tools/fixtures`): a compile that fits yields nothing, a compile OOM yields
/// exactly one event, and where `pair.json` records the numbers of the OOM
/// message, they match.
#[test]
fn fixture_compile_logs() {
    let root = oomscope_testdata::fixtures();
    let mut folders = Vec::new();
    for dir in std::fs::read_dir(root).into_iter().flatten().flatten() {
        folders.push(dir.path());
        for sub in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            folders.push(sub.path());
        }
    }
    let mut checked = 0;
    for folder in folders {
        let (Ok(meta), Ok(log)) = (
            std::fs::read_to_string(folder.join("fixture.json")),
            std::fs::read_to_string(folder.join("compile.log")),
        ) else {
            continue;
        };
        let meta: serde_json::Value = serde_json::from_str(&meta).unwrap_or_default();
        let events = parse_oom_log("compile.log", &log);
        let name = folder.display().to_string();
        match meta["outcome"].as_str() {
            Some("fits") => assert_eq!(events, vec![], "{name}"),
            Some("compile_oom") => {
                assert_eq!(events.len(), 1, "{name}: {events:#?}");
                assert!(events[0].limit_bytes.is_some(), "{name}");
            }
            _ => continue,
        }
        checked += 1;
        // The numbers the generator read off the log with its own pattern
        // (fixture.json `compiler_reported`), as printed.
        let reported = &meta["compiler_reported"];
        let printed = |key: &str| {
            reported[key]
                .as_str()
                .and_then(oomscope_report::units::parse_binary_size)
        };
        if let Some(e) = events.first() {
            let pairs = [
                ("used", e.used_bytes),
                ("limit", e.limit_bytes),
                ("exceeded_by", e.exceeded_bytes),
                ("requires", e.used_bytes),
                ("available", e.limit_bytes),
                ("allocation_size", e.requested_bytes),
                ("memory_size", e.limit_bytes),
            ];
            let mut stated = 0;
            for (key, got) in pairs {
                if let Some(want) = printed(key) {
                    assert_eq!(got, Some(want), "{name}: {key}");
                    stated += 1;
                }
            }
            assert!(stated >= 2, "{name}: {reported}");
        }
        let pair = std::fs::read_to_string(folder.join("../pair.json")).unwrap_or_default();
        let pair: serde_json::Value = serde_json::from_str(&pair).unwrap_or_default();
        let variant = folder.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let numbers = &pair["variants"][variant];
        let size = |key: &str| {
            numbers[key]
                .as_str()
                .and_then(oomscope_report::units::parse_binary_size)
        };
        if let Some(used) = size("used") {
            assert_eq!(events[0].used_bytes, Some(used), "{name}");
            assert_eq!(events[0].limit_bytes, size("limit"), "{name}");
            assert_eq!(events[0].exceeded_bytes, size("exceeded_by"), "{name}");
        }
    }
    if checked > 0 {
        assert!(checked >= 10, "only {checked} fixtures");
    }
}

#[test]
fn fixture_oom_variants() {
    let root = oomscope_testdata::fixtures();
    let root = root.display();
    let parse = |dir: &str| {
        let text = std::fs::read_to_string(format!("{root}/{dir}/compile.log")).ok()?;
        let events = parse_oom_log(dir, &text);
        assert_eq!(events.len(), 1, "{dir}: {events:#?}");
        events.into_iter().next()
    };
    // "Used 16.00P of 15.75G hbm. Exceeded hbm capacity by 16.00P."
    if let Some(e) = parse("oom-absurd") {
        assert_eq!(e.used_bytes, Some(16 << 50));
        assert_eq!(e.limit_bytes, Some(g(15.75)));
        assert_eq!(e.exceeded_bytes, Some(16 << 50));
    }
    // libtpu 0.0.8 early abort: "Requires 16.00P, has 14.96G available."
    if let Some(e) = parse("old-libtpu-oom-absurd") {
        assert_eq!(
            (e.used_bytes, e.limit_bytes),
            (Some(16 << 50), Some(g(14.96)))
        );
    }
    // "Allocation (size=268435456) would exceed memory (size=134217728) :: ... space=vmem"
    if let Some(e) = parse("oom-vmem") {
        assert_eq!(
            (e.kind, e.memory_space.as_str()),
            (OomKind::TpuCompileOtherSpace, "vmem")
        );
        assert_eq!(
            (e.requested_bytes, e.limit_bytes),
            (Some(268_435_456), Some(134_217_728))
        );
        assert_eq!(e.top_allocations[0].shape, "u8[268435456]{0}");
    }
}
