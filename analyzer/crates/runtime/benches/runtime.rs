//! Reading speed of the run-time readers (bytes of decompressed input per
//! second): the largest corpus file of each kind, and grown inputs built in
//! memory (a 100 MB raw memory timeline, a pprof of 200 000 samples).
//! The corpus files are skipped when `../shared/corpus/runtime/` is absent.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use oomscope_proto::perftools::profiles as pb;
use oomscope_proto::prost::Message;
use std::hint::black_box;
use std::io::Read;
use std::time::Duration;

const KINETO: &str = "pytorch__kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz";
const RAW: &str =
    "tonghuikang__optimizer-memory-profiles__profiling__modal_cpu_sgd__profile.raw.json.gz";
const PPROF: &str = "sholtodouglas__scalingExperiments__memory.prof@664e8b17";

fn gunzipped(name: &str) -> Option<Vec<u8>> {
    let data = std::fs::read(
        oomscope_testdata::corpus_if_present()?
            .join("runtime")
            .join(name),
    )
    .ok()?;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(&data[..])
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// A raw timeline of about `target` bytes: allocations and frees cycling
/// through the eight categories, with time moving forward.
fn grown_raw_timeline(target: usize) -> Vec<u8> {
    let mut out = String::with_capacity(target + 64);
    out.push('[');
    let mut i: u64 = 0;
    while out.len() < target {
        if i > 0 {
            out.push_str(", ");
        }
        let bytes = if i % 3 == 2 {
            -(((i % 97) as i64 + 1) * 4096)
        } else {
            ((i % 97) as i64 + 1) * 4096
        };
        out.push_str(&format!(
            "[{}, {}, {}, {}]",
            1_700_000_000_000_000_000u64 + i * 700,
            if bytes < 0 { 4 } else { 2 },
            bytes,
            i % 8
        ));
        i += 1;
    }
    out.push(']');
    out.into_bytes()
}

/// A pprof of `samples` buffer samples over 8 devices and 5 000 stacks.
fn grown_pprof(samples: usize) -> Vec<u8> {
    let mut strings: Vec<String> = [
        "",
        "allocations",
        "count",
        "space",
        "bytes",
        "kind",
        "buffer",
        "device",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let device0 = strings.len() as i64;
    strings.extend((0..8).map(|d| format!("TPU_{d}(process=0,(0,0,0,{d}))")));
    let functions: Vec<pb::Function> = (0..1000u64)
        .map(|f| {
            strings.push(format!("fn_{f}"));
            strings.push(format!("/home/me/model/layer_{}.py", f % 50));
            pb::Function {
                id: f + 1,
                name: strings.len() as i64 - 2,
                filename: strings.len() as i64 - 1,
                ..Default::default()
            }
        })
        .collect();
    let locations: Vec<pb::Location> = (0..5000u64)
        .map(|l| pb::Location {
            id: l + 1,
            line: vec![pb::Line {
                function_id: l % 1000 + 1,
                line: (l % 400) as i64 + 1,
            }],
            ..Default::default()
        })
        .collect();
    let sample = (0..samples as u64)
        .map(|s| pb::Sample {
            location_id: (0..12).map(|k| (s % 5000 + k * 37) % 5000 + 1).collect(),
            value: vec![1 + (s % 3) as i64, ((s % 1000) as i64 + 1) * 1024],
            label: vec![
                pb::Label {
                    key: 5,
                    str: 6,
                    ..Default::default()
                },
                pb::Label {
                    key: 7,
                    str: device0 + (s % 8) as i64,
                    ..Default::default()
                },
            ],
        })
        .collect();
    pb::Profile {
        sample_type: vec![
            pb::ValueType { r#type: 1, unit: 2 },
            pb::ValueType { r#type: 3, unit: 4 },
        ],
        sample,
        location: locations,
        function: functions,
        string_table: strings,
        ..Default::default()
    }
    .encode_to_vec()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("runtime");
    g.measurement_time(Duration::from_secs(10)).sample_size(10);
    let mut run = |name: &str, data: &[u8], read: &dyn Fn(&[u8]) -> bool| {
        assert!(read(data), "{name} reads");
        g.throughput(Throughput::Bytes(data.len() as u64));
        g.bench_function(name, |b| b.iter(|| read(black_box(data))));
    };
    let kineto = |d: &[u8]| oomscope_runtime::read_kineto_trace("k.pt.trace.json", d).is_ok();
    let timeline = |d: &[u8]| oomscope_runtime::read_memory_timeline("t.raw.json", d).is_ok();
    let pprof = |d: &[u8]| oomscope_runtime::read_device_memory_profile("m.prof", d).is_ok();
    if let Some(d) = gunzipped(KINETO) {
        run("kineto_corpus_resnet50", &d, &kineto);
    }
    if let Some(d) = gunzipped(RAW) {
        run("raw_timeline_corpus_cpu_sgd", &d, &timeline);
    }
    if let Some(d) = gunzipped(PPROF) {
        run("pprof_corpus_tpu_8dev", &d, &pprof);
    }
    run(
        "raw_timeline_grown_100MB",
        &grown_raw_timeline(100 << 20),
        &timeline,
    );
    run("pprof_grown_200k_samples", &grown_pprof(200_000), &pprof);
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
