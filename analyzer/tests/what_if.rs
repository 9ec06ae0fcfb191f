//! Predictions by replay in the report (issue 25), on real compiles: the
//! OOM side of a same-program pair, as a user drops its folder.

mod common;

use common::*;
use oomscope_analyzer::analyze;
use oomscope_report::whatif::Remedy;

fn report_of(dir: &str) -> oomscope_report::Report {
    analyze(load_folder(&fixtures().join(dir)), &mut |_| {})
}

#[test]
fn an_oom_gets_every_applicable_remedy_replayed_and_the_cheapest_that_fits_as_headline() {
    let r = report_of("pair-donate/plain");
    let d = &r.diagnosis;
    let remedies: Vec<Remedy> = d.what_if.iter().map(|w| w.remedy).collect();
    for expected in [Remedy::Donation, Remedy::Bf16, Remedy::Sharding] {
        assert!(remedies.contains(&expected), "{remedies:?}");
    }
    let limit = r.oom_events[0].limit().unwrap();
    for w in &d.what_if {
        assert!(w.predicted_peak_bytes > 0, "{w:?}");
        assert_eq!(w.module, "jit_sgd_step");
        assert_eq!(w.fits, Some(w.predicted_peak_bytes <= limit));
        assert!(!w.how.is_empty() && !w.scope.is_empty());
    }
    // Donation is the cheapest remedy and its replay fits (8.63 of 15.75 GiB;
    // the compiler's own donated program peaks at 8.59 GiB).
    let donation = d
        .what_if
        .iter()
        .find(|w| w.remedy == Remedy::Donation)
        .unwrap();
    assert_eq!(donation.predicted_peak_bytes, 9_261_023_744);
    let headline = d.headline.as_ref().unwrap();
    assert_eq!(headline.node, "aggregate.config");
    assert!(
        headline.text.contains("donate_argnums"),
        "{}",
        headline.text
    );
    assert!(headline.text.contains("8.63 GiB"), "{}", headline.text);
    // The tree's donation action carries the prediction.
    let action = d
        .nodes
        .iter()
        .flat_map(|n| &n.actions)
        .find(|a| a.remedy == Some(Remedy::Donation) && a.text.starts_with("Donate"))
        .expect("the donation action");
    assert_eq!(action.predicted_peak_bytes, Some(9_261_023_744));
    // A remedy that does not apply is absent, with one line saying why.
    assert!(!remedies.contains(&Remedy::Offload));
    let node = d
        .nodes
        .iter()
        .find(|n| n.id == "aggregate.what_if")
        .unwrap();
    assert!(node.actions.iter().any(|a| a
        .text
        .starts_with("offload: does not apply: no optimizer state")));
}

#[test]
fn a_remedy_that_buys_less_than_the_excess_is_never_the_headline() {
    // Half the batch of the SGD step saves 128 MiB of a 512 MiB excess.
    let r = report_of("pair-donate/plain");
    let batch = r
        .diagnosis
        .what_if
        .iter()
        .find(|w| w.remedy == Remedy::Batch)
        .unwrap();
    assert_eq!(batch.fits, Some(false));
    assert!(!r.diagnosis.headline.unwrap().text.contains("batch halved"));
}

#[test]
fn the_predictions_survive_a_permalink() {
    let r = report_of("pair-donate/plain");
    let link = oomscope_permalink::encode_link(&r, "https://example.invalid/").unwrap();
    let back = oomscope_permalink::decode(&link.url).unwrap();
    // Over the typical budget, fewer predictions travel (the first ones, in
    // the analyzer's order), and the link says so.
    assert!(!back.diagnosis.what_if.is_empty());
    if back.diagnosis.what_if.len() < r.diagnosis.what_if.len() {
        assert!(
            link.reductions
                .iter()
                .any(|s| s.contains("what-if predictions")),
            "{:?}",
            link.reductions
        );
    }
    for (a, b) in back.diagnosis.what_if.iter().zip(&r.diagnosis.what_if) {
        assert_eq!(a.predicted_peak_bytes, b.predicted_peak_bytes);
        assert_eq!(a.remedy, b.remedy);
        assert!(a.changed.is_empty());
    }
}

#[test]
fn a_module_without_a_limit_still_gets_predictions_without_fits() {
    let r = report_of("pair-mlp-donate/base");
    assert!(!r.diagnosis.what_if.is_empty());
    assert!(r
        .diagnosis
        .what_if
        .iter()
        .all(|w| w.fits.is_none() && w.headroom_bytes.is_none()));
}

/// The headline and the tree never name two remedies: where the replay
/// chose the answer, the path ends at that remedy's node, which says what
/// the replay found, and the node the estimates had chosen no longer claims
/// that nothing cheaper covers the excess. On every fixture that ran out
/// (9 of them named remat by estimate and bf16 by replay before).
#[test]
fn the_tree_ends_at_the_remedy_the_headline_names() {
    let mut checked = 0;
    for entry in std::fs::read_dir(fixtures()).unwrap().flatten() {
        let dir = entry.path();
        if !dir.is_dir() || !dir.join("compile.log").is_file() {
            continue;
        }
        let r = analyze(load_folder(&dir), &mut |_| {});
        let d = &r.diagnosis;
        let (Some(headline), Some(last)) = (d.headline.as_ref(), d.path.last()) else {
            continue;
        };
        if !headline.text.contains("predicted by replaying the program") {
            continue;
        }
        checked += 1;
        let name = dir.display();
        assert_eq!(
            &headline.node, last,
            "{name}: the headline and the path's end"
        );
        let leaf = d.nodes.iter().find(|n| &n.id == last).unwrap();
        assert!(leaf.selected, "{name}");
        assert!(
            leaf.reason.starts_with("Replayed on the program"),
            "{name}: {}",
            leaf.reason
        );
        assert!(
            !leaf.reason.contains("a cheaper remedy covers it ("),
            "{name}: {}",
            leaf.reason
        );
        for other in d.nodes.iter().filter(|n| n.id != *last && n.selected) {
            assert!(
                ![
                    "aggregate.config",
                    "aggregate.remat",
                    "aggregate.padding",
                    "aggregate.architecture"
                ]
                .contains(&other.id.as_str()),
                "{name}: {} is still selected beside {last}",
                other.id
            );
        }
        for node in &d.nodes {
            assert!(
                !node.reason.contains("no cheaper remedy covers it")
                    && !node
                        .reason
                        .contains("No cheaper remedy's estimate covers the excess"),
                "{name}: {}: {}",
                node.id,
                node.reason
            );
        }
    }
    assert!(
        checked >= 9,
        "only {checked} fixtures had a replayed headline"
    );
}

/// The compile log and the HloProto of the OOM side of the donation pair,
/// as the page's worker analyses them (keeping the programs it replays).
fn panel_inputs() -> (
    oomscope_report::Report,
    Vec<oomscope_report::program::HeapProgram>,
) {
    let dir = fixtures().join("pair-donate/plain");
    let files = load_folder(&dir)
        .into_iter()
        .filter(|f| f.name.ends_with("compile.log") || f.name.ends_with(".hlo.pb"))
        .collect();
    oomscope_analyzer::analyze_keeping_programs(files, Vec::new(), &mut |_| {})
}

#[test]
fn the_what_if_panel_replays_what_the_report_predicts_with_its_curve() {
    use oomscope_report::whatif::{DonationScope, WhatIfChoice};
    let (r, programs) = panel_inputs();
    let limit = oomscope_analyzer::what_if::hbm_limit(&r);
    let m = r
        .modules
        .iter()
        .find(|m| m.memory_space == oomscope_report::MemoryColor::Device)
        .unwrap();
    let name = m.display_name();
    // One cache, as the worker keeps it: answers must not depend on it.
    let cache = std::cell::RefCell::new(oomscope_analyzer::what_if::PanelCache::default());
    let panel = |choice: &WhatIfChoice| {
        oomscope_analyzer::what_if::panel(
            &programs,
            &mut cache.borrow_mut(),
            &name,
            m.memory_space,
            choice,
            limit,
        )
        .unwrap()
    };
    // Nothing picked: today's peak and every single remedy, as the report has them.
    let none = panel(&WhatIfChoice::default());
    assert_eq!(none.peak_bytes, m.peak_bytes);
    assert!(none.combination.is_none() && none.failed.is_none());
    assert_eq!(none.singles, r.diagnosis.what_if);
    assert!(none.absent.iter().any(|a| a.remedy == Remedy::Offload));
    // Donation picked: the report's prediction, and a curve that peaks there.
    let donation = WhatIfChoice {
        remedies: vec![Remedy::Donation],
        ..WhatIfChoice::default()
    };
    let answer = panel(&donation);
    // The cache (the module's basis, the singles of these parameters) does
    // not change the answer.
    let fresh = oomscope_analyzer::what_if::panel(
        &programs,
        &mut Default::default(),
        &name,
        m.memory_space,
        &donation,
        limit,
    )
    .unwrap();
    assert_eq!(answer, fresh);
    assert_eq!(answer.singles, none.singles);
    let picked = answer.combination.unwrap();
    assert_eq!(picked.what_if.predicted_peak_bytes, 9_261_023_744);
    assert_eq!(picked.what_if.fits, Some(true));
    assert_eq!(
        picked.heap_bytes.iter().max(),
        Some(&picked.what_if.predicted_peak_bytes)
    );
    assert_eq!(picked.positions.len(), picked.heap_bytes.len());
    assert!(picked.positions.windows(2).all(|w| w[0] < w[1]));
    // Its parameters change the prediction: the SGD step has no optimizer
    // state, so donating it alone does not apply.
    let optimizer = panel(&WhatIfChoice {
        donation: DonationScope::OptimizerState,
        ..donation.clone()
    });
    assert!(optimizer.combination.is_none());
    assert!(optimizer.failed.unwrap().contains("optimizer state"));
    // A combination is replayed in one plan.
    let both = panel(&WhatIfChoice {
        remedies: vec![Remedy::Donation, Remedy::Bf16],
        ..WhatIfChoice::default()
    })
    .combination
    .unwrap();
    assert_eq!(both.what_if.with, vec![Remedy::Bf16]);
    assert!(both.what_if.predicted_peak_bytes < picked.what_if.predicted_peak_bytes);
    // A module without a program says so instead of predicting.
    let err = oomscope_analyzer::what_if::panel(
        &programs,
        &mut Default::default(),
        "no_such_module",
        m.memory_space,
        &donation,
        limit,
    )
    .unwrap_err();
    assert!(err.contains("no program to replay"), "{err}");
}

#[test]
fn a_link_carries_the_what_if_panel_and_its_replay() {
    use oomscope_report::whatif::{WhatIfChoice, WhatIfView};
    let (r, programs) = panel_inputs();
    let m = &r.modules[0];
    let choice = WhatIfChoice {
        remedies: vec![Remedy::Donation, Remedy::Batch],
        batch_divisor: 4,
        ..WhatIfChoice::default()
    };
    let answer = oomscope_analyzer::what_if::panel(
        &programs,
        &mut Default::default(),
        &m.display_name(),
        m.memory_space,
        &choice,
        oomscope_analyzer::what_if::hbm_limit(&r),
    )
    .unwrap();
    let replay = answer.combination.unwrap();
    let view = oomscope_report::ViewState {
        view: "timeline".into(),
        what_if: Some(WhatIfView {
            choice: choice.clone(),
            replay: Some(replay.clone()),
        }),
        ..Default::default()
    };
    let link =
        oomscope_permalink::encode_link_at(&r, "https://example.invalid/", &view, 1).unwrap();
    let back = oomscope_permalink::decode(&link.url).unwrap();
    let carried = back.shared.unwrap().view.what_if.unwrap();
    assert_eq!(carried.choice, choice);
    let curve = carried.replay.unwrap();
    assert_eq!(
        curve.what_if.predicted_peak_bytes,
        replay.what_if.predicted_peak_bytes
    );
    assert_eq!(curve.what_if.with, vec![Remedy::Batch]);
    // The curve is shortened, its peak kept where it was.
    assert!(curve.heap_bytes.len() <= 200);
    let peak = curve.heap_bytes.iter().max().copied();
    assert_eq!(peak, Some(replay.what_if.predicted_peak_bytes));
    let at = curve
        .heap_bytes
        .iter()
        .position(|b| Some(*b) == peak)
        .unwrap();
    let orig = replay
        .heap_bytes
        .iter()
        .position(|b| Some(*b) == peak)
        .unwrap();
    assert_eq!(curve.positions[at], replay.positions[orig]);
}

#[test]
fn a_combination_keeps_what_each_remedy_removed_whatever_the_order() {
    // Donation removes the outputs' allocations; the batch then resizes
    // buffers, and must not bring those allocations back (it once did when
    // donation came first: 16.13 GiB instead of 8.13 GiB).
    let (r, programs) = panel_inputs();
    let peak = |remedies: &[Remedy]| {
        oomscope_analyzer::what_if::combination(&r, &programs, remedies, None)
            .unwrap()
            .predicted_peak_bytes
    };
    let both = peak(&[Remedy::Donation, Remedy::Batch]);
    assert_eq!(both, peak(&[Remedy::Batch, Remedy::Donation]));
    assert!(both < peak(&[Remedy::Donation]));
    assert!(both < peak(&[Remedy::Batch]));
}

/// A real snapshot of the corpus, and a line of it that is not among the
/// three the report replays by itself (`custom_softmax` holds less).
const SNAPSHOT: &str = "silmont2000__assignment2-systems__mem_snapshot.pickle";
const SNAPSHOT_LINE: &str =
    "custom_softmax /root/autodl-tmp/assignment2-systems/cs336_systems/trace_peak_memory.py:7";

fn snapshot_file() -> oomscope_analyzer::InputFile {
    let path = corpus().join("snapshots").join(SNAPSHOT);
    oomscope_analyzer::InputFile {
        name: SNAPSHOT.into(),
        data: std::fs::read(path).unwrap(),
    }
}

#[test]
fn a_link_carries_the_snapshot_lines_replayed_without_and_their_curves() {
    let file = snapshot_file();
    let r = analyze(vec![file.clone()], &mut |_| {});
    let replays =
        oomscope_analyzer::what_if::snapshot_without(&file.name, &file.data, SNAPSHOT_LINE)
            .unwrap();
    assert_eq!(replays.len(), 1);
    let view = oomscope_report::ViewState {
        view: "snapshots".into(),
        snapshot_without: replays.clone(),
        ..Default::default()
    };
    let link =
        oomscope_permalink::encode_link_at(&r, "https://example.invalid/", &view, 1).unwrap();
    let back = oomscope_permalink::decode(&link.url).unwrap();
    // The snapshot's own what-ifs come back with it (they travel in the
    // diagnosis).
    assert!(!r.memory_snapshots[0].what_if.is_empty());
    assert_eq!(
        back.memory_snapshots[0]
            .what_if
            .iter()
            .map(|w| (w.remedy, w.frame.clone(), w.predicted_peak_bytes))
            .collect::<Vec<_>>(),
        r.memory_snapshots[0]
            .what_if
            .iter()
            .map(|w| (w.remedy, w.frame.clone(), w.predicted_peak_bytes))
            .collect::<Vec<_>>()
    );
    // The curves of the lines the report replays by itself do not fit
    // beside the stacks of this one: the link says they were left out.
    let reductions = &back.shared.as_ref().unwrap().reductions;
    assert!(back.memory_snapshots[0].what_if_curves.is_empty());
    assert!(
        reductions
            .iter()
            .any(|x| x == oomscope_permalink::REDUCTION_STEPS[0]),
        "{reductions:?}"
    );
    let carried = back.shared.unwrap().view.snapshot_without;
    assert_eq!(carried.len(), 1);
    let (sent, got) = (&replays[0], &carried[0]);
    assert_eq!(got.what_if.frame.as_deref(), Some(SNAPSHOT_LINE));
    assert_eq!(got.what_if.device, sent.what_if.device);
    assert_eq!(got.what_if.module, SNAPSHOT);
    assert_eq!(
        got.what_if.predicted_peak_bytes,
        sent.what_if.predicted_peak_bytes
    );
    assert!(got.what_if.predicted_peak_bytes < r.memory_snapshots[0].peak_allocated_bytes);
    // The curve is shortened, its peak kept at its trace index.
    assert!(got.heap_bytes.len() <= 200 && got.heap_bytes.len() > 2);
    let peak = got.heap_bytes.iter().max().copied();
    assert_eq!(peak, Some(sent.what_if.predicted_peak_bytes));
    let at = |c: &oomscope_report::whatif::ReplayedCurve| {
        c.positions[c.heap_bytes.iter().position(|b| Some(*b) == peak).unwrap()]
    };
    assert_eq!(at(got), at(sent));

    // A link naming a snapshot it does not carry is refused.
    let mut other = view.clone();
    other.snapshot_without[0].what_if.module = "elsewhere.pickle".into();
    let link =
        oomscope_permalink::encode_link_at(&r, "https://example.invalid/", &other, 1).unwrap();
    let err = oomscope_permalink::decode(&link.url)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no line of a snapshot"), "{err}");

    // As many lines as a link carries (more are left out), each with its
    // own curve (made different so that deflate cannot fold them), still
    // make a link: the curves are shortened like the report's, peaks kept.
    let mut many = view.clone();
    many.snapshot_without = (0..40u64)
        .map(|i| {
            let mut c = replays[0].clone();
            for (j, b) in c.heap_bytes.iter_mut().enumerate() {
                *b = b.saturating_sub((j as u64 * 7919 * (i + 1)) % 65_521);
            }
            c.what_if.frame = Some(format!("f{i} x.py:{i}"));
            c.what_if.predicted_peak_bytes = *c.heap_bytes.iter().max().unwrap();
            c
        })
        .collect();
    let link =
        oomscope_permalink::encode_link_at(&r, "https://example.invalid/", &many, 1).unwrap();
    assert!(
        link.url.len() <= oomscope_permalink::MAX_BUDGET + 100,
        "{}",
        link.url.len()
    );
    let back = oomscope_permalink::decode(&link.url).unwrap();
    let shared = back.shared.unwrap();
    // Over the typical budget, they are shortened with the run-time curves.
    let shortest = "run-time curves downsampled to 16 points";
    assert!(
        shared.reductions.iter().any(|r| r.starts_with(shortest)),
        "{:?}",
        shared.reductions
    );
    let carried = shared.view.snapshot_without;
    assert_eq!(carried.len(), 32);
    for (c, sent) in carried.iter().zip(&many.snapshot_without) {
        assert!(c.heap_bytes.len() <= 16, "{}", c.heap_bytes.len());
        assert_eq!(
            c.heap_bytes.iter().max(),
            Some(&sent.what_if.predicted_peak_bytes)
        );
    }
}

#[test]
fn a_link_carries_the_lines_the_analyzer_replayed_when_they_fit() {
    // A notebook's small snapshot: its link has room for the curves.
    let name = "HugePandaCoder__octree-nca-groupeq__mem_snapshots__cuda_single_step.pickle";
    let path = corpus().join("snapshots").join(name);
    let file = oomscope_analyzer::InputFile {
        name: name.into(),
        data: std::fs::read(path).unwrap(),
    };
    let r = analyze(vec![file], &mut |_| {});
    let link = oomscope_permalink::encode_link_at(
        &r,
        "https://example.invalid/",
        &oomscope_report::ViewState::default(),
        1,
    )
    .unwrap();
    assert!(!link
        .reductions
        .iter()
        .any(|x| x == oomscope_permalink::REDUCTION_STEPS[0]));
    let back = oomscope_permalink::decode(&link.url).unwrap();
    let (sent, got) = (
        &r.memory_snapshots[0].what_if_curves,
        &back.memory_snapshots[0].what_if_curves,
    );
    assert!(!sent.is_empty());
    assert_eq!(got.len(), sent.len());
    // Shortened as the page's replays are, each peak kept at its event.
    for (got, sent) in got.iter().zip(sent) {
        assert_eq!(got.what_if.frame, sent.what_if.frame);
        assert_eq!(
            got.what_if.predicted_peak_bytes,
            sent.what_if.predicted_peak_bytes
        );
        assert!(got.heap_bytes.len() <= 200);
        assert_eq!(got.positions.len(), got.heap_bytes.len());
        // A curve short enough travels whole.
        if sent.heap_bytes.len() <= 200 {
            assert_eq!(
                (&got.positions, &got.heap_bytes),
                (&sent.positions, &sent.heap_bytes)
            );
        }
        let peak_at = |c: &oomscope_report::whatif::ReplayedCurve| {
            let i = c
                .heap_bytes
                .iter()
                .position(|&b| b == c.what_if.predicted_peak_bytes)
                .unwrap();
            c.positions[i]
        };
        assert_eq!(peak_at(got), peak_at(sent));
    }
}

#[test]
fn a_snapshot_inside_an_archive_is_replayed_from_the_archive() {
    use std::io::Write;
    let file = snapshot_file();
    let plain = oomscope_analyzer::what_if::snapshot_without(&file.name, &file.data, SNAPSHOT_LINE)
        .unwrap();
    // The snapshot in a zip beside another file, and in a zip inside a
    // .tar.gz, as users send them.
    let mut zipped = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    zipped.start_file("notes.txt", options).unwrap();
    zipped.write_all(b"not a snapshot").unwrap();
    zipped
        .start_file(format!("run/{SNAPSHOT}"), options)
        .unwrap();
    zipped.write_all(&file.data).unwrap();
    let zipped = zipped.finish().unwrap().into_inner();
    let mut tar = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(zipped.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "runs.zip", &zipped[..])
        .unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar.into_inner().unwrap()).unwrap();
    let tgz = gz.finish().unwrap();

    for (archive, data) in [("runs.zip", zipped.clone()), ("all.tar.gz", tgz)] {
        let archive = oomscope_analyzer::InputFile {
            name: archive.into(),
            data,
        };
        // The name the analysis gives the member.
        let r = analyze(vec![archive.clone()], &mut |_| {});
        assert_eq!(r.memory_snapshots.len(), 1, "{}", archive.name);
        let input = r.memory_snapshots[0].input.clone();
        assert!(oomscope_analyzer::archive::may_hold(&archive.name, &input));
        let replayed = oomscope_analyzer::what_if::snapshot_without_in_archive(
            archive.clone(),
            &input,
            SNAPSHOT_LINE,
        )
        .unwrap();
        assert_eq!(replayed.len(), 1);
        assert_eq!(replayed[0].what_if.module, input);
        assert_eq!(
            replayed[0].what_if.predicted_peak_bytes,
            plain[0].what_if.predicted_peak_bytes
        );
        assert_eq!(replayed[0].heap_bytes, plain[0].heap_bytes);
        // The CLI's `--without` opens the archive as its analysis does.
        let (entries, errors) = oomscope_analyzer::what_if::snapshots_without(
            std::slice::from_ref(&archive),
            &[],
            SNAPSHOT_LINE,
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(entries, vec![replayed[0].what_if.clone()]);
        // A member it does not hold is named as such.
        let err = oomscope_analyzer::what_if::snapshot_without_in_archive(
            archive.clone(),
            &format!("{}/gone.pickle", archive.name),
            SNAPSHOT_LINE,
        )
        .unwrap_err();
        assert!(
            err.contains("holds no") && err.contains("gone.pickle"),
            "{err}"
        );
    }
}
