//! The what-if engine replays the program exactly as the Memory Viewer does:
//! with no change, its curve, peak and peak position equal the module
//! analysis (itself equal to XProf 2.24.2, `oomscope-xla`'s oracle test) for
//! every memory space of every HloProto under `fixtures/`.

mod common;

fn hlo_protos(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    common::files_ending(dir, ".hlo.pb", out);
}

#[test]
fn the_unchanged_replay_is_the_memory_viewer_s() {
    let mut files = Vec::new();
    hlo_protos(&oomscope_testdata::fixtures(), &mut files);
    files.sort();
    assert!(files.len() > 50, "fixtures: {} HloProtos", files.len());
    let mut spaces = 0;
    for file in &files {
        let name = file.display().to_string();
        let bytes = std::fs::read(file).unwrap();
        let hlo = oomscope_xla::decode_hlo_proto(&name, &bytes).unwrap();
        let Ok(reports) = oomscope_xla::analyze_hlo(&name, &hlo, None) else {
            continue;
        };
        let programs = oomscope_xla::heap_programs(&name, &hlo, None).unwrap();
        for report in reports.iter().filter(|r| !r.heap_bytes.is_empty()) {
            let program = programs
                .iter()
                .find(|p| p.memory_space == report.memory_space)
                .unwrap_or_else(|| {
                    panic!("{name}: no program for space {:?}", report.memory_space)
                });
            let curve = oomscope_whatif::baseline(program).unwrap();
            assert_eq!(
                curve.peak_bytes, report.peak_bytes,
                "{name} space {:?}",
                report.memory_space
            );
            assert_eq!(curve.peak_position, report.peak_position, "{name}");
            assert_eq!(curve.heap_bytes, report.heap_bytes, "{name}");
            spaces += 1;
        }
    }
    assert!(spaces > 100, "{spaces} memory spaces replayed");
}

#[test]
fn an_inconsistent_trace_cannot_be_replayed() {
    let file = oomscope_testdata::fixtures().join("fits-mlp");
    let mut found = Vec::new();
    hlo_protos(&file, &mut found);
    let bytes = std::fs::read(&found[0]).unwrap();
    let hlo = oomscope_xla::decode_hlo_proto("x", &bytes).unwrap();
    let mut program = oomscope_xla::heap_programs("x", &hlo, None)
        .unwrap()
        .remove(0);
    // A FREE of a buffer never allocated: freed more times than allocated.
    let freed = program
        .events
        .iter()
        .position(|e| e.kind == oomscope_report::program::HeapEventKind::Free)
        .unwrap();
    program.events.insert(0, program.events[freed]);
    assert!(matches!(
        oomscope_whatif::predict(&program, &[oomscope_whatif::Change::Bf16]),
        Err(oomscope_whatif::WhatIfError::CannotReplay(_))
    ));
}

/// A buffer the compiler put in its operand's memory (SHARE_WITH: an
/// all-reduce summing a gradient in place) counts that memory while it lives;
/// once a remedy made it smaller and gave it memory of its own (`Plan::own`:
/// the reduce-scatter's shard), it counts its own size instead.
#[test]
fn a_share_made_smaller_takes_its_own_size_when_owned() {
    use oomscope_report::program::HeapEventKind;
    let mut found = Vec::new();
    hlo_protos(
        &oomscope_testdata::fixtures().join("pair-embed-shard/base"),
        &mut found,
    );
    let bytes = std::fs::read(&found[0]).unwrap();
    let hlo = oomscope_xla::decode_hlo_proto("x", &bytes).unwrap();
    let program = oomscope_xla::heap_programs("x", &hlo, None)
        .unwrap()
        .remove(0);
    let (at, b, c) = program
        .events
        .iter()
        .enumerate()
        .find_map(|(i, e)| match (e.kind, e.buffer) {
            (HeapEventKind::ShareWith(c), Some(b)) if program.buffers[c].size_bytes > 1 << 20 => {
                Some((i, b, c))
            }
            _ => None,
        })
        .expect("an all-reduce sharing its operand's memory");
    let whole = program.buffers[c].size_bytes;
    let mut plan = oomscope_whatif::Plan::identity(&program);
    plan.buffer_bytes[b] = whole / 4;
    let step = |plan: &oomscope_whatif::Plan| {
        let curve = oomscope_whatif::replay(&program, plan).unwrap();
        curve.heap_bytes[at + 1] - curve.heap_bytes[at]
    };
    assert_eq!(step(&plan), whole, "shared: the operand's memory");
    plan.own.push(at);
    assert_eq!(step(&plan), whole / 4, "owned: its own size");
}
