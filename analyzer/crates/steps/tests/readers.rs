//! Readers over real logs: the shared corpus (numbers from its `# expect:`
//! lines) and short samples from public issues (`tests/samples/`, source in
//! each file's first line).

use oomscope_steps::{looks_like_step_log, parse_step_log, StepSeries};

const GIB: f64 = (1u64 << 30) as f64;

fn corpus(name: &str) -> String {
    let path = oomscope_testdata::corpus().join("logs").join(name);
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn sample(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/samples/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn gib(v: f64) -> u64 {
    (v * GIB).round() as u64
}

fn find<'a>(series: &'a [StepSeries], device: &str, metric: &str) -> &'a StepSeries {
    series
        .iter()
        .find(|s| s.device == device && s.metric == metric)
        .unwrap_or_else(|| {
            panic!(
                "no series {device}/{metric} in {:?}",
                series
                    .iter()
                    .map(|s| (&s.device, &s.metric))
                    .collect::<Vec<_>>()
            )
        })
}

/// expect: 4 devices TPU_0..TPU_3 each 'Using (GB) 1.79 / 95.74'; step lines carry no memory.
#[test]
fn corpus_59_maxtext_memstats_with_glog_prefix() {
    let text = corpus("59_train_step_memory.txt");
    assert!(looks_like_step_log(&text));
    let series = parse_step_log("59", &text);
    assert_eq!(series.len(), 4, "{series:#?}");
    for dev in ["TPU_0", "TPU_1", "TPU_2", "TPU_3"] {
        let s = find(&series, dev, "bytes_in_use");
        assert_eq!(s.source, "maxtext");
        assert_eq!(s.unit, "GB");
        assert_eq!(s.points.len(), 1);
        assert_eq!(
            s.points[0].step, 0,
            "memstats printed before the first completed step"
        );
        assert_eq!(s.points[0].bytes, gib(1.79), "maxtext prints bytes / 2^30");
        assert_eq!(s.limit_bytes, Some(gib(95.74)));
    }
}

/// expect: total=100.4 GB output=44.5 GB temp=55.9 GB argument=44.5 GB host_temp=0.0 GB.
#[test]
fn corpus_60_maxtext_compile_estimate() {
    let series = parse_step_log("60", &corpus("60_train_step_memory.txt"));
    let want = [
        ("total", 100.4),
        ("output", 44.5),
        ("temp", 55.9),
        ("argument", 44.5),
        ("host_temp", 0.0),
    ];
    assert_eq!(series.len(), want.len(), "{series:#?}");
    for (name, v) in want {
        let s = find(&series, "", &format!("compile_estimate_{name}"));
        assert_eq!(s.points.len(), 1);
        assert_eq!(s.points[0].bytes, gib(v), "{name}");
    }
}

/// expect: 4 devices TPU_0..3 each used=44.63 GB of limit=95.74 GB; no log prefix.
#[test]
fn corpus_61_maxtext_memstats_without_prefix() {
    let series = parse_step_log("61", &corpus("61_train_step_memory.txt"));
    assert_eq!(series.len(), 4, "{series:#?}");
    for dev in ["TPU_0", "TPU_1", "TPU_2", "TPU_3"] {
        let s = find(&series, dev, "bytes_in_use");
        assert_eq!(s.points[0].bytes, gib(44.63));
        assert_eq!(s.limit_bytes, Some(gib(95.74)));
    }
}

/// expect: TPU_0, TPU_1, TPU_4, TPU_5 each 'Using (GB) 6.9 / 94.74'.
#[test]
fn corpus_67_maxtext_one_decimal_noncontiguous_devices() {
    let series = parse_step_log("67", &corpus("67_train_step_memory.txt"));
    let devices: Vec<&str> = series.iter().map(|s| s.device.as_str()).collect();
    assert_eq!(devices, ["TPU_0", "TPU_1", "TPU_4", "TPU_5"]);
    for s in &series {
        assert_eq!(s.points[0].bytes, gib(6.9));
        assert_eq!(s.limit_bytes, Some(gib(94.74)));
    }
}

/// Every corpus log that is not a training log: OOM messages have sizes next
/// to words like "reserved" and "memory", and must not be read as series.
#[test]
fn oom_logs_are_not_step_logs() {
    let dir = oomscope_testdata::corpus().join("logs");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).expect("corpus logs") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.contains("train_step_memory") || !name.ends_with(".txt") {
            continue;
        }
        let text = corpus(&name);
        assert!(
            parse_step_log(&name, &text).is_empty(),
            "{name}: {:?}",
            parse_step_log(&name, &text)
        );
        checked += 1;
    }
    assert!(checked >= 9, "{checked}");
}

#[test]
fn torchtitan_sample_with_rank_prefix() {
    let series = parse_step_log("pr1287", &sample("torchtitan_pr1287.log"));
    assert_eq!(series.len(), 1, "{series:#?}");
    let s = &series[0];
    assert_eq!(
        (
            s.source.as_str(),
            s.device.as_str(),
            s.metric.as_str(),
            s.unit.as_str()
        ),
        ("torchtitan", "rank 0", "max_reserved", "GiB")
    );
    let steps: Vec<u64> = s.points.iter().map(|p| p.step).collect();
    assert_eq!(steps, [200, 210, 220, 230, 240, 250]);
    assert!(s.points.iter().all(|p| p.bytes == gib(49.66)));
    // Limit derived from 49.66 GiB at 52.28%: 94.99 GiB (an H100's 95.0 GiB, rounded as printed).
    let limit = s.limit_bytes.expect("limit from the percentage") as f64 / GIB;
    assert!((limit - 49.66 / 0.5228).abs() < 1e-6, "{limit}");
}

#[test]
fn torchtitan_sample_pipeline_parallel() {
    let series = parse_step_log("issue1232", &sample("torchtitan_issue1232.log"));
    assert_eq!(series.len(), 1);
    let got: Vec<(u64, u64)> = series[0].points.iter().map(|p| (p.step, p.bytes)).collect();
    assert_eq!(
        got,
        [
            (1, gib(36.90)),
            (2, gib(42.78)),
            (3, gib(42.78)),
            (4, gib(42.78))
        ]
    );
}

#[test]
fn torchtitan_colour_codes_and_capacity_line() {
    let text = "\u{1b}[32m[titan] 2025-01-01 - root - INFO - CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory\u{1b}[39m\n\
        [rank3]:[titan] x - root - INFO - \u{1b}[31mstep:  1  \u{1b}[32mloss: 10.8000  \u{1b}[33mmemory: 20.50GiB(25.91%)  \u{1b}[34mtps: 1,000\u{1b}[39m\n\
        [rank3]:[titan] x - root - INFO - [31mstep:  2  [32mloss:  9.1000  [33mmemory: 21.00GiB(26.54%)  [34mtps: 1,000[39m\n\
        [rank3]:[titan] x - root - INFO - \u{1b}[33mvalidate step:  2  \u{1b}[32mloss:  9.5000  \u{1b}[36mmemory: 22.00GiB(27.81%)  \u{1b}[34mtps: 900\u{1b}[39m\n";
    let series = parse_step_log("colour", text);
    let train = find(&series, "rank 3", "max_reserved");
    assert_eq!(
        train.points.iter().map(|p| p.bytes).collect::<Vec<_>>(),
        [gib(20.5), gib(21.0)]
    );
    assert_eq!(
        train.limit_bytes,
        Some(gib(79.11)),
        "capacity line wins over the percentage"
    );
    let val = find(&series, "rank 3", "validation_max_reserved");
    assert_eq!(val.points[0].bytes, gib(22.0));
}

#[test]
fn torchtune_peak_memory_sample() {
    let series = parse_step_log("pr2406", &sample("torchtune_pr2406.log"));
    let alloc = find(&series, "", "peak_memory_alloc");
    assert_eq!(alloc.source, "torchtune");
    assert_eq!(alloc.points.len(), 6);
    assert_eq!(
        alloc.points[0],
        oomscope_steps::StepPoint {
            step: 1,
            bytes: gib(52.001708984375)
        }
    );
    assert_eq!(alloc.points[5].bytes, gib(57.90928649902344));
    assert!(series.iter().any(|s| s.metric == "peak_memory_active"));
    assert!(series.iter().any(|s| s.metric == "peak_memory_reserved"));
    assert!(looks_like_step_log(&sample("torchtune_pr2406.log")));
}

#[test]
fn tpu_info_snapshots_over_time() {
    let text = sample("tpu_info_readme_streaming.txt");
    assert!(looks_like_step_log(&text));
    let series = parse_step_log("tpu-info", &text);
    let chip0 = find(&series, "chip 0", "hbm_usage");
    assert_eq!(chip0.source, "tpu-info");
    let got: Vec<(u64, u64)> = chip0.points.iter().map(|p| (p.step, p.bytes)).collect();
    assert_eq!(got, [(0, gib(18.45)), (2, gib(29.50))]);
    assert_eq!(chip0.limit_bytes, Some(gib(31.25)));
    let chip9 = find(&series, "chip 9", "hbm_usage");
    assert_eq!(
        chip9.points,
        [oomscope_steps::StepPoint {
            step: 1,
            bytes: gib(9.26)
        }]
    );
    assert_eq!(series.len(), 8, "chips 0-3 and 8, 9, 12, 13");
}

#[test]
fn pytorch_allocated_reserved_prints() {
    let text = "iter 10 allocated: 1.5 GiB reserved: 2.0 GiB\n\
        iter 20 allocated: 1.75 GiB reserved: 2.0 GiB\n\
        [rank1]:step=30 torch.cuda.memory_allocated(): 1024.0 MB max_memory_reserved: 3 GiB\n\
        torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.2 GiB is free. Of the allocated memory 70.1 GiB is allocated by PyTorch\n";
    let series = parse_step_log("print", text);
    let alloc = find(&series, "", "allocated");
    assert_eq!(
        alloc
            .points
            .iter()
            .map(|p| (p.step, p.bytes))
            .collect::<Vec<_>>(),
        [(10, 3 << 29), (20, 7 << 28)]
    );
    let reserved = find(&series, "", "reserved");
    assert_eq!(reserved.points.len(), 2);
    let r1 = find(&series, "rank 1", "memory_allocated");
    assert_eq!(
        r1.points[0],
        oomscope_steps::StepPoint {
            step: 30,
            bytes: 1 << 30
        }
    );
    assert_eq!(
        find(&series, "rank 1", "max_memory_reserved").points[0].bytes,
        3 << 30
    );
    assert_eq!(series.len(), 4, "the OOM message adds nothing: {series:#?}");
}

#[test]
fn csv_with_header_and_units() {
    let text = "step,memory_gib,loss\n1,1.5,9.0\n2,1.75,8.0\n3,2.0,7.5\n";
    let series = parse_step_log("m.csv", text);
    assert_eq!(series.len(), 1);
    assert_eq!(series[0].metric, "memory_gib");
    assert_eq!(
        series[0].points.iter().map(|p| p.bytes).collect::<Vec<_>>(),
        [3 << 29, 7 << 28, 2 << 30]
    );
    let tb = parse_step_log(
        "run-memory_max_reserved(GiB).csv",
        "Wall time,Step,Value\n1718000000.5,10,12.5\n1718000010.5,20,13\n",
    );
    assert_eq!(
        tb[0].points[1],
        oomscope_steps::StepPoint {
            step: 20,
            bytes: 13 << 30
        }
    );
    let bare = parse_step_log("b.csv", "0,1000\n1,2000\n2,3000\n");
    assert_eq!(bare[0].points.len(), 3);
    assert_eq!(bare[0].points[2].bytes, 3000);
    assert!(looks_like_step_log("step,bytes\n1,100\n2,200\n"));
    assert!(!looks_like_step_log("name,age\nbob,3\n"));
}

#[test]
fn allocator_stats_dicts_jax_and_torch_xla() {
    let text = "step 1 {'num_allocs': 10, 'bytes_in_use': 1000, 'peak_bytes_in_use': 1500, 'largest_alloc_size': 9, 'bytes_limit': 16000} on TPU_0\n\
        step 2 {'num_allocs': 12, 'bytes_in_use': 2000, 'peak_bytes_in_use': 2500, 'bytes_limit': 16000} on TPU_0\n\
        [rank2]:step=5 xla:0 {'bytes_used': 4096, 'bytes_limit': 8192}\n\
        epoch 0 xla:1 {'kb_free': 1000, 'kb_total': 3000}\n\
        epoch 1 xla:1 {'kb_free': 900, 'kb_total': 3000}\n";
    let series = parse_step_log("dicts", text);
    let in_use = find(&series, "TPU_0", "bytes_in_use");
    assert_eq!(in_use.source, "memory_stats");
    assert_eq!(
        in_use
            .points
            .iter()
            .map(|p| (p.step, p.bytes))
            .collect::<Vec<_>>(),
        [(1, 1000), (2, 2000)]
    );
    assert_eq!(in_use.limit_bytes, Some(16000));
    assert_eq!(
        find(&series, "TPU_0", "peak_bytes_in_use").points[1].bytes,
        2500
    );
    let used = find(&series, "rank 2", "bytes_used");
    assert_eq!(
        (used.points[0].step, used.points[0].bytes, used.limit_bytes),
        (5, 4096, Some(8192))
    );
    let kb = find(&series, "xla:1", "used");
    assert_eq!(
        (kb.points[0].bytes, kb.limit_bytes),
        (2000 * 1024, Some(3000 * 1024))
    );
    assert_eq!(series.len(), 4, "{series:#?}");
}

/// torchtitan near capacity: `N CUDA memory allocation retries.` warnings,
/// each printed just before the step line it belongs to; the capacity
/// percentage gives the limit.
#[test]
fn torchtitan_allocation_retries_with_rank_prefix() {
    let series = parse_step_log("issue1558", &sample("torchtitan_issue1558_retries.log"));
    assert_eq!(series.len(), 1, "{series:#?}");
    let s = find(&series, "rank 0", "max_reserved");
    let got: Vec<(u64, u64)> = s.points.iter().map(|p| (p.step, p.bytes)).collect();
    assert_eq!(got, [(3, gib(72.32)), (4, gib(72.19))]);
    let retries: Vec<(u64, u64)> = s
        .allocation_retries
        .iter()
        .map(|p| (p.step, p.bytes))
        .collect();
    // The last warning has no step line after it (the post ends): it stays
    // with the last step logged.
    assert_eq!(retries, [(3, 5), (4, 7), (4, 9)]);
    let limit = s.limit_bytes.expect("limit from the percentage") as f64 / GIB;
    assert!((limit - 72.32 / 0.9144).abs() < 1e-6, "{limit}");
}

#[test]
fn torchtitan_allocation_retries_of_several_unprefixed_ranks() {
    let series = parse_step_log("pr2389", &sample("torchtitan_pr2389_retries.log"));
    assert_eq!(series.len(), 1, "{series:#?}");
    let s = &series[0];
    let steps: Vec<u64> = s.points.iter().map(|p| p.step).collect();
    assert_eq!(steps, [7, 7, 7, 8]);
    let retries: Vec<(u64, u64)> = s
        .allocation_retries
        .iter()
        .map(|p| (p.step, p.bytes))
        .collect();
    assert_eq!(retries, [(7, 9), (7, 9), (8, 9), (8, 9)]);
    // 171.75 GiB is 96.29% of the device: the limit is the 178.4 GiB of a B200.
    let limit = s.limit_bytes.expect("limit") as f64 / GIB;
    assert!((limit - 171.75 / 0.9629).abs() < 1e-6, "{limit}");
}

/// A series needs steps: memory printed once, in a comment's prose (each
/// metric a single value), is no memory per step and draws no chart.
#[test]
fn prose_printed_once_is_no_series() {
    // karpathy/nanoGPT#618 (https://github.com/karpathy/nanoGPT/issues/618),
    // the description: one print of each, quoted in prose.
    let text = "I printed the memory:\noccupied memory:2.47 GB\n\nreserved memory:16.69 GB\n\nWhy reserved memory is much larger than allocated memory?\n";
    assert!(parse_step_log("nanogpt618", text).is_empty());
    assert!(!looks_like_step_log(text));
    // The line of issue 28, pasted in a comment.
    let line = "allocated_by_pytorch=22.90 GiB reserved_unallocated=194.87 MiB\n";
    assert!(parse_step_log("comment", line).is_empty());
    // Printed at two steps, the same keys are a series.
    let twice = format!("{line}{line}");
    let series = parse_step_log("twice", &twice);
    assert!(
        !series.is_empty() && series.iter().all(|s| s.points.len() == 2),
        "{series:#?}"
    );
}
