//! The runtime branch on real timelines: the TensorFlow BFC allocator
//! profile of fixtures/tf-cpu-allocator (XProf `/host:CPU` MemoryAllocation
//! events) through the whole pipeline, profiles derived from it (flattened,
//! one spike added), and a torchtitan series near capacity with allocator
//! retries (numbers of pytorch/torchtitan#2389).

mod common;

use common::{analyze_dir, fixtures, node};
use oomscope_diagnosis::diagnose;
use oomscope_diagnosis::ids::*;
use oomscope_report::{Report, Severity, StepPoint, StepSeries, TreeKind};

fn tf_profile() -> Report {
    let r = analyze_dir(&fixtures().join("tf-cpu-allocator"));
    assert!(
        r.allocator_profiles.iter().any(|p| p.timeline.len() >= 8),
        "no allocator timeline in {:?}",
        r.allocator_profiles
            .iter()
            .map(|p| (&p.allocator, p.timeline.len()))
            .collect::<Vec<_>>()
    );
    r
}

/// Keeps only what the runtime branch reads: the allocator profiles.
fn profiles_only(r: &Report) -> Report {
    let mut out = Report::new();
    out.allocator_profiles = r.allocator_profiles.clone();
    out
}

#[test]
fn growing_allocator_profile_selects_steady_growth() {
    // The fixture's program keeps 8 tensors per step: it grows.
    let r = profiles_only(&tf_profile());
    let d = diagnose(&r);
    assert_eq!(d.tree, TreeKind::MemoryGrowth, "{:?}", d.headline);
    assert_eq!(d.path, [STEADY_GROWTH]);
    let n = node(&d, STEADY_GROWTH);
    assert!(n.facts["slope_bytes_per_second"].as_f64().unwrap() > 0.0);
    assert!(n.reason.contains("/s (fitted)"), "{}", n.reason);
    assert_eq!(d.headline.as_ref().unwrap().severity, Severity::Warning);
}

#[test]
fn flattened_and_spiked_profiles() {
    let base = profiles_only(&tf_profile());
    // Flattened: every point at the first quarter's levels (the real
    // saw-tooth kept, the trend removed).
    let mut flat = base.clone();
    for p in &mut flat.allocator_profiles {
        let n = p.timeline.len();
        if n < 8 {
            continue;
        }
        let period = 8.min(n / 4);
        for i in period..n {
            let src = p.timeline[i % period];
            p.timeline[i].heap_bytes = src.heap_bytes;
            p.timeline[i].stack_bytes = src.stack_bytes;
        }
    }
    let d = diagnose(&flat);
    assert_eq!(d.tree, TreeKind::None, "{:?}", d.path);
    assert!(!d.path.iter().any(|p| p == STEADY_GROWTH || p == SPIKE));

    // One spike of 4× the peak at the middle of the flattened timeline.
    let mut spiked = flat.clone();
    let p = spiked
        .allocator_profiles
        .iter_mut()
        .max_by_key(|p| p.timeline.len())
        .unwrap();
    let mid = p.timeline.len() / 2;
    let peak = p.timeline.iter().map(|t| t.heap_bytes).max().unwrap();
    p.timeline[mid].heap_bytes += 4 * peak;
    let at = (p.timeline[mid].time_ps - p.timeline[0].time_ps) as f64 * 1e-12;
    let d = diagnose(&spiked);
    assert_eq!(d.path, [SPIKE]);
    let n = node(&d, SPIKE);
    // Peak − median, the median being at most the old peak.
    assert!(n.facts["spike_bytes"].as_u64().unwrap() >= 3 * peak);
    assert!((n.facts["spike_at_seconds"].as_f64().unwrap() - at).abs() < 1e-9);
}

/// torchtitan on a 178 GiB GPU: 170.22 GiB (95.44%) at step 7 and 171.75
/// GiB (96.29%) at step 8, with 9 allocator retries logged at each.
#[test]
fn torchtitan_near_capacity_with_retries_is_one_step_from_oom() {
    let gib = |x: f64| (x * (1u64 << 30) as f64) as u64;
    let capacity = gib(170.22 / 0.9544);
    let mut s = StepSeries {
        source: "torchtitan".into(),
        device: "rank 0".into(),
        metric: "memory".into(),
        unit: "GiB".into(),
        points: [(5, 168.9), (6, 169.8), (7, 170.22), (8, 171.75)]
            .iter()
            .map(|&(step, g)| StepPoint {
                step,
                bytes: gib(g),
            })
            .collect(),
        limit_bytes: Some(capacity),
        allocation_retries: vec![
            StepPoint { step: 7, bytes: 9 },
            StepPoint { step: 8, bytes: 9 },
        ],
        ..Default::default()
    };
    oomscope_steps::analyze_series(&mut s);
    let mut r = Report::new();
    r.step_series.push(s);
    let d = diagnose(&r);
    assert_eq!(
        d.path.first().map(String::as_str),
        Some(NEAR_LIMIT),
        "{:?}",
        d.path
    );
    let h = d.headline.as_ref().unwrap();
    assert_eq!(h.severity, Severity::Warning);
    assert!(h.text.contains("One step from out of memory"), "{}", h.text);
    assert!(h.text.contains("18 times"), "{}", h.text);
    assert!(h.text.contains("expandable_segments:True"), "{}", h.text);
    assert_eq!(h.estimate_bytes, Some(capacity - gib(171.75)));
    let n = node(&d, NEAR_LIMIT);
    assert_eq!(n.facts["allocation_retries"], 18);
    assert!(
        n.reason.contains("thrashing and fragmentation"),
        "{}",
        n.reason
    );

    // Without retries and at 96%, nothing says it is one step away.
    r.step_series[0].allocation_retries.clear();
    let d = diagnose(&r);
    assert!(!d.path.iter().any(|p| p == NEAR_LIMIT), "{:?}", d.path);
    // At 99.5% it is, retries or not.
    r.step_series[0].points.push(StepPoint {
        step: 9,
        bytes: capacity / 1000 * 995,
    });
    let d = diagnose(&r);
    assert_eq!(
        d.path.first().map(String::as_str),
        Some(NEAR_LIMIT),
        "{:?}",
        d.path
    );
}
