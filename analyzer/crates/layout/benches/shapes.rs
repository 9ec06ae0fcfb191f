//! Parsing and sizing real shape strings: every value shape of the largest
//! fixture buffer assignment (a 4-layer transformer training step).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use oomscope_layout::{parse_shape, suggest_fix};

fn value_shapes() -> Vec<String> {
    let dir = oomscope_testdata::fixtures().join("transformer-step");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with("-buffer-assignment.txt"))
        .expect("transformer-step buffer assignment");
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|line| {
            line.trim()
                .strip_prefix("value: <")?
                .split_once("): ")
                .map(|(_, s)| s.to_string())
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let shapes = value_shapes();
    let bytes: usize = shapes.iter().map(String::len).sum();
    let mut group = c.benchmark_group("shapes");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function(format!("parse_and_size_{}_shapes", shapes.len()), |b| {
        b.iter(|| {
            shapes
                .iter()
                .map(|s| parse_shape(s).map_or(0, |shape| shape.padded_bytes()))
                .sum::<u64>()
        })
    });
    let arrays: Vec<_> = shapes
        .iter()
        .filter_map(|s| parse_shape(s).ok()?.as_array().cloned())
        .collect();
    group.throughput(Throughput::Elements(arrays.len() as u64));
    group.bench_function(format!("suggest_fix_{}_arrays", arrays.len()), |b| {
        b.iter(|| arrays.iter().filter_map(suggest_fix).count())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
