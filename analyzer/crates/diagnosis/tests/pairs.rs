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

/// XProf's heap-simulator peak of a fixture's one module (its oracle), in bytes.
fn xprof_peak(dir: &str) -> u64 {
    let dir = fixtures().join(dir);
    let oracle = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".memory_viewer.json"))
        .unwrap();
    let viewer: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(oracle).unwrap()).unwrap();
    (viewer["peakHeapMib"].as_f64().unwrap() * 1048576.0) as u64
}

/// The f32 training step of pair-dtype-oom can be fixed several ways.
/// Replayed, donation predicts exactly the real donated compile's peak
/// (fixture pair-dtype-oom-donated, same compiler and flags: 15.50 of
/// 15.75 GiB), which fits by 1.6 %: inside the 5 % the predictions are held
/// to, so it is listed as fitting but is not the headline; the headline is
/// the next cheapest remedy whose replay fits with the margin: jax.checkpoint
/// on the layers, whose prediction (12.0 GiB) the real checkpointed compile
/// confirms (fixture pair-dtype-oom-remat: 13.0 GiB, fits).
#[test]
fn dtype_training_pair_is_fixed_by_the_cheaper_donation_as_a_real_compile_shows() {
    let r = analyze_dir(&fixtures().join("pair-dtype-oom/f32"));
    let h = r.diagnosis.headline.as_ref().unwrap();
    eprintln!("pair-dtype-oom: {} [{}]", h.text, h.node);
    assert_eq!(h.node, REMAT, "{}", h.text);
    assert!(h.text.contains("jax.checkpoint"), "{}", h.text);
    let remat = r
        .diagnosis
        .what_if
        .iter()
        .find(|w| w.remedy == oomscope_report::whatif::Remedy::Remat)
        .unwrap();
    assert_eq!(remat.fits, Some(true));
    // The real checkpointed compile fits too, within the 15 % remat
    // predictions are held to.
    let checkpointed = analyze_dir(&fixtures().join("pair-dtype-oom-remat"));
    assert!(
        checkpointed.oom_events.is_empty(),
        "the checkpointed compile ran out of memory"
    );
    let real = xprof_peak("pair-dtype-oom-remat") as f64;
    let error = (remat.predicted_peak_bytes as f64 - real).abs() / real;
    assert!(error <= 0.15, "remat predicted {} B, real {real} B", remat.predicted_peak_bytes);
    // Never a remedy that buys less than the excess.
    let event = &r.oom_events[0];
    let excess = event.excess().unwrap();
    let estimate = h.estimate_bytes.unwrap();
    assert!(estimate >= excess, "{}", h.text);
    let donation = r
        .diagnosis
        .what_if
        .iter()
        .find(|w| w.remedy == oomscope_report::whatif::Remedy::Donation)
        .unwrap();
    assert_eq!(donation.fits, Some(true));
    assert_eq!(
        donation.predicted_peak_bytes,
        xprof_peak("pair-dtype-oom-donated")
    );
    let estimate = u64::try_from(donation.saving_bytes).unwrap();

    // The real compile with donation fits, under the same limit...
    let donated = analyze_dir(&fixtures().join("pair-dtype-oom-donated"));
    assert!(
        donated.oom_events.is_empty(),
        "the donated compile ran out of memory"
    );
    let donated_peak = xprof_peak("pair-dtype-oom-donated");
    assert!(donated_peak < event.limit().unwrap());
    // ... and donation saved what the headline said, within 25%.
    let saved = xprof_peak("pair-dtype-oom/f32") - donated_peak;
    within_25_percent(estimate, saved, "pair-dtype-oom donation");

    let cfg = common::node(&r.diagnosis, CONFIG);
    let bf16 = cfg.facts["bf16_saving_bytes"].as_u64().unwrap();
    within_25_percent(
        bf16,
        pair_difference("pair-dtype-oom"),
        "pair-dtype-oom bf16",
    );
}
