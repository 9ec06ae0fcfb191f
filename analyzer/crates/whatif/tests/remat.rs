//! The remat what-if on every real program of `fixtures/`: it predicts a
//! lower peak or does not apply (never a prediction at or above today's
//! peak, never zero), and where nothing repeats it says why.

use std::path::{Path, PathBuf};

use oomscope_whatif::{Change, WhatIfError};

mod common;

fn hlo_protos(dir: &Path, out: &mut Vec<PathBuf>) {
    common::files_ending(dir, ".after_optimizations.hlo.pb", out);
}

#[test]
fn remat_never_predicts_a_peak_at_or_above_today_s() {
    let mut files = Vec::new();
    hlo_protos(&oomscope_testdata::fixtures(), &mut files);
    files.sort();
    assert!(files.len() > 50, "fixtures: {} HloProtos", files.len());
    let (mut predicted, mut absent) = (0, 0);
    for file in &files {
        let Some(program) = common::device_program(file) else {
            continue;
        };
        let Ok(before) = oomscope_whatif::baseline(&program) else {
            continue;
        };
        match oomscope_whatif::predict(&program, &[Change::Remat]) {
            Ok(p) => {
                assert!(
                    p.curve.peak_bytes < before.peak_bytes && p.curve.peak_bytes > 0,
                    "{}: remat predicts {} B against {} B today",
                    file.display(),
                    p.curve.peak_bytes,
                    before.peak_bytes
                );
                predicted += 1;
            }
            Err(WhatIfError::NotApplicable(why)) => {
                assert!(!why.is_empty(), "{}", file.display());
                absent += 1;
            }
            Err(WhatIfError::CannotReplay(_)) => {}
        }
    }
    // Both answers occur on real programs.
    assert!(
        predicted >= 10 && absent >= 10,
        "{predicted} predicted, {absent} absent"
    );
}

#[test]
fn a_program_without_a_repeated_block_has_no_remat() {
    // Six activations of one matmul (tools/fixtures/programs/oom_aggregate.py):
    // the old model took them for 7 blocks' residuals and predicted 24.66 GiB
    // against 21.61 GiB today. Compiled by libtpu 0.0.23 they are even freed
    // in reverse, as residuals are, but none feeds the next: no chain.
    // A transformer already checkpointed has nothing left to checkpoint.
    for (fixture, reason) in [
        ("oom-aggregate", "repeat"),
        ("mid-libtpu-oom", "do not chain"),
        ("pair-transformer-remat/fixed", "do not chain"),
    ] {
        let dir = oomscope_testdata::fixtures().join(fixture);
        let mut files = Vec::new();
        hlo_protos(&dir, &mut files);
        let file = files.first().expect("the fixture holds an HloProto");
        let program = common::device_program(file).expect("an HBM program");
        match oomscope_whatif::predict(&program, &[Change::Remat]) {
            Err(WhatIfError::NotApplicable(why)) => {
                assert!(why.contains(reason), "{fixture}: {why}")
            }
            other => panic!("remat on {fixture}: {other:?}"),
        }
    }
}

#[test]
fn block_inputs_that_only_feed_a_matmul_are_kept_in_bf16() {
    // fixtures/pair-mlp-remat: tanh(x @ w) per block. Checkpointed, XLA:TPU
    // stores each block input in bf16 (its only readers are matmuls); the
    // prediction keeps the same buffers in bf16, and the rest as compiled.
    let dir = oomscope_testdata::fixtures().join("pair-mlp-remat/base");
    let mut files = Vec::new();
    hlo_protos(&dir, &mut files);
    let program = common::device_program(files.first().expect("an HloProto")).expect("HBM");
    let p = oomscope_whatif::predict(&program, &[Change::Remat]).expect("remat applies");
    let rounded: Vec<_> = p
        .changed
        .iter()
        .filter(|c| c.shape_after.starts_with("bf16[16384,4096]"))
        .collect();
    assert_eq!(rounded.len(), 7, "{:?}", p.changed);
    assert!(rounded
        .iter()
        .all(|c| c.bytes_after * 2 == c.bytes_before && c.shape_before.starts_with("f32")));
    assert!(
        p.how.iter().any(|h| h.contains("7 kept in bf16")),
        "{:?}",
        p.how
    );
}
