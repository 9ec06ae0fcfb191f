//! Snapshot decode + analysis throughput (MB/s of pickle).
//!
//! `cargo bench -p oomscope-snapshot --bench snapshot` measures the largest
//! real snapshot of the shared corpus. Set `OOMSCOPE_SNAPSHOT_BENCH=path` to
//! measure another file, e.g. one grown to 1 GB by
//! `tools/bench/grow_snapshot.py` (the file is streamed from disk each
//! iteration, as the CLI reads it).

use std::fs::{self, File};
use std::io::BufReader;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn bench_file() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("OOMSCOPE_SNAPSHOT_BENCH") {
        return Some(PathBuf::from(p));
    }
    fs::read_dir(oomscope_testdata::corpus_if_present()?.join("snapshots"))
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".p"))
        .max_by_key(|e| e.metadata().map_or(0, |m| m.len()))
        .map(|e| e.path())
}

fn decode_and_analyze(c: &mut Criterion) {
    let Some(path) = bench_file() else {
        eprintln!(
            "no snapshot to benchmark (no corpus at {})",
            oomscope_testdata::corpus_location().display()
        );
        return;
    };
    let len = fs::metadata(&path).map_or(0, |m| m.len());
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut group = c.benchmark_group("snapshot");
    group.throughput(Throughput::Bytes(len));
    if len > 100 << 20 {
        group.sample_size(10);
    }
    group.bench_function(format!("decode+analyze {name} ({} MB)", len >> 20), |b| {
        b.iter(|| {
            let reader = BufReader::new(File::open(&path).expect("bench file"));
            let reports = oomscope_snapshot::analyze(&name, reader, len).expect("decodes");
            assert!(!reports.is_empty());
            reports
        })
    });
    group.finish();
}

criterion_group!(benches, decode_and_analyze);
criterion_main!(benches);
