//! Times the What-if panel's replay (`entries::panel`: every single remedy
//! and one combination) on the HBM program of an HloProto, natively.
//! `cargo run --release -p oomscope-whatif --example time -- FILE.hlo.pb`
//! (a module of ~10^5 buffers: `tools/fixtures/big_module.py`).
use std::time::Instant;

use oomscope_report::whatif::{Remedy, WhatIfChoice};

fn main() {
    let path = std::env::args().nth(1).expect("an .hlo.pb");
    let bytes = std::fs::read(&path).expect("readable");
    let hlo = oomscope_xla::decode_hlo_proto(&path, &bytes).expect("an HloProto");
    let programs = oomscope_xla::heap_programs(&path, &hlo, None).expect("a buffer assignment");
    let p = programs
        .iter()
        .find(|p| p.memory_space == oomscope_report::MemoryColor::Device)
        .expect("HBM");
    println!(
        "{}: {} buffers, {} allocations, {} heap events",
        p.module,
        p.buffers.len(),
        p.allocations.len(),
        p.events.len()
    );
    let t = Instant::now();
    let base = oomscope_whatif::baseline(p).expect("replayable");
    println!("one replay: {:?} (peak {} B)", t.elapsed(), base.peak_bytes);
    let t = Instant::now();
    let prepared = oomscope_whatif::Prepared::new(p).expect("replayable");
    println!("prepared (replay and facts): {:?}", t.elapsed());
    let settings = oomscope_whatif::entries::Settings::default();
    for remedy in Remedy::ALL {
        let t = Instant::now();
        let r = oomscope_whatif::entries::replayed(&prepared, &[remedy], &settings, None);
        println!("  {:?}: {:?} ({})", remedy, t.elapsed(), r.is_ok());
    }
    for remedies in [
        vec![],
        vec![Remedy::Donation],
        vec![Remedy::Donation, Remedy::Bf16],
    ] {
        let choice = WhatIfChoice {
            remedies: remedies.clone(),
            ..WhatIfChoice::default()
        };
        let t = Instant::now();
        let answer = oomscope_whatif::entries::panel(p, &choice, None);
        println!(
            "panel {:?}: {:?} ({} singles, combination peak {:?})",
            remedies,
            t.elapsed(),
            answer.singles.len(),
            answer.combination.map(|c| c.what_if.predicted_peak_bytes)
        );
    }
}
