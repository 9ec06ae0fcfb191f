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
