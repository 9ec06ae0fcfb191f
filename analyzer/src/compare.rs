//! Comparing two runs (issue 18): each side is analysed on its own, exactly
//! as [`analyze_inputs`](crate::analyze_inputs) would, then the two reports
//! are compared by `oomscope_compare`. Both reports are kept: the
//! comparison adds to them, it does not replace them, so a side that fails
//! to load is named while the other is still shown.

use crate::{InputFile, InputSource, Progress};
use oomscope_report::compare::{default_label, distinct_labels};
use oomscope_report::{InputError, Report};

pub use oomscope_report::compare::ComparedRuns;

/// What the user calls each side; `None` takes it from the file names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Labels {
    pub a: Option<String>,
    pub b: Option<String>,
}

/// The inputs of one side: files read whole, sources read by slices, and
/// inputs that could not even be read (a missing path, a file too large
/// for the browser), which become the side's first errors.
#[derive(Default)]
pub struct SideInputs {
    pub files: Vec<InputFile>,
    pub sources: Vec<InputSource>,
    pub unreadable: Vec<InputError>,
}

/// Compare the run given by files `a` (before) with the one given by `b`
/// (after). Never panics on bad input: what cannot be read lands in that
/// side's `errors`, and the comparison says which side failed.
pub fn compare(
    a: Vec<InputFile>,
    b: Vec<InputFile>,
    labels: Labels,
    progress: &mut dyn FnMut(Progress),
) -> ComparedRuns {
    compare_inputs(
        SideInputs {
            files: a,
            ..SideInputs::default()
        },
        SideInputs {
            files: b,
            ..SideInputs::default()
        },
        labels,
        progress,
    )
}

/// [`compare`] with some inputs given as random-access [`InputSource`]s.
pub fn compare_inputs(
    a: SideInputs,
    b: SideInputs,
    labels: Labels,
    progress: &mut dyn FnMut(Progress),
) -> ComparedRuns {
    let (label_a, label_b) = match (labels.a, labels.b) {
        (None, None) => distinct_labels(label_from_names(&a), label_from_names(&b)),
        (a_given, b_given) => (
            a_given.unwrap_or_else(|| label_from_names(&a)),
            b_given.unwrap_or_else(|| label_from_names(&b)),
        ),
    };
    let report_a = analyze_side(a, &label_a, progress);
    let report_b = analyze_side(b, &label_b, progress);
    progress(Progress {
        input: String::new(),
        done_bytes: 0,
        total_bytes: 0,
        stage: "comparing".into(),
    });
    let comparison = oomscope_compare::compare(&report_a, &report_b, &label_a, &label_b);
    ComparedRuns {
        a: report_a,
        b: report_b,
        comparison,
    }
}

fn analyze_side(side: SideInputs, label: &str, progress: &mut dyn FnMut(Progress)) -> Report {
    let mut on_progress = |p: Progress| {
        progress(Progress {
            stage: format!("{label}: {}", p.stage),
            ..p
        })
    };
    analyze_loaded(side, &mut on_progress)
}

/// One set of inputs analysed as `analyze` does, the inputs that could not
/// even be read first among its errors (the worker's analysis job and each
/// side of a comparison).
pub fn analyze_loaded(side: SideInputs, progress: &mut dyn FnMut(Progress)) -> Report {
    analyze_loaded_keeping_programs(side, progress).0
}

/// [`analyze_loaded`], also returning the programs the What-if panel
/// replays (the page's worker keeps them for the report on screen).
pub fn analyze_loaded_keeping_programs(
    side: SideInputs,
    progress: &mut dyn FnMut(Progress),
) -> (Report, Vec<oomscope_report::program::HeapProgram>) {
    let (mut report, programs) =
        crate::analyze_keeping_programs(side.files, side.sources, progress);
    report.errors.splice(0..0, side.unreadable);
    (report, programs)
}

/// The folders or files given: see [`default_label`].
fn label_from_names(side: &SideInputs) -> String {
    default_label(
        side.files
            .iter()
            .map(|f| f.name.as_str())
            .chain(side.sources.iter().map(|s| s.name.as_str()))
            .chain(side.unreadable.iter().map(|e| e.input.as_str())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomscope_report::compare::{ChangeKind, NoteKind};
    use std::path::{Path, PathBuf};

    fn fixtures() -> PathBuf {
        oomscope_testdata::fixtures()
    }

    /// A folder as the CLI gives it: every file, named `folder/file`.
    fn folder(dir: &Path) -> Vec<InputFile> {
        let base = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        paths.sort();
        paths
            .into_iter()
            .map(|p| InputFile {
                name: format!("{base}/{}", p.file_name().unwrap().to_string_lossy()),
                data: std::fs::read(&p).unwrap(),
            })
            .collect()
    }

    #[test]
    fn two_dropped_folders_compare_with_xprofs_difference_and_the_stable_json_shape() {
        let pair = fixtures().join("pair-dtype-oom");
        let spec: serde_json::Value =
            serde_json::from_slice(&std::fs::read(pair.join("pair.json")).unwrap()).unwrap();
        let mut stages = Vec::new();
        let runs = compare(
            folder(&pair.join("f32")),
            folder(&pair.join("bf16")),
            Labels::default(),
            &mut |p| stages.push(p.stage),
        );
        let c = &runs.comparison;
        assert_eq!((c.a.label.as_str(), c.b.label.as_str()), ("f32", "bf16"));
        assert!(
            stages.iter().any(|s| s.starts_with("f32: "))
                && stages.iter().any(|s| s.starts_with("bf16: "))
        );
        assert!(
            runs.a.errors.is_empty() && runs.b.errors.is_empty(),
            "{:?} {:?}",
            runs.a.errors,
            runs.b.errors
        );

        let m = c
            .modules
            .iter()
            .find(|m| m.memory_space == oomscope_report::MemoryColor::Device)
            .unwrap();
        let mib = spec["peak_difference_mib"].as_f64().unwrap();
        assert_eq!(m.difference_bytes, -((mib * 1048576.0) as i64));
        assert_eq!(m.changes[0].kind, ChangeKind::Dtype, "{}", m.summary);

        // The f32 side ran out of memory, the bf16 side did not: the OOM
        // error belongs to A only, and A's report keeps it.
        assert!(!runs.a.oom_events.is_empty() && runs.b.oom_events.is_empty());

        // Each side's headline numbers travel with the comparison: its
        // answer and its module peaks, largest first.
        for (side, report) in [(&c.a, &runs.a), (&c.b, &runs.b)] {
            assert_eq!(
                Some(&side.headline),
                report.diagnosis.headline.as_ref().map(|h| &h.text)
            );
            assert_eq!(side.module_peaks.len(), report.modules.len());
            assert_eq!(
                side.module_peaks.first().map(|p| p.peak_bytes),
                report.modules.iter().map(|m| m.peak_bytes).max()
            );
        }

        // The stable JSON shape of issue 18.
        let json = serde_json::to_value(&runs).unwrap();
        let jm = json["comparison"]["modules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["memory_space"] == 0)
            .unwrap();
        for field in [
            "name",
            "peak_bytes_a",
            "peak_bytes_b",
            "changes",
            "explained_bytes",
        ] {
            assert!(!jm[field].is_null(), "missing {field}");
        }
        assert_eq!(jm["changes"][0]["kind"], "dtype");
        assert!(jm["changes"][0]["bytes"].is_i64() && jm["changes"][0]["buffers"].is_u64());
        let sum: i64 = jm["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|ch| ch["bytes"].as_i64().unwrap())
            .sum();
        assert_eq!(
            sum,
            jm["peak_bytes_b"].as_i64().unwrap() - jm["peak_bytes_a"].as_i64().unwrap()
        );
    }

    /// The OOM side's tree estimated what donation, bf16 and checkpointing
    /// would save; the pairs say what they did.
    #[test]
    fn the_trees_estimates_stand_next_to_the_real_change() {
        for (pair, before, after, kind) in [
            ("pair-donate", "plain", "donated", ChangeKind::Donation),
            ("pair-dtype-oom", "f32", "bf16", ChangeKind::Dtype),
            ("pair-remat-oom", "plain", "checkpoint", ChangeKind::Remat),
        ] {
            let dir = fixtures().join(pair);
            let runs = compare(
                folder(&dir.join(before)),
                folder(&dir.join(after)),
                Labels::default(),
                &mut |_| {},
            );
            let c = &runs.comparison;
            let change = c
                .modules
                .iter()
                .filter(|m| m.memory_space == oomscope_report::MemoryColor::Device)
                .flat_map(|m| &m.changes)
                .find(|ch| ch.kind == kind)
                .unwrap();
            let Some(e) = c.estimates.iter().find(|e| e.kind == kind) else {
                panic!(
                    "{pair}: no {kind:?} estimate next to the change; A's tree: {:?}",
                    runs.a.diagnosis.path
                )
            };
            assert_eq!(e.actual_bytes, -change.bytes, "{pair}");
            assert!(e.estimate_bytes > 0, "{pair}: {e:?}");
            eprintln!(
                "{pair}: {kind:?} estimated {} MiB, real {} MiB",
                e.estimate_bytes >> 20,
                e.actual_bytes >> 20
            );
        }
    }

    /// A comparison travels as a link within a report link's budget and
    /// comes back with the same peaks and named changes.
    #[test]
    fn a_real_comparison_is_shared_as_a_link() {
        let pair = fixtures().join("pair-remat");
        let runs = compare(
            folder(&pair.join("plain")),
            folder(&pair.join("checkpoint")),
            Labels::default(),
            &mut |_| {},
        );
        let (fragment, reductions) =
            oomscope_permalink::encode_comparison_fragment(&runs.comparison).unwrap();
        assert!(
            fragment.len() <= oomscope_permalink::TYPICAL_BUDGET,
            "{} bytes, {reductions:?}",
            fragment.len()
        );
        let back =
            oomscope_permalink::decode_comparison(&format!("http://127.0.0.1:8080/#{fragment}"))
                .unwrap();
        assert_eq!(back.modules.len(), runs.comparison.modules.len());
        for (x, y) in back.modules.iter().zip(&runs.comparison.modules) {
            assert_eq!(
                (x.peak_bytes_a, x.peak_bytes_b, &x.changes),
                (y.peak_bytes_a, y.peak_bytes_b, &y.changes)
            );
        }
        eprintln!(
            "pair-remat comparison link: {} bytes, reductions {reductions:?}",
            fragment.len()
        );
    }

    fn file(path: &Path) -> InputFile {
        InputFile {
            name: path.file_name().unwrap().to_string_lossy().into_owned(),
            data: std::fs::read(path).unwrap(),
        }
    }

    /// Real JAX step logs: a steady loop against one that keeps 2 MiB per
    /// step (the log's own `true_growth_bytes_per_step`).
    #[test]
    fn step_logs_compare_growth_per_step() {
        let steps = fixtures().join("steps");
        let runs = compare(
            vec![file(&steps.join("jax_cpu_steady.log"))],
            vec![file(&steps.join("jax_cpu_leak.log"))],
            Labels::default(),
            &mut |_| {},
        );
        let c = &runs.comparison;
        assert_eq!(
            (c.a.label.as_str(), c.b.label.as_str()),
            ("jax_cpu_steady.log", "jax_cpu_leak.log")
        );
        let s = &c.step_series[0];
        assert!(s.common_steps > 10, "{s:?}");
        let (slope_a, slope_b) = (
            s.slope_bytes_per_step_a.unwrap(),
            s.slope_bytes_per_step_b.unwrap(),
        );
        let true_growth = 2_097_152.0;
        assert!(
            (slope_b - true_growth).abs() < 0.1 * true_growth,
            "B grows 2 MiB per step: {slope_b}"
        );
        assert!(slope_a.abs() < 0.1 * true_growth, "A is steady: {slope_a}");
        assert!(
            s.max_difference_bytes > 0 && s.summary.contains("/step"),
            "{}",
            s.summary
        );
        eprintln!("steady vs leak: {}", s.summary);
    }

    /// Two real compile-time OOMs of the same chip: each number's change is
    /// the difference of what the compiler printed (pair.json keeps it).
    #[test]
    fn oom_logs_compare_number_by_number() {
        let (dtype, remat) = (
            fixtures().join("pair-dtype-oom"),
            fixtures().join("pair-remat-oom"),
        );
        let runs = compare(
            vec![file(&dtype.join("f32/compile.log"))],
            vec![file(&remat.join("plain/compile.log"))],
            Labels::default(),
            &mut |_| {},
        );
        let e = &runs.comparison.oom_events[0];
        let printed = |dir: &Path, variant: &str, key: &str| {
            let spec: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join("pair.json")).unwrap()).unwrap();
            oomscope_report::units::parse_binary_size(
                spec["variants"][variant][key].as_str().unwrap(),
            )
            .unwrap()
        };
        let used = e.numbers.iter().find(|n| n.field == "used_bytes").unwrap();
        assert_eq!(used.a, Some(printed(&dtype, "f32", "used")));
        assert_eq!(used.b, Some(printed(&remat, "plain", "used")));
        assert_eq!(
            used.difference,
            Some(used.b.unwrap() as i64 - used.a.unwrap() as i64)
        );
        let limit = e.numbers.iter().find(|n| n.field == "limit_bytes").unwrap();
        assert_eq!(limit.difference, Some(0), "same chip, same limit");
        eprintln!(
            "dtype-oom f32 vs remat-oom plain: used {:?} → {:?} ({:?})",
            used.a, used.b, used.difference
        );
    }

    #[test]
    fn a_side_that_fails_to_load_is_named_and_the_other_is_shown() {
        let good = folder(&fixtures().join("fits-mlp"));
        let broken = vec![InputFile {
            name: "broken.hlo.pb".into(),
            data: vec![0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2],
        }];
        let runs = compare(
            good,
            broken,
            Labels {
                a: Some("before".into()),
                b: None,
            },
            &mut |_| {},
        );
        let c = &runs.comparison;
        assert_eq!(c.b.label, "broken.hlo.pb");
        assert!(c.b.failed && !c.a.failed);
        let note = c
            .notes
            .iter()
            .find(|n| n.kind == NoteKind::SideFailed)
            .unwrap();
        assert!(note.text.contains("broken.hlo.pb"), "{}", note.text);
        assert!(!runs.a.modules.is_empty(), "A is still analysed");
        assert!(!c.only_in_a.is_empty());
    }
}
