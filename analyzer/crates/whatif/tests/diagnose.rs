//! A diagnostic, not a check (run by hand): for one pair of `fixtures/`
//! (`PAIR=pair-x COSTLY=base FIXED=fixed`), the buffers live at the peak
//! of each side, grouped by category and shape, to compare a prediction
//! with what the compiler really did.
//! `PAIR=pair-mlp-shard-v6e cargo test -p oomscope-whatif --test diagnose -- --ignored --nocapture`

mod common;

use std::collections::BTreeMap;

fn side(dir: &std::path::Path) {
    let proto = oomscope_testdata::hlo_proto_in(dir).unwrap();
    let name = proto.display().to_string();
    let reports = oomscope_xla::analyze_hlo_proto(&name, &std::fs::read(&proto).unwrap()).unwrap();
    let r = reports
        .iter()
        .find(|r| r.memory_space == oomscope_report::MemoryColor::Device)
        .unwrap();
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    println!(
        "== {}: peak {:.1} MiB at {} of {} (indefinite {:.1} MiB), chips {:?}",
        dir.display(),
        mib(r.peak_bytes),
        r.peak_position,
        r.heap_bytes.len(),
        mib(r.indefinite_bytes),
        r.chips
    );
    let mut groups: BTreeMap<(String, String), (usize, u64, Vec<String>)> = BTreeMap::new();
    for b in &r.peak_buffers {
        let g = groups
            .entry((format!("{:?}", b.category), b.shape.clone()))
            .or_default();
        g.0 += 1;
        g.1 += b.size_bytes;
        if g.2.len() < 4 {
            g.2.push(format!("{}({})", b.name, b.opcode));
        }
    }
    let mut rows: Vec<_> = groups.into_iter().collect();
    rows.sort_by_key(|(_, (_, s, _))| std::cmp::Reverse(*s));
    for ((category, shape), (n, size, names)) in rows {
        println!(
            "  {category:10} {n:3} × {shape:50} {:9.1} MiB  {}",
            mib(size),
            names.join(" ")
        );
    }
}

#[test]
#[ignore]
fn peak_buffers_of_a_pair() {
    let Ok(pair) = std::env::var("PAIR") else {
        return;
    };
    let dir = oomscope_testdata::fixtures().join(pair);
    for variant in [
        std::env::var("COSTLY").unwrap_or("base".into()),
        std::env::var("FIXED").unwrap_or("fixed".into()),
    ] {
        side(&dir.join(variant));
    }
}


/// Lifetimes (event positions) of the large temporaries of one side.
#[test]
#[ignore]
fn lifetimes_of_a_side() {
    let Ok(dir) = std::env::var("SIDE") else {
        return;
    };
    let p = common::device_program(&oomscope_testdata::hlo_proto_in(&oomscope_testdata::fixtures().join(dir)).unwrap()).unwrap();
    let p = &p;
    let min: u64 = std::env::var("MIN_MIB")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(16)
        << 20;
    let curve = oomscope_whatif::baseline(p).unwrap();
    println!(
        "peak {} MiB at event {} of {}",
        curve.peak_bytes >> 20,
        curve.peak_position,
        p.events.len()
    );
    let mut open: std::collections::HashMap<usize, usize> = Default::default();
    for (i, e) in p.events.iter().enumerate() {
        let Some(b) = e.buffer else { continue };
        match e.kind {
            oomscope_report::program::HeapEventKind::Free => {
                if let Some(s) = open.remove(&b) {
                    let buf = &p.buffers[b];
                    if buf.size_bytes >= min {
                        println!(
                            "  [{s:4}, {i:4}] {:6} MiB {:45} {} ({})",
                            buf.size_bytes >> 20,
                            buf.shape,
                            buf.name,
                            buf.opcode
                        );
                    }
                }
            }
            _ => {
                open.insert(b, i);
            }
        }
    }
    for param in &p.parameters {
        println!(
            "  param {} {} first {:?} last {:?} feeds {}",
            param.number, param.shape, param.first_use, param.last_use, param.feeds_contraction
        );
    }
}

/// The buffers of each indefinite allocation of one side.
#[test]
#[ignore]
fn allocation_members() {
    let Ok(dir) = std::env::var("SIDE") else {
        return;
    };
    let p = common::device_program(&oomscope_testdata::hlo_proto_in(&oomscope_testdata::fixtures().join(dir)).unwrap()).unwrap();
    let p = &p;
    for (i, a) in p.allocations.iter().enumerate() {
        if !a.indefinite || a.size_bytes < (16 << 20) {
            continue;
        }
        let members: Vec<String> = p
            .buffers
            .iter()
            .filter(|b| b.allocation == i)
            .map(|b| format!("{} {} {}MiB", b.name, b.shape, b.size_bytes >> 20))
            .collect();
        println!(
            "alloc {} {}MiB param {:?} out {}: {}",
            a.index,
            a.size_bytes >> 20,
            a.parameter_number,
            a.maybe_live_out,
            members.join(" | ")
        );
    }
}
