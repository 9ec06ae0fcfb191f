//! Predictions held to the compiler: every same-program pair of `fixtures/`
//! (the program, then the same program with one remedy, both compiled for
//! real by libtpu) is replayed on its costly side with the remedy, and the
//! predicted peak is compared with XProf's peak of the fixed side (our
//! Memory Viewer analysis of its HloProto, equal to XProf 2.24.2).
//!
//! Targets: within 5 % for donation, bf16, batch, sharding and offload,
//! 15 % for remat. A pair that misses its target is listed in `KNOWN_MISSES`
//! with its measured error and why; the test fails when one of them starts
//! meeting its target (update the list) or another pair misses.

use std::path::Path;

use oomscope_whatif::{Change, DonationScope, ShardScope};

/// (pair folder, costly variant, fixed variant, remedy).
const PAIRS: &[(&str, &str, &str, Change)] = &[
    (
        "pair-donate",
        "plain",
        "donated",
        Change::Donation(DonationScope::All),
    ),
    (
        "pair-donate-v6e",
        "plain",
        "donated",
        Change::Donation(DonationScope::All),
    ),
    (
        "pair-dtype-oom",
        "f32",
        "../pair-dtype-oom-donated",
        Change::Donation(DonationScope::All),
    ),
    (
        "pair-mlp-donate",
        "base",
        "fixed",
        Change::Donation(DonationScope::All),
    ),
    (
        "pair-mlp-donate-opt",
        "base",
        "fixed",
        Change::Donation(DonationScope::OptimizerState),
    ),
    (
        "pair-transformer-donate-v6e",
        "base",
        "fixed",
        Change::Donation(DonationScope::All),
    ),
    (
        "pair-transformer-scan-donate-opt",
        "base",
        "fixed",
        Change::Donation(DonationScope::OptimizerState),
    ),
    (
        "pair-decode-donate",
        "base",
        "fixed",
        Change::Donation(DonationScope::All),
    ),
    (
        "pair-mlp-donate-mid",
        "base",
        "fixed",
        Change::Donation(DonationScope::All),
    ),
    ("pair-dtype", "f32", "bf16", Change::Bf16),
    ("pair-dtype-oom", "f32", "bf16", Change::Bf16),
    ("pair-dtype-infer-oom", "f32", "bf16", Change::Bf16),
    ("pair-mlp-bf16", "base", "fixed", Change::Bf16),
    ("pair-transformer-bf16", "base", "fixed", Change::Bf16),
    ("pair-convnet-bf16-v4", "base", "fixed", Change::Bf16),
    ("pair-decode-bf16-v6e", "base", "fixed", Change::Bf16),
    ("pair-mlp-bf16-mid", "base", "fixed", Change::Bf16),
    // New pairs (issue 25, whatif-dtype): generated after the operand-sharing
    // rule was made on pair-dtype; pair-transformer-scan-bf16 was then
    // examined for the softmax rule, pair-mlp-batch-mid for the batch's
    // dataflow. The pairs below them were generated after every rule, and
    // measured once.
    ("pair-mlp-bf16-v6e", "base", "fixed", Change::Bf16),
    ("pair-transformer-scan-bf16", "base", "fixed", Change::Bf16),
    ("pair-convnet-bf16-v5p", "base", "fixed", Change::Bf16),
    ("pair-transformer-bf16-v5p", "base", "fixed", Change::Bf16),
    (
        "pair-transformer-scan-bf16-mid",
        "base",
        "fixed",
        Change::Bf16,
    ),
    ("pair-batch-oom", "full", "half", Change::Batch(2)),
    ("pair-mlp-batch-v5p", "base", "fixed", Change::Batch(2)),
    (
        "pair-transformer-scan-batch",
        "base",
        "fixed",
        Change::Batch(2),
    ),
    ("pair-convnet-batch", "base", "fixed", Change::Batch(2)),
    ("pair-decode-batch", "base", "fixed", Change::Batch(2)),
    ("pair-mlp-batch-mid", "base", "fixed", Change::Batch(2)),
    ("pair-mlp-batch-v6e", "base", "fixed", Change::Batch(2)),
    ("pair-convnet-batch-v4", "base", "fixed", Change::Batch(2)),
    (
        "pair-transformer-batch-v6e",
        "base",
        "fixed",
        Change::Batch(2),
    ),
    (
        "pair-sharding-oom",
        "replicated",
        "sharded",
        Change::Sharding(4, ShardScope::LargestBuffer),
    ),
    (
        "pair-mlp-shard",
        "base",
        "fixed",
        Change::Sharding(4, ShardScope::Parameters),
    ),
    (
        "pair-transformer-shard",
        "base",
        "fixed",
        Change::Sharding(4, ShardScope::Parameters),
    ),
    ("pair-mlp-offload", "base", "fixed", Change::Offload),
    // Held out while the sharding and offload models were revised (other
    // shapes, TPU generations and libtpu versions).
    (
        "pair-mlp-shard-v6e",
        "base",
        "fixed",
        Change::Sharding(4, ShardScope::Parameters),
    ),
    (
        "pair-transformer-scan-shard-v5p",
        "base",
        "fixed",
        Change::Sharding(4, ShardScope::Parameters),
    ),
    (
        "pair-mlp-shard-mid",
        "base",
        "fixed",
        Change::Sharding(4, ShardScope::Parameters),
    ),
    ("pair-mlp-offload-v6e", "base", "fixed", Change::Offload),
    ("pair-transformer-offload", "base", "fixed", Change::Offload),
    ("pair-remat", "plain", "checkpoint", Change::Remat),
    ("pair-remat-oom", "plain", "checkpoint", Change::Remat),
    ("pair-remat-oom-v6e", "plain", "checkpoint", Change::Remat),
    ("pair-mlp-remat", "base", "fixed", Change::Remat),
    ("pair-transformer-remat", "base", "fixed", Change::Remat),
    (
        "pair-transformer-scan-remat",
        "base",
        "fixed",
        Change::Remat,
    ),
    ("pair-convnet-remat", "base", "fixed", Change::Remat),
    // Made after the remat model was written, to hold it to unseen programs.
    ("pair-mlp-scan-remat", "base", "fixed", Change::Remat),
    ("pair-transformer-remat-v6e", "base", "fixed", Change::Remat),
    ("pair-convnet-remat-v5p", "base", "fixed", Change::Remat),
    ("pair-mlp-remat-mid", "base", "fixed", Change::Remat),
    ("pair-mlp-remat-highest", "base", "fixed", Change::Remat),
    (
        "pair-dtype-oom",
        "f32",
        "../pair-dtype-oom-remat",
        Change::Remat,
    ),
    (
        "pair-train-remat-b1024",
        "plain",
        "checkpoint",
        Change::Remat,
    ),
    (
        "pair-train-remat-b1024-aliased",
        "plain",
        "checkpoint",
        Change::Remat,
    ),
    // Held out from every model (session 8): two families no model was
    // written on (a recurrent cell scanned over time, a dense mixture of
    // experts) and an optimizer with one state per parameter (SGD momentum).
    ("pair-rnn-batch", "base", "fixed", Change::Batch(2)),
    ("pair-rnn-bf16", "base", "fixed", Change::Bf16),
    ("pair-rnn-remat", "base", "fixed", Change::Remat),
    (
        "pair-rnn-donate-opt-sgd",
        "base",
        "fixed",
        Change::Donation(DonationScope::OptimizerState),
    ),
    ("pair-rnn-offload-sgd", "base", "fixed", Change::Offload),
    ("pair-moe-bf16-v5p", "base", "fixed", Change::Bf16),
    ("pair-moe-batch", "base", "fixed", Change::Batch(2)),
    (
        "pair-moe-donate",
        "base",
        "fixed",
        Change::Donation(DonationScope::All),
    ),
    (
        "pair-moe-shard",
        "base",
        "fixed",
        Change::Sharding(4, ShardScope::Parameters),
    ),
    ("pair-moe-remat-v6e", "base", "fixed", Change::Remat),
    // Held out from every model (session 9): a recommender (embedding tables
    // looked up by bags of ids, their gradients scattered) and a convolutional
    // encoder-decoder whose skips keep the encoder's activations to the end.
    ("pair-embed-batch", "base", "fixed", Change::Batch(2)),
    ("pair-embed-bf16-v6e", "base", "fixed", Change::Bf16),
    (
        "pair-embed-donate",
        "base",
        "fixed",
        Change::Donation(DonationScope::All),
    ),
    ("pair-embed-remat-v5p", "base", "fixed", Change::Remat),
    (
        "pair-embed-shard",
        "base",
        "fixed",
        Change::Sharding(4, ShardScope::Parameters),
    ),
    ("pair-embed-offload", "base", "fixed", Change::Offload),
    ("pair-unet-batch-v6e", "base", "fixed", Change::Batch(2)),
    ("pair-unet-bf16", "base", "fixed", Change::Bf16),
    ("pair-unet-remat", "base", "fixed", Change::Remat),
    (
        "pair-unet-donate-opt-v5p",
        "base",
        "fixed",
        Change::Donation(DonationScope::OptimizerState),
    ),
    ("pair-unet-batch-mid", "base", "fixed", Change::Batch(2)),
];

/// Pairs whose prediction misses its target today: (pair, remedy word, why).
const KNOWN_MISSES: &[(&str, &str, &str)] = &[
    ("pair-donate-v6e", "donation", "7 % low (11 % before the output allocations kept the other values they hold): the OOM side was squeezed by XLA's own rematerialization (buffers named *.remat*); with the room donation frees, the compiler rematerializes less and keeps more temporaries"),
    ("pair-transformer-shard", "sharding", "17 % low: sharding every weight's first dimension makes XLA's sharding propagation split the attention heads too, so the sharded program reshards its activations with all-to-alls (8 of f32[8,4,2,512,512], 512 MiB at the peak) instead of gathering weights; predicting that needs the partitioner's propagation, not the replicated program"),
    ("pair-mlp-offload", "offload", "13 % low: here (v5e, 4 layers of 8192) XLA starts every host-to-HBM copy at the top of the step and keeps each new value until the end, so 7 of 8 states sit in HBM at the backward's peak; on the held-out pairs the copies start at the optimizer's work and the new values leave at once, as modelled"),
    ("pair-mlp-shard-v6e", "sharding", "held out, 32 % low before the revision, 9 % high after (5.7 % once a sharded gradient's shard took memory of its own): here (v6e, 6 layers of 4096) XLA frees each gathered weight at the end of the forward pass instead of keeping it for the backward as on v5e, so the model's gathered copies over each weight's first to last dot overcount at the peak"),
    ("pair-train-remat-b1024", "remat", "19 % high: the checkpointed program's scheduler computes the loss head's f32 logits gradient (16 GB) after the backward loop, once the saved carries are freed; the replay keeps the costly program's order, where the head runs with the 6 GB of saved carries live (both sides also carry XLA's own rematerialization, *.remat* buffers)"),
    ("pair-train-remat-b1024-aliased", "remat", "21 % high: as pair-train-remat-b1024 (the same program with every parameter and optimizer state aliased)"),
    ("pair-convnet-bf16-v4", "bf16", "in f32 the last forward convolution's fusion also writes the ReLU mask (pred, 64 MiB) the backward pass reads; in bf16 XLA:TPU writes no mask and recomputes the comparison from the bf16 activation inside the backward fusion, a fusion choice the f32 program does not show: 12 % high"),
    ("pair-convnet-bf16-v5p", "bf16", "the ReLU mask of pair-convnet-bf16-v4 (64 MiB), on v5p: written in f32, recomputed in bf16: 11 % high"),
    ("pair-rnn-bf16", "bf16", "held out, 6 % high: the f32 program makes the scans' zero-initialised bf16 buffers by one fusion (convert of a broadcast zero, 128 MiB) copied once per scan; in bf16 the convert folds away and each scan gets its own broadcast, so the source buffer disappears; the replay keeps it"),
    ("pair-moe-donate", "donation", "held out, 10 % low: with the optimizer state and parameters donated, XLA's scheduler converts the layout of twelve donated [8,1024,2048] inputs ({2,1,0} to {1,2,0}) at the top of the step and keeps the copies to the update (768 MiB at the peak); without donation it converts them after the backward pass. The replay keeps the costly program's order"),
    ("pair-embed-batch", "batch", "held out, 47 % low before the batch's size was judged per size (the tables' rows, 262,144, equal the batch times its four features, so the tables were halved), then 8 % low: with half the batch XLA's scheduler keeps the four tables' scatter gradients (256 MiB each) to the update instead of updating each table after its scatter; the replay keeps the costly program's order"),
    ("pair-embed-donate", "donation", "held out, 6 % high: donated, each table's update runs in place right after its scatter gradient, which then dies; undonated the four gradients wait for the updates at the end. The replay keeps the costly program's order"),
    ("pair-embed-shard", "sharding", "held out, 10 % high, then 13 % low once a sharded gradient's shard took memory of its own: each table's gathered copy is modelled as a dot's weight is (in bf16, live from its first reader to its last: here the one lookup), while XLA gathers three tables whole in f32 at the top of the step and keeps each to its lookup (768 MiB at the sharded program's peak)"),
    ("pair-embed-offload", "offload", "held out, 5.2 % high: with the state in host memory the scheduler runs each table's update right after its scatter gradient and brings the states into HBM at several points (from the top of the step on), where the costly program's four gradients wait for the updates at the end; the replay keeps the costly program's order"),
    ("pair-unet-remat", "remat", "held out, 40 % high: an encoder-decoder's blocks all differ in shape (three resolutions, skips concatenated), so no repeated block is found and remat is not offered; jax.checkpoint on each convolution saves 28 %"),
    ("pair-unet-batch-mid", "batch", "held out, 19 % high (libtpu 0.0.23): with half the batch the older compiler fuses a 128 MiB slice of the decoder's concatenation into its consumer; the costly program materialises it, and the replay keeps it"),
    ("pair-convnet-batch", "batch", "memory-space assignment moves the ReLU mask, halved to 64 MiB, into VMEM (S(1); v5e has 128 MiB): the replay keeps it in HBM, MSA's placement is not modelled: 6 % high"),
];

fn target(change: Change) -> f64 {
    match change {
        Change::Remat => 0.15,
        _ => 0.05,
    }
}

fn word(change: Change) -> &'static str {
    match change {
        Change::Donation(DonationScope::All) => "donation",
        Change::Donation(DonationScope::OptimizerState) => "donation (optimizer state)",
        Change::Bf16 => "bf16",
        Change::Batch(_) => "batch",
        Change::Remat => "remat",
        Change::Sharding(..) => "sharding",
        Change::Offload => "offload",
        Change::Padding => "padding",
    }
}

fn hlo_proto(dir: &Path) -> Option<std::path::PathBuf> {
    oomscope_testdata::hlo_proto_in(dir)
}

fn hbm_peak(path: &Path) -> u64 {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).unwrap();
    let reports = oomscope_xla::analyze_hlo_proto(&name, &bytes).unwrap();
    reports
        .iter()
        .find(|r| r.memory_space == oomscope_report::MemoryColor::Device)
        .map(|r| r.peak_bytes)
        .unwrap()
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

/// One line per pair: (pair, remedy, before, predicted, real, error).
fn measure() -> Vec<(String, Change, u64, u64, u64, f64)> {
    let root = oomscope_testdata::fixtures();
    let mut out = Vec::new();
    for &(pair, costly, fixed, change) in PAIRS {
        let dir = root.join(pair);
        let (Some(before), Some(after)) =
            (hlo_proto(&dir.join(costly)), hlo_proto(&dir.join(fixed)))
        else {
            println!("{pair}: missing HloProto in {costly} or {fixed}");
            continue;
        };
        let bytes = std::fs::read(&before).unwrap();
        let name = before.display().to_string();
        let hlo = oomscope_xla::decode_hlo_proto(&name, &bytes).unwrap();
        let programs = oomscope_xla::heap_programs(&name, &hlo, None).unwrap();
        let program = programs
            .iter()
            .find(|p| p.memory_space == oomscope_report::MemoryColor::Device)
            .unwrap();
        let base = oomscope_whatif::baseline(program).unwrap().peak_bytes;
        // A remedy the engine finds no saving in leaves the program as it
        // is: its peak stays today's (right when the compiler saves nothing
        // either, as checkpointing the MLP of pair-mlp-remat-mid).
        let predicted = match oomscope_whatif::predict(program, &[change]) {
            Ok(prediction) => prediction.curve.peak_bytes,
            Err(oomscope_whatif::WhatIfError::NotApplicable(why)) => {
                println!(
                    "{pair}: {} does not apply ({why}): today's peak stands",
                    word(change)
                );
                base
            }
            Err(e) => panic!("{pair}: {e:?}"),
        };
        let real = hbm_peak(&after);
        let error = (predicted as f64 - real as f64) / real as f64;
        out.push((pair.to_string(), change, base, predicted, real, error));
    }
    out
}

#[test]
fn predictions_meet_their_targets_on_real_pairs() {
    let rows = measure();
    println!("| pair | remedy | before MiB | predicted MiB | real MiB | error |");
    println!("|---|---|---|---|---|---|");
    for (pair, change, base, predicted, real, error) in &rows {
        println!(
            "| {pair} | {} | {:.0} | {:.0} | {:.0} | {:+.1} % |",
            word(*change),
            mib(*base),
            mib(*predicted),
            mib(*real),
            error * 100.0
        );
    }
    let mut by_remedy: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    for (_, change, _, _, _, error) in &rows {
        by_remedy
            .entry(word(*change))
            .or_default()
            .push(error.abs());
    }
    for (remedy, errors) in &mut by_remedy {
        errors.sort_by(f64::total_cmp);
        println!(
            "{remedy}: {} pairs, median |error| {:.1} %, max {:.1} %",
            errors.len(),
            errors[errors.len() / 2] * 100.0,
            errors.last().unwrap() * 100.0
        );
    }
    let mut problems = Vec::new();
    for (pair, change, _, _, _, error) in &rows {
        let misses = error.abs() > target(*change);
        let known = KNOWN_MISSES
            .iter()
            .any(|(p, w, _)| p == pair && *w == word(*change));
        if misses && !known {
            problems.push(format!(
                "{pair}: {} off by {:+.1} % (target {:.0} %)",
                word(*change),
                error * 100.0,
                target(*change) * 100.0
            ));
        }
        if !misses && known {
            problems.push(format!(
                "{pair}: now within its target ({:+.1} %): remove it from KNOWN_MISSES",
                error * 100.0
            ));
        }
    }
    assert_eq!(rows.len(), PAIRS.len(), "every pair has both HloProtos");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
