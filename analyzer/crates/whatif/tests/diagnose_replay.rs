//! A diagnostic, not a check (ignored): one pair's buffers at the peak, on
//! the costly side as the what-if replays it and on the compiled fixed
//! side, to see where a prediction parts from the compiler.
//!
//! `OOMSCOPE_PAIR="pair-dtype f32 bf16 bf16" cargo test -p oomscope-whatif
//! --test diagnose_replay -- --ignored --nocapture` (pair, costly, fixed, remedy:
//! bf16 | batch).

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

/// Buffers whose memory is counted at `position`, its event applied
/// (where the replay's peak is taken), as roots of live chains.
fn live(program: &HeapProgram, position: u64) -> Vec<usize> {
    let mut refs: HashMap<usize, i64> = HashMap::new();
    let mut canon: HashMap<usize, usize> = HashMap::new();
    let root = |canon: &HashMap<usize, usize>, mut b: usize| {
        while let Some(&c) = canon.get(&b) {
            b = c;
        }
        b
    };
    for (i, e) in program.events.iter().enumerate() {
        if i as u64 > position {
            break;
        }
        let Some(b) = e.buffer else { continue };
        match e.kind {
            HeapEventKind::Alloc => *refs.entry(root(&canon, b)).or_default() += 1,
            HeapEventKind::Free => *refs.entry(root(&canon, b)).or_default() -= 1,
            HeapEventKind::ShareWith(c) => {
                canon.insert(b, c);
                *refs.entry(root(&canon, c)).or_default() += 1;
            }
        }
    }
    let mut out: Vec<usize> = refs
        .into_iter()
        .filter(|(_, r)| *r > 0)
        .map(|(b, _)| b)
        .collect();
    out.sort_unstable();
    out
}

/// The entry computation as a list: name, element type and dimensions,
/// opcode, operands, and a fusion's fused opcodes.
fn hlo(dir: &Path) {
    let path = hlo_path(dir);
    let name = path.display().to_string();
    let bytes = std::fs::read(&path).unwrap();
    let proto = oomscope_xla::decode_hlo_proto(&name, &bytes).unwrap();
    let module = &proto.module_proto().unwrap();
    let names: HashMap<i64, &str> = module
        .computations
        .iter()
        .flat_map(|c| c.instructions.iter().map(|i| (i.id, i.name.as_str())))
        .collect();
    let computations: HashMap<i64, _> = module.computations.iter().map(|c| (c.id, c)).collect();
    let entry = computations[&module.entry_computation_id];
    let chosen: Vec<_> = match std::env::var("OOMSCOPE_COMPUTATION") {
        Ok(name) => module
            .computations
            .iter()
            .filter(|c| c.name.contains(&name))
            .collect(),
        Err(_) => vec![entry],
    };
    for i in chosen.iter().flat_map(|c| c.instructions.iter()) {
        let shape = i.shape.as_ref().map(|s| {
            if s.tuple_shapes.is_empty() {
                format!("{}{:?}", s.element_type, s.dimensions)
            } else {
                s.tuple_shapes
                    .iter()
                    .map(|t| format!("{}{:?}", t.element_type, t.dimensions))
                    .collect::<Vec<_>>()
                    .join(",")
            }
        });
        let operands: Vec<&str> = i
            .operand_ids
            .iter()
            .map(|o| names.get(o).copied().unwrap_or("?"))
            .collect();
        let fused: Vec<String> = i
            .called_computation_ids
            .iter()
            .filter_map(|c| computations.get(c))
            .flat_map(|c| {
                c.instructions
                    .iter()
                    .filter(|x| x.opcode != "parameter")
                    .map(|x| x.opcode.clone())
            })
            .collect();
        println!(
            "  {} = {} {}({}) [{}] {}",
            i.name,
            shape.unwrap_or_default(),
            i.opcode,
            operands.join(", "),
            fused.join(" "),
            i.metadata
                .as_ref()
                .map(|m| m.op_name.as_str())
                .unwrap_or("")
        );
    }
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

fn show(title: &str, p: &HeapProgram, position: u64, sizes: &dyn Fn(usize) -> u64) {
    let at = p
        .instructions
        .get(position as usize)
        .cloned()
        .unwrap_or_default();
    let mut rows: Vec<(u64, usize)> = live(p, position)
        .into_iter()
        .map(|b| (sizes(b), b))
        .collect();
    rows.sort_by(|a, b| b.cmp(a));
    let total: u64 = rows.iter().map(|r| r.0).sum();
    println!(
        "== {title}: position {position} of {} ({at}), {:.1} MiB of temporaries live",
        p.events.len(),
        mib(total)
    );
    for (size, b) in rows.iter().take(40) {
        let x = &p.buffers[*b];
        println!(
            "  {:>9.1} MiB  {:<14} {:<40} {}",
            mib(*size),
            x.opcode,
            x.name,
            x.shape
        );
    }
}

fn indefinite(title: &str, p: &HeapProgram, sizes: &dyn Fn(usize) -> u64) {
    let mut total = 0;
    println!("== {title}: indefinite allocations");
    for a in p
        .allocations
        .iter()
        .filter(|a| a.indefinite && a.representative.is_some())
    {
        let r = a.representative.unwrap();
        let s = sizes(r).max(if sizes(r) == p.buffers[r].size_bytes {
            a.size_bytes
        } else {
            0
        });
        total += s;
        let b = &p.buffers[r];
        println!(
            "  {:>9.1} MiB  param {:?} out {:?} {:<40} {}",
            mib(s),
            a.parameter_number,
            a.output_index,
            b.name,
            b.shape
        );
    }
    println!("  total {:.1} MiB", mib(total));
}

fn events(title: &str, p: &HeapProgram, sizes: &dyn Fn(usize) -> u64) {
    println!("== {title}: events");
    for (i, e) in p.events.iter().enumerate() {
        let Some(b) = e.buffer else { continue };
        let x = &p.buffers[b];
        let kind = match e.kind {
            HeapEventKind::Alloc => "ALLOC".to_string(),
            HeapEventKind::Free => "FREE".to_string(),
            HeapEventKind::ShareWith(c) => format!("SHARE {}", p.buffers[c].name),
        };
        let at = p.instructions.get(i).cloned().unwrap_or_default();
        println!(
            "  {i:>5} {kind:<10} {:>9.1} MiB {:<36} {:<28} {}",
            mib(sizes(b)),
            x.name,
            at,
            x.shape
        );
    }
}

#[test]
#[ignore = "a diagnostic: OOMSCOPE_PAIR=\"pair costly fixed remedy\""]
fn buffers_at_the_peak_on_both_sides() {
    let spec = std::env::var("OOMSCOPE_PAIR").unwrap_or_else(|_| "pair-dtype f32 bf16 bf16".into());
    let words: Vec<&str> = spec.split_whitespace().collect();
    let dir = oomscope_testdata::fixtures().join(words[0]);
    let change = match words[3] {
        "batch" => Change::Batch(2),
        _ => Change::Bf16,
    };
    if let Ok(side) = std::env::var("OOMSCOPE_HLO") {
        hlo(&dir.join(side));
        return;
    }
    let costly = program(&dir.join(words[1]));
    let fixed = program(&dir.join(words[2]));
    let prediction = oomscope_whatif::predict(&costly, &[change]).unwrap();
    let after: HashMap<&str, u64> = prediction
        .changed
        .iter()
        .map(|c| (c.name.as_str(), c.bytes_after))
        .collect();
    let predicted = |b: usize| {
        let x = &costly.buffers[b];
        after.get(x.name.as_str()).copied().unwrap_or(x.size_bytes)
    };
    let base = oomscope_whatif::baseline(&costly).unwrap();
    let real = oomscope_whatif::baseline(&fixed).unwrap();
    println!(
        "predicted {:.1} MiB (indefinite {:.1}), real {:.1} MiB (indefinite {:.1}), before {:.1}",
        mib(prediction.curve.peak_bytes),
        mib(prediction.curve.indefinite_bytes),
        mib(real.peak_bytes),
        mib(real.indefinite_bytes),
        mib(base.peak_bytes)
    );
    println!("scope: {:?}\nhow: {:?}", prediction.scope, prediction.how);
    show(
        "predicted (costly side replayed)",
        &costly,
        prediction.curve.peak_position,
        &predicted,
    );
    show(
        "costly side as compiled, at its peak",
        &costly,
        base.peak_position,
        &|b| costly.buffers[b].size_bytes,
    );
    show(
        "fixed side as compiled, at its peak",
        &fixed,
        real.peak_position,
        &|b| fixed.buffers[b].size_bytes,
    );
    if std::env::var("OOMSCOPE_EVENTS").is_ok() {
        events("costly", &costly, &predicted);
        events("fixed", &fixed, &|b| fixed.buffers[b].size_bytes);
    }
    if std::env::var("OOMSCOPE_INDEFINITE").is_ok() {
        indefinite("predicted", &costly, &predicted);
        indefinite("fixed", &fixed, &|b| fixed.buffers[b].size_bytes);
    }
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
