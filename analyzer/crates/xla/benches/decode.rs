//! Decode + Memory Viewer analysis throughput on real inputs: the largest
//! HloProto in `fixtures/`, a real XProf profile, and that profile padded to
//! 256 MiB with copies of its own trace planes (which the reader must skip).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use oomscope_proto::prost::Message;
use oomscope_proto::tensorflow::profiler::XSpace;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    oomscope_testdata::fixtures()
}

/// The largest `*.hlo.pb` under `fixtures/`.
fn largest_hlo_proto(dir: &Path, best: &mut Option<(u64, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            largest_hlo_proto(&path, best);
        } else if path.to_string_lossy().ends_with(".hlo.pb") {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            if best.as_ref().is_none_or(|(s, _)| size > *s) {
                *best = Some((size, path));
            }
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut best = None;
    largest_hlo_proto(&fixtures(), &mut best);
    let (_, hlo_path) = best.expect("an HloProto under fixtures/");
    let hlo = std::fs::read(&hlo_path).expect("read HloProto");
    let mut group = c.benchmark_group("memory_viewer");
    group.throughput(Throughput::Bytes(hlo.len() as u64));
    group.bench_function(
        format!(
            "hlo_proto {} ({} bytes)",
            hlo_path.file_name().unwrap_or_default().to_string_lossy(),
            hlo.len()
        ),
        |b| b.iter(|| oomscope_xla::analyze_hlo_proto("bench.hlo.pb", &hlo).expect("analysis")),
    );

    let xplane =
        std::fs::read(fixtures().join("cpu-profile/profile.xplane.pb")).expect("read xplane");
    group.throughput(Throughput::Bytes(xplane.len() as u64));
    group.bench_function(
        format!("xplane cpu-profile ({} bytes)", xplane.len()),
        |b| {
            b.iter(|| {
                oomscope_xla::analyze_xspace("bench.xplane.pb", &xplane, &mut |_, _| {})
                    .expect("analysis")
            })
        },
    );

    // Pad with the profile's own trace planes (everything but /host:metadata).
    let trace_planes = oomscope_xla::read_planes(
        "bench",
        &xplane,
        &|n| n != oomscope_xla::METADATA_PLANE,
        &mut |_, _| {},
    )
    .expect("planes");
    let chunk = XSpace {
        planes: trace_planes,
        ..Default::default()
    }
    .encode_to_vec();
    let mut padded = Vec::with_capacity(256 << 20);
    while padded.len() + chunk.len() < (256 << 20) - xplane.len() {
        padded.extend_from_slice(&chunk);
    }
    padded.extend_from_slice(&xplane);
    group.throughput(Throughput::Bytes(padded.len() as u64));
    group.sample_size(10);
    group.bench_function(
        format!("xplane padded with trace planes ({} bytes)", padded.len()),
        |b| {
            b.iter(|| {
                oomscope_xla::analyze_xspace("bench.xplane.pb", &padded, &mut |_, _| {})
                    .expect("analysis")
            })
        },
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
