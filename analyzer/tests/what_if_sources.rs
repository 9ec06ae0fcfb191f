//! What-ifs from every module source (issue 25): a module read from dump
//! text (`*.after_optimizations.txt` + `*-buffer-assignment.txt` + live
//! ranges) or from an XProf profile (the HloProtos of its `/host:metadata`
//! plane) is replayed as one read from its HloProto, on real compiles.

mod common;

use std::path::Path;

use common::*;
use oomscope_analyzer::{analyze, analyze_keeping_programs};
use oomscope_report::program::HeapProgram;
use oomscope_report::whatif::Remedy;
use oomscope_report::{MemoryColor, SourceKind};
use oomscope_whatif::entries::{single_remedies, Settings};

/// (module name, dump text program, HloProto program) for every module of
/// `dir` that has both.
fn twins(dir: &Path) -> Vec<(String, HeapProgram, HeapProgram)> {
    let mut texts: Vec<(String, String)> = Vec::new();
    let mut protos = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        let name = path.display().to_string();
        if name.ends_with(".after_optimizations.hlo.pb") {
            let bytes = std::fs::read(&path).unwrap();
            let hlo = oomscope_xla::decode_hlo_proto(&name, &bytes).unwrap();
            protos.extend(oomscope_xla::heap_programs(&name, &hlo, None).unwrap());
        } else if name.ends_with(".txt") {
            texts.push((name, std::fs::read_to_string(&path).unwrap()));
        }
    }
    let borrowed: Vec<(&str, &str)> = texts.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let (reports, _, programs) = oomscope_dump::analyze_dump_keeping_programs(&borrowed);
    programs
        .into_iter()
        .filter_map(|text| {
            // Replayed as compiled, the text's program gives its module's
            // own curve (the `buffer_liveness` report).
            let report = reports
                .iter()
                .find(|r| r.name == text.module && r.peak_kind == oomscope_report::PeakKind::BufferLiveness)
                .expect("the module's report");
            let curve = oomscope_whatif::baseline(&text).unwrap();
            assert_eq!(curve.peak_bytes, report.peak_bytes, "{}: {}", dir.display(), text.module);
            if curve.peak_bytes > curve.indefinite_bytes {
                // (A heap of indefinite allocations alone peaks everywhere.)
                assert_eq!(text.position_of(curve.peak_position), report.peak_position, "{}: {}", dir.display(), text.module);
            }
            let proto = protos
                .iter()
                .find(|p| p.module == text.module && p.memory_space == MemoryColor::Device)?
                .clone();
            Some((text.module.clone(), text, proto))
        })
        .collect()
}

/// Fixture folders holding a module as both dump text and HloProto.
fn folders_with_both() -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![fixtures()];
    while let Some(d) = stack.pop() {
        let mut has = (false, false);
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = p.to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
            } else if name.ends_with(".after_optimizations.hlo.pb") {
                has.0 = true;
            } else if name.ends_with("-live-range.txt") || name.ends_with("-buffer-assignment.txt") {
                has.1 = true;
            }
        }
        if has.0 && has.1 {
            out.push(d);
        }
    }
    out.sort();
    out
}

#[test]
fn a_dump_text_module_replays_as_its_hloproto_does() {
    let folders = folders_with_both();
    assert!(folders.len() >= 40, "{} folders", folders.len());
    let settings = Settings::default();
    let (mut modules, mut compared, mut equal) = (0usize, 0usize, 0usize);
    let mut problems = Vec::new();
    for dir in &folders {
        for (module, text, proto) in twins(dir) {
            modules += 1;
            let where_ = format!("{}: {module}", dir.display());
            let (a, b) = (
                oomscope_whatif::baseline(&text).unwrap().peak_bytes,
                oomscope_whatif::baseline(&proto).unwrap().peak_bytes,
            );
            if a != b {
                problems.push(format!("{where_}: replayed as compiled, text {a} vs proto {b}"));
                continue;
            }
            let (from_text, absent_text) = single_remedies(&text, &settings, None);
            let (from_proto, absent_proto) = single_remedies(&proto, &settings, None);
            for remedy in Remedy::ALL {
                let t = from_text.iter().find(|w| w.remedy == remedy);
                let p = from_proto.iter().find(|w| w.remedy == remedy);
                match (t, p) {
                    (Some(t), Some(p)) => {
                        compared += 1;
                        let error = (t.predicted_peak_bytes as f64 - p.predicted_peak_bytes as f64)
                            / p.predicted_peak_bytes as f64;
                        if t.predicted_peak_bytes == p.predicted_peak_bytes {
                            equal += 1;
                        } else {
                            println!("{where_}: {} text {} proto {} ({:+.2} %)", remedy.as_str(), t.predicted_peak_bytes, p.predicted_peak_bytes, error * 100.0);
                        }
                        if error.abs() > 0.01 {
                            problems.push(format!("{where_}: {} from text {} vs proto {} ({:+.2} %)", remedy.as_str(), t.predicted_peak_bytes, p.predicted_peak_bytes, error * 100.0));
                        }
                    }
                    (None, None) => {}
                    _ => problems.push(format!(
                        "{where_}: {} applies to one source only (text: {:?}; proto: {:?})",
                        remedy.as_str(),
                        absent_text.iter().find(|(r, _)| *r == remedy).map(|(_, w)| w),
                        absent_proto.iter().find(|(r, _)| *r == remedy).map(|(_, w)| w),
                    )),
                }
            }
        }
    }
    println!("{modules} modules, {compared} predictions compared, {equal} equal to the byte");
    assert!(modules >= 40, "{modules} modules with both sources");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
