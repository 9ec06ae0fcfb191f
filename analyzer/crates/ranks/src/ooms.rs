//! The same OOM printed by several ranks of one job is one OOM with its
//! ranks listed. The log reader merges copies whose numbers agree (and
//! lists their `[rankN]:` ranks on the event); copies whose numbers differ
//! (each GPU has its own free memory) stay separate events, gathered here
//! when they are the same failure: same log, same kind, same request, same
//! device size. The numbers that differ are listed per rank.
//!
//! When the log's lines carry a logger's time (`OomEvent::rank_times`),
//! the rank that failed first is a finding (`oom_first`): in a job whose
//! ranks wait on each other, the first to fail is the one to look at, the
//! others often fail because it did.

use oomscope_report::units::format_bytes;
use oomscope_report::{
    OomEvent, RankFinding, RankFindingKind, RankNumber, RankOom, RankTime, Report,
};
use std::collections::BTreeMap;

/// The OOMs of `report` that name ranks, one per failure.
pub fn rank_ooms(report: &Report) -> Vec<RankOom> {
    let mut out: Vec<(Key, RankOom)> = Vec::new();
    for (i, e) in report.oom_events.iter().enumerate() {
        if e.ranks.is_empty() {
            continue;
        }
        let key = key(e);
        let at = match out.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                out.push((
                    key,
                    RankOom {
                        input: e.input.clone(),
                        line: e.line,
                        message: e.message.clone(),
                        ..RankOom::default()
                    },
                ));
                out.len() - 1
            }
        };
        let oom = &mut out[at].1;
        oom.events.push(i as u32);
        oom.ranks.extend(&e.ranks);
    }
    out.into_iter()
        .map(|(_, mut oom)| {
            oom.ranks.sort_unstable();
            oom.ranks.dedup();
            oom.differing = differing(&report.oom_events, &oom.events);
            oom
        })
        .collect()
}

type Key = (String, oomscope_report::OomKind, Option<u64>, Option<u64>);

fn key(e: &OomEvent) -> Key {
    (e.input.clone(), e.kind, e.requested_bytes, e.limit())
}

/// The named byte counts of an event.
fn numbers(e: &OomEvent) -> BTreeMap<String, u64> {
    let named = [
        ("used_bytes", e.used_bytes),
        ("limit_bytes", e.limit_bytes),
        ("requested_bytes", e.requested_bytes),
        ("free_bytes", e.free_bytes),
        ("reserved_bytes", e.reserved_bytes),
        ("reserved_unallocated_bytes", e.reserved_unallocated_bytes),
        ("total_capacity_bytes", e.total_capacity_bytes),
        ("allocated_bytes", e.allocated_bytes),
    ];
    let mut out: BTreeMap<String, u64> = named
        .iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
        .collect();
    // Byte counts only: a device index (`extra.device`) differs between
    // ranks by nature and is no number of memory.
    for (k, v) in e.extra.iter().filter(|(k, _)| k.ends_with("_bytes")) {
        out.insert(format!("extra.{k}"), *v);
    }
    out
}

/// Numbers that differ between the events of one OOM, per rank.
fn differing(events: &[OomEvent], indices: &[u32]) -> Vec<RankNumber> {
    let picked: Vec<&OomEvent> = indices
        .iter()
        .filter_map(|&i| events.get(i as usize))
        .collect();
    if picked.len() < 2 {
        return Vec::new();
    }
    let per_event: Vec<BTreeMap<String, u64>> = picked.iter().map(|e| numbers(e)).collect();
    let mut fields: Vec<&String> = per_event.iter().flat_map(|m| m.keys()).collect();
    fields.sort();
    fields.dedup();
    let mut out = Vec::new();
    for field in fields {
        let values: Vec<Option<&u64>> = per_event.iter().map(|m| m.get(field)).collect();
        if values.windows(2).all(|w| w[0] == w[1]) {
            continue;
        }
        let mut by_rank = Vec::new();
        for (e, v) in picked.iter().zip(&values) {
            if let Some(v) = v {
                by_rank.extend(e.ranks.iter().map(|r| (*r, **v)));
            }
        }
        by_rank.sort_unstable();
        out.push(RankNumber {
            field: field.clone(),
            by_rank,
        });
    }
    out
}

/// The rank that ran out of memory first, when the OOM lines of two or more
/// ranks carry times and one is strictly earliest.
pub fn oom_first(report: &Report) -> Option<RankFinding> {
    // Each rank's earliest OOM line, with its event.
    let mut first: Vec<(&RankTime, &OomEvent)> = Vec::new();
    for e in &report.oom_events {
        for t in &e.rank_times {
            match first.iter_mut().find(|(o, _)| o.rank == t.rank) {
                Some(slot) if t.earlier_than(slot.0) => *slot = (t, e),
                Some(_) => {}
                None => first.push((t, e)),
            }
        }
    }
    if first.len() < 2 {
        return None;
    }
    first.sort_by(|a, b| {
        if a.0.earlier_than(b.0) {
            std::cmp::Ordering::Less
        } else if b.0.earlier_than(a.0) {
            std::cmp::Ordering::Greater
        } else {
            a.0.rank.cmp(&b.0.rank)
        }
    });
    let ((t, e), (next, _)) = (first[0], first[1]);
    // Two ranks at the same printed time: no first to name.
    if !t.earlier_than(next) {
        return None;
    }
    let requested = e.requested_bytes.map_or(String::new(), |b| {
        format!(" trying to allocate {}", format_bytes(b))
    });
    let others = first.len() - 1;
    Some(RankFinding {
        kind: RankFindingKind::OomFirst,
        rank: t.rank,
        bytes: e.requested_bytes.unwrap_or(0),
        text: format!(
            "rank {} ran out of memory first, at {}{requested} ({} line {}); {others} other rank{} failed after it, rank {} next at {}",
            t.rank,
            t.time,
            e.input,
            t.line,
            if others == 1 { "" } else { "s" },
            next.rank,
            next.time,
        ),
        time: Some(t.time.clone()),
        ..RankFinding::default()
    })
}
