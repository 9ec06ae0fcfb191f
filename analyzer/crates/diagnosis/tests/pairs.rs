//! The fixture generator's same-program pairs (tools/fixtures, `pair.json`):
//! one side runs out of HBM, the other fits after one change. On the whole
//! report of the OOM side, the headline's remedy must be that change, and
//! its estimate within 25% of the real difference of XProf's peaks.

mod common;

use common::{analyze_dir, fixtures, within_25_percent};
use oomscope_diagnosis::ids::*;
use oomscope_report::{Severity, TreeKind};

/// XProf's peak of the OOM side minus the other's, in bytes.
fn pair_difference(pair: &str) -> u64 {
    let text = std::fs::read_to_string(fixtures().join(pair).join("pair.json")).unwrap();
    let meta: serde_json::Value = serde_json::from_str(&text).unwrap();
    (meta["peak_difference_mib"].as_f64().unwrap() * 1048576.0) as u64
}

/// The OOM side of `pair`, its headline node, a word its text must contain
/// (which configuration change), and the real difference.
fn check(pair: &str, oom_side: &str, node: &str, says: &str) {
    let r = analyze_dir(&fixtures().join(pair).join(oom_side));
    assert_eq!(r.diagnosis.tree, TreeKind::CompileHbmOom, "{pair}");
    let h = r.diagnosis.headline.as_ref().expect("a headline");
    eprintln!("{pair}: {} [{}]", h.text, h.node);
    assert_eq!(h.node, node, "{pair}: {}", h.text);
    assert!(h.text.contains(says), "{pair}: {}", h.text);
    assert_eq!(h.severity, Severity::Failure);
    assert!(h.confidence.is_some(), "{pair}");
    within_25_percent(h.estimate_bytes.unwrap(), pair_difference(pair), pair);
}

#[test]
fn donation_pairs_on_v5e_and_v6e() {
    check("pair-donate", "plain", CONFIG, "donate_argnums");
    // Twice the weights on v6e (32 GiB).
    check("pair-donate-v6e", "plain", CONFIG, "donate_argnums");
}

#[test]
fn remat_pairs_on_v5e_and_v6e() {
    check("pair-remat-oom", "plain", REMAT, "jax.checkpoint");
    // 12 layers at batch 57344 on v6e.
    check("pair-remat-oom-v6e", "plain", REMAT, "jax.checkpoint");
}

#[test]
fn dtype_pair_where_only_the_dtype_acts() {
    // Forward only, 32 GiB of f32 weights on v6e: nothing to recompute or
    // donate, and the batch's activations are small.
    check("pair-dtype-infer-oom", "f32", CONFIG, "bfloat16");
}

#[test]
fn batch_pair() {
    // bf16 inference at batch 131072 vs 65536 on v5e.
    check("pair-batch-oom", "full", CONFIG, "halve the batch");
}

#[test]
fn sharding_pair() {
    // A 12 GiB table replicated on each of 4 chips vs row-sharded: section 2,
    // sharded over the 4 ways its own parameter is already split.
    check(
        "pair-sharding-oom",
        "replicated",
        LARGE_SHARDING,
        "over 4 chips",
    );
}

/// The f32 training step of pair-dtype-oom can be fixed several ways: the
/// headline takes the cheapest whose estimate covers the 1.25 GiB excess,
/// which is not bf16 here; bf16's own estimate still matches the pair.
#[test]
fn dtype_training_pair_lists_bf16_with_the_right_estimate() {
    let r = analyze_dir(&fixtures().join("pair-dtype-oom/f32"));
    let h = r.diagnosis.headline.as_ref().unwrap();
    eprintln!("pair-dtype-oom: {} [{}]", h.text, h.node);
    let cfg = common::node(&r.diagnosis, CONFIG);
    let bf16 = cfg.facts["bf16_saving_bytes"].as_u64().unwrap();
    within_25_percent(
        bf16,
        pair_difference("pair-dtype-oom"),
        "pair-dtype-oom bf16",
    );
    // Whatever is chosen covers the excess by its own estimate.
    let excess = r.oom_events[0].excess().unwrap();
    assert!(h.estimate_bytes.unwrap() >= excess, "{}", h.text);
}
