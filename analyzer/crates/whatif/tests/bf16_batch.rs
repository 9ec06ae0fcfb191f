//! The bf16 and batch what-ifs against what the compiler did, on real
//! pairs (`fixtures/pair-*`): the operand buffers XLA's heap simulator
//! shares once shapes are equal, what the scope and how say, the softmax
//! kept f32, and the batch followed through the program rather than by
//! its size.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use oomscope_report::program::{HeapEventKind, HeapProgram};
use oomscope_report::MemoryColor;
use oomscope_whatif::Change;

fn hlo_proto(dir: &Path) -> Option<std::path::PathBuf> {
    oomscope_testdata::hlo_proto_in(dir)
}

fn programs(path: &Path) -> Vec<HeapProgram> {
    let name = path.display().to_string();
    let hlo = oomscope_xla::decode_hlo_proto(&name, &std::fs::read(path).unwrap()).unwrap();
    oomscope_xla::heap_programs(&name, &hlo, None).unwrap()
}

fn hbm(pair: &str, side: &str) -> HeapProgram {
    let dir = oomscope_testdata::fixtures().join(pair).join(side);
    common::device_program(&hlo_proto(&dir).unwrap()).unwrap()
}

/// (buffer, the buffer whose memory it shares) for every SHARE_WITH.
fn shares(p: &HeapProgram) -> BTreeSet<(String, String)> {
    p.events
        .iter()
        .filter_map(|e| match (e.kind, e.buffer) {
            (HeapEventKind::ShareWith(c), Some(b)) => {
                Some((p.buffers[b].name.clone(), p.buffers[c].name.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn bf16_shares_the_operands_the_compiler_shares_in_bf16() {
    for pair in ["pair-dtype", "pair-dtype-oom"] {
        let f32 = hbm(pair, "f32");
        let bf16 = hbm(pair, "bf16");
        // As compiled in f32 nothing shares: a bf16 output cannot take an
        // f32 operand's memory.
        assert!(shares(&f32).is_empty(), "{pair}");
        let prediction = oomscope_whatif::predict(&f32, &[Change::Bf16]).unwrap();
        let predicted: BTreeSet<(String, String)> = prediction.shared.iter().cloned().collect();
        assert_eq!(
            predicted,
            shares(&bf16),
            "{pair}: the shares of the real bf16 compile"
        );
        assert_eq!(predicted.len(), 4, "{pair}");
        assert!(
            prediction.how[0].contains("4 of them now take the memory"),
            "{}",
            prediction.how[0]
        );
    }
}

#[test]
fn an_equal_shaped_dying_operand_is_what_xla_shares() {
    // Over every pair's programs in HBM, as compiled: a buffer with a dying
    // operand of its own shape shares it (the heap simulator's rule).
    let root = oomscope_testdata::fixtures();
    let (mut candidates, mut shared) = (0usize, 0usize);
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("pair-"))
        })
        .collect();
    dirs.sort();
    for pair in dirs {
        for side in std::fs::read_dir(&pair)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
        {
            let Some(path) = hlo_proto(&side) else {
                continue;
            };
            for p in programs(&path)
                .into_iter()
                .filter(|p| p.memory_space == MemoryColor::Device)
            {
                let real = shares(&p);
                for (v, b) in p.buffers.iter().enumerate() {
                    let indefinite = |x: usize| p.allocations[p.buffers[x].allocation].indefinite;
                    let equal = b.dying_operands.iter().any(|&o| {
                        p.buffers[o].shape == b.shape && !indefinite(o) && !indefinite(v)
                    });
                    if equal {
                        candidates += 1;
                        if real.iter().any(|(x, _)| *x == b.name) {
                            shared += 1;
                        }
                    }
                }
            }
        }
    }
    println!("{shared} of {candidates} equal-shaped dying operands shared");
    assert!(candidates >= 50, "{candidates}");
    assert!(shared * 100 >= candidates * 95, "{shared} of {candidates}");
}

#[test]
fn bf16_says_what_it_casts_what_it_keeps_and_the_converts() {
    let p = hbm("pair-transformer-bf16", "base");
    let prediction = oomscope_whatif::predict(&p, &[Change::Bf16]).unwrap();
    let (scope, how) = (&prediction.scope[0], &prediction.how[0]);
    assert!(
        scope.contains("cast to bf16 (parameters, activations, gradients)"),
        "{scope}"
    );
    assert!(
        scope.contains("kept f32: 68 optimizer-state allocations"),
        "{scope}"
    );
    assert!(scope.contains("softmax buffer"), "{scope}");
    assert!(how.contains("converts that disappear"), "{how}");
    assert!(how.contains("converts that appear"), "{how}");
    // Every buffer the prediction leaves f32 is optimizer state or a softmax.
    let cast: BTreeSet<&str> = prediction.changed.iter().map(|c| c.name.as_str()).collect();
    let traced: BTreeSet<usize> = p.events.iter().filter_map(|e| e.buffer).collect();
    for &b in &traced {
        let x = &p.buffers[b];
        if x.shape.starts_with("f32[") && !cast.contains(x.name.as_str()) && x.size_bytes > 1 << 20
        {
            assert!(
                x.softmax,
                "{} {} left f32 but not a softmax value",
                x.name, x.shape
            );
        }
    }
    // The compiled bf16 side keeps f32 buffers of the logits' size: the
    // log-softmax in f32, as the prediction does.
    let fixed = hbm("pair-transformer-bf16", "fixed");
    assert!(fixed
        .buffers
        .iter()
        .any(|b| b.shape.starts_with("f32[16,512,32000]")));
    assert!(p
        .buffers
        .iter()
        .any(|b| b.softmax && b.shape.starts_with("f32[16,512,32000]")));
    // A dot's own result is written bf16 even when a softmax reads it.
    assert!(p
        .buffers
        .iter()
        .any(|b| !b.softmax && b.shape.starts_with("f32[16,512,32000]")));

    // An MLP without optimizer state or softmax keeps nothing f32.
    let mlp = hbm("pair-dtype", "f32");
    let prediction = oomscope_whatif::predict(&mlp, &[Change::Bf16]).unwrap();
    assert!(
        !prediction.scope[0].contains("kept f32"),
        "{}",
        prediction.scope[0]
    );
    assert!(
        prediction.how[0].contains("writes 5 buffers in bf16"),
        "{}",
        prediction.how[0]
    );
}

#[test]
fn the_batch_is_followed_through_the_program_not_found_by_its_size() {
    // Batch 4096 per device equals the width 4096: the weights, their
    // gradients and the optimizer state keep their size; the data and the
    // activations (held in output allocations by libtpu 0.0.23) halve.
    let p = hbm("pair-mlp-batch-mid", "base");
    let data = p.parameters.iter().find(|e| e.number == 12).unwrap();
    let batch = data.dim_classes[0];
    assert_ne!(
        batch, data.dim_classes[1],
        "the batch and the width are two dimensions"
    );
    for e in p.parameters.iter().filter(|e| e.number != 12) {
        assert!(
            !e.dim_classes.contains(&batch),
            "parameter {} carries the batch",
            e.number
        );
    }
    let prediction = oomscope_whatif::predict(&p, &[Change::Batch(2)]).unwrap();
    assert!(
        prediction.scope[0].contains("parameter 12"),
        "{}",
        prediction.scope[0]
    );
    let fixed = hbm("pair-mlp-batch-mid", "fixed");
    let real = oomscope_whatif::baseline(&fixed).unwrap();
    assert_eq!(prediction.curve.indefinite_bytes, real.indefinite_bytes);

    // A decoding step returns its input's new value: the data is still the
    // input of the step (batch 64, in the KV caches at dimension 1), not a
    // cache's layer axis nor a read-only weight's width.
    let p = hbm("pair-decode-batch", "base");
    let prediction = oomscope_whatif::predict(&p, &[Change::Batch(2)]).unwrap();
    assert!(
        prediction.scope[0].starts_with("batch 64 → 32"),
        "{}",
        prediction.scope[0]
    );
    let cache = prediction
        .changed
        .iter()
        .find(|c| c.name.starts_with("cache_k"))
        .expect("the KV cache carries the batch");
    assert_eq!(
        cache.shape_after,
        "bf16[4,32,4096,1024]{3,2,1,0:T(8,128)(2,1)}"
    );
}

/// A data-parallel step whose token ids are one row per device (the FSDP
/// transformer: a global batch of 4 over 4 chips) has a batch of 1: halving
/// it does not apply, and no weight's leading dimension (the embedding's
/// 50,257 rows) is taken for the batch instead.
#[test]
fn a_batch_of_one_per_device_is_not_halved_and_no_weight_stands_in() {
    let dir = oomscope_testdata::fixtures().join("fsdp-transformer-scan");
    let p = common::device_program(&hlo_proto(&dir).unwrap()).unwrap();
    match oomscope_whatif::predict(&p, &[Change::Batch(2)]) {
        Err(oomscope_whatif::WhatIfError::NotApplicable(why)) => {
            assert!(why.contains("1 per device"), "{why}");
        }
        Ok(prediction) => panic!("predicted {:?}", prediction.scope),
        Err(e) => panic!("{e:?}"),
    }
}
