//! Permalinks of real reports: every fixture and corpus input survives
//! analyze → link → decode with its verdict, and links stay under budget.

mod common;

use common::*;
use oomscope_analyzer::analyze;
use oomscope_permalink::{decode, encode_fragment, MAX_BUDGET, TYPICAL_BUDGET};
use oomscope_report::{Report, ViewState};

fn check_round_trip(label: &str, r: &Report) -> usize {
    let view = ViewState {
        view: "verdict".into(),
        ..Default::default()
    };
    let (fragment, reductions) =
        encode_fragment(r, &view, 1).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(
        fragment.len() <= MAX_BUDGET,
        "{label}: {} bytes",
        fragment.len()
    );
    let back = decode(&fragment).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert_eq!(back.inputs, r.inputs, "{label}");
    assert_eq!(back.oom_events.len(), r.oom_events.len(), "{label}");
    for (a, b) in back.oom_events.iter().zip(&r.oom_events) {
        assert_eq!(
            (
                a.kind,
                a.used_bytes,
                a.limit_bytes,
                a.exceeded_bytes,
                a.requested_bytes
            ),
            (
                b.kind,
                b.used_bytes,
                b.limit_bytes,
                b.exceeded_bytes,
                b.requested_bytes
            ),
            "{label}"
        );
        assert_eq!(
            (a.tpu_runtime_failure, a.gpu_platform, a.scoped_instruction),
            (b.tpu_runtime_failure, b.gpu_platform, b.scoped_instruction),
            "{label}"
        );
        assert_eq!(a.early_abort, b.early_abort, "{label}");
    }
    assert_eq!(back.modules.len(), r.modules.len(), "{label}");
    for (a, b) in back.modules.iter().zip(&r.modules) {
        assert_eq!(
            (a.peak_bytes, a.peak_position, a.heap_bytes.iter().max()),
            (b.peak_bytes, b.peak_position, b.heap_bytes.iter().max()),
            "{label}: {}",
            b.name
        );
    }
    assert_eq!(back.diagnosis.path, r.diagnosis.path, "{label}");
    // The answer travels whole, whatever detail was dropped.
    assert_eq!(back.diagnosis.headline, r.diagnosis.headline, "{label}");
    // The buffers the tree cites come back whole (restored from the peak
    // buffers the link carries), on every node the link keeps with detail.
    for n in &back.diagnosis.nodes {
        let original = r.diagnosis.nodes.iter().find(|o| o.id == n.id).unwrap();
        if n.actions.is_empty() && !original.actions.is_empty() {
            continue; // reduced to a short reason
        }
        assert!(n.cites.len() <= original.cites.len(), "{label}: {}", n.id);
        assert_eq!(
            n.cites[..],
            original.cites[..n.cites.len()],
            "{label}: {}",
            n.id
        );
    }
    // A carried peak buffer keeps whether its allocation is also an output
    // (a donated parameter, which the shared timeline marks).
    let mut live_out = 0;
    for (a, b) in back.modules.iter().zip(&r.modules) {
        for p in &a.peak_buffers {
            let original = b
                .peak_buffers
                .iter()
                .find(|o| o.logical_buffer_id == p.logical_buffer_id && o.name == p.name)
                .unwrap_or_else(|| panic!("{label}: {} was not a peak buffer", p.name));
            assert_eq!(
                p.maybe_live_out, original.maybe_live_out,
                "{label}: {}",
                p.name
            );
            live_out += usize::from(p.maybe_live_out);
        }
    }
    if label == "pair-donate" {
        // Its donated weights and its plain variant's updates (as many as
        // the link's budget carries).
        assert!(
            live_out > 0,
            "{label}: {live_out} maybe-live-out peak buffers carried"
        );
    }
    // The carried peak buffers keep their lifetimes for the shared timeline.
    let mut lifetimes = 0;
    for (a, b) in back.modules.iter().zip(&r.modules) {
        for l in &a.buffers {
            let original = b
                .buffers
                .iter()
                .find(|o| o.id == l.id && o.name == l.name)
                .unwrap_or_else(|| panic!("{label}: {} has no lifetime", l.name));
            assert_eq!(
                (l.start, l.end, l.offset_bytes, l.size_bytes),
                (
                    original.start,
                    original.end,
                    original.offset_bytes,
                    original.size_bytes
                ),
                "{label}: {}",
                l.name
            );
            lifetimes += 1;
        }
        if reductions.is_empty() {
            let with_lifetime = b
                .peak_buffers
                .iter()
                .filter(|p| {
                    b.buffers
                        .iter()
                        .any(|o| Some(o.id) == p.logical_buffer_id && o.name == p.name)
                })
                .count();
            assert_eq!(a.buffers.len(), with_lifetime, "{label}: {}", b.name);
        }
    }
    assert_eq!(
        back.shared.as_ref().map(|s| &s.reductions),
        Some(&reductions)
    );
    println!(
        "link size {label}: {} bytes, {lifetimes} buffer lifetimes{}",
        fragment.len(),
        if reductions.is_empty() {
            String::new()
        } else {
            format!(" ({} reductions)", reductions.len())
        }
    );
    fragment.len()
}

#[test]
fn every_fixture_round_trips_under_budget() {
    for dir in fixture_dirs() {
        let r = analyze(load_folder(&dir), &mut |_| {});
        check_round_trip(&dir.file_name().unwrap().to_string_lossy(), &r);
    }
}

#[test]
fn typical_oom_logs_fit_the_typical_budget() {
    for entry in std::fs::read_dir(corpus().join("logs")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "INDEX.md" {
            continue;
        }
        let r = analyze(
            vec![oomscope_analyzer::InputFile {
                name: name.clone(),
                data: std::fs::read(&path).unwrap(),
            }],
            &mut |_| {},
        );
        let size = check_round_trip(&name, &r);
        assert!(
            size <= TYPICAL_BUDGET,
            "{name}: a single OOM log should fit {TYPICAL_BUDGET} bytes, got {size}"
        );
    }
}

fn analyze_one(path: &std::path::Path) -> Report {
    analyze(
        vec![oomscope_analyzer::InputFile {
            name: path.file_name().unwrap().to_string_lossy().into_owned(),
            data: std::fs::read(path).unwrap(),
        }],
        &mut |_| {},
    )
}

/// The run-time sections come back with the numbers the page shows: peak,
/// OOM, state table, totals; curves keep the exact peak.
fn check_runtime(label: &str, r: &Report, back: &Report) {
    assert_eq!(
        back.memory_snapshots.len(),
        r.memory_snapshots.len(),
        "{label}"
    );
    for (a, b) in back.memory_snapshots.iter().zip(&r.memory_snapshots) {
        let numbers = |m: &oomscope_report::MemorySnapshot| {
            (
                (m.device, m.peak_allocated_bytes, m.peak_event_index),
                m.reserved_bytes,
                m.reserved_peak_bytes,
                m.active_allocated_bytes,
                m.inactive_bytes,
                m.active_pending_free_bytes,
                m.free_internal_bytes,
                m.free_external_bytes,
                m.segments,
                m.expandable_segments_would_return_bytes,
                m.oom.as_ref().map(|o| {
                    (
                        o.event_index,
                        o.requested_bytes,
                        o.device_free_bytes,
                        o.allocated_bytes,
                        o.reserved_bytes,
                    )
                }),
            )
        };
        assert_eq!(numbers(a), numbers(b), "{label}: device {}", b.device);
        assert!(a.active_memory_curve.len() <= 200, "{label}");
        if let Some(top) = b
            .active_memory_curve
            .iter()
            .max_by_key(|p| p.allocated_bytes)
        {
            assert!(
                a.active_memory_curve.contains(top),
                "{label}: the curve lost its peak"
            );
        }
        assert!(
            a.stacks_at_peak.len() <= 5 && a.top_lines_at_peak.len() <= 10,
            "{label}"
        );
        assert_eq!(
            a.stacks_at_peak[..],
            b.stacks_at_peak[..a.stacks_at_peak.len()]
                .iter()
                .cloned()
                .map(|mut s| {
                    s.frames.truncate(12);
                    s.frames.iter_mut().for_each(|f| {
                        f.function = trunc(&f.function);
                        f.file = trunc(&f.file);
                    });
                    s
                })
                .collect::<Vec<_>>()[..],
            "{label}"
        );
    }
    assert_eq!(
        back.device_memory_profiles.len(),
        r.device_memory_profiles.len(),
        "{label}"
    );
    for (a, b) in back
        .device_memory_profiles
        .iter()
        .zip(&r.device_memory_profiles)
    {
        assert_eq!(
            (
                a.buffer_bytes,
                a.buffer_count,
                a.executable_bytes,
                &a.devices,
                &a.balance.as_ref().map(|x| (x.min_bytes, x.max_bytes))
            ),
            (
                b.buffer_bytes,
                b.buffer_count,
                b.executable_bytes,
                &b.devices,
                &b.balance.as_ref().map(|x| (x.min_bytes, x.max_bytes))
            ),
            "{label}"
        );
    }
    assert_eq!(
        back.device_memory_series.len(),
        r.device_memory_series.len(),
        "{label}"
    );
    for (a, b) in back
        .device_memory_series
        .iter()
        .zip(&r.device_memory_series)
    {
        assert_eq!(
            (&a.inputs, &a.buffer_bytes),
            (&b.inputs, &b.buffer_bytes),
            "{label}"
        );
    }
    assert_eq!(
        back.memory_timelines.len(),
        r.memory_timelines.len(),
        "{label}"
    );
    for (a, b) in back.memory_timelines.iter().zip(&r.memory_timelines) {
        assert_eq!(
            (
                a.peak_bytes,
                a.peak_time,
                a.final_bytes,
                &a.peak_by_category,
                a.events
            ),
            (
                b.peak_bytes,
                b.peak_time,
                b.final_bytes,
                &b.peak_by_category,
                b.events
            ),
            "{label}"
        );
        assert!(a.points.len() <= 200, "{label}");
        if let Some(top) = b.points.iter().max_by_key(|p| p.bytes) {
            assert!(
                a.points
                    .iter()
                    .any(|p| p.time == top.time && p.bytes == top.bytes),
                "{label}: the timeline lost its peak"
            );
        }
    }
}

fn trunc(s: &str) -> String {
    if s.chars().count() <= 200 {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(199).collect();
        t.push('…');
        t
    }
}

fn runtime_round_trip(label: &str, r: &Report) -> (usize, Vec<String>) {
    let view = ViewState {
        view: "verdict".into(),
        ..Default::default()
    };
    let size = check_round_trip(label, r);
    let (fragment, reductions) = encode_fragment(r, &view, 1).unwrap();
    let back = decode(&fragment).unwrap();
    if !reductions
        .iter()
        .any(|x| x.contains("stacks at the peak dropped"))
    {
        check_runtime(label, r, &back);
    } else {
        // Reduced: the numbers and the peak still travel.
        let mut r = r.clone();
        for m in &mut r.memory_snapshots {
            m.stacks_at_peak.clear();
        }
        let mut back = back;
        for m in &mut back.memory_snapshots {
            m.stacks_at_peak.clear();
        }
        check_runtime(label, &r, &back);
    }
    (size, reductions)
}

#[test]
fn every_corpus_snapshot_travels_with_its_peak_and_oom() {
    let dir = corpus().join("snapshots");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.contains(".pickle") || n.ends_with(".pkl")
        })
        .collect();
    paths.sort();
    assert!(paths.len() >= 60, "{}", paths.len());
    let mut largest = (0u64, 0usize, String::new());
    let mut over_typical = 0;
    for path in &paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let r = analyze_one(path);
        // (A few corpus snapshots are empty: no device has a trace.)
        assert!(
            !r.memory_snapshots.is_empty() || r.inputs[0].size_bytes < 4096,
            "{name}"
        );
        let (size, reductions) = runtime_round_trip(&name, &r);
        over_typical += usize::from(size > TYPICAL_BUDGET);
        let input = std::fs::metadata(path).unwrap().len();
        if input > largest.0 {
            largest = (input, size, format!("{reductions:?}"));
        }
    }
    println!(
        "largest snapshot ({} bytes): link {} bytes, reductions {}; {over_typical} of {} links over {TYPICAL_BUDGET}",
        largest.0, largest.1, largest.2, paths.len()
    );
    assert!(
        largest.1 <= TYPICAL_BUDGET,
        "largest snapshot: {} bytes",
        largest.1
    );
    assert_eq!(over_typical, 0);
}

#[test]
fn jax_profiles_and_timelines_travel_with_their_totals() {
    let mut paths = vec![
        fixtures().join("jax-memory-profiles/mlp_1dev.prof"),
        fixtures().join("jax-memory-profiles/sharded_8dev.prof"),
    ];
    for e in std::fs::read_dir(corpus().join("runtime")).unwrap() {
        let p = e.unwrap().path();
        if !p.to_string_lossy().ends_with("INDEX.md") {
            paths.push(p);
        }
    }
    let mut timelines = 0;
    let mut profiles = 0;
    for path in &paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let r = analyze_one(path);
        timelines += r.memory_timelines.len();
        profiles += r.device_memory_profiles.len();
        let (size, _) = runtime_round_trip(&name, &r);
        assert!(size <= TYPICAL_BUDGET, "{name}: {size} bytes");
    }
    assert!(timelines > 0 && profiles > 0, "{timelines} {profiles}");
    // A run's profiles at several steps: the series travels.
    let leak = fixtures().join("jax-memory-profiles/leak");
    let mut files: Vec<_> = std::fs::read_dir(&leak)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let r = analyze(
        files
            .iter()
            .map(|p| oomscope_analyzer::InputFile {
                name: p.file_name().unwrap().to_string_lossy().into_owned(),
                data: std::fs::read(p).unwrap(),
            })
            .collect(),
        &mut |_| {},
    );
    assert!(!r.device_memory_series.is_empty());
    runtime_round_trip("leak", &r);
}

/// A link made before the run-time sections were carried (by the encoder of
/// commit 4536007, from the corpus OOM snapshot): it still opens, with its
/// OOM numbers, and simply has no snapshot section.
const OLD_SNAPSHOT_LINK: &str = "r=1.eNq9WEtsJEcZZuyQ9Xayu95ZwpoJEpWWImZW4x53z3g8MxaH9ebBI7trrXfFS2hU7q6Zqbi7qrer2vawWsVCXCKFG4ccI6SICxJKDiDEQ0FIIA4gkJDgiMSBCydOHDjk_6u7x23HyWnWB2vcXfU_6n99X_VSZfnoH7_90VudmmctKSfm_l7IqlciFslkOlSCxmoi9cov332nYi-73bX-RrfT7bT7bb_T9ew_XbUsLRN_MvTTgFYXx3Fam2mpV7y3KrcevHSTyFQTOSKZUlLPfwvlTRKwfe4z4jYGRCecBURLQsNQ-lQz0nH6HfIq39okRteEBqTvOt46uc23yChhbJNs9Byvj3tmUkETX3Y88zJhiiX7LBiAtygw3J1qppaPjv6yOrhuXS6WZ6-P_v6LBVi4krCHKVO6tPLev64NXrBqM4lUzAzme37y9q-2Bs9ZV9mhTqiDURlmp1uuDFasK6e3_-3fv_shGPu8dT0TgD-fDdk-E3rIRcAOl99d3Lq7VMltv5zGAUgPhQyYIq1I6BY803ZrQuWUirFKRetWmmwn8nXm65ZK_BZo5KIVgUAIiZkO3I3O1t7SQq6QJixMSWsiI1bWQQX1pQhAMRP7qjUWohXy3VY81RMp2o7rthTXbDWm_h4dM9UyNdCCXaNU-JpLCEtma80F7xfn7f1T5-n9p-ft_dPn6f2FeXu_dJ7eX5y399Z5ev_MfL2_u_TsPBX2QOGl5aN3_vO_p-ajsLv1cOlyrnA8kskBTYI5hhhMpSG8CLlgNDEmvXU4w5V5n2H5_M9wdd5nqJ7_Ga7N-wyfOeczfPVTWz_9gvVMkgrNIzaUMqpeNhKOT0EF19Pq8_mik2H6kPp-GqUhxdav_bxirWT7hRRDcMIQo4zsVF-4nZGeVAG9AT6keMCInjBgMDRiBzLZs_V9eIyYUuArCSQET0hNxnyfkYMJ1WR7eh81kokMA0XoGGKmtNGRefNFhdqbRMmCaRV2CkmfClS5i2aoShMWODcWHj2uPbSuZY7HCd_H3MVShqp63RCucULjiTJWc732l8qeJiyWiUZnC7NckFwRMYpIvaSokZn860JhEwIwjoDvmCBWnVfKjwND8Mp6OfMhMFpKoiIgU_b3K27bQ4aIbJCrGdcju9PZsXeBfpaYWpNA6kHHhAoTvYJgkpzvodGSD8AppSglhB3GIYQ-Sx7lIYTRufG9yiPbUEugcSwBWxm_swe99ka_73U8r7PWzHZwcXKHu97vNm0Opawh1WfKfTzfBHHg4v2e2-s9rv3-onW6YKv3Z-WB0RmlYbhSsd-rzGqJqrPYM6l_lD03mqd4N5GiVH2bJyux8ACtYtQS5sskYMHmmSEngjGo6Y7TWzevId0sSxA6DbacG79ZeGTjruOTr3tue811-91e09YyHmIzqyHVw5jRPXvwbXsusEvqXt_p9oxbkHXXa9jNeWjuuaC542x4heb1OSne6JK6C5Fsl13-zmPvg0Xr14sPFCOm0LLS9ifM34sllCQXY1LPiifVHFQdLzWJTMjr9LD0qoE3NExpFKe6rFGRvDN2YeaaoR1TpRxyU0PTUUj0cYpTeBpLh2CF7vLxGMsAhwxLYLhlcw0TOSBPKI2b5MlkcS56z0qi471s3cIERvwQWjSG-HOFWczzRlMN3QtRPOAaht4olFS73QYB-CxnyPG2rTv3WJD6LM-UhkGg-HcBOowkzOmAw_QjZXTDhO8xFhsRNhoxM60yYce7bX1tZ5JlG-EMBpxqzvRAOgVgXgzACUYSojQig9yHf1HZq9sPACFe2Xlpu0m-xe7dbTi1n1Ws5wqkhfs3DabDcSIP9KR6acc8kuzRfrNyp0CdVVS4CrtjRWBgcQg9zA6IAUyMgfkllJg4Y6mHcpwdNs6FZh8nIFg6Tle5GAHE0CgGrDDVrlkYElW2DoNJRqBUxXyPZaj2TevSzG98W312Jw0CJrI9dvcOA5twbkqMzdxPgQkyWIKuFSNx5n2m-v2K9blCN-4DUTEe7qaQikRVa68Vr47Tl6_ZKcbIEB5IBA2nip8IDQ0Ck4dvvHaTBGkUE-NNnMgRBwn4bIOLs8AZvyEcZhaY0irsrWIJGW4DM0FlTv_5aeuTKFPV3i7Cv09DODWUWKxP4grA1R8rX4EI5l-VmgVKmWljUjCfAQFXQoAhrEoEnMAUral4mHJw8gHxnLUMmHBlvb3utDPWYd7FprBht6lr1yNZJda7jrdhejiEdgHu8wcgCga_AKWSIW4CIOu67U5nDZHelxCt0hLYRNoAPWUP5oNnADJhiWd0N9pd1-t1emBHhTLOF87yDl0xpwLS4T32_rtgvb9wG44LFYvDJDjupTyZ2DWQx4mEaqaYViQhwvQQ1hUGF0sqpyc0SejU4AeFYCmkbABERoMAVoUt6xAohJy6DIBiQEc6QPCjesP0rePHab3RKOqncCuUwPZgGeZSwn2S8PEE_BnpfP6gxxkKIYGYUzHh2VS5SIr6cJY_-PGbb3u19dCMT4x10WNoHphTubxzHAxxqqN07QdwxygaCtFxiBAs4ZaD3bTy9UkJOLHHI2hxUG_vwAgoKF8-6FCFObAZg8j6xvLk1CR1HAIO8F3g9_k9ZliI5TT-Deuzp_p7l4YUEl198a6YMc_sxnJM6tBFiYMQSgk8y3fljpUnz4E0iUPBbJM6PRbfsKqFA3iVAxIYcV19Ho2bUjQD4sT3Z_vLYLI8fkFemShA6bVfxI0cMMsoQuvF_SbPi3mDX6mzEWf_f-EjpPufC0WsAdtOGodxq_YgtDg4CxJ8mlc75A7WO7o4KA3Cgr-T-kmanJFi-HT-cbyuCVzA7ZKCHjQRffDuBBVp4NvwO4Xwjd14jOBnwrYB6pbB6YzKn6Ru5FQBPikKfiG_ed27aF2AgRtwX38IEyq1MA";

#[test]
fn a_link_from_before_the_run_time_sections_still_opens() {
    let back = decode(OLD_SNAPSHOT_LINK).unwrap();
    let r = analyze_one(
        &corpus().join("snapshots/Constructor-Sun__code_location__memory_snapshot.pickle"),
    );
    assert!(back.memory_snapshots.is_empty());
    assert_eq!(back.oom_events.len(), r.oom_events.len());
    for (a, b) in back.oom_events.iter().zip(&r.oom_events) {
        assert_eq!(
            (a.kind, a.requested_bytes, a.limit_bytes, a.used_bytes),
            (b.kind, b.requested_bytes, b.limit_bytes, b.used_bytes)
        );
    }
    // The link carries the headline as it was worded then (the source was
    // "PyTorch GPU" before it was named "PyTorch CUDA"): the same node and
    // the same numbers as today's.
    let (old, now) = (
        back.diagnosis.headline.unwrap(),
        r.diagnosis.headline.unwrap(),
    );
    assert_eq!(old.node, now.node);
    for figure in ["4.94 GiB", "91.25 MiB", "4.85 GiB"] {
        assert!(old.text.contains(figure) && now.text.contains(figure), "{figure}");
    }
    assert_eq!(back.shared.unwrap().created_unix_ms, 1_790_000_000_000);
}

/// A link made before `OomEvent` carried what the message's form says
/// (fields 11–13 absent): each is derived from the carried text, so the
/// link opens with the same typed fields, and the page's diagnosis of it
/// (made again when a device is picked) is the same as a new link's.
#[test]
fn a_link_from_before_the_typed_event_fields_opens_with_the_same_diagnosis() {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use oomscope_proto::oomscope::report as pb;
    use oomscope_proto::prost::Message;
    use std::io::{Read, Write};

    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/logs/tests/samples");
    for name in [
        "tpu_runtime_reserve.txt",
        "tpu_runtime_allocate.txt",
        "torch_xla_runtime_allocate8020.txt",
        "torch_hip_strixhalo3.txt",
        "torch_reserved_vdsr2.txt",
        "tpu_scoped_vmem_pallas_one_line.txt",
        "tpu_scoped_vmem_e1001_splash.txt",
        "tpu_vmem_would_exceed.txt",
        "tpu_early_abort.txt",
    ] {
        let r = analyze_one(&samples.join(name));
        let view = ViewState::default();
        let (fragment, _) = encode_fragment(&r, &view, 1).unwrap();
        let payload = fragment.strip_prefix("r=1.").unwrap();
        let mut bytes = Vec::new();
        flate2::read::ZlibDecoder::new(&URL_SAFE_NO_PAD.decode(payload).unwrap()[..])
            .read_to_end(&mut bytes)
            .unwrap();
        let mut old = pb::SharedReport::decode(&bytes[..]).unwrap();
        for e in &mut old.oom_events {
            assert!(e.tpu_runtime_failure.is_some() && e.gpu_platform.is_some(), "{name}");
            e.tpu_runtime_failure = None;
            e.gpu_platform = None;
            e.scoped_instruction = None;
            e.early_abort = None;
        }
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&old.encode_to_vec()).unwrap();
        let old_link = format!("r=1.{}", URL_SAFE_NO_PAD.encode(enc.finish().unwrap()));
        let (now, before) = (decode(&fragment).unwrap(), decode(&old_link).unwrap());
        for (a, b) in before.oom_events.iter().zip(&r.oom_events) {
            assert_eq!(
                (a.tpu_runtime_failure, a.gpu_platform, a.scoped_instruction),
                (b.tpu_runtime_failure, b.gpu_platform, b.scoped_instruction),
                "{name}"
            );
            assert_eq!(a.early_abort, b.early_abort, "{name}");
            assert_eq!(a.source_words(), b.source_words(), "{name}");
        }
        let (d_now, d_before) = (
            oomscope_diagnosis::diagnose(&now),
            oomscope_diagnosis::diagnose(&before),
        );
        assert_eq!(d_before.path, d_now.path, "{name}");
        assert_eq!(d_before.headline, d_now.headline, "{name}");
        assert_eq!(d_now.path, r.diagnosis.path, "{name}");
    }
}
