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
        .filter(|m| {
            m.memory_space == oomscope_report::MemoryColor::Device
                && m.peak_kind != oomscope_report::PeakKind::LiveRange
        })
        .map(|m| m.peak_bytes)
        .max()
        .unwrap()
}

#[test]
fn a_module_without_a_limit_asks_for_the_device_and_fits_once_picked() {
    let mut r = analyze_dir(&fixtures().join("pair-batch-oom/half"));
    // The dump alone: the compile log beside it gives the limit itself
    // (`XLA::TPU program HBM usage: P / L`, below).
    let logged = std::mem::take(&mut r.compile_usages);
    assert!(logged.iter().any(|u| u.limit_bytes.is_some()));
    let with_log = diagnose(&Report {
        compile_usages: logged,
        ..r.clone()
    });
    assert_eq!(with_log.headline.unwrap().node, VERDICT_FITS);
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
        h.text.starts_with("HBM will not fit on 8 GiB: the peak is"),
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
            .filter(|m| {
                m.memory_space == oomscope_report::MemoryColor::Device
                    && m.peak_kind != oomscope_report::PeakKind::LiveRange
            })
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
    let mut checked_remedies = 0;
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
        // A remedy is never one its own estimate says is insufficient.
        let excess = r.oom_events.iter().filter_map(|e| e.excess()).max();
        let remedy = [
            PADDING,
            CONFIG,
            REMAT,
            FLAGS,
            DEBUG_ARTIFACTS,
            LARGE_SHARDING,
        ]
        .contains(&h.node.as_str());
        if let (true, Some(estimate), Some(excess)) = (remedy, h.estimate_bytes, excess) {
            assert!(
                estimate >= excess,
                "{name}: {} < {}: {}",
                estimate,
                excess,
                h.text
            );
            checked_remedies += 1;
        }
        let failed = !r.oom_events.is_empty();
        assert_eq!(
            h.severity == Severity::Failure,
            failed,
            "{name}: {}",
            h.text
        );
    }
    assert!(inputs.len() >= 40, "{}", inputs.len());
    eprintln!("{checked_remedies} remedy headlines cover their excess");
    assert!(checked_remedies >= 8, "{checked_remedies}");
}

/// A growing step log that gives no limit (torchtune's posted log, memory
/// reserved per step): the page offers the device list, and
/// once one is picked the headline says at which step it runs out, at the
/// series' own slope from its last point.
#[test]
fn a_growing_step_log_reaches_the_picked_device_limit_at_a_step() {
    use oomscope_diagnosis::asks_for_device;
    use oomscope_report::devices::known_device;
    let r = analyze_file(
        &fixtures().join("../analyzer/crates/steps/tests/samples/torchtune_pr2406.log"),
    );
    assert!(asks_for_device(&r));
    let before = r.diagnosis.headline.as_ref().unwrap();
    assert!(before.text.contains("pick the device"), "{}", before.text);
    // The series the growth node reads (the one that grows most).
    let node = common::node(&r.diagnosis, STEADY_GROWTH);
    let series = r
        .step_series
        .iter()
        .find(|s| node.reason.contains(&format!("({})", s.metric)))
        .unwrap();
    let last = series.points.last().unwrap();
    // A limit 16 GiB above the last point (far from it: not "one step from OOM").
    let device = oomscope_report::DeviceLimit {
        name: "test".into(),
        limit_bytes: last.bytes + (16 << 30),
    };
    let d = diagnose_with(&r, Some(&device));
    let h = d.headline.unwrap();
    let slope = series.slope_bytes_per_step.unwrap();
    let step = last.step + ((16u64 << 30) as f64 / slope).ceil() as u64;
    let limit = format!(
        "the limit of test ({}) is reached at step {step}",
        format_bytes(device.limit_bytes)
    );
    assert!(h.text.contains(&limit), "{limit}: {}", h.text);
    // A fixed report's own limit is never asked for.
    assert!(!asks_for_device(&analyze_dir(
        &fixtures().join("pair-dtype-oom/f32")
    )));
    // A listed device works the same way.
    let h200 = known_device("NVIDIA H200 141GB").unwrap().limit();
    let text = diagnose_with(&r, Some(&h200)).headline.unwrap().text;
    assert!(
        text.contains("the limit of NVIDIA H200 141GB (139.80 GiB) is reached at step"),
        "{text}"
    );
}

/// A log from one run and a dump from another (both real: the corpus's
/// v5e OOM message, the dump of the v6e dtype pair's OOM side): the headline
/// says which facts disagree and keeps the message's numbers, the more
/// direct fact; the same run's log and dump never get the note.
#[test]
fn a_log_and_a_dump_of_different_runs_say_they_disagree() {
    use oomscope_analyzer::{analyze, InputFile};
    let read = |p: &std::path::Path| InputFile {
        name: p.file_name().unwrap().to_string_lossy().into_owned(),
        data: std::fs::read(p).unwrap(),
    };
    let log = corpus().join("xla-runs/new-libtpu-oom/new_oom.log");
    let dump = fixtures().join("pair-dtype-infer-oom/f32");
    let mut files = vec![read(&log)];
    for e in std::fs::read_dir(&dump).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("module_") && !name.ends_with(".json") {
            files.push(read(&p));
        }
    }
    let r = analyze(files, &mut |_| {});
    let message = r
        .oom_events
        .iter()
        .find(|e| e.used_bytes.is_some())
        .unwrap();
    let h = r.diagnosis.headline.as_ref().unwrap();
    assert!(h.text.contains("These inputs disagree"), "{}", h.text);
    assert!(
        h.text.contains(&format_bytes(message.used_bytes.unwrap())),
        "{}",
        h.text
    );
    assert!(h.text.contains(&format_bytes(hbm_peak(&r))), "{}", h.text);
    // The message's excess is the one the headline states.
    assert!(
        h.text.contains(&format_bytes(message.excess().unwrap())),
        "{}",
        h.text
    );
    assert_ne!(h.confidence, Some(oomscope_report::Confidence::High));
    // The same run: no note.
    for dir in [corpus().join("xla-runs/new-libtpu-oom"), dump] {
        let same = analyze_dir(&dir);
        let h = same.diagnosis.headline.as_ref().unwrap();
        assert!(
            !h.text.contains("disagree"),
            "{}: {}",
            dir.display(),
            h.text
        );
    }
}

/// A real snapshot cut in half (a copy interrupted, an upload limit): the
/// headline names the file and what is wrong with it, instead of asking
/// for other data as if nothing had been given.
#[test]
fn an_unreadable_input_is_the_headline_when_nothing_else_describes_memory() {
    let path = corpus()
        .join("snapshots")
        .join("a0kuma__ckptTry__abc.pickle");
    let bytes = std::fs::read(&path).unwrap();
    let half = oomscope_analyzer::InputFile {
        name: "abc.pickle".into(),
        data: bytes[..bytes.len() / 2].to_vec(),
    };
    let r = oomscope_analyzer::analyze(vec![half], &mut |_| {});
    let h = r.diagnosis.headline.as_ref().unwrap();
    assert_eq!(h.node, VERDICT_NOTHING, "{}", h.text);
    assert!(
        h.text
            .starts_with("Nothing could be read from abc.pickle: "),
        "{}",
        h.text
    );
    let problem = r.errors[0].message.trim_start_matches("abc.pickle: ");
    assert!(h.text.contains(problem), "{}", h.text);
    assert_eq!(h.text.matches("abc.pickle").count(), 1, "{}", h.text);
    // A whole one is read and has a verdict of its own.
    let whole = analyze_file(&path);
    assert_ne!(whole.diagnosis.headline.unwrap().node, VERDICT_NOTHING);
}
