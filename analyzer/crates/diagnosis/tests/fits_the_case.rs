//! Issue 29, "the first thing said must fit the case", on real inputs
//! through the whole pipeline: every headline that asks for a device has a
//! picker that changes it; an array replicated on every device is named
//! with its line; a snapshot or timeline without an OOM leads with its peak
//! and what makes it, not with fragmentation or advice that presumes a
//! memory problem; a program nothing shows runs on several chips is told
//! what one chip can do; an XLA GPU (JAX) OOM is advised in JAX's words; the
//! compiler's impossible early-abort requirement is said to be one; padding
//! at the peak is told from padding over all buffers.

mod common;

use common::{analyze_dir, analyze_file, corpus, fixtures, node, samples};
use oomscope_diagnosis::ids::*;
use oomscope_diagnosis::{asks_for_device, diagnose, diagnose_with};
use oomscope_report::{DeviceLimit, Report, Severity, TreeKind};
use std::path::PathBuf;

fn headline(r: &Report) -> String {
    r.diagnosis.headline.as_ref().unwrap().text.clone()
}

/// The run-time inputs of the corpus and fixtures: JAX device memory
/// profiles, PyTorch memory timelines and Kineto traces, and the memory
/// snapshots under 64 MiB (the larger ones only slow the test).
fn runtime_inputs() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for dir in [corpus().join("runtime"), corpus().join("snapshots")] {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let small = p.metadata().map(|m| m.len() < 64 << 20).unwrap_or(false);
            if p.is_file() && !name.ends_with(".md") && small {
                paths.push(p);
            }
        }
    }
    for name in ["mlp_1dev.prof", "sharded_8dev.prof"] {
        paths.push(fixtures().join("jax-memory-profiles").join(name));
    }
    paths.sort();
    paths
}

/// A device far smaller than any of these peaks, so the verdict must change.
fn tiny_device() -> DeviceLimit {
    DeviceLimit {
        name: "a 1 KiB test device".into(),
        limit_bytes: 1024,
    }
}

#[test]
fn every_headline_that_asks_for_a_device_gets_a_picker_that_answers() {
    let mut asked = 0;
    let mut lone_profiles = 0;
    for path in runtime_inputs() {
        let r = analyze_file(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = headline(&r);
        if text.contains("pick the device") {
            asked += 1;
            assert!(
                asks_for_device(&r),
                "{name}: the headline asks for a device and the page offers no picker: {text}"
            );
        }
        if asks_for_device(&r) {
            let picked = diagnose_with(&r, Some(&tiny_device()));
            let after = picked.headline.as_ref().unwrap();
            assert_ne!(after.text, text, "{name}: picking a device changes nothing");
            assert!(
                !after.text.contains("pick the device"),
                "{name}: {}",
                after.text
            );
        }
        // A profile alone that shows no problem (an unbalanced device is one).
        if r.device_memory_profiles.len() == 1
            && r.oom_events.is_empty()
            && r.diagnosis.tree == TreeKind::None
        {
            lone_profiles += 1;
            assert!(asks_for_device(&r), "{name}: a lone JAX profile: {text}");
        }
    }
    assert!(
        asked >= 20 && lone_profiles >= 5,
        "{asked} asked, {lone_profiles} lone profiles"
    );
}

#[test]
fn an_array_replicated_on_every_device_is_named_with_its_line() {
    // The 8-chip TPU profile of sholtodouglas/scalingExperiments: one
    // 64 MiB array on each of the 8 devices (489185142.py:15).
    let r = analyze_file(
        &corpus().join("runtime/sholtodouglas__scalingExperiments__memory.prof@664e8b17"),
    );
    let text = headline(&r);
    assert!(
        text.contains(
            "one array of 64.00 MiB from <module> /tmp/ipykernel_35137/489185142.py:15 is on each of the 8 devices (512.00 MiB in all): replicated"
        ),
        "{text}"
    );
    let even = &r.device_memory_profiles[0]
        .balance
        .as_ref()
        .unwrap()
        .even_stacks;
    assert!(even
        .iter()
        .any(|s| s.bytes_per_device == 64 << 20 && s.count_per_device == 1));
    // The generated fixture: a 512×512 f32 array replicated over 8 CPU devices
    // (1 MiB each) is named too, with the generator's line.
    let r = analyze_file(&fixtures().join("jax-memory-profiles/sharded_8dev.prof"));
    let balance = node(&r.diagnosis, DEVICE_BALANCE);
    assert!(
        balance
            .actions
            .iter()
            .any(|a| a.text.contains("The largest: 1.00 MiB per device from")),
        "{:?}",
        balance.actions
    );
}

#[test]
fn a_snapshot_without_an_oom_leads_with_its_peak_and_what_makes_it() {
    let mut with_fragmentation = 0;
    let mut checked = 0;
    for path in runtime_inputs()
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("snapshots"))
    {
        let r = analyze_file(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !r.oom_events.is_empty() || r.diagnosis.tree != TreeKind::None {
            continue;
        }
        let Some(s) = r
            .memory_snapshots
            .iter()
            .max_by_key(|s| s.peak_allocated_bytes)
        else {
            continue;
        };
        let text = headline(&r);
        assert_ne!(
            r.diagnosis.headline.as_ref().unwrap().node,
            TORCH_FRAGMENTATION,
            "{name}"
        );
        assert!(
            text.contains(&oomscope_report::units::format_bytes(
                s.peak_allocated_bytes
            )),
            "{name}: the peak first: {text}"
        );
        if let Some(top) = s
            .top_lines_at_peak
            .iter()
            .find(|l| !l.frame.starts_with('<'))
        {
            if top.bytes * 10 >= s.peak_allocated_bytes {
                assert!(
                    text.contains(&top.frame),
                    "{name}: its largest line: {text}"
                );
            }
        }
        // Fragmentation a snapshot shows is still there, unselected.
        if let Some(f) = r
            .diagnosis
            .nodes
            .iter()
            .find(|n| n.id == TORCH_FRAGMENTATION)
        {
            assert!(!f.selected, "{name}");
            if f.facts["expandable_segments_would_return_bytes"]
                .as_u64()
                .unwrap()
                >= 1 << 30
            {
                with_fragmentation += 1;
            }
        }
        checked += 1;
    }
    // Snapshots that once led with fragmentation are among them.
    assert!(
        checked >= 20 && with_fragmentation >= 1,
        "{checked} snapshots, {with_fragmentation} with ≥ 1 GiB of fragmentation"
    );
}

#[test]
fn a_timeline_without_an_oom_is_not_told_to_shard_its_optimizer_state() {
    // 505 MiB on a GPU, Adam: optimizer state is the largest part, and
    // nothing ran out.
    let path = corpus().join(
        "runtime/tonghuikang__optimizer-memory-profiles__profiling__modal_gpu_adam__profile.raw.json.gz",
    );
    let r = analyze_file(&path);
    let h = r.diagnosis.headline.as_ref().unwrap();
    assert_eq!(h.node, VERDICT_NO_LIMIT, "{}", h.text);
    assert!(
        h.text.contains("optimizer state (199.71 MiB, 40%)"),
        "{}",
        h.text
    );
    assert!(!h.text.to_lowercase().contains("shard"), "{}", h.text);
    assert!(!node(&r.diagnosis, PEAK_COMPOSITION).selected);
    // On a device it does not fit, the advice for its largest part is given.
    let small = DeviceLimit {
        name: "a 256 MiB device".into(),
        limit_bytes: 256 << 20,
    };
    let d = diagnose_with(&r, Some(&small));
    let h = d.headline.unwrap();
    assert_eq!(h.node, VERDICT_OVER_LIMIT);
    assert_eq!(h.severity, Severity::Failure);
    assert!(
        h.text.contains("Optimizer state dominates: shard it"),
        "{}",
        h.text
    );
}

#[test]
fn a_program_nothing_shows_runs_on_several_chips_is_told_what_one_chip_can_do() {
    // oom-single-buffer: compiled for one v5e chip (v5e:1x1); no collective.
    let r = analyze_dir(&fixtures().join("oom-single-buffer"));
    let shard = node(&r.diagnosis, LARGE_SHARDING);
    assert!(
        shard
            .reason
            .contains("sharding cannot split it"),
        "{}",
        shard.reason
    );
    assert!(
        !shard.reason.contains("its label says replicated"),
        "{}",
        shard.reason
    );
    assert!(
        shard.actions.iter().any(|a| a
            .text
            .starts_with("On one chip, sharding cannot split a buffer")),
        "{:?}",
        shard.actions
    );
    // oom-replicated runs on 4 chips (all-gathers): sharding is the advice.
    let r = analyze_dir(&fixtures().join("oom-replicated"));
    let text = headline(&r);
    assert!(text.contains("over 4 chips: check its mesh axes"), "{text}");
}

#[test]
fn a_jax_oom_on_gpu_is_advised_in_jax() {
    // XLA's BFC allocator on a GPU: a JAX (Reactant) job, not PyTorch.
    let r = analyze_file(&corpus().join("logs/38_xla_gpu.txt"));
    let text = headline(&r);
    assert!(text.contains("XLA_PYTHON_CLIENT_MEM_FRACTION"), "{text}");
    assert!(
        text.contains("XLA_PYTHON_CLIENT_PREALLOCATE=false"),
        "{text}"
    );
    for n in &r.diagnosis.nodes {
        for a in &n.actions {
            assert!(
                !a.text.contains("torch")
                    && !a.text.contains("autocast")
                    && !a.text.contains("ZeRO"),
                "{}: {}",
                n.id,
                a.text
            );
        }
    }
    // A PyTorch OOM keeps PyTorch's words.
    let r = analyze_file(&samples().join("torch_request_over_capacity_qwen240.txt"));
    let d = diagnose(&r);
    if d.path.first().map(String::as_str) == Some(TORCH_CAPACITY) {
        assert!(node(&d, TORCH_CAPACITY)
            .actions
            .iter()
            .any(|a| a.text.contains("torch.autocast")));
    }
}

/// Every `N%` a text prints, as numbers.
fn percentages(text: &str) -> Vec<f64> {
    text.match_indices('%')
        .filter_map(|(i, _)| {
            let head = &text[..i];
            let start = head
                .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
                .map_or(0, |j| j + 1);
            head[start..].parse().ok()
        })
        .collect()
}

#[test]
fn an_impossible_requirement_is_said_to_be_one() {
    // libtpu 0.0.8's early abort: "Requires 16.00P, has 14.96G available".
    let r = analyze_dir(&fixtures().join("old-libtpu-oom-absurd"));
    let text = headline(&r);
    assert!(
        text.contains("impossible requirement of 16.00 PiB with 14.96 GiB available"),
        "{text}"
    );
    assert!(!text.contains("used"), "{text}");
    assert!(percentages(&text).is_empty(), "{text}");
    // libtpu 0.0.52: "Used 16.00P of 15.75G hbm".
    let r = analyze_dir(&fixtures().join("oom-absurd"));
    let text = headline(&r);
    assert!(text.contains("an impossible size for any device"), "{text}");
    assert!(percentages(&text).iter().all(|p| *p <= 100.0), "{text}");
    assert!(r
        .diagnosis
        .headline
        .as_ref()
        .unwrap()
        .estimate_bytes
        .is_none());
    // A possible early abort (OpenXLA's example) is a requirement, not a use.
    let r = analyze_file(&samples().join("tpu_early_abort.txt"));
    let text = headline(&r);
    assert!(
        text.contains("requires 3.84 TiB with 90.96 GiB available"),
        "{text}"
    );
}

#[test]
fn padding_at_the_peak_and_over_all_buffers_are_told_apart() {
    let mut headlines = 0;
    for chip in ["v4", "v5e", "v5p", "v6e"] {
        let r = analyze_dir(&fixtures().join(format!("padding-zoo-{chip}")));
        let h = r.diagnosis.headline.as_ref().unwrap();
        if h.node != VERDICT_PADDING {
            continue;
        }
        headlines += 1;
        // The shape it names is ranked among the buffers at the peak.
        assert!(h.text.contains("The largest at the peak: "), "{}", h.text);
        let at_peak = h.text.split("of padding at the peak").next().unwrap();
        let amount = at_peak.rsplit(", ").next().unwrap();
        let m = r
            .modules
            .iter()
            .find(|m| m.padding.as_ref().is_some_and(|p| p.peak_padding_bytes > 0))
            .unwrap();
        let peak_padding = m.padding.as_ref().unwrap().peak_padding_bytes;
        let cited = oomscope_report::units::parse_binary_size(amount).unwrap();
        assert!(
            cited <= peak_padding,
            "{chip}: {amount} > {peak_padding}: {}",
            h.text
        );
    }
    assert!(headlines >= 3);
    // The compile tree's padding node lists shapes over all their buffers,
    // and says so.
    let r = analyze_dir(&corpus().join("xla-runs/old-libtpu-oom"));
    let pad = node(&r.diagnosis, PADDING);
    let listed: Vec<_> = pad.actions.iter().skip(1).collect();
    assert!(!listed.is_empty());
    assert!(
        listed
            .iter()
            .all(|a| a.text.contains("live at the peak or not")),
        "{listed:?}"
    );
}

#[test]
fn counts_are_words_not_floats() {
    // The leaking loop keeps 160 buffers per profile: "160 allocations".
    let dir = fixtures().join("jax-memory-profiles/leak");
    let r = analyze_dir(&dir);
    let text = headline(&r);
    assert!(text.contains("(160 allocations)"), "{text}");
    assert!(!text.contains(".0 allocations"), "{text}");
}
