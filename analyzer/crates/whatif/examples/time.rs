//! Times the What-if panel's replay (`entries::panel`: every single remedy
//! and one combination) on the HBM program of an HloProto, natively.
//! `cargo run --release -p oomscope-whatif --example time -- FILE.hlo.pb`
//! (a module of ~10^5 buffers: `tools/fixtures/big_module.py`). Given the
//! dump folder instead, times the program read from its text files.
use std::time::Instant;

use oomscope_report::whatif::{Remedy, WhatIfChoice};

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("an .hlo.pb or a dump folder");
    let t = Instant::now();
    let programs = if std::path::Path::new(&path).is_dir() {
        let texts: Vec<(String, String)> = std::fs::read_dir(&path)
            .expect("readable")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .map(|p| {
                (
                    p.display().to_string(),
                    std::fs::read_to_string(&p).expect("text"),
                )
            })
            .collect();
        let borrowed: Vec<(&str, &str)> = texts
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        oomscope_dump::analyze_dump_keeping_programs(&borrowed).2
    } else {
        let bytes = std::fs::read(&path).expect("readable");
        let hlo = oomscope_xla::decode_hlo_proto(&path, &bytes).expect("an HloProto");
        println!("decoded: {:?}", t.elapsed());
        oomscope_xla::heap_programs(&path, &hlo, None).expect("a buffer assignment")
    };
    println!("read and program built: {:?}", t.elapsed());
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
