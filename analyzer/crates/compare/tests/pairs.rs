//! Done-when tests of issue 18 on real same-program pairs: every
//! `fixtures/pair-*/pair.json` the fixture generator wrote (XProf's peak of
//! both variants' HloProtos), and real unrelated programs.

use oomscope_compare::compare;
use oomscope_compare::compare::{ChangeKind, Comparison, ModuleComparison, ModuleMatch, NoteKind};
use oomscope_report::Report;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    oomscope_testdata::fixtures()
}

/// The report of every HloProto in a fixture folder, as XProf would see it.
fn report_of(dir: &Path) -> Report {
    let mut report = Report::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".hlo.pb"))
    {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(path).unwrap();
        report
            .modules
            .extend(oomscope_xla::analyze_hlo_proto(&name, &data).unwrap());
    }
    assert!(
        !report.modules.is_empty(),
        "no HloProto in {}",
        dir.display()
    );
    report
}

fn hbm(c: &Comparison) -> &ModuleComparison {
    let hbm: Vec<_> = c
        .modules
        .iter()
        .filter(|m| m.memory_space == oomscope_report::MemoryColor::Device)
        .collect();
    assert_eq!(
        hbm.len(),
        1,
        "one HBM module per pair: {:?}",
        c.modules.iter().map(|m| &m.name).collect::<Vec<_>>()
    );
    hbm[0]
}

/// XProf writes MiB as a float; its peaks are whole bytes.
fn mib_to_bytes(mib: f64) -> u64 {
    (mib * 1048576.0).round() as u64
}

/// The change a pair was generated to show, from its name and what it says differs.
fn expected_kind(pair: &str, differs: &str) -> Option<ChangeKind> {
    let text = format!("{pair} {differs}").to_lowercase();
    if text.contains("donat") {
        Some(ChangeKind::Donation)
    } else if text.contains("dtype") || text.contains("bfloat16") {
        Some(ChangeKind::Dtype)
    } else if text.contains("remat") || text.contains("checkpoint") {
        Some(ChangeKind::Remat)
    } else if text.contains("shard") {
        Some(ChangeKind::Sharding)
    } else if text.contains("batch") {
        Some(ChangeKind::Batch)
    } else {
        None
    }
}

/// What-if pairs (issue 25) whose largest change is not yet named as the
/// change the pair was made for: (pair, what the comparison names instead).
/// Their peaks and sums are still checked.
/// Pairs whose two sides are matched with low confidence, and why.
const LOW_CONFIDENCE_GAPS: &[(&str, &str)] = &[(
    "pair-mlp-shard-mid",
    "libtpu 0.0.23's FSDP program adds collectives and reshapes until the op fingerprints of the same-named programs share less than the same-name threshold",
)];

const NAMING_GAPS: &[(&str, &str)] = &[
    (
        "pair-unet-remat",
        "held out (session 9): residuals no longer at the peak: named `disappeared` (no repeated block for the rematerialization rule to recognise)",
    ),
    (
        "pair-embed-batch",
        "held out (session 9): with half the batch the scheduler keeps the four tables' scatter gradients to the update, so the peak moves from the forward's activations to the backward's scatters: named `disappeared` (the activations) before the batch",
    ),
    (
        "pair-embed-remat-v5p",
        "held out (session 9): jax.checkpoint on the MLP blocks changes nothing at the peak (the tables' gradients and optimizer state): the same peak, the same buffers, nothing to name",
    ),
    (
        "pair-mlp-shard-mid",
        "matched with low confidence (LOW_CONFIDENCE_GAPS): no cause is named",
    ),
    (
        "pair-rnn-remat",
        "held out (session 8): jax.checkpoint on a recurrent cell leaves the scans' stacked residuals in place but smaller (what the scan saves per step changes): named temporaries that shrank, not rematerialization",
    ),
    (
        "pair-mlp-batch-mid",
        "libtpu 0.0.23 keeps the activations in output allocations of the weights' size (the batch equals the width): only the data parameter shrinks, named a parameter that shrank",
    ),
    (
        "pair-transformer-scan-remat",
        "residuals no longer at the peak: named `disappeared`",
    ),
    (
        "pair-transformer-remat",
        "residuals no longer at the peak: named `disappeared`",
    ),
    (
        "pair-mlp-remat",
        "f32 residuals matched with bf16 temporaries of the same dimensions: named a dtype change",
    ),
    (
        "pair-convnet-remat",
        "f32 residuals matched with bf16 temporaries of the same dimensions: named a dtype change",
    ),
    (
        "pair-transformer-remat-v6e",
        "residuals no longer at the peak: named `disappeared`",
    ),
    (
        "pair-mlp-remat-mid",
        "libtpu 0.0.23 keeps the activations inside output allocations and checkpointing raises the peak by 64 MiB: nothing residual to name",
    ),
    (
        "pair-convnet-remat-v5p",
        "f32 residuals matched with bf16 temporaries of the same dimensions: named `shrank`",
    ),
    (
        "pair-train-remat-b1024",
        "the scan's stacked residuals no longer at the peak: named `disappeared`",
    ),
    (
        "pair-train-remat-b1024-aliased",
        "the scan's stacked residuals no longer at the peak: named `disappeared`",
    ),
];

fn pair_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("pair-")
                && p.join("pair.json").is_file()
        })
        .collect();
    dirs.sort();
    dirs
}

/// A pair's `pair.json`.
fn pair_spec(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("pair.json")).unwrap()).unwrap()
}

/// The "before" and "after" variants' folder names.
fn sides(spec: &serde_json::Value) -> (&str, &str) {
    (
        spec["before"].as_str().unwrap(),
        spec["after"].as_str().unwrap(),
    )
}

#[test]
fn every_pair_gives_xprofs_peak_difference_cut_into_changes_that_sum_to_it() {
    let dirs = pair_dirs();
    assert!(
        dirs.len() >= 5,
        "the five estimate pairs are generated: {dirs:?}"
    );
    for dir in dirs {
        let pair = dir.file_name().unwrap().to_string_lossy().into_owned();
        let spec = pair_spec(&dir);
        let (before, after) = sides(&spec);
        let peak = |variant: &str| {
            mib_to_bytes(
                spec["variants"][variant]["xprof_peak_heap_mib"]
                    .as_f64()
                    .unwrap(),
            )
        };

        let (a, b) = (report_of(&dir.join(before)), report_of(&dir.join(after)));
        let c = compare(&a, &b, before, after);
        let m = hbm(&c);

        // Peaks and their difference are XProf's.
        assert_eq!(
            (m.peak_bytes_a, m.peak_bytes_b),
            (peak(before), peak(after)),
            "{pair}"
        );
        assert_eq!(
            m.difference_bytes,
            peak(after) as i64 - peak(before) as i64,
            "{pair}"
        );
        // Negative when the remedy raised the peak (checkpointing on libtpu
        // 0.0.23, or with matmuls at highest precision).
        let expected_mib = spec["peak_difference_mib"].as_f64().unwrap();
        assert_eq!(
            m.difference_bytes.unsigned_abs(),
            mib_to_bytes(expected_mib.abs()),
            "{pair}"
        );

        // The changes sum to the difference; `explained_bytes` is all but `other`.
        let sum: i64 = m.changes.iter().map(|ch| ch.bytes).sum();
        assert_eq!(sum, m.difference_bytes, "{pair}: {:#?}", m.changes);
        let other: i64 = m
            .changes
            .iter()
            .filter(|ch| ch.kind == ChangeKind::Other)
            .map(|ch| ch.bytes)
            .sum();
        assert_eq!(m.explained_bytes, m.difference_bytes - other, "{pair}");
        let low_gap = LOW_CONFIDENCE_GAPS.iter().any(|(p, _)| *p == pair);
        assert_eq!(
            m.matched_by == ModuleMatch::LowConfidence,
            low_gap,
            "{pair}: {:?} (LOW_CONFIDENCE_GAPS lists the pairs matched with low confidence)",
            m.matched_by
        );
        if low_gap {
            // Causes are not named for a low-confidence match: sums only.
            eprintln!("{pair}: matched with low confidence: {}", m.summary);
            continue;
        }

        // The change the pair was made for is named, and is the largest one.
        let differs = spec["differs"].as_str().unwrap_or_default();
        let gap = NAMING_GAPS.iter().find(|(p, _)| *p == pair);
        match expected_kind(&pair, differs) {
            Some(kind) if gap.is_some() => {
                // Checked the other way round: the gap must still be there.
                assert!(
                    m.changes.first().is_none_or(|c| c.kind != kind),
                    "{pair} is named right now: remove it from NAMING_GAPS"
                );
                eprintln!("{pair}: naming gap ({}): {}", gap.map_or("", |g| g.1), m.summary);
            }
            Some(kind) => {
                let largest = m
                    .changes
                    .first()
                    .unwrap_or_else(|| panic!("{pair}: nothing named: {}", m.summary));
                assert_eq!(largest.kind, kind, "{pair}: {}", m.summary);
                assert_eq!(largest.bytes.signum(), m.difference_bytes.signum(), "{pair}: {}", m.summary);
                assert!(
                    largest.bytes.unsigned_abs() * 2 >= m.difference_bytes.unsigned_abs(),
                    "{pair}: {kind:?} explains under half the difference: {}",
                    m.summary
                );
            }
            None => eprintln!("{pair}: no expected change kind known for {differs:?}; peaks and sums checked only"),
        }
        eprintln!("{pair}: {}", m.summary);
    }
}

#[test]
fn dtype_pair_names_the_transition_and_halving() {
    let dir = fixtures().join("pair-dtype");
    let c = compare(
        &report_of(&dir.join("f32")),
        &report_of(&dir.join("bf16")),
        "f32",
        "bf16",
    );
    let dtype = hbm(&c)
        .changes
        .iter()
        .find(|ch| ch.kind == ChangeKind::Dtype)
        .unwrap();
    assert!(dtype.text.starts_with("f32→bf16 halved"), "{}", dtype.text);
    // Every buffer counted halved: it lost exactly its new size.
    let halved: Vec<_> = hbm(&c)
        .buffers
        .iter()
        .filter(|b| b.kind == ChangeKind::Dtype)
        .collect();
    assert_eq!(halved.len() as u64, dtype.buffers);
    assert!(halved.iter().all(|b| b.bytes_a == 2 * b.bytes_b
        && b.shape_a.starts_with("f32")
        && b.shape_b.starts_with("bf16")));
}

#[test]
fn donation_pair_counts_the_aliased_outputs() {
    let dir = fixtures().join("pair-donate");
    let c = compare(
        &report_of(&dir.join("plain")),
        &report_of(&dir.join("donated")),
        "plain",
        "donated",
    );
    let donation = hbm(&c)
        .changes
        .iter()
        .find(|ch| ch.kind == ChangeKind::Donation)
        .unwrap();
    // Eight f32[16384,16384] weights (1 GiB each) are updated in place.
    assert_eq!(donation.buffers, 8, "{}", donation.text);
    assert_eq!(donation.bytes, -8 * (1 << 30));
}

#[test]
fn swapping_the_sides_negates_every_change() {
    let dir = fixtures().join("pair-remat");
    let (plain, checkpoint) = (
        report_of(&dir.join("plain")),
        report_of(&dir.join("checkpoint")),
    );
    let forward = compare(&plain, &checkpoint, "plain", "checkpoint");
    let backward = compare(&checkpoint, &plain, "checkpoint", "plain");
    let kinds = |c: &Comparison| {
        let mut v: Vec<(ChangeKind, i64)> = hbm(c)
            .changes
            .iter()
            .map(|ch| (ch.kind, ch.bytes))
            .collect();
        v.sort();
        v
    };
    let negated: Vec<(ChangeKind, i64)> = {
        let mut v: Vec<_> = kinds(&backward).into_iter().map(|(k, b)| (k, -b)).collect();
        v.sort();
        v
    };
    assert_eq!(kinds(&forward), negated);
}

#[test]
fn a_run_compared_with_itself_has_no_change() {
    let a = report_of(&fixtures().join("transformer-step"));
    let c = compare(&a, &a.clone(), "A", "B");
    assert!(!c.modules.is_empty());
    for m in &c.modules {
        assert_eq!(m.difference_bytes, 0);
        assert!(m.changes.is_empty(), "{:?}", m.changes);
        assert_eq!(m.similarity, 1.0);
    }
}

#[test]
fn unrelated_programs_have_no_module_in_common_and_no_made_up_cause() {
    let a = report_of(&fixtures().join("fits-mlp"));
    let b = report_of(&fixtures().join("oom-single-buffer"));
    let c = compare(&a, &b, "fits-mlp", "oom-single-buffer");
    let named = [
        ChangeKind::Dtype,
        ChangeKind::Donation,
        ChangeKind::Remat,
        ChangeKind::Batch,
        ChangeKind::Sharding,
        ChangeKind::Padding,
    ];
    for m in &c.modules {
        assert_eq!(
            m.matched_by,
            ModuleMatch::LowConfidence,
            "{} vs {}",
            m.module_a,
            m.module_b
        );
        assert!(
            !m.changes.iter().any(|ch| named.contains(&ch.kind)),
            "{}",
            m.summary
        );
    }
    if c.modules.is_empty() {
        assert!(
            c.notes.iter().any(|n| n.kind == NoteKind::NoModuleInCommon),
            "{:?}",
            c.notes
        );
        assert!(
            !c.only_in_a.is_empty() && !c.only_in_b.is_empty(),
            "both sides are still listed"
        );
    }
}

#[test]
fn a_side_that_failed_is_named_and_the_other_kept() {
    let a = report_of(&fixtures().join("fits-mlp"));
    let mut b = Report::new();
    b.errors.push(oomscope_report::InputError {
        input: "b.pb".into(),
        message: "b.pb: truncated at byte 12".into(),
    });
    let c = compare(&a, &b, "good", "broken");
    assert!(c.b.failed && !c.a.failed);
    let note = c
        .notes
        .iter()
        .find(|n| n.kind == NoteKind::SideFailed)
        .unwrap();
    assert!(
        note.text.contains("broken") && note.text.contains("truncated at byte 12"),
        "{}",
        note.text
    );
    assert!(!c.only_in_a.is_empty(), "A's modules are still listed");
}

/// FSDP over the 4 chips of a v5e:2x2 against the same program on one
/// chip: the weights' per-device shapes are divided by 4.
#[test]
fn fsdp_over_four_chips_is_named_sharding() {
    let a = report_of(&fixtures().join("transformer-scan"));
    let b = report_of(&fixtures().join("fsdp-transformer-scan"));
    let c = compare(&a, &b, "one chip", "fsdp");
    let m = hbm(&c);
    assert_eq!(m.matched_by, ModuleMatch::SameName);
    let largest = &m.changes[0];
    assert_eq!(largest.kind, ChangeKind::Sharding, "{}", m.summary);
    assert!(
        largest.text.contains("divided per-device shapes by 4"),
        "{}",
        largest.text
    );
    assert!(largest.bytes < 0);
    assert!(
        !m.changes.iter().any(|ch| ch.kind == ChangeKind::Batch),
        "{}",
        m.summary
    );
    assert_eq!(
        m.changes.iter().map(|ch| ch.bytes).sum::<i64>(),
        m.difference_bytes
    );
}

/// The same scanned transformer at 8 and at 32 layers: the stacked weights
/// grow along their layer dimension. That is the model, not the batch.
#[test]
fn more_scanned_layers_is_named_model_size_not_batch() {
    let a = report_of(&fixtures().join("transformer-scan"));
    let b = report_of(&fixtures().join("oom-transformer-scan"));
    let c = compare(&a, &b, "8 layers", "32 layers");
    let m = hbm(&c);
    let largest = &m.changes[0];
    assert_eq!(largest.kind, ChangeKind::ModelSize, "{}", m.summary);
    assert!(largest.text.contains("8→32"), "{}", largest.text);
    assert!(
        !m.changes
            .iter()
            .any(|ch| matches!(ch.kind, ChangeKind::Batch | ChangeKind::Sharding)),
        "{}",
        m.summary
    );
    assert_eq!(
        m.changes.iter().map(|ch| ch.bytes).sum::<i64>(),
        m.difference_bytes
    );
}

/// Issue 29: a change kind is named only on evidence of that kind. Each
/// real pair differs by one thing (pair.json's `differs`); of the kinds
/// that need evidence (a batch needs a data input's batch dimension to
/// differ, donation an input-output alias that differs, dtype parameters
/// in another element type), the ones the pair did not change are absent.
/// The remat pair (same batch, no donation, same dtypes) once also showed
/// "batch 1024→4096", "donation aliased 8 outputs" and "pred→bf16".
#[test]
fn every_pair_names_only_the_change_it_made() {
    let dirs = pair_dirs();
    let mut checked = 0;
    for dir in dirs {
        let pair = dir.file_name().unwrap().to_string_lossy().into_owned();
        let spec = pair_spec(&dir);
        let (before, after) = sides(&spec);
        let differs = spec["differs"].as_str().unwrap_or_default();
        let Some(made) = expected_kind(&pair, differs) else {
            continue;
        };
        let (a, b) = (report_of(&dir.join(before)), report_of(&dir.join(after)));
        for (c, order) in [
            (compare(&a, &b, before, after), "A→B"),
            (compare(&b, &a, after, before), "B→A"),
        ] {
            let m = hbm(&c);
            for unchanged in [ChangeKind::Batch, ChangeKind::Donation, ChangeKind::Dtype]
                .into_iter()
                .filter(|k| *k != made)
            {
                let named: Vec<&str> = m
                    .changes
                    .iter()
                    .filter(|ch| ch.kind == unchanged)
                    .map(|ch| ch.text.as_str())
                    .collect();
                assert!(
                    named.is_empty(),
                    "{pair} ({order}) changed {made:?} only, but {unchanged:?} is named: {named:?}"
                );
            }
            // A known naming gap (NAMING_GAPS) may leave the made change
            // unnamed; what is named must still be evidenced.
            if !NAMING_GAPS.iter().any(|(p, _)| *p == pair) {
                assert!(
                    m.changes.iter().any(|ch| ch.kind == made),
                    "{pair} ({order}): {made:?} not named: {}",
                    m.summary
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 8, "{checked} pairs checked");
}

/// Issue 29's remat pair regenerated at its scale (tools/fixtures/programs/
/// pair_remat_train.py): a scanned bf16 train step at batch 1024 without and
/// with jax.checkpoint, nothing else changed, once with no input-output
/// alias on either side and once with the same aliases on both. Before the
/// evidence rule, the first was also explained by "donation lost" (four
/// optimizer-state outputs left the peak on one side, and outputs shaped
/// like a parameter were taken for aliases).
#[test]
fn a_large_remat_pair_names_no_batch_donation_or_dtype() {
    for pair in ["pair-train-remat-b1024", "pair-train-remat-b1024-aliased"] {
        let dir = fixtures().join(pair);
        let (a, b) = (
            report_of(&dir.join("plain")),
            report_of(&dir.join("checkpoint")),
        );
        for (c, order) in [
            (compare(&a, &b, "plain", "checkpoint"), "A→B"),
            (compare(&b, &a, "checkpoint", "plain"), "B→A"),
        ] {
            let m = hbm(&c);
            let named: Vec<&str> = m
                .changes
                .iter()
                .filter(|ch| {
                    matches!(
                        ch.kind,
                        ChangeKind::Batch | ChangeKind::Donation | ChangeKind::Dtype
                    )
                })
                .map(|ch| ch.text.as_str())
                .collect();
            assert!(named.is_empty(), "{pair} ({order}): {named:?}");
            assert!(
                m.difference_bytes.unsigned_abs() > 200 << 30,
                "{}",
                m.summary
            );
        }
    }
}
