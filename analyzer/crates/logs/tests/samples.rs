//! Real messages from public issues and docs (`tests/samples/`, each file
//! names its source on its first line), plus variants built from the upstream
//! format strings: prefixes, wrapping, repeats, and hostile input.

use oomscope_logs::{looks_like_oom_log, parse_oom_log};
use oomscope_report::{OomEvent, OomKind};
use std::time::{Duration, Instant};

fn sample(name: &str) -> String {
    let path = format!("{}/tests/samples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
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

fn only(name: &str, text: &str) -> OomEvent {
    let events = parse_oom_log(name, text);
    assert_eq!(events.len(), 1, "{name}: {events:#?}");
    events.into_iter().next().unwrap_or_default()
}

fn extra(e: &OomEvent, key: &str) -> Option<u64> {
    e.extra.get(key).copied()
}

#[test]
fn tpu_early_abort_requires_has_available() {
    let e = only("abort", &sample("tpu_early_abort.txt"));
    assert_eq!(e.kind, OomKind::TpuCompileHbm);
    assert_eq!(e.memory_space, oomscope_report::MemorySpace::Hbm);
    assert_eq!(e.line, 2);
    assert_eq!(
        e.used_bytes,
        Some((3.84f64 * (1u64 << 40) as f64).round() as u64)
    );
    assert_eq!(e.limit_bytes, Some(g(90.96)));
}

#[test]
fn tpu_vmem_single_allocation() {
    let e = only("1001", &sample("tpu_vmem_would_exceed.txt"));
    // Tagged `scoped memory for …`: one instruction's stack (E1001).
    assert_eq!(e.kind, OomKind::TpuScopedVmem);
    assert_eq!(e.memory_space, oomscope_report::MemorySpace::Vmem);
    assert_eq!(e.requested_bytes, Some(134_217_728));
    assert_eq!(e.limit_bytes, Some(67_108_864));
    let t = &e.top_allocations[0];
    assert_eq!(t.shape, "u8[134217728]{0}");
    assert_eq!(
        t.xla_label.as_deref(),
        Some("#allocation25 ragged_latency_optimized_all_gather_lhs_contracting_gated_matmul_kernel.2")
    );
    assert_eq!(
        t.allocation_type.as_deref(),
        Some("scoped memory for ragged_latency_optimized_all_gather_lhs_contracting_gated_matmul_kernel.2")
    );
}

#[test]
fn tpu_runtime_reserve() {
    let e = only("0101", &sample("tpu_runtime_reserve.txt"));
    assert_eq!(e.kind, OomKind::TpuRuntime);
    assert_eq!(e.requested_bytes, Some(g(29.49)));
    assert_eq!(e.free_bytes, Some(m(147.64)));
    assert_eq!(e.reserved_bytes, Some(0));
    assert_eq!(extra(&e, "reservable_bytes"), Some(m(147.64)));
}

#[test]
fn tpu_runtime_allocate() {
    let e = only("0100", &sample("tpu_runtime_allocate.txt"));
    assert_eq!(e.kind, OomKind::TpuRuntime);
    assert_eq!(e.memory_space, oomscope_report::MemorySpace::Hbm);
    assert_eq!(e.requested_bytes, Some(m(8.00)));
    assert_eq!(e.free_bytes, Some(m(6.43)));
}

#[test]
fn tpu_runtime_allocate_wrapped_over_lines() {
    // The E0100 form of the 0100 message, wrapped by the user at each sentence.
    let text = "ValueError: RESOURCE_EXHAUSTED: E0100: RuntimeBufferAllocationFailure:\n\
                Error allocating device buffer: Attempting to allocate 16.00M.\n\
                That was not possible. There are 15.47M free.; (0x1x0_HBM0)\n";
    let e = only("wrapped", text);
    assert_eq!(
        (e.line, e.requested_bytes, e.free_bytes),
        (2, Some(m(16.00)), Some(m(15.47)))
    );
}

#[test]
fn tpu_headline_wrapped_exceeded_on_next_line() {
    let e = only("lwm", &sample("tpu_wrapped_headline.txt"));
    assert_eq!(e.used_bytes, Some(g(21.95)));
    assert_eq!(e.limit_bytes, Some(g(15.48)));
    assert_eq!(e.exceeded_bytes, Some(g(6.47)));
    assert_eq!(extra(&e, "total_usage_bytes"), Some(g(22.47)));
    assert_eq!(e.reserved_bytes, Some(m(530.00)));
    assert_eq!(e.program_bytes, Some(g(21.95)));
    assert_eq!(e.arguments_bytes, Some(0));
}

#[test]
fn tpu_tf1_glog_warning_and_remat_warning() {
    let e = only("tpu598", &sample("tpu_tf1_glog_warning.txt"));
    assert_eq!(e.line, 2);
    assert!(e
        .message
        .starts_with("Resource exhausted: Compilation failure: Ran out of memory"));
    assert_eq!(
        (e.used_bytes, e.limit_bytes, e.exceeded_bytes),
        (Some(g(18.56)), Some(g(16.00)), Some(g(2.56)))
    );
}

#[test]
fn torch_xla_smem_in_markdown_quote() {
    let e = only("vllm8318", &sample("torch_xla_smem.txt"));
    assert_eq!(e.kind, OomKind::TorchXla);
    assert_eq!(e.memory_space, oomscope_report::MemorySpace::Smem);
    assert_eq!(
        (e.used_bytes, e.limit_bytes, e.exceeded_bytes),
        (Some(m(1.00)), Some(m(1.00)), Some(k(1.7)))
    );
}

#[test]
fn tpu_listing_with_source_location() {
    let e = only("easydel", &sample("tpu_listing_with_source.txt"));
    assert_eq!(e.reserved_bytes, Some(g(1.25)));
    assert_eq!(e.output_bytes, Some(0));
    assert_eq!(e.hlo_temp_bytes, Some(g(63.79)));
    assert_eq!(e.hlo_temp_unpadded_bytes, Some(g(63.58)));
    assert_eq!(e.fragmentation_bytes, Some(m(210.89)));
    assert_eq!(extra(&e, "global_bytes"), Some(m(1.14)));
    let t = &e.top_allocations[0];
    assert_eq!(t.size_bytes, g(2.00));
    assert_eq!(
        t.source.as_deref(),
        Some("/home/air/workspace/EasyDel/src/easydel/modules/attention_module.py:1059")
    );
    assert!(t
        .op_name
        .as_deref()
        .unwrap_or("")
        .starts_with("jit(casual_language_model_train_step)/"));
}

#[test]
fn torch_hip_allowed_and_private_pools() {
    let e = only("rocm", &sample("torch_hip_allowed_private_pools.txt"));
    assert_eq!(e.kind, OomKind::TorchCuda);
    assert_eq!(e.requested_bytes, Some(m(2.00)));
    assert_eq!(e.total_capacity_bytes, Some(g(255.98)));
    assert_eq!(e.free_bytes, Some(g(244.65)));
    assert_eq!(extra(&e, "allowed_bytes"), Some(g(1.05)));
    assert_eq!(
        e.limit_bytes,
        Some(g(1.05)),
        "the allowed fraction is the limit"
    );
    assert_eq!(e.allocated_bytes, Some(m(1017.01)));
    assert_eq!(e.private_pools_bytes, Some(m(17.00)));
    assert_eq!(e.reserved_unallocated_bytes, Some(m(54.99)));
    assert_eq!(e.reserved_bytes, Some(m(1017.01) + m(54.99)));
}

#[test]
fn torch_old_format_wrapped_in_comments() {
    let e = only("yolo", &sample("torch_old_format_commented.txt"));
    assert_eq!(e.line, 4);
    assert_eq!(e.requested_bytes, Some(m(36.00)));
    assert_eq!(e.total_capacity_bytes, Some(g(7.93)));
    assert_eq!(e.limit_bytes, Some(g(7.93)));
    assert_eq!(e.allocated_bytes, Some(m(130.35)));
    assert_eq!(e.free_bytes, Some(m(47.06)));
    assert_eq!(e.reserved_bytes, Some(m(188.00)));
}

#[test]
fn torch_new_format_variants() {
    // c10/cuda/CUDACachingAllocator.cpp ≥ 2.1; 2.1 spelled "capacty"; other processes listed.
    let text = "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 5.96 GiB. GPU 1 has a total capacty of 23.69 GiB of which 5.25 GiB is free. Process 2006998 has 256.00 MiB memory in use. Including non-PyTorch memory, this process has 18.17 GiB memory in use. Of the allocated memory 17.88 GiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.\n";
    let e = only("new", text);
    assert_eq!(e.requested_bytes, Some(g(5.96)));
    assert_eq!(e.total_capacity_bytes, Some(g(23.69)));
    assert_eq!(e.free_bytes, Some(g(5.25)));
    assert_eq!(extra(&e, "device"), Some(1));
    assert_eq!(extra(&e, "process_2006998_in_use_bytes"), Some(m(256.00)));
    assert_eq!(extra(&e, "process_in_use_bytes"), Some(g(18.17)));
    assert_eq!(e.allocated_bytes, Some(g(17.88)));
    assert_eq!(e.reserved_unallocated_bytes, Some(0));
    assert_eq!(e.reserved_bytes, Some(g(17.88)));
}

#[test]
fn torch_message_wrapped_sentence_per_line() {
    let text = "Exception: Capture cuda graph failed: CUDA out of memory.\nTried to allocate 672.00 MiB.\n\n\
                GPU 0 has a total capacity of 140.06 GiB of which 200.75 MiB is free.\n\
                Process 1939284 has 139.86 GiB memory in use.\nOf the allocated memory 128.50 GiB is allocated by PyTorch,\n\
                with 3.23 GiB allocated in private pools (e.g., CUDA Graphs),\nand 1.01 GiB is reserved by PyTorch but unallocated.\n\n\
                Possible solutions:\n";
    let e = only("wrapped", text);
    assert_eq!(e.requested_bytes, Some(m(672.00)));
    assert_eq!(e.free_bytes, Some(m(200.75)));
    assert_eq!(e.private_pools_bytes, Some(g(3.23)));
    assert_eq!(e.reserved_unallocated_bytes, Some(g(1.01)));
}

#[test]
fn distinct_ranks_are_distinct_events_and_identical_lines_repeat() {
    let line = |gpu: u32, free: &str| {
        format!("[rank{gpu}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 184.13 GiB. GPU {gpu} has a total capacity of 79.14 GiB of which {free} is free. Of the allocated memory 38.58 GiB is allocated by PyTorch, and 52.95 MiB is reserved by PyTorch but unallocated.\n")
    };
    let mut text = String::new();
    for _ in 0..5 {
        text.push_str(&line(2, "37.02 GiB"));
        text.push_str("unrelated step log line\n");
    }
    text.push_str(&line(1, "37.80 GiB"));
    let events = parse_oom_log("ranks", &text);
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(
        (events[0].line, events[0].repeats, events[0].free_bytes),
        (1, 5, Some(g(37.02)))
    );
    assert_eq!(
        (events[1].line, events[1].repeats, events[1].free_bytes),
        (11, 1, Some(g(37.80)))
    );
}

#[test]
fn xla_gpu_peak_buffers_listing() {
    let e = only("jax13428", &sample("xla_gpu_peak_buffers.txt"));
    assert_eq!(e.kind, OomKind::XlaGpu);
    assert_eq!(e.requested_bytes, Some(6_291_456));
    assert_eq!(extra(&e, "parameter_allocation_bytes"), Some(m(6.00)));
    assert_eq!(extra(&e, "maybe_live_out_allocation_bytes"), Some(m(6.00)));
    assert_eq!(extra(&e, "total_allocation_bytes"), Some(m(12.00)));
    assert_eq!(extra(&e, "total_fragmentation_bytes"), Some(0));
    assert_eq!(e.arguments_bytes, Some(m(6.00)));
    assert_eq!(e.output_bytes, Some(m(6.00)));
    assert_eq!(e.hlo_temp_bytes, Some(0));
    assert_eq!(e.fragmentation_bytes, Some(0));
    assert_eq!(e.top_allocations.len(), 2);
    let b = &e.top_allocations[0];
    assert_eq!(
        (b.rank, b.size_bytes, b.shape.as_str()),
        (1, m(6.00), "f32[4096,128,3]")
    );
    assert_eq!(b.xla_label.as_deref(), Some("concatenate"));
    assert_eq!(
        b.source.as_deref(),
        Some("/media/gccrcv/Data/Opensources/multinerf/internal/models.py:689")
    );
    let b2 = &e.top_allocations[1];
    assert_eq!(
        (b2.rank, b2.size_bytes, b2.shape.as_str()),
        (2, k(384.0), "f32[256,128,3]")
    );
}

#[test]
fn xla_gpu_bfc_rounded_request() {
    let e = only("t5x870", &sample("xla_gpu_bfc_rounded_to.txt"));
    assert_eq!(e.requested_bytes, Some(g(27.93)));
    assert_eq!(extra(&e, "rounded_request_bytes"), Some(29_995_136_256));
}

#[test]
fn bfc_not_a_failure_warnings_are_no_oom() {
    let text = sample("xla_gpu_bfc_not_a_failure.txt");
    assert_eq!(parse_oom_log("warn", &text), vec![]);
    assert!(!looks_like_oom_log(&text));
}

#[test]
fn cuda_malloc_async_exact_count_wins() {
    // Format of xla/stream_executor/gpu/gpu_cudamallocasync_allocator.cc, then XLA's error.
    let text = "E0301 20:47:30.000000 1234 gpu_cudamallocasync_allocator.cc:359] gpu_async_0 cuMemAllocAsync failed to allocate 281923031072 bytes: CUDA error: out of memory (CUDA_ERROR_OUT_OF_MEMORY)\n\
                 Reported by CUDA: Free memory/Total memory: 1048576000/85899345920\n\
                E0301 20:47:30.000001 1234 gpu_cudamallocasync_allocator.cc:364] Stats: Limit:                     84825604096\n\
                InUse:                     80000000000\n\
                MaxInUse:                  81000000000\n\
                NumAllocs:                        1234\n\
                jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 262.56GiB.\n";
    let e = only("async", text);
    assert_eq!(e.kind, OomKind::XlaGpu);
    assert_eq!(e.repeats, 1);
    assert_eq!(e.requested_bytes, Some(281_923_031_072));
    assert_eq!(e.free_bytes, Some(1_048_576_000));
    assert_eq!(e.total_capacity_bytes, Some(85_899_345_920));
    assert_eq!(e.limit_bytes, Some(84_825_604_096));
    assert_eq!(e.used_bytes, Some(80_000_000_000));
    assert_eq!(extra(&e, "num_allocs"), Some(1234));
}

#[test]
fn failed_request_exact_bytes() {
    let text = "RESOURCE_EXHAUSTED: Failed to allocate request for 2.99GiB (3206250496B) on device ordinal 0\n";
    let e = only("req", text);
    assert_eq!(e.requested_bytes, Some(3_206_250_496));
    assert!(looks_like_oom_log(text));
}

#[test]
fn found_anywhere_in_unrelated_text() {
    let mut text = String::new();
    for i in 0..2000 {
        text.push_str(&format!(
            "I0706 16:50:26.{i:06} 1401 metric_logger.py:214] completed step: {i}, loss: 0.693\n"
        ));
    }
    text.push_str(&sample("tpu_runtime_reserve.txt"));
    text.push_str("Requires: numpy, jax\nAttempting to allocate a new session\n");
    let events = parse_oom_log("mixed", &text);
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].line, 2002);
}

#[test]
fn hostile_inputs_do_not_panic_and_take_bounded_time() {
    let started = Instant::now();
    // A 10 MB single line full of keywords that lead nowhere.
    let mut line = String::with_capacity(10 << 20);
    while line.len() < 10 << 20 {
        line.push_str("Ran out of memory in memory space hbm. Used Requires CUDA out of memory. Tried to allocate ");
    }
    assert_eq!(parse_oom_log("line", &line), vec![]);
    // The same with real messages: one line, escaped newlines.
    let mut escaped = String::new();
    while escaped.len() < 10 << 20 {
        escaped.push_str(
            r"Ran out of memory in memory space hbm. Used 1.00G of 2.00G hbm.\n  1. Size: 1.00G\n",
        );
    }
    let events = parse_oom_log("escaped", &escaped);
    assert!(events.len() <= 1);
    // Binary garbage, with keywords sprinkled in.
    let mut bytes: Vec<u8> = (0..4_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for chunk in bytes.chunks_mut(4096) {
        let kw = b"Ran out of memory in memory space hbm. Used 9";
        if chunk.len() > kw.len() {
            chunk[..kw.len()].copy_from_slice(kw);
        }
    }
    let garbage = String::from_utf8_lossy(&bytes);
    let _ = parse_oom_log("garbage", &garbage);
    // Unterminated listings and dumps.
    let mut listing = String::from("XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 9.00G of 8.00G hbm.\n\n  Largest program allocations in hbm:\n\n");
    for i in 0..200_000 {
        listing.push_str(&format!(
            "  {i}. Size: 1.00M\n     XLA label: fusion.{i} = fusion(\n"
        ));
    }
    let events = parse_oom_log("listing", &listing);
    assert_eq!(events.len(), 1);
    assert!(events[0].top_allocations.len() <= 1000);
    let mut dump = String::from("Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824)\n");
    for i in 0..200_000 {
        dump.push_str(&format!("InUse at {i:x} of size 256 next {i}\n"));
    }
    assert_eq!(parse_oom_log("dump", &dump).len(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn escaped_full_report_in_a_json_line() {
    let text = concat!(
        "{\"ts\": 1, \"msg\": \"checkpoint saved\"}\n",
        r#"{"ts": 2, "level": "error", "msg": "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 9.00G of 8.00G hbm. Exceeded hbm capacity by 1.00G.\n\nTotal hbm usage >= 9.25G:\n    reserved        256.00M \n    program          9.00G \n    arguments            0B \n"}"#,
        "\n"
    );
    let e = only("json", text);
    assert_eq!((e.line, e.repeats), (2, 1));
    assert_eq!(
        (e.used_bytes, e.limit_bytes, e.exceeded_bytes),
        (Some(g(9.00)), Some(g(8.00)), Some(g(1.00)))
    );
    assert_eq!(e.extra.get("total_usage_bytes").copied(), Some(g(9.25)));
    assert_eq!(
        (e.reserved_bytes, e.arguments_bytes),
        (Some(m(256.00)), Some(0))
    );
}

#[test]
fn many_repeats_are_one_event() {
    let line = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 8.00 GiB of which 0 bytes is free. Of the allocated memory 7.51 GiB is allocated by PyTorch, and 15.90 MiB is reserved by PyTorch but unallocated.\n";
    let text = line.repeat(100_000);
    let events = parse_oom_log("many", &text);
    assert_eq!(events.len(), 1);
    assert_eq!((events[0].line, events[0].repeats), (1, 100_000));
    assert_eq!(events[0].free_bytes, Some(0));
}

#[test]
fn tensorflow_oom_when_allocating_tensor() {
    let e = only("tf5527", &sample("tf_oom_tensor.txt"));
    assert_eq!(
        (e.kind, e.memory_space.as_str(), e.line),
        (OomKind::XlaGpu, "gpu", 2)
    );
    // 64 × 2016 × 9 × 9 float32 elements.
    assert_eq!(e.requested_bytes, Some(41_803_776));
    assert_eq!(e.top_allocations[0].shape, "float[64,2016,9,9]");
    // After the BFC warning for the same request, it is the same error.
    let text = format!(
        "2019-01-01 00:00:00.000000: W tensorflow/core/common_runtime/bfc_allocator.cc:271] Allocator (GPU_0_bfc) ran out of memory trying to allocate 39.87MiB.  Current allocation summary follows.\n{}",
        sample("tf_oom_tensor.txt")
    );
    let e = only("tf+bfc", &text);
    assert_eq!((e.line, e.requested_bytes), (1, Some(41_803_776)));
}

#[test]
fn sniffing() {
    assert!(looks_like_oom_log(&sample("tpu_wrapped_headline.txt")));
    assert!(!looks_like_oom_log(
        "step: 10  loss: 7.9  memory: 23.45GiB(24.67%)\n"
    ));
    assert!(!looks_like_oom_log("Requires: numpy\n"));
}

/// A compiler report pasted from its middle (pytorch/xla#3041's report, as
/// a user copies it from its `program` line, or from `Program hbm
/// requirement`): every number still there is read, in an event of its
/// own, as in the whole report.
#[test]
fn tpu_report_pasted_from_its_middle() {
    let full_text = sample("tpu_headless_usage_torchxla3041.txt");
    let full = only("full", &full_text);
    let from_program = &full_text[full_text.find("            program").unwrap()..];
    let e = only("from program", from_program);
    assert_eq!(e.kind, OomKind::TpuCompileHbm);
    assert_eq!(e.memory_space, oomscope_report::MemorySpace::Hbm);
    // The block is recognised at its `Output size ...; shares` line.
    assert_eq!(e.line, 3);
    assert_eq!(e.program_bytes, Some(g(1.68)));
    assert_eq!(e.arguments_bytes, Some(g(7.04)));
    assert_eq!(e.output_bytes, full.output_bytes);
    assert_eq!(e.reserved_bytes, None, "cut off, not invented");
    for (name, got, want) in [
        ("hlo_temp", e.hlo_temp_bytes, full.hlo_temp_bytes),
        (
            "unpadded",
            e.hlo_temp_unpadded_bytes,
            full.hlo_temp_unpadded_bytes,
        ),
        (
            "padded",
            e.hlo_temp_padded_bytes,
            full.hlo_temp_padded_bytes,
        ),
        (
            "fragmentation",
            e.fragmentation_bytes,
            full.fragmentation_bytes,
        ),
    ] {
        assert!(got.is_some() && got == want, "{name}: {got:?} vs {want:?}");
    }
    assert_eq!(e.extra.get("global_bytes"), full.extra.get("global_bytes"));
    assert_eq!(e.top_allocations, full.top_allocations);

    let from_requirement = &full_text[full_text.find("        Program hbm requirement").unwrap()..];
    let e = only("from requirement", from_requirement);
    assert_eq!(e.program_bytes, Some(g(1.68)));
    assert_eq!(e.hlo_temp_bytes, full.hlo_temp_bytes);
    assert_eq!(e.fragmentation_bytes, full.fragmentation_bytes);
    assert_eq!(e.arguments_bytes, None);
    assert_eq!(e.top_allocations, full.top_allocations);
    // Pasted after the whole report, the part is the same error, not a second one.
    let twice = format!("{full_text}\n{from_requirement}");
    assert_eq!(parse_oom_log("twice", &twice).len(), 1);
}

/// An old XLA message wrapped at words inside its keyword (`Resource
/// exhausted: Out` / `of memory while trying to allocate N bytes.`), the
/// logger's `[N] timestamp` prefix on its first line only: the request is
/// read. (NVIDIA/DeepLearningExamples#405's message, wrapped so.)
#[test]
fn old_xla_message_wrapped_inside_its_keyword() {
    let text = sample("xla_old_wording_dle405.txt");
    let message = text
        .lines()
        .find(|l| l.contains("Resource exhausted"))
        .unwrap()
        .trim();
    let (first, rest) = message.split_at(message.find(" of memory").unwrap());
    let wrapped = format!(
        "[2] 2020-02-15 17:58:43.772727: {first}\n{}\n\t [[{{{{node cluster_0_1/xla_run}}}}]]\n",
        rest.trim_start()
    );
    let e = only("wrapped", &wrapped);
    assert_eq!(e.kind, OomKind::XlaGpu);
    assert_eq!(e.requested_bytes, Some(68_852_648_264));
    assert_eq!(e.line, 1);
    // A terminal's cut inside the keyword, with a long unrelated line
    // elsewhere in the text, is joined as it is.
    let cut = message.find("memory while").unwrap() + 3;
    let long = format!("pip install {}\n", "tensorflow-gpu==1.15.0 ".repeat(8));
    let terminal = format!("{long}{}\n{}\n{long}", &message[..cut], &message[cut..]);
    assert_eq!(only("cut", &terminal).requested_bytes, Some(68_852_648_264));
}

/// A hard-wrapped message stays readable when the text holds one unrelated
/// line longer than the wrap, anywhere (a whole issue comment pasted): the
/// wrap is seen in the lines around the message.
#[test]
fn a_long_unrelated_line_does_not_hide_a_wrapped_message() {
    let text = sample("tpu_headless_usage_torchxla3041.txt");
    let body = text.split_once('\n').unwrap().1;
    let want = only("plain", body);
    let wrapped: String = body
        .lines()
        .flat_map(|l| {
            let chars: Vec<char> = l.chars().collect();
            if chars.is_empty() {
                vec![String::new()]
            } else {
                chars.chunks(61).map(|c| c.iter().collect()).collect()
            }
        })
        .map(|l: String| l + "\n")
        .collect();
    let long = format!(
        "Reproduced with: {}\n",
        "python train.py --model=llama --batch-size=64 ".repeat(4)
    );
    assert!(long.len() > 170);
    for text in [
        format!("{long}{wrapped}"),
        format!("{wrapped}{long}"),
        format!("Thanks!\n{long}\n{wrapped}\nAny idea?\n"),
    ] {
        let got = only("wrapped", &text);
        assert_eq!(got.program_bytes, want.program_bytes);
        assert_eq!(got.hlo_temp_unpadded_bytes, want.hlo_temp_unpadded_bytes);
        assert_eq!(
            got.top_allocations.len(),
            want.top_allocations.len(),
            "{text}"
        );
        for (a, b) in got.top_allocations.iter().zip(&want.top_allocations) {
            assert_eq!(
                (a.size_bytes, &a.shape, &a.xla_label),
                (b.size_bytes, &b.shape, &b.xla_label)
            );
        }
    }
}

/// The reader types what the message's form says, so that the diagnosis
/// matches on it: which TPU run-time page, which GPU platform, what E1001's
/// instruction is.
#[test]
fn the_reader_types_what_the_message_says() {
    use oomscope_report::{GpuPlatform, ScopedInstruction, TpuRuntimeFailure};
    let first = |name: &str| {
        parse_oom_log(name, &sample(name))
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("{name}: no event"))
    };
    for (name, failure) in [
        ("tpu_runtime_reserve.txt", TpuRuntimeFailure::ProgramLoad),
        ("tpu_runtime_cut_short_tpurecipes151.txt", TpuRuntimeFailure::ProgramLoad),
        ("tpu_runtime_breakdown_torchxla1735.txt", TpuRuntimeFailure::ProgramLoad),
        ("tpu_runtime_allocate.txt", TpuRuntimeFailure::BufferAllocation),
        ("torch_xla_runtime_allocate8020.txt", TpuRuntimeFailure::BufferAllocation),
    ] {
        let e = first(name);
        assert_eq!(e.tpu_runtime_failure, Some(failure), "{name}");
        assert_eq!((e.gpu_platform, e.scoped_instruction), (None, None), "{name}");
    }
    for (name, platform) in [
        ("torch_hip_strixhalo3.txt", GpuPlatform::Hip),
        ("torch_hip_quoted_fluxwebui25.txt", GpuPlatform::Hip),
        ("torch_reserved_vdsr2.txt", GpuPlatform::Cuda),
    ] {
        let e = first(name);
        assert_eq!(e.gpu_platform, Some(platform), "{name}");
        assert_eq!(e.tpu_runtime_failure, None, "{name}");
    }
    for (name, instruction) in [
        ("tpu_scoped_vmem_pallas_one_line.txt", Some(ScopedInstruction::CustomKernel)),
        // Cut after its name: it does not say.
        ("tpu_scoped_vmem_e1001_splash.txt", None),
        ("tpu_vmem_would_exceed.txt", None),
    ] {
        let e = first(name);
        assert_eq!(e.kind, OomKind::TpuScopedVmem, "{name}");
        assert_eq!(e.scoped_instruction, instruction, "{name}");
    }
    // A compiler instruction: a fusion with no kernel behind it.
    let e = only(
        "fusion",
        "Ran out of memory in memory space vmem while allocating on stack for %fusion.3 = f32[8,128]{1,0} fusion(%p0), kind=kLoop. Scoped allocation with size 36.25M and limit 32.00M exceeded scoped vmem limit by 4.25M.\n",
    );
    assert_eq!(e.scoped_instruction, Some(ScopedInstruction::Compiler));
}

/// The compiler's early abort is typed by the reader (the diagnosis reads
/// its numbers as an estimate, and names the flag only when the message
/// does): the posted sample and the old libtpu fixture name the flag; the
/// same message cut before it does not; no other sample is an early abort.
#[test]
fn the_reader_types_the_early_abort() {
    use oomscope_report::EarlyAbort;
    let e = only("abort", &sample("tpu_early_abort.txt"));
    assert_eq!(e.early_abort, Some(EarlyAbort::NamesListingFlag));
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../fixtures/old-libtpu-oom-absurd/compile.log");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let events = parse_oom_log("compile.log", &text);
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].early_abort, Some(EarlyAbort::NamesListingFlag));
    let cut = sample("tpu_early_abort.txt");
    let cut = &cut[..cut.find("If more detailed").unwrap()];
    assert_eq!(only("cut", cut).early_abort, Some(EarlyAbort::Unnamed));
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/samples");
    let mut others = 0;
    for f in std::fs::read_dir(&dir).unwrap() {
        let path = f.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "tpu_early_abort.txt" || !name.ends_with(".txt") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        for e in parse_oom_log(&name, &text) {
            assert_eq!(e.early_abort, None, "{name}");
            others += 1;
        }
    }
    assert!(others > 50, "{others}");
}

/// A reservation wrapped before "at the bottom of memory" is still a
/// program that does not load: the form decides, not the first line.
#[test]
fn a_wrapped_reservation_is_a_program_load() {
    let e = only(
        "wrapped",
        "RESOURCE_EXHAUSTED: Error allocating: Attempting to reserve 29.49G at the\nbottom of memory. That was not possible. There are 147.64M free, 0B reserved, and 147.64M reservable.\n",
    );
    assert_eq!(e.kind, OomKind::TpuRuntime);
    assert_eq!(
        e.tpu_runtime_failure,
        Some(oomscope_report::TpuRuntimeFailure::ProgramLoad)
    );
    assert!(!e.message.contains("bottom of memory"), "{}", e.message);
}
