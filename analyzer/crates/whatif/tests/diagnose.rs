//! Diagnostics, not checks (run by hand): the lifetimes of one side's large
//! temporaries, and the members of its indefinite allocations. A pair's
//! buffers at the peak: `examples/peak.rs`.
//! `SIDE=pair-x/base cargo test -p oomscope-whatif --test diagnose -- --ignored --nocapture`

mod common;

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
