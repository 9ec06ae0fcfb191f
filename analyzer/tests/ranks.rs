//! Many ranks through the facade (issue 26), on real per-rank files:
//! `fixtures/ranks-jax/` (4-process JAX jobs on CPU whose differing rank is
//! known by construction, `tools/fixtures/jax_ranks.py`), real logs printed
//! by several ranks (`fixtures/ranks-logs/`), and corpus snapshots named as
//! ranks. Each rank's numbers must equal the analysis of its files alone,
//! and each finding must name the rank and the generator's own line.

mod common;

use common::*;
use oomscope_analyzer::{analyze, InputFile};
use oomscope_report::{
    InputKind, RankFindingKind, RankNoteKind, RankOverride, RankPer, RankSource, Report,
};

fn run(files: Vec<InputFile>) -> Report {
    analyze(files, &mut |_| {})
}

fn scenario(name: &str) -> Report {
    let report = run(load_folder(&fixtures().join("ranks-jax").join(name)));
    assert!(report.errors.is_empty(), "{name}: {:?}", report.errors);
    report
}

/// `jax_ranks.py:N` of the first line of the generator holding `code`.
fn generator_line(code: &str) -> String {
    let path = fixtures().join("../tools/fixtures/jax_ranks.py");
    let source = std::fs::read_to_string(&path).unwrap();
    let n = source
        .lines()
        .position(|l| l.contains(code))
        .unwrap_or_else(|| panic!("{code:?} not in {}", path.display()));
    format!("jax_ranks.py:{}", n + 1)
}

/// Each rank's numbers equal the analysis of each of its files alone, and
/// every profile is listed once (a gzipped `.prof` is no archive).
fn check_against_single_files(report: &Report, dir: &str) {
    let base = fixtures().join("ranks-jax");
    for k in &report.ranks {
        assert!(!k.inputs.is_empty());
        let mut totals = Vec::new();
        for input in &k.inputs {
            let rel = input.split_once('/').unwrap().1;
            let alone = run(vec![InputFile {
                name: input.clone(),
                data: std::fs::read(base.join(dir).join(rel)).unwrap(),
            }]);
            assert_eq!(alone.inputs.len(), 1, "{input} listed {:?}", alone.inputs);
            assert_eq!(alone.inputs[0].kind, InputKind::DeviceMemoryProfile);
            assert_eq!(alone.device_memory_profiles.len(), 1);
            let p = &alone.device_memory_profiles[0];
            totals.push(p.buffer_bytes);
            assert_eq!(k.device, p.devices[0].device, "rank {}", k.rank);
        }
        assert_eq!(k.bytes_per_input, totals, "rank {}", k.rank);
        assert_eq!(k.peak_bytes, *totals.iter().max().unwrap());
        assert_eq!(k.final_bytes, *totals.last().unwrap());
    }
    for i in &report.inputs {
        assert_ne!(i.kind, InputKind::Archive, "{}", i.name);
        assert_eq!(
            report.inputs.iter().filter(|j| j.name == i.name).count(),
            1,
            "{}",
            i.name
        );
    }
}

#[test]
fn balanced_ranks_from_folder_names_have_no_finding() {
    let r = scenario("balanced");
    let ranks: Vec<u32> = r.ranks.iter().map(|k| k.rank).collect();
    assert_eq!(ranks, [0, 1, 2, 3]);
    for k in &r.ranks {
        assert_eq!(k.source, RankSource::Name);
        assert_eq!(k.steps, [20, 40, 60]);
        assert_eq!(k.device, format!("cpu:{}", 2048 * k.rank));
        assert_eq!(k.growth_per_step_bytes, Some(0));
        assert!(!k.oom);
    }
    assert_eq!(r.ranks.iter().filter(|k| k.median).count(), 1);
    assert!(r.rank_findings.is_empty(), "{:?}", r.rank_findings);
    assert_eq!(r.rank_notes[0].kind, RankNoteKind::Grouped);
    check_against_single_files(&r, "balanced");
}

#[test]
fn the_leaking_rank_grows_by_a_mebibyte_per_step_at_its_line() {
    let r = scenario("leak");
    check_against_single_files(&r, "leak");
    assert_eq!(r.ranks.len(), 4);
    assert_eq!(r.ranks[2].growth_per_step_bytes, Some(1 << 20));
    assert_eq!(r.rank_findings.len(), 1, "{:?}", r.rank_findings);
    let f = &r.rank_findings[0];
    assert_eq!(f.kind, RankFindingKind::Growth);
    assert_eq!(f.rank, 2);
    assert_eq!(f.per, RankPer::Step);
    assert_eq!(f.bytes, 1 << 20);
    assert_eq!(f.line, generator_line("history.append(state"));
    assert!(f.text.contains(&f.line), "{}", f.text);
    assert_eq!(f.limit_step, None, "no limit is known");
    // The answer first: the headline names the growing rank and its line.
    let h = r.diagnosis.headline.as_ref().unwrap();
    assert!(h.text.contains(&f.text), "{}", h.text);
}

#[test]
fn the_rank_with_a_constant_excess_is_named_with_its_line() {
    let r = scenario("excess");
    check_against_single_files(&r, "excess");
    assert_eq!(r.rank_findings.len(), 1, "{:?}", r.rank_findings);
    let f = &r.rank_findings[0];
    assert_eq!(f.kind, RankFindingKind::Excess);
    assert_eq!(f.rank, 1);
    assert_eq!(f.bytes, 4 << 20);
    assert_eq!(f.line, generator_line("debug_copy = jnp.ones"));
    // The median rank is one of the others, holding 1 MiB.
    let median = r.ranks.iter().find(|k| k.median).unwrap();
    assert_ne!(median.rank, 1);
    assert_eq!(median.peak_bytes, 1 << 20);
}

#[test]
fn uneven_sharding_is_found_from_device_ids_alone() {
    let r = scenario("uneven");
    check_against_single_files(&r, "uneven");
    let ranks: Vec<u32> = r.ranks.iter().map(|k| k.rank).collect();
    assert_eq!(ranks, [0, 1, 2, 3]);
    assert!(r.ranks.iter().all(|k| k.source == RankSource::DeviceId));
    assert!(r.ranks.iter().all(|k| k.growth_per_step_bytes.is_none()));
    let mut excess: Vec<(u32, u64, &str)> = r
        .rank_findings
        .iter()
        .map(|f| {
            assert_eq!(f.kind, RankFindingKind::Excess);
            assert_eq!(f.per, RankPer::Profile);
            (f.rank, f.bytes, f.line.as_str())
        })
        .collect();
    excess.sort();
    let line = generator_line("partial = jax.make_array_from_callback(");
    assert_eq!(
        excess,
        [(0, 1 << 20, line.as_str()), (1, 1 << 20, line.as_str())]
    );
}

#[test]
fn other_runs_dropped_together_are_not_forced_into_ranks() {
    let r = run(load_folder(&fixtures().join("ranks-jax")));
    // One run is shown (four ranks), the three others are said to be apart.
    assert_eq!(r.ranks.len(), 4);
    let apart = r
        .rank_notes
        .iter()
        .filter(|n| n.kind == RankNoteKind::NotGrouped)
        .count();
    assert_eq!(apart, 3, "{:#?}", r.rank_notes);
    let shown: Vec<&str> = r
        .ranks
        .iter()
        .flat_map(|k| k.inputs.iter())
        .map(|s| s.as_str())
        .collect();
    let run_folder = shown[0].split('/').nth(1).unwrap();
    assert!(
        shown
            .iter()
            .all(|s| s.split('/').nth(1) == Some(run_folder)),
        "{shown:?}"
    );
}

#[test]
fn two_files_claiming_one_rank_are_both_kept_and_the_clash_stated() {
    let mut files = load_folder(&fixtures().join("ranks-jax").join("uneven"));
    // The profile of rank 0 again, as another run in the same folder would leave it.
    let rank0 = files
        .iter()
        .find(|f| {
            run(vec![(*f).clone()])
                .device_memory_profiles
                .first()
                .is_some_and(|p| p.devices[0].device == "cpu:0")
        })
        .unwrap()
        .clone();
    files.push(InputFile {
        name: "uneven/profile-99999.prof".into(),
        data: rank0.data.clone(),
    });
    let r = run(files);
    let k0 = r.ranks.iter().find(|k| k.rank == 0).unwrap();
    assert_eq!(k0.inputs.len(), 2);
    let clash: Vec<_> = r
        .rank_notes
        .iter()
        .filter(|n| n.kind == RankNoteKind::Clash)
        .collect();
    assert_eq!(clash.len(), 1, "{:#?}", r.rank_notes);
    assert!(clash[0]
        .inputs
        .contains(&"uneven/profile-99999.prof".to_string()));
    assert!(clash[0].inputs.contains(&rank0.name));
}

#[test]
fn a_rank_whose_file_fails_is_named_and_the_others_shown() {
    let mut files = load_folder(&fixtures().join("ranks-jax").join("balanced"));
    let broken = files
        .iter_mut()
        .find(|f| f.name.ends_with("rank2/memory_step040.prof"))
        .unwrap();
    broken.data = b"\x1f\x8b\x08\x00 not really gzip".to_vec();
    let name = broken.name.clone();
    let r = run(files);
    assert!(r.errors.iter().any(|e| e.input == name), "{:?}", r.errors);
    assert_eq!(r.ranks.len(), 4);
    assert_eq!(r.ranks[2].inputs.len(), 2);
    let failed: Vec<_> = r
        .rank_notes
        .iter()
        .filter(|n| n.kind == RankNoteKind::Failed)
        .collect();
    assert_eq!(failed.len(), 1, "{:#?}", r.rank_notes);
    assert!(failed[0].text.starts_with("rank 2: "), "{}", failed[0].text);
    assert_eq!(failed[0].inputs, [name]);
}

#[test]
fn one_oom_printed_by_four_ranks_is_one_oom_with_its_ranks() {
    let dir = fixtures().join("ranks-logs");
    let r = run(vec![InputFile {
        name: "torchrun_4ranks_same_oom.log".into(),
        data: std::fs::read(dir.join("torchrun_4ranks_same_oom.log")).unwrap(),
    }]);
    assert_eq!(r.oom_events.len(), 1, "{:#?}", r.oom_events);
    assert_eq!(r.oom_events[0].ranks, [0, 1, 2, 3]);
    assert_eq!(r.oom_events[0].repeats, 4);
    assert_eq!(r.rank_ooms.len(), 1);
    assert_eq!(r.rank_ooms[0].ranks, [0, 1, 2, 3]);
    assert!(
        r.rank_ooms[0].differing.is_empty(),
        "{:?}",
        r.rank_ooms[0].differing
    );
    assert_eq!(r.rank_ooms[0].line, 1);
}

#[test]
fn ranks_that_print_different_numbers_are_one_oom_with_numbers_per_rank() {
    let dir = fixtures().join("ranks-logs");
    let r = run(vec![InputFile {
        name: "deepspeed_2ranks_oom.log".into(),
        data: std::fs::read(dir.join("deepspeed_2ranks_oom.log")).unwrap(),
    }]);
    assert_eq!(r.rank_ooms.len(), 1, "{:#?}", r.rank_ooms);
    let o = &r.rank_ooms[0];
    assert_eq!(o.ranks, [0, 1]);
    let free = o
        .differing
        .iter()
        .find(|d| d.field == "free_bytes")
        .unwrap();
    let mib = |v: f64| (v * (1u64 << 20) as f64).round() as u64;
    assert_eq!(free.by_rank, [(0, mib(746.25)), (1, mib(748.75))]);
    // Every rank of the OOM is one event of the log, none is lost.
    let ranks: Vec<u32> = o
        .events
        .iter()
        .flat_map(|&i| r.oom_events[i as usize].ranks.clone())
        .collect();
    assert_eq!(ranks.len(), 2);
}

/// Real snapshots of different runs: the corpus has no per-rank set from
/// one run, so they are given rank names (`run/rank0/…`), as `oomscope
/// run` would write them.
const SNAPSHOTS: [&str; 5] = [
    "NiuHuangxiaozi__assignment2-systems__cs336_systems__profile_memory__forward_and_backward_memory_snapshot_100.pickle",
    "NiuHuangxiaozi__assignment2-systems__cs336_systems__profile_memory__forward_and_backward_memory_snapshot_150.pickle",
    "NiuHuangxiaozi__assignment2-systems__cs336_systems__profile_memory__forward_and_backward_memory_snapshot_200.pickle",
    "Charan6924__assignment2-systems__cs336_systems__memory_snapshot.pickle",
    // 200 stacks at its peak: more than a summary keeps.
    "kkaitlyn111__cs336-a2-systems__memory_2.7b_forward.pickle",
];

/// `names` of the corpus's snapshots as ranks 0, 1, …; `None` (the test
/// skipped) without the corpus.
fn snapshots_as_ranks(names: &[&str]) -> Option<Vec<InputFile>> {
    let dir = corpus().join("snapshots");
    if !dir.join(names[0]).exists() {
        eprintln!("corpus snapshots not found; skipped");
        return None;
    }
    Some(
        names
            .iter()
            .enumerate()
            .map(|(i, n)| InputFile {
                name: format!("run/rank{i}/snapshot.pickle"),
                data: std::fs::read(dir.join(n)).unwrap(),
            })
            .collect(),
    )
}

#[test]
fn snapshots_named_by_rank_read_as_each_file_alone() {
    let Some(files) = snapshots_as_ranks(&SNAPSHOTS[..3]) else {
        return;
    };
    let r = run(files.clone());
    assert_eq!(r.ranks.len(), 3);
    for (k, f) in r.ranks.iter().zip(&files) {
        assert_eq!(k.source, RankSource::Name);
        let alone = run(vec![f.clone()]);
        let best = alone
            .memory_snapshots
            .iter()
            .max_by_key(|s| s.peak_allocated_bytes)
            .unwrap();
        assert_eq!(k.peak_bytes, best.peak_allocated_bytes);
        assert_eq!(k.final_bytes, best.final_allocated_bytes);
        assert_eq!(k.device, format!("cuda:{}", best.device));
    }
}

#[test]
fn a_link_carries_the_ranks_view() {
    let r = scenario("leak");
    let link = oomscope_permalink::encode_link(&r, "https://x/").unwrap();
    let back = oomscope_permalink::decode(&link.url).unwrap();
    assert_eq!(back.ranks, r.ranks);
    assert_eq!(back.rank_findings, r.rank_findings);
    // Notes travel with at most 10 of their inputs named.
    let words = |r: &Report| -> Vec<(RankNoteKind, String)> {
        r.rank_notes
            .iter()
            .map(|n| (n.kind, n.text.clone()))
            .collect()
    };
    assert_eq!(words(&back), words(&r));
    let logs = run(vec![InputFile {
        name: "deepspeed_2ranks_oom.log".into(),
        data: std::fs::read(fixtures().join("ranks-logs/deepspeed_2ranks_oom.log")).unwrap(),
    }]);
    let link = oomscope_permalink::encode_link(&logs, "https://x/").unwrap();
    let back = oomscope_permalink::decode(&link.url).unwrap();
    assert_eq!(back.rank_ooms, logs.rank_ooms);
    assert_eq!(back.oom_events[0].ranks, logs.oom_events[0].ranks);
}

#[test]
fn the_cli_prints_the_ranks_table_and_findings() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .arg("analyze")
        .arg(fixtures().join("ranks-jax").join("leak"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("Ranks: 4"), "{text}");
    assert!(
        text.contains(&format!("growth: rank 2 grows by 1.00 MiB per step")),
        "{text}"
    );
    assert!(
        text.contains(&generator_line("history.append(state")),
        "{text}"
    );
}

#[test]
fn a_known_limit_gives_the_step_the_growing_rank_reaches_it() {
    let mut files = load_folder(&fixtures().join("ranks-jax").join("leak"));
    // A log giving the device's capacity (79.25 GiB) stands for the job's own OOM.
    files.push(InputFile {
        name: "torchrun_4ranks_same_oom.log".into(),
        data: std::fs::read(fixtures().join("ranks-logs/torchrun_4ranks_same_oom.log")).unwrap(),
    });
    let r = run(files);
    let limit = r.oom_events[0].limit().unwrap();
    let f = &r.rank_findings[0];
    assert_eq!(f.kind, RankFindingKind::Growth);
    let final_bytes = r.ranks[2].final_bytes;
    assert_eq!(
        f.limit_step,
        Some(60 + (limit - final_bytes).div_ceil(1 << 20))
    );
    assert!(
        f.text.contains(&format!("step {}", f.limit_step.unwrap())),
        "{}",
        f.text
    );
    // The log's ranks mark the ranks of the same numbers as out of memory.
    assert!(r.ranks.iter().all(|k| k.oom));
}

#[test]
fn a_corrected_rank_regroups_the_report_without_reading_files() {
    let original = scenario("leak");
    let leaking = original.ranks.iter().find(|k| k.rank == 2).unwrap();
    let first = leaking.inputs[0].clone();
    assert_eq!(leaking.steps[0], 20);
    // The user says the first profile of rank 2 is rank 4's.
    let mut r = original.clone();
    oomscope_ranks::regroup(
        &mut r,
        vec![RankOverride {
            input: first.clone(),
            rank: 4,
            step: Some(20),
        }],
    );
    let ranks: Vec<u32> = r.ranks.iter().map(|k| k.rank).collect();
    assert_eq!(ranks, [0, 1, 2, 3, 4]);
    let moved = r.ranks.iter().find(|k| k.rank == 4).unwrap();
    assert_eq!(moved.inputs, [first.clone()]);
    assert_eq!(moved.source, RankSource::User);
    assert_eq!(r.ranks[2].inputs.len(), 2);
    assert!(
        r.rank_notes[0].text.contains("(1 set by you)"),
        "{}",
        r.rank_notes[0].text
    );
    // Put back where it was: the same ranks and the same finding, at the
    // same line, as the analysis of the files.
    oomscope_ranks::regroup(
        &mut r,
        vec![RankOverride {
            input: first,
            rank: 2,
            step: Some(20),
        }],
    );
    assert_eq!(r.rank_overrides.len(), 1);
    let numbers = |r: &Report| -> Vec<(u32, Vec<String>, Vec<u64>, Vec<u64>, Option<i64>)> {
        r.ranks
            .iter()
            .map(|k| {
                (
                    k.rank,
                    k.inputs.clone(),
                    k.steps.clone(),
                    k.bytes_per_input.clone(),
                    k.growth_per_step_bytes,
                )
            })
            .collect()
    };
    assert_eq!(numbers(&r), numbers(&original));
    assert_eq!(r.rank_findings, original.rank_findings);
}

#[test]
fn a_file_the_names_do_not_place_joins_the_run_at_the_rank_the_user_sets() {
    let mut files = load_folder(&fixtures().join("ranks-jax").join("excess"));
    let stray = files
        .iter()
        .position(|f| f.name.ends_with("host3-step-60.prof"))
        .unwrap();
    files[stray].name = "excess/last.prof".into();
    let mut r = run(files);
    // Its name gives neither rank nor run: it holds rank 3's device, so
    // its own contents place it, but apart from the run named `host#`.
    assert!(r
        .ranks
        .iter()
        .all(|k| !k.inputs.contains(&"excess/last.prof".to_string())));
    oomscope_ranks::regroup(
        &mut r,
        vec![RankOverride {
            input: "excess/last.prof".into(),
            rank: 3,
            step: Some(60),
        }],
    );
    let rank3 = r.ranks.iter().find(|k| k.rank == 3).unwrap();
    assert_eq!(rank3.steps, [20, 40, 60]);
    assert_eq!(rank3.inputs[2], "excess/last.prof");
    assert!(
        r.rank_notes
            .iter()
            .all(|n| n.kind != RankNoteKind::NotGrouped),
        "{:?}",
        r.rank_notes
    );
}

#[test]
fn snapshots_analysed_one_by_one_then_combined_equal_the_drop_analysed_whole() {
    let Some(files) = snapshots_as_ranks(&SNAPSHOTS) else {
        return;
    };
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    assert!(oomscope_analyzer::ranks::per_file(&names));
    let whole = run(files.clone());
    assert_eq!(whole.ranks.len(), 5);
    let parts: Vec<Report> = files.into_iter().map(|f| run(vec![f])).collect();
    assert!(parts.iter().all(|p| p.ranks.is_empty()));
    let combined = oomscope_analyzer::ranks::combine(parts.clone());
    assert_eq!(combined, whole);
    // What the page keeps of each file: its top stacks only. The ranks, the
    // findings and their lines are the same.
    let cut = oomscope_analyzer::ranks::SUMMARY_STACKS;
    assert!(parts.iter().any(|p| p
        .memory_snapshots
        .iter()
        .any(|s| s.stacks_at_peak.len() > cut)));
    let summarised = oomscope_analyzer::ranks::combine(
        parts
            .into_iter()
            .map(oomscope_analyzer::ranks::summary)
            .collect(),
    );
    assert_eq!(summarised.ranks, whole.ranks);
    assert_eq!(summarised.rank_findings, whole.rank_findings);
    assert_eq!(summarised.rank_notes, whole.rank_notes);
    assert_eq!(summarised.diagnosis, whole.diagnosis);
    for (s, w) in summarised
        .memory_snapshots
        .iter()
        .zip(&whole.memory_snapshots)
    {
        let n = w.stacks_at_peak.len().min(cut);
        assert_eq!(s.stacks_at_peak, w.stacks_at_peak[..n]);
        assert_eq!(s.active_memory_curve, w.active_memory_curve);
    }
}

#[test]
fn the_first_rank_to_fail_is_named_with_its_time_from_the_log_s_own_clock() {
    let r = run(vec![InputFile {
        name: "npu_2ranks_times.log".into(),
        data: std::fs::read(fixtures().join("ranks-logs/npu_2ranks_times.log")).unwrap(),
    }]);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    // Two messages with different free memory: one OOM of two ranks.
    assert_eq!(r.rank_ooms.len(), 1);
    assert_eq!(r.rank_ooms[0].ranks, [1, 2]);
    let fields: Vec<&str> = r.rank_ooms[0]
        .differing
        .iter()
        .map(|d| d.field.as_str())
        .collect();
    assert_eq!(fields, ["free_bytes"]);
    let times: Vec<(u32, &str, u32)> = r
        .oom_events
        .iter()
        .flat_map(|e| {
            e.rank_times
                .iter()
                .map(|t| (t.rank, t.time.as_str(), t.line))
        })
        .collect();
    assert_eq!(
        times,
        [
            (1, "06-15 21:49:22.056172510", 1),
            (2, "06-15 21:49:22.125325668", 4)
        ]
    );
    let first: Vec<_> = r
        .rank_findings
        .iter()
        .filter(|f| f.kind == RankFindingKind::OomFirst)
        .collect();
    assert_eq!(first.len(), 1, "{:?}", r.rank_findings);
    assert_eq!(first[0].rank, 1);
    assert_eq!(first[0].time.as_deref(), Some("06-15 21:49:22.056172510"));
    assert_eq!(first[0].bytes, (1.66 * (1u64 << 30) as f64).round() as u64);
    assert!(
        first[0]
            .text
            .contains("rank 2 next at 06-15 21:49:22.125325668"),
        "{}",
        first[0].text
    );
    // The same lines without their times name no first rank.
    let untimed = run(vec![InputFile {
        name: "torchrun_4ranks_same_oom.log".into(),
        data: std::fs::read(fixtures().join("ranks-logs/torchrun_4ranks_same_oom.log")).unwrap(),
    }]);
    assert!(untimed
        .rank_findings
        .iter()
        .all(|f| f.kind != RankFindingKind::OomFirst));
    // The finding travels in links.
    let link = oomscope_permalink::encode_link(&r, "https://x/").unwrap();
    let back = oomscope_permalink::decode(&link.url).unwrap();
    assert_eq!(back.rank_findings, r.rank_findings);
}

/// Two real profiles with allocator timelines (TensorFlow on CPU): the
/// project's fixture and the corpus's; `None` (said) without the corpus.
fn two_real_xplanes() -> Option<[Vec<u8>; 2]> {
    let corpus_profile = corpus().join("xla-runs/tf-cpu-allocator/vm.xplane.pb");
    if !corpus_profile.exists() {
        eprintln!("corpus xplane not found; skipped");
        return None;
    }
    Some([
        std::fs::read(fixtures().join("tf-cpu-allocator/profile.xplane.pb")).unwrap(),
        std::fs::read(corpus_profile).unwrap(),
    ])
}

#[test]
fn xprof_profiles_of_several_hosts_read_as_ranks() {
    // Two real profiles with allocator timelines (TensorFlow on CPU), named
    // as XProf names one file per host; each host's numbers are its file's.
    let Some(profiles) = two_real_xplanes() else {
        return;
    };
    let files: Vec<InputFile> = profiles
        .into_iter()
        .enumerate()
        .map(|(i, data)| InputFile {
            name: format!("profile/host{i}.xplane.pb"),
            data,
        })
        .collect();
    let r = run(files.clone());
    assert_eq!(r.ranks.len(), 2, "{:?}", r.rank_notes);
    assert!(
        r.rank_notes[0].text.contains("XProf profiles"),
        "{}",
        r.rank_notes[0].text
    );
    for (k, f) in r.ranks.iter().zip(files) {
        let alone = run(vec![f]);
        let busiest = alone
            .allocator_profiles
            .iter()
            .rev() // the first of equals
            .max_by_key(|a| a.peak_heap_bytes)
            .unwrap();
        assert!(busiest.peak_heap_bytes > 0);
        assert_eq!(k.peak_bytes, busiest.peak_heap_bytes);
        assert_eq!(k.device, busiest.allocator);
        assert_eq!(k.source, RankSource::Name);
    }
}

/// `data`, an XSpace, with its hostnames replaced by `host` (the field XProf
/// fills with the machine's name; top-level fields are walked, field 4
/// dropped and written again last, as a profile of that host would hold it).
fn with_hostname(data: &[u8], host: &str) -> Vec<u8> {
    fn varint(data: &[u8], i: &mut usize) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = data[*i];
            *i += 1;
            v |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                return v;
            }
        }
    }
    fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let mut out = Vec::with_capacity(data.len() + host.len() + 8);
    let mut i = 0;
    while i < data.len() {
        let start = i;
        let tag = varint(data, &mut i);
        match tag & 7 {
            0 => {
                varint(data, &mut i);
            }
            1 => i += 8,
            5 => i += 4,
            2 => {
                let len = varint(data, &mut i) as usize;
                i += len;
            }
            w => panic!("wire type {w} at {start}"),
        }
        if tag >> 3 != 4 {
            out.extend_from_slice(&data[start..i]);
        }
    }
    out.push((4 << 3) | 2);
    put_varint(&mut out, host.len() as u64);
    out.extend_from_slice(host.as_bytes());
    out
}

#[test]
fn xprof_profiles_named_alike_read_as_ranks_by_their_host() {
    // Two real profiles whose file names give no rank (`vm.xplane.pb`, as
    // XProf names them after a host it cannot number): the host each was
    // taken on does, as on a Cloud TPU VM of several workers.
    let Some(profiles) = two_real_xplanes() else {
        return;
    };
    // Unchanged but for the host: the profile reads as before.
    let plain = run(vec![InputFile {
        name: "vm.xplane.pb".into(),
        data: profiles[1].clone(),
    }]);
    let files: Vec<InputFile> = profiles
        .iter()
        .enumerate()
        .map(|(i, data)| InputFile {
            name: format!("run{i}/plugins/profile/vm.xplane.pb"),
            data: with_hostname(data, &format!("t1v-n-8c2f3a1e-w-{}", 1 - i)),
        })
        .collect();
    assert_eq!(plain.allocator_profiles[0].host, "vm");
    let r = run(files.clone());
    assert_eq!(r.ranks.len(), 2, "{:?}", r.rank_notes);
    for k in &r.ranks {
        assert_eq!(k.source, RankSource::Hostname, "{k:?}");
    }
    // Worker 1 is the first file, worker 0 the second.
    let rank0 = r.ranks.iter().find(|k| k.rank == 0).unwrap();
    assert_eq!(rank0.inputs, ["run1/plugins/profile/vm.xplane.pb"]);
    let alone = run(vec![files[1].clone()]);
    assert_eq!(alone.allocator_profiles[0].host, "t1v-n-8c2f3a1e-w-0");
    // Gzipped (read as a stream, not by random access): the same host.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &files[1].data).unwrap();
    let zipped = run(vec![InputFile {
        name: "vm.xplane.pb".into(),
        data: gz.finish().unwrap(),
    }]);
    assert_eq!(zipped.allocator_profiles[0].host, "t1v-n-8c2f3a1e-w-0");
    assert_eq!(
        rank0.peak_bytes,
        alone.allocator_profiles.iter().map(|a| a.peak_heap_bytes).max().unwrap()
    );
}
