//! Diagnostics, not checks (ignored): where a buffer lives, how often XLA
//! shares an equal-shaped dying operand, a parameter's dimension classes.
//! A pair's buffers at the peak, predicted and compiled (and the entry
//! computation of a side): `examples/peak.rs`.

mod common;

use std::collections::HashMap;
use std::path::Path;

use oomscope_report::program::{HeapEventKind, HeapProgram};
use oomscope_whatif::Change;

fn hlo_path(dir: &Path) -> std::path::PathBuf {
    oomscope_testdata::hlo_proto_in(dir).unwrap()
}

fn program(dir: &Path) -> HeapProgram {
    common::device_program(&hlo_path(dir)).unwrap()
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

#[test]
#[ignore = "a diagnostic: OOMSCOPE_SIDE=fixtures/pair/variant OOMSCOPE_FIND=name"]
fn where_a_buffer_lives() {
    let side = std::env::var("OOMSCOPE_SIDE").unwrap();
    let find = std::env::var("OOMSCOPE_FIND").unwrap_or_default();
    let dir = oomscope_testdata::fixtures().join(side);
    let path = hlo_path(&dir);
    let name = path.display().to_string();
    let bytes = std::fs::read(&path).unwrap();
    let hlo = oomscope_xla::decode_hlo_proto(&name, &bytes).unwrap();
    for p in oomscope_xla::heap_programs(&name, &hlo, None).unwrap() {
        let peak = oomscope_whatif::baseline(&p).unwrap();
        println!(
            "space {:?}: {} buffers, peak {:.1} MiB",
            p.memory_space,
            p.buffers.len(),
            mib(peak.peak_bytes)
        );
        for b in p
            .buffers
            .iter()
            .filter(|b| !find.is_empty() && b.name.contains(&find))
        {
            println!("  {} {} {:.1} MiB", b.name, b.shape, mib(b.size_bytes));
        }
    }
}

#[test]
#[ignore = "a diagnostic: how often XLA shares an equal-shaped dying operand, over every fixture"]
fn equal_shaped_dying_operands_are_shared() {
    let root = oomscope_testdata::fixtures();
    let mut files = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(".after_optimizations.hlo.pb") {
                files.push(p);
            }
        }
    }
    files.sort();
    let (mut total, mut total_shared) = (0, 0);
    let mut kinds: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    for path in files {
        let name = path.display().to_string();
        let bytes = std::fs::read(&path).unwrap();
        let Ok(hlo) = oomscope_xla::decode_hlo_proto(&name, &bytes) else {
            continue;
        };
        let Ok(programs) = oomscope_xla::heap_programs(&name, &hlo, None) else {
            continue;
        };
        for p in programs {
            let mut shared_with: HashMap<usize, usize> = HashMap::new();
            for e in &p.events {
                if let (HeapEventKind::ShareWith(c), Some(b)) = (e.kind, e.buffer) {
                    shared_with.insert(b, c);
                }
            }
            let (mut candidates, mut shared, mut missed) = (0, 0, Vec::new());
            for (v, b) in p.buffers.iter().enumerate() {
                for &o in &b.dying_operands {
                    let ob = &p.buffers[o];
                    if ob.shape != b.shape
                        || p.allocations[ob.allocation].indefinite
                        || p.allocations[b.allocation].indefinite
                    {
                        continue;
                    }
                    candidates += 1;
                    if p.memory_space == oomscope_report::MemoryColor::Device {
                        let key = format!(
                            "{} user{} operand{}",
                            b.opcode,
                            if b.name.contains('{') { "{i}" } else { "" },
                            if ob.name.contains('{') { "{i}" } else { "" }
                        );
                        let e = kinds.entry(key).or_insert((0, 0));
                        e.0 += 1;
                        if shared_with.contains_key(&v) {
                            e.1 += 1;
                        }
                    }
                    if shared_with.get(&v).is_some() {
                        shared += 1;
                    } else {
                        missed.push(format!("{} <- {} ({})", b.name, ob.name, b.opcode));
                    }
                    break;
                }
            }
            total += candidates;
            total_shared += shared;
            if candidates > 0 {
                println!(
                    "{name} {:?}: {shared}/{candidates} shared; not: {:?}",
                    p.memory_space,
                    missed.iter().take(4).collect::<Vec<_>>()
                );
            }
        }
    }
    println!("all: {total_shared}/{total}");
    for (k, (n, s)) in kinds {
        println!("HBM {k}: {s}/{n} shared");
    }
}

#[test]
#[ignore = "a diagnostic: OOMSCOPE_SIDE=pair/variant; each parameter's dimension classes and the buffers sharing its leading one"]
fn dimension_classes() {
    let side = std::env::var("OOMSCOPE_SIDE").unwrap();
    let p = program(&oomscope_testdata::fixtures().join(side));
    for e in &p.parameters {
        let Some(&c) = e.dim_classes.first() else {
            continue;
        };
        let n = p
            .buffers
            .iter()
            .filter(|b| b.dim_classes.contains(&c))
            .count();
        println!(
            "param {} {:?} {} classes {:?}: {n} buffers",
            e.number, e.shape_index, e.shape, e.dim_classes
        );
    }
    let prediction = oomscope_whatif::predict(&p, &[Change::Batch(2)]).unwrap();
    println!(
        "{:?}\n{:.1} MiB",
        prediction.scope,
        mib(prediction.curve.peak_bytes)
    );
    for c in &prediction.changed {
        println!(
            "  {} {} -> {} {:.1} -> {:.1}",
            c.name,
            c.shape_before,
            c.shape_after,
            mib(c.bytes_before),
            mib(c.bytes_after)
        );
    }
    if std::env::var("OOMSCOPE_ALL").is_ok() {
        for b in &p.buffers {
            println!("  {} {} {:?}", b.name, b.shape, b.dim_classes);
        }
    }
}
