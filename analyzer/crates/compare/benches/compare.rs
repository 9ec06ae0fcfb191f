//! Comparing two runs against analysing them: issue 18 asks that comparing
//! two 1.2 MB HloProtos take under 2× the time of analysing both, i.e. that
//! the comparison itself cost less than the two analyses.
//!
//! `transformer-step` (1.2 MB HloProto) against a copy of itself is the
//! worst case for matching: every module, buffer and fingerprint token
//! pairs. `transformer-scan` against `oom-transformer-scan` (8 vs 32
//! layers) is a real pair.

use criterion::{criterion_group, criterion_main, Criterion};
use oomscope_report::Report;
use std::hint::black_box;
use std::path::PathBuf;

fn hlo_proto(fixture: &str) -> (String, Vec<u8>) {
    let dir = oomscope_testdata::fixtures().join(fixture);
    let path: PathBuf = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".hlo.pb"))
        .unwrap();
    (
        path.file_name().unwrap().to_string_lossy().into_owned(),
        std::fs::read(&path).unwrap(),
    )
}

fn analyse(name: &str, data: &[u8]) -> Report {
    let mut r = Report::new();
    r.modules = oomscope_xla::analyze_hlo_proto(name, data).unwrap();
    r
}

fn bench(c: &mut Criterion) {
    for (a, b) in [
        ("transformer-step", "transformer-step"),
        ("transformer-scan", "oom-transformer-scan"),
    ] {
        let (na, da) = hlo_proto(a);
        let (nb, db) = hlo_proto(b);
        let mut group = c.benchmark_group(format!("{a} vs {b}"));
        group.sample_size(20);
        group.bench_function("analyse both", |bench| {
            bench.iter(|| (analyse(&na, black_box(&da)), analyse(&nb, black_box(&db))))
        });
        let (ra, rb) = (analyse(&na, &da), analyse(&nb, &db));
        group.bench_function("compare the two reports", |bench| {
            bench.iter(|| oomscope_compare::compare(black_box(&ra), black_box(&rb), "A", "B"))
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
