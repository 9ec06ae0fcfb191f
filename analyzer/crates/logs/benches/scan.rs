//! Scanning speed on a ~500 MB log: realistic unrelated lines (glog, TF
//! timestamps, training steps, tracebacks) with a few real OOM reports
//! buried in it. The input is generated in memory. Target: ≥ 300 MB/s.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

const TARGET_BYTES: usize = 500 << 20;

const NOISE: [&str; 12] = [
    "I1121 13:04:40.568747   17652 b295d63588a.cc:809] Enabled go/npx experiments: TCMALLOC_SONIC_RELEASE_MAX_FILLER_PAGES",
    "I0706 16:50:26.230209 140110937163584 metric_logger.py:214] completed step: 1, seconds: 24.930, TFLOP/s/device: 0.861, Tokens/s/device: 164.297, total_weights: 6965, loss: 0.693",
    "2025-01-05 09:48:28.754214: I external/xla/xla/service/service.cc:168] XLA service 0x5583 initialized for platform CUDA (this does not guarantee that XLA will be used). Devices:",
    "W1121 13:04:47.130762   18113 hlo_rematerialization.cc:3021] Can't reduce memory use below 14.53GiB (15598129971 bytes) by rematerialization; only reduced to 25.64GiB",
    "step: 1200  loss:  2.3412  memory: 23.45GiB(24.67%)  tps: 5,812  tflops: 201.33  mfu: 20.36%",
    "  File \"/usr/local/lib/python3.12/site-packages/jax/_src/interpreters/pxla.py\", line 1260, in compile",
    "[rank3]:[W1121 13:04:47.130762 ProcessGroupNCCL.cpp:1536] Rank 3 collective operation timeout check: 0 seqs pending",
    "I0813 17:21:06.501245    5157 deepsea_compiler_backend.cc:2130] XLA::TPU program HBM usage: 14.10G / 94.74G",
    "Epoch 3/10: 100%|██████████| 782/782 [01:23<00:00,  9.41it/s, loss=0.412, acc=0.871]",
    "I0706 16:50:25.683909 140110937163584 max_utils.py:783] \tUsing (GB) 1.79 / 95.74 (1.869647%) on TPU_0(process=0,(0,0,0,0))",
    "",
    "{\"ts\": 1795266283.25, \"level\": \"info\", \"msg\": \"checkpoint saved\", \"path\": \"gs://bucket/run/ckpt-6000\", \"bytes\": 53687091200}",
];

const OOMS: [&str; 3] = [
    "E1121 13:04:41.170204   17765 deepsea_compiler_base.cc:3582] XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 17.67G of 15.75G hbm. Exceeded hbm capacity by 1.92G.\n",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 19.68 GiB. GPU 0 has a total capacity of 23.68 GiB of which 11.88 GiB is free. Including non-PyTorch memory, this process has 11.79 GiB memory in use. Of the allocated memory 11.44 GiB is allocated by PyTorch, and 43.59 MiB is reserved by PyTorch but unallocated.\n",
    "E0105 09:48:28.755177  110350 pjrt_stream_executor_client.cc:3088] Execution of replica 0 failed: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4000000000 bytes.\n",
];

fn synthetic_log() -> String {
    let mut log = String::with_capacity(TARGET_BYTES + 4096);
    let mut i = 0usize;
    let mut next_oom = TARGET_BYTES / 4;
    while log.len() < TARGET_BYTES {
        if log.len() >= next_oom {
            log.push_str(OOMS[(next_oom / (TARGET_BYTES / 4)) % OOMS.len()]);
            next_oom += TARGET_BYTES / 4;
        }
        log.push_str(NOISE[i % NOISE.len()]);
        log.push('\n');
        i = i.wrapping_mul(7).wrapping_add(3) % 1_000_003;
    }
    log
}

fn bench_scan(c: &mut Criterion) {
    let log = synthetic_log();
    let found = oomscope_logs::parse_oom_log("bench.log", &log);
    assert_eq!(found.len(), 3, "the buried OOMs are found");
    let mut group = c.benchmark_group("scan");
    group.throughput(Throughput::Bytes(log.len() as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("500MB_log", |b| {
        b.iter(|| oomscope_logs::parse_oom_log("bench.log", black_box(&log)))
    });
    group.finish();
}

criterion_group!(benches, bench_scan);
criterion_main!(benches);
