//! HLO text parsing throughput on the largest real `*after_optimizations.txt`
//! found among the fixtures and the shared corpus, replicated in memory to
//! about 100 MB as one module (its computations repeated, one ENTRY at the end).
//!
//! `cargo bench -p oomscope-dump --bench hlo_text`; set `OOMSCOPE_HLO_BENCH_OUT=path`
//! to also write the replicated text (for `benches/xla_parser_baseline.py`).

use std::fs;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use oomscope_dump::HloModule;

const TARGET_BYTES: usize = 100 << 20;

fn largest_hlo_text() -> Option<PathBuf> {
    fn walk(dir: &Path, best: &mut Option<(u64, PathBuf)>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, best);
            } else if path.to_string_lossy().ends_with("after_optimizations.txt") {
                let size = entry.metadata().map_or(0, |m| m.len());
                if best.as_ref().is_none_or(|(s, _)| size > *s) {
                    *best = Some((size, path));
                }
            }
        }
    }
    let mut best = None;
    let corpus = oomscope_testdata::corpus_if_present().map(|c| c.join("xla-runs"));
    for root in std::iter::once(oomscope_testdata::fixtures()).chain(corpus) {
        walk(&root, &mut best);
    }
    best.map(|(_, path)| path)
}

/// The module's text grown to about `TARGET_BYTES`: header and stack-frame
/// tables once, the non-entry computations repeated with every name renamed
/// (copy `k` appends `.rK`, so that XLA's own parser accepts the result too),
/// the entry once at the end (it calls the original computations).
fn replicate(text: &str) -> String {
    let entry_at = text.find("\nENTRY ").map_or(text.len(), |i| i + 1);
    let first_computation = text[..entry_at]
        .match_indices("\n%")
        .map(|(i, _)| i + 1)
        .find(|&i| text[i..].lines().next().is_some_and(|l| l.ends_with('{')))
        .unwrap_or(entry_at);
    let (head, body, entry) = (
        &text[..first_computation],
        &text[first_computation..entry_at],
        &text[entry_at..],
    );
    let copies = (TARGET_BYTES / body.len().max(1)).max(1);
    let mut out =
        String::with_capacity(head.len() + (body.len() + body.len() / 8) * copies + entry.len());
    out.push_str(head);
    out.push_str(body);
    for k in 1..copies {
        rename(body, &format!(".r{k}"), &mut out);
    }
    out.push_str(entry);
    out
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// Append `text` with `suffix` after every `%name`, and after every
/// `name: ` parameter of a computation header line.
fn rename(text: &str, suffix: &str, out: &mut String) {
    for line in text.split_inclusive('\n') {
        let header = line.starts_with('%') && line.trim_end().ends_with('{');
        let bytes = line.as_bytes();
        let mut i = 0;
        let mut copied = 0;
        while i < bytes.len() {
            let starts_name = bytes[i] == b'%'
                || (header
                    && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_')
                    && i > 0
                    && matches!(bytes[i - 1], b'(' | b' '));
            if !starts_name {
                i += 1;
                continue;
            }
            let mut end = i + 1;
            while end < bytes.len() && is_name_byte(bytes[end]) {
                end += 1;
            }
            let is_param = bytes[i] != b'%' && line[end..].starts_with(": ");
            if bytes[i] == b'%' || is_param {
                out.push_str(&line[copied..end]);
                out.push_str(suffix);
                copied = end;
            }
            i = end;
        }
        out.push_str(&line[copied..]);
    }
}

fn bench(c: &mut Criterion) {
    let Some(path) = largest_hlo_text() else {
        eprintln!("no *after_optimizations.txt found in the fixtures or the corpus");
        return;
    };
    let original = fs::read_to_string(&path).expect("readable HLO text");
    let text = replicate(&original);
    if let Ok(out) = std::env::var("OOMSCOPE_HLO_BENCH_OUT") {
        fs::write(&out, &text).expect("writable OOMSCOPE_HLO_BENCH_OUT");
    }
    let parse = HloModule::parse(&text);
    let instructions: usize = parse
        .module
        .computations
        .iter()
        .map(|c| c.instructions.len())
        .sum();
    assert!(parse.problems.is_empty(), "{:?}", parse.problems);
    eprintln!(
        "{}: {} bytes, replicated to {} bytes, {} computations, {instructions} instructions",
        path.display(),
        original.len(),
        text.len(),
        parse.module.computations.len()
    );
    if let Some(cpu) = on_cpu_throughput(&text) {
        eprintln!(
            "on-CPU throughput (this thread's CPU time, unaffected by other load): {cpu:.0} MiB/s"
        );
    }
    let mut group = c.benchmark_group("hlo_text");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    group.bench_function("parse", |b| {
        b.iter(|| HloModule::parse(std::hint::black_box(&text)))
    });
    group.finish();
}

/// This thread's time on a CPU in nanoseconds (Linux `schedstat`), when available.
fn on_cpu_nanos() -> Option<u64> {
    let stat = fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split(' ').next()?.parse().ok()
}

/// Parsing throughput over on-CPU time rather than wall time: on a shared,
/// loaded machine the wall clock mostly measures waiting for a core.
fn on_cpu_throughput(text: &str) -> Option<f64> {
    let mut best = u64::MAX;
    for _ in 0..5 {
        let start = on_cpu_nanos()?;
        std::hint::black_box(HloModule::parse(std::hint::black_box(text)));
        best = best.min(on_cpu_nanos()?.saturating_sub(start).max(1));
    }
    Some(text.len() as f64 / (best as f64 / 1e9) / 1048576.0)
}

criterion_group!(benches, bench);
criterion_main!(benches);
