//! Issue 29, the last of "the first thing said must fit the case", on real
//! inputs through the whole pipeline:
//! - a module compiled for one chip (its HloProto's device assignment, or
//!   its dump's `HloModule` header without `num_partitions=`) gets one-chip
//!   advice, even with no mesh or sharding hint; one compiled for several
//!   gets sharding advice;
//! - advice about memory that grows is worded for the framework the input
//!   comes from (PyTorch, JAX, or named for each when nothing says).

mod common;

use common::{analyze_file, fixtures, node};
use oomscope_analyzer::{analyze, InputFile};
use oomscope_diagnosis::ids::*;
use oomscope_report::{MemoryColor, Report};
use std::path::Path;

/// The report of the files of `dir` whose names `keep` accepts, dropped together.
fn analyze_some(dir: &Path, keep: impl Fn(&str) -> bool) -> Report {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| keep(n))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "{}", dir.display());
    let inputs = names
        .iter()
        .map(|n| InputFile {
            name: n.clone(),
            data: std::fs::read(dir.join(n)).unwrap(),
        })
        .collect();
    analyze(inputs, &mut |_| {})
}

fn hlo_proto_and_log(n: &str) -> bool {
    n.ends_with(".after_optimizations.hlo.pb") || n == "compile.log"
}

fn dump_text_and_log(n: &str) -> bool {
    (n.ends_with(".txt") && !n.contains("oom_intermediate")) || n == "compile.log"
}

/// A fixture's report from its HloProto and from its dump text, each with the compile log.
fn both_ways(fixture: &str) -> [(&'static str, Report); 2] {
    let dir = fixtures().join(fixture);
    [
        ("HloProto", analyze_some(&dir, hlo_proto_and_log)),
        ("dump text", analyze_some(&dir, dump_text_and_log)),
    ]
}

fn device_chips(r: &Report) -> Vec<Option<u64>> {
    r.modules
        .iter()
        .filter(|m| m.memory_space == MemoryColor::Device)
        .map(|m| m.chips)
        .collect()
}

fn all_advice(r: &Report) -> String {
    let d = &r.diagnosis;
    let mut text = d.headline.as_ref().map(|h| h.text.clone()).unwrap_or_default();
    for n in d.nodes.iter().filter(|n| d.path.contains(&n.id)) {
        text.push('\n');
        text.push_str(&n.reason);
        for a in &n.actions {
            text.push('\n');
            text.push_str(&a.text);
        }
    }
    text
}

#[test]
fn a_module_compiled_for_one_chip_gets_one_chip_advice_from_its_hloproto_or_its_dump() {
    // oom-single-buffer: one v5e chip (v5e:1x1), a 16 GiB buffer; nothing
    // in it mentions a mesh or a sharding.
    for (how, r) in both_ways("oom-single-buffer") {
        // A dump gives two analyses of the module (liveness, live ranges).
        let chips = device_chips(&r);
        assert!(!chips.is_empty() && chips.iter().all(|c| *c == Some(1)), "{how}: {chips:?}");
        let shard = node(&r.diagnosis, LARGE_SHARDING);
        assert!(
            shard.reason.contains("compiled for one chip"),
            "{how}: {}",
            shard.reason
        );
        let advice = all_advice(&r);
        for wrong in ["mesh axes", "sharding annotation", "if it does, shard"] {
            assert!(!advice.contains(wrong), "{how}: one chip told {wrong:?}: {advice}");
        }
        assert!(
            advice.contains("compute it in chunks so that only one chunk is live"),
            "{how}: {advice}"
        );
        assert!(
            !shard.actions.iter().any(|a| a.text.contains("sharded over")),
            "{how}: {:?}",
            shard.actions
        );
    }
}

#[test]
fn a_module_compiled_for_several_chips_says_so_and_gets_sharding_advice() {
    // oom-replicated: v5e:2x2, `num_partitions=4` in its dump header and a
    // device assignment of 1 replica × 4 partitions in its HloProto.
    for (how, r) in both_ways("oom-replicated") {
        let chips = device_chips(&r);
        assert!(!chips.is_empty() && chips.iter().all(|c| *c == Some(4)), "{how}: {chips:?}");
        let advice = all_advice(&r);
        assert!(advice.contains("mesh axes"), "{how}: {advice}");
        assert!(!advice.contains("compiled for one chip"), "{how}: {advice}");
    }
    // The FSDP train step over 4 chips (dump header num_partitions=4).
    let r = analyze_some(&fixtures().join("fsdp-transformer-scan"), |n| {
        n.ends_with(".after_optimizations.txt") || n.ends_with("-buffer-assignment.txt")
    });
    let chips = device_chips(&r);
    assert!(!chips.is_empty() && chips.iter().all(|c| *c == Some(4)), "{chips:?}");
}

#[test]
fn without_the_module_header_the_chip_count_stays_unknown() {
    // The buffer assignment and memory-usage report alone do not say how
    // many chips: the advice covers both cases.
    let r = analyze_some(&fixtures().join("oom-single-buffer"), |n| {
        n.ends_with("-buffer-assignment.txt")
            || n.ends_with("-live-range.txt")
            || n.ends_with("-memory-usage-report.txt")
            || n == "compile.log"
    });
    assert!(device_chips(&r).iter().all(Option::is_none), "{:?}", device_chips(&r));
    let shard = node(&r.diagnosis, LARGE_SHARDING);
    assert!(
        shard.reason.contains("Nothing in these inputs shows the program runs on several chips"),
        "{}",
        shard.reason
    );
}

/// The texts of a node's actions.
fn actions(r: &Report, id: &str) -> Vec<String> {
    node(&r.diagnosis, id)
        .actions
        .iter()
        .map(|a| a.text.clone())
        .collect()
}

fn framework_of(r: &Report, id: &str) -> String {
    node(&r.diagnosis, id).facts["framework"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn steady_growth_in_a_pytorch_log_is_advised_in_pytorch() {
    // torchtune's posted log (pytorch/torchtune#2406): peak memory grows.
    let r = analyze_file(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../steps/tests/samples/torchtune_pr2406.log"
    )));
    assert_eq!(r.diagnosis.path.first().map(String::as_str), Some(STEADY_GROWTH));
    assert_eq!(framework_of(&r, STEADY_GROWTH), "PyTorch");
    let text = actions(&r, STEADY_GROWTH).join("\n");
    assert!(text.contains("zero_grad(set_to_none=True)"), "{text}");
    assert!(text.contains(".detach()"), "{text}");
    for other in ["jax", "torch_xla", "mark_step"] {
        assert!(!text.contains(other), "{other}: {text}");
    }
}

#[test]
fn steady_growth_in_a_profile_of_another_framework_names_each_way() {
    // TensorFlow's BFC allocator over a run (an XProf profile): none of the
    // three frameworks, so the advice names each one's call.
    let r = analyze_file(&fixtures().join("tf-cpu-allocator/profile.xplane.pb"));
    assert_eq!(r.diagnosis.path.first().map(String::as_str), Some(STEADY_GROWTH));
    assert_eq!(framework_of(&r, STEADY_GROWTH), "an unknown framework");
    let text = actions(&r, STEADY_GROWTH).join("\n");
    for each in ["torch_xla.sync()", "jax.block_until_ready", "zero_grad(set_to_none=True)"] {
        assert!(text.contains(each), "{each}: {text}");
    }
}

#[test]
fn values_kept_on_device_by_a_jax_loop_are_advised_in_jax() {
    // Three JAX device memory profiles of a loop that keeps every step's
    // array (tools/fixtures/jax_memory_profiles.py).
    let dir = fixtures().join("jax-memory-profiles/leak");
    let r = analyze_some(&dir, |n| n.ends_with(".prof"));
    assert_eq!(r.diagnosis.path.first().map(String::as_str), Some(ACCUMULATION));
    let text = actions(&r, ACCUMULATION).join("\n");
    assert!(text.contains("jax.device_get"), "{text}");
    for other in [".item()", "torch"] {
        assert!(!text.contains(other), "{other}: {text}");
    }
}
