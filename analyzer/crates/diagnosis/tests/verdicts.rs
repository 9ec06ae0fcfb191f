//! A verdict for every input (issue 20), on the whole pipeline: a fit, a
//! lone module with and without a picked device, a padding-dominated
//! program, a step log, and every fixture and corpus input has a headline,
//! red only for a failure.

mod common;

use common::{analyze_dir, analyze_file, corpus, fixtures};
use oomscope_diagnosis::ids::*;
use oomscope_diagnosis::{diagnose, diagnose_with};
use oomscope_report::units::format_bytes;
use oomscope_report::{DeviceLimit, Report, Severity, TreeKind};

fn hbm_peak(r: &Report) -> u64 {
    r.modules
        .iter()
        .filter(|m| m.memory_space == oomscope_report::MemoryColor::Device && m.peak_kind != oomscope_report::PeakKind::LiveRange)
        .map(|m| m.peak_bytes)
        .max()
        .unwrap()
}

#[test]
fn a_module_without_a_limit_asks_for_the_device_and_fits_once_picked() {
    let r = analyze_dir(&fixtures().join("pair-batch-oom/half"));
    let d = diagnose(&r);
    assert_eq!(d.tree, TreeKind::None);
    let h = d.headline.unwrap();
    assert_eq!(h.node, VERDICT_NO_LIMIT);
    assert_eq!(h.severity, Severity::Info);
    assert!(h.text.contains("pick the device"), "{}", h.text);

    let peak = hbm_peak(&r);
    let v5e = DeviceLimit {
        name: "TPU v5e".into(),
        limit_bytes: 16_106_127_360, // 15.00 GiB
    };
    let d = diagnose_with(&r, Some(&v5e));
    let h = d.headline.unwrap();
    assert_eq!(h.node, VERDICT_FITS, "{}", h.text);
    assert_eq!(h.estimate_bytes, Some(v5e.limit_bytes - peak));
    assert!(h.text.contains("on TPU v5e"), "{}", h.text);
    assert!(
        h.text.contains(&format_bytes(v5e.limit_bytes - peak)),
        "{}",
        h.text
    );
    assert!(h.text.contains("heap-simulator peak"), "{}", h.text);

    // On a device too small for it: the compile tree, with the remedy.
    let small = DeviceLimit {
        name: "8 GiB".into(),
        limit_bytes: 8 << 30,
    };
    let d = diagnose_with(&r, Some(&small));
    assert_eq!(d.tree, TreeKind::CompileHbmOom);
    let h = d.headline.unwrap();
    assert_eq!(h.severity, Severity::Failure);
    assert!(
        h.text.starts_with("HBM will not fit on the picked device"),
        "{}",
        h.text
    );
    assert!(h.estimate_bytes.unwrap() >= peak - (8 << 30), "{}", h.text);
}

#[test]
fn padding_dominated_module_says_so() {
    let mut found = 0;
    for dir in [
        "padding-zoo-v5e",
        "padding-zoo-v4",
        "padding-zoo-v5p",
        "padding-zoo-v6e",
        "padding-zoo-old",
    ] {
        let r = analyze_dir(&fixtures().join(dir));
        let Some(m) = r
            .modules
            .iter()
            .filter(|m| m.memory_space == oomscope_report::MemoryColor::Device && m.peak_kind != oomscope_report::PeakKind::LiveRange)
            .max_by_key(|m| m.peak_bytes)
        else {
            continue;
        };
        let Some(p) = m.padding.as_ref().map(|p| p.peak_padding_bytes) else {
            continue;
        };
        let h = r.diagnosis.headline.as_ref().unwrap();
        if p * 4 >= m.peak_bytes {
            assert_eq!(h.node, VERDICT_PADDING, "{dir}: {}", h.text);
            assert_eq!(h.severity, Severity::Warning);
            assert_eq!(h.estimate_bytes, Some(p));
            found += 1;
        } else {
            assert_ne!(h.node, VERDICT_PADDING, "{dir}: {}", h.text);
        }
    }
    eprintln!("{found} padding-dominated zoo fixtures");
}

#[test]
fn a_flat_step_log_gets_a_verdict_not_nothing() {
    let r = analyze_file(&fixtures().join("steps/jax_cpu_steady.log"));
    let h = r.diagnosis.headline.as_ref().unwrap();
    assert_ne!(h.node, VERDICT_NOTHING, "{}", h.text);
    assert!(!h.text.contains("Nothing in these inputs"), "{}", h.text);
    assert_ne!(h.severity, Severity::Failure);
}

/// Every fixture folder and corpus log: a headline, red exactly when an OOM
/// event is in the report.
#[test]
fn every_input_has_a_headline() {
    let mut inputs = Vec::new();
    for e in std::fs::read_dir(fixtures()).unwrap() {
        let p = e.unwrap().path();
        if !p.is_dir() {
            continue;
        }
        let subdirs: Vec<_> = std::fs::read_dir(&p)
            .unwrap()
            .map(|s| s.unwrap().path())
            .filter(|s| s.is_dir())
            .collect();
        if subdirs.is_empty() {
            inputs.push(analyze_dir(&p));
        } else {
            inputs.extend(subdirs.iter().map(|s| analyze_dir(s)));
        }
    }
    for e in std::fs::read_dir(corpus().join("logs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "txt") {
            inputs.push(analyze_file(&p));
        }
    }
    for r in &inputs {
        let name = r.inputs.first().map_or("?", |i| i.name.as_str());
        let h = r
            .diagnosis
            .headline
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no headline"));
        assert!(!h.text.is_empty(), "{name}");
        assert!(
            oomscope_diagnosis::node_def(&h.node).is_some() || h.node.is_empty(),
            "{name}: {}",
            h.node
        );
        let failed = !r.oom_events.is_empty();
        assert_eq!(
            h.severity == Severity::Failure,
            failed,
            "{name}: {}",
            h.text
        );
    }
    assert!(inputs.len() >= 40, "{}", inputs.len());
}
