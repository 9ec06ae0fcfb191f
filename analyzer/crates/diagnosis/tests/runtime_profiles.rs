//! The tree on run-time profiles (issues 16, 17, 20): real PyTorch memory
//! snapshots and memory timelines from the corpus, and the project's real
//! JAX device memory profiles, run through `oomscope_analyzer::analyze`.
//! Every expected number is read from the report the readers built, so the
//! tests check that the tree picks the right node and carries the user's
//! numbers, not a copy of today's output.

mod common;

use common::{analyze_dir, analyze_file, corpus, fixtures, node};
use oomscope_diagnosis::{diagnose, ids};
use oomscope_report::{units::format_bytes, OomKind, Report, Severity, TreeKind};

fn snapshot(name: &str) -> Report {
    let path = corpus().join("snapshots").join(name);
    if !path.exists() {
        panic!("corpus file missing: {}", path.display());
    }
    analyze_file(&path)
}

#[test]
fn leaking_jax_series_names_the_line_and_bytes_per_profile() {
    let report = analyze_dir(&fixtures().join("jax-memory-profiles/leak"));
    let series = &report.device_memory_series[0];
    let g = &series.growing_stacks[0];
    let n = g.bytes_per_profile.len() as u64;
    let per_profile = g.growth_bytes / (n - 1);
    let d = diagnose(&report);
    let h = d.headline.as_ref().unwrap();
    assert_eq!(d.tree, TreeKind::MemoryGrowth);
    assert_eq!(h.node, ids::ACCUMULATION, "{}", h.text);
    // The line the profile names is the generator's `state = step(state)`.
    let source = std::fs::read_to_string(
        common::fixtures()
            .join("../tools/fixtures")
            .join(g.frame.file.rsplit('/').next().unwrap()),
    )
    .unwrap();
    let line = source.lines().nth(g.frame.line as usize - 1).unwrap();
    assert!(line.contains("state = step(state)"), "{line}");
    let at = format!("{}:{}", g.frame.file, g.frame.line);
    assert!(h.text.contains(&at), "{}", h.text);
    assert!(h.text.contains(&format_bytes(per_profile)), "{}", h.text);
    assert_eq!(h.estimate_bytes, g.bytes_per_profile.last().copied());
    let accum = node(&d, ids::ACCUMULATION);
    assert_eq!(accum.facts["bytes_per_profile"], per_profile);
    assert!(accum.reason.contains(&at), "{}", accum.reason);
    // JAX profiles get JAX's API, never PyTorch's.
    assert!(h.text.contains("jax.device_get"), "{}", h.text);
    assert!(!h.text.contains(".item()"), "{}", h.text);
}

#[test]
fn snapshot_oom_joins_its_event_and_names_the_biggest_holder() {
    let report = snapshot("Constructor-Sun__code_location__memory_snapshot.pickle");
    let snap = report
        .memory_snapshots
        .iter()
        .find(|s| s.oom.is_some())
        .unwrap();
    let oom = snap.oom.as_ref().unwrap();
    // The snapshot's OOM is one event, from the same input.
    let events: Vec<_> = report
        .oom_events
        .iter()
        .filter(|e| e.kind == OomKind::TorchCuda)
        .collect();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].input, snap.input);
    let d = diagnose(&report);
    let h = d.headline.as_ref().unwrap();
    assert_eq!(d.tree, TreeKind::RuntimeOom);
    assert_eq!(h.severity, Severity::Failure);
    assert!(
        h.text.contains(&format_bytes(oom.requested_bytes)),
        "{}",
        h.text
    );
    assert!(
        h.text.contains(&format_bytes(oom.device_free_bytes)),
        "{}",
        h.text
    );
    // The free memory is far below the request and a quarter of what is
    // reserved is not unallocated: the device is full.
    let unallocated = oom.reserved_bytes.saturating_sub(oom.allocated_bytes);
    if unallocated < oom.requested_bytes && oom.device_free_bytes < oom.requested_bytes {
        assert_eq!(h.node, ids::TORCH_CAPACITY, "{}", h.text);
        let top = &snap.top_lines_at_peak[0];
        assert!(h.text.contains(&top.frame), "{}", h.text);
        let cap = node(&d, ids::TORCH_CAPACITY);
        assert!(cap.selected);
        assert!(
            cap.reason.contains(&format_bytes(oom.allocated_bytes)),
            "{}",
            cap.reason
        );
    } else {
        panic!("the reader's OOM numbers changed: {oom:?}");
    }
    // One headline, on the torch node, not a second runtime verdict.
    assert_eq!(d.path[0], h.node);
}

#[test]
fn snapshot_accumulation_selects_device_accumulation_with_the_line() {
    for name in [
        "a0kuma__ckptTry__cp_t1__early_stop_True4.pickle",
        "a0kuma__ckptTry__cp_t1__abc_no_ckpt.pickle",
    ] {
        let report = snapshot(name);
        let best = report
            .memory_snapshots
            .iter()
            .flat_map(|s| &s.accumulations)
            .filter(|a| a.steps >= 2 && a.bytes_per_step > 0)
            .max_by_key(|a| a.bytes_per_step.saturating_mul(a.steps))
            .unwrap();
        let d = diagnose(&report);
        let h = d.headline.as_ref().unwrap();
        assert_eq!(h.node, ids::ACCUMULATION, "{name}: {}", h.text);
        assert_eq!(h.estimate_bytes, Some(best.bytes), "{name}");
        assert!(
            h.text.contains(&format_bytes(best.bytes_per_step)),
            "{}",
            h.text
        );
        assert!(h.text.contains(&best.frame), "{}", h.text);
        let accum = node(&d, ids::ACCUMULATION);
        assert_eq!(accum.facts["bytes_per_step"], best.bytes_per_step);
        assert_eq!(accum.facts["steps"], best.steps);
        // A PyTorch snapshot gets PyTorch's API.
        assert!(h.text.contains(".item()"), "{}", h.text);
        assert!(!h.text.contains("jax."), "{}", h.text);
    }
}

#[test]
fn snapshot_spike_names_the_allocation() {
    let report = snapshot("HugePandaCoder__octree-nca-groupeq__my_snapshot.pickle@0cc72993");
    let s = &report.memory_snapshots[0];
    let sp = s.spike.as_ref().unwrap();
    let d = diagnose(&report);
    let h = d.headline.as_ref().unwrap();
    assert_eq!(h.node, ids::SPIKE, "{}", h.text);
    assert_eq!(h.estimate_bytes, Some(sp.size_bytes));
    assert!(h.text.contains(&format_bytes(sp.size_bytes)), "{}", h.text);
    assert!(
        h.text.contains(&format_bytes(s.peak_allocated_bytes)),
        "{}",
        h.text
    );
    assert!(h.text.contains(&sp.frame), "{}", h.text);
}

#[test]
fn gradients_without_a_user_line_are_not_called_lingering() {
    // CS336 full steps: the backward pass's `.grad` tensors outlive the
    // step, as they should; the reader reports them, the tree must not
    // blame an in-place Function it cannot see.
    let report = snapshot(
        "NiuHuangxiaozi__assignment2-systems__cs336_systems__profile_memory__forward_and_backward_memory_snapshot_200.pickle",
    );
    assert!(report.memory_snapshots[0].lingering_backward.is_some());
    let d = diagnose(&report);
    assert!(!node_selected(&report, ids::LINGERING), "{:?}", d.headline);
}

fn node_selected(report: &Report, id: &str) -> bool {
    diagnose(report)
        .nodes
        .iter()
        .any(|n| n.id == id && n.selected)
}

#[test]
fn memory_timeline_peak_points_to_its_dominant_category() {
    for (file, action_word) in [
        ("tonghuikang__optimizer-memory-profiles__profiling__modal_gpu_adam__profile.raw.json.gz", "lighter optimizer"),
        ("tonghuikang__optimizer-memory-profiles__profiling__modal_gpu_sgd__profile.raw.json.gz", "shard"),
    ] {
        let report = analyze_file(&corpus().join("runtime").join(file));
        let t = &report.memory_timelines[0];
        let (name, bytes) = t.peak_by_category.iter().max_by_key(|(_, b)| **b).unwrap();
        // Nothing ran out (issue 29): the headline describes the peak and
        // what makes it, and gives no advice that presumes a memory problem.
        let d = diagnose(&report);
        let h = d.headline.as_ref().unwrap();
        assert_eq!(h.node, ids::VERDICT_NO_LIMIT, "{file}: {}", h.text);
        assert!(h.text.contains(&format_bytes(t.peak_bytes)), "{}", h.text);
        assert!(h.text.contains(&name.replace('_', " ")), "{}", h.text);
        assert!(!h.text.contains(action_word), "{}", h.text);
        let n = node(&d, ids::PEAK_COMPOSITION);
        assert!(!n.selected);
        assert_eq!(n.facts["dominant_category"], name.as_str());
        // On a device the peak does not fit, the largest category's remedy
        // comes first.
        let device = oomscope_report::DeviceLimit {
            name: "half the peak".into(),
            limit_bytes: t.peak_bytes / 2,
        };
        let d = oomscope_diagnosis::diagnose_with(&report, Some(&device));
        let h = d.headline.as_ref().unwrap();
        assert_eq!(h.node, ids::VERDICT_OVER_LIMIT, "{file}: {}", h.text);
        assert_eq!(h.estimate_bytes, Some(t.peak_bytes - t.peak_bytes / 2));
        assert!(h.text.contains(action_word), "{}", h.text);
        assert!(h.text.contains(&format!("They hold {} at the peak", format_bytes(*bytes))), "{}", h.text);
    }
}

#[test]
fn unbalanced_devices_are_named_and_balanced_ones_are_not() {
    // The fixture puts one array on one of 8 CPU devices.
    let report = analyze_file(&fixtures().join("jax-memory-profiles/sharded_8dev.prof"));
    let b = report.device_memory_profiles[0].balance.as_ref().unwrap();
    let d = diagnose(&report);
    let h = d.headline.as_ref().unwrap();
    assert_eq!(h.node, ids::DEVICE_BALANCE, "{}", h.text);
    assert!(h.text.contains(&b.heaviest_device), "{}", h.text);
    assert!(h.text.contains(&format_bytes(b.max_bytes)), "{}", h.text);
    assert!(h.text.contains(&format_bytes(b.mean_bytes)), "{}", h.text);
    assert_eq!(h.estimate_bytes, Some(b.max_bytes - b.mean_bytes));
    assert!(
        h.text.contains(&format_bytes(b.max_bytes - b.mean_bytes)),
        "{}",
        h.text
    );
    let n = node(&d, ids::DEVICE_BALANCE);
    assert!(
        n.reason.contains(&format_bytes(b.even_bytes)),
        "{}",
        n.reason
    );
    // A real 8-TPU profile whose devices differ by a few percent.
    let report = analyze_file(
        &corpus()
            .join("runtime")
            .join("sholtodouglas__scalingExperiments__memory.prof"),
    );
    let b = report.device_memory_profiles[0].balance.as_ref().unwrap();
    assert!((b.max_bytes as f64) < b.mean_bytes as f64 * 1.5);
    assert!(!node_selected(&report, ids::DEVICE_BALANCE));
}

#[test]
fn a_cuda_oom_message_of_the_same_run_joins_the_snapshot() {
    // The snapshot with the newest message PyTorch prints for its OOM (the
    // message's figures written from the snapshot's own numbers).
    let path = corpus()
        .join("snapshots")
        .join("Constructor-Sun__code_location__memory_snapshot.pickle");
    let snap_report = analyze_file(&path);
    let snap = snap_report
        .memory_snapshots
        .iter()
        .find(|s| s.oom.is_some())
        .unwrap();
    let oom = snap.oom.as_ref().unwrap();
    let capacity: u64 = 80 << 30;
    let message = format!(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {}. GPU {} has a total capacity of {} of which {} is free. Of the allocated memory {} is allocated by PyTorch, and {} is reserved by PyTorch but unallocated.",
        format_bytes(oom.requested_bytes),
        snap.device,
        format_bytes(capacity),
        format_bytes(oom.device_free_bytes),
        format_bytes(oom.allocated_bytes),
        format_bytes(oom.reserved_bytes.saturating_sub(oom.allocated_bytes)),
    );
    let report = oomscope_analyzer::analyze(
        vec![
            oomscope_analyzer::InputFile {
                name: "train.log".into(),
                data: message.into_bytes(),
            },
            oomscope_analyzer::InputFile {
                name: path.file_name().unwrap().to_string_lossy().into_owned(),
                data: std::fs::read(&path).unwrap(),
            },
        ],
        &mut |_| {},
    );
    assert_eq!(report.oom_events.len(), 2, "{:?}", report.oom_events);
    let d = diagnose(&report);
    let h = d.headline.as_ref().unwrap();
    assert!(h.node.starts_with("torch."), "{}", h.text);
    assert_eq!(d.path[0], h.node);
    // The message gives the device; the snapshot gives the holders.
    assert!(h.text.contains(&format_bytes(capacity)), "{}", h.text);
    // The snapshot's allocated bytes fill the device but for the free 91 MiB.
    assert_eq!(h.node, ids::TORCH_CAPACITY, "{}", h.text);
    assert!(
        h.text.contains(&snap.top_lines_at_peak[0].frame),
        "{}",
        h.text
    );
}

#[test]
fn snapshot_fragmentation_without_an_oom_states_what_expandable_segments_return() {
    // About 20 GiB reserved, much of it inactive; the accumulation that
    // grows every step is the headline, fragmentation is stated beside it.
    let report = snapshot("HugePandaCoder__octree-nca-groupeq__my_snapshot.pickle@e67173f3");
    let s = &report.memory_snapshots[0];
    let w = s.expandable_segments_would_return_bytes;
    assert!(w > 0);
    let d = diagnose(&report);
    assert_eq!(d.headline.as_ref().unwrap().node, ids::ACCUMULATION);
    let n = node(&d, ids::TORCH_FRAGMENTATION);
    assert!(!n.selected);
    assert!(n.reason.contains(&format_bytes(w)), "{}", n.reason);
    assert!(
        n.reason.contains(&format_bytes(s.reserved_bytes)),
        "{}",
        n.reason
    );
    assert!(n.actions[0].text.contains("expandable_segments:True"));
    assert_eq!(n.actions[0].estimate_bytes, Some(w as i64));
}
