//! Many ranks of one job side by side (issue 26).
//!
//! Takes a [`Report`] whose inputs were already analysed one by one (device
//! memory profiles, snapshots, step logs, XProf profiles' allocator
//! timelines, OOM logs) and:
//! 1. recognises each input's rank: from its name ([`names`]), else from its
//!    contents (a JAX device id, a snapshot's CUDA device); OOM logs carry
//!    the ranks that printed each error (`OomEvent::ranks`);
//! 2. groups the inputs of one run: same kind and same name once the digits
//!    are blanked (`rank#/memory_step#.prof`). Files of another kind or run
//!    are left out and said to be, never forced into ranks;
//! 3. summarises each rank (peak, final, curve over steps, growth per step,
//!    OOM) and takes the median rank as the reference;
//! 4. names the ranks that differ ([`findings`]): growth while the median
//!    stays flat, or a constant excess, each with the allocation site that
//!    makes the difference, found with the comparison's stack matching.
//!
//! It depends on no format crate: everything it reads is in the `Report`.

pub mod findings;
pub mod names;
pub mod ooms;

use names::NameRank;
use oomscope_report::{
    RankFinding, RankNote, RankNoteKind, RankOom, RankOverride, RankSource, RankSummary, Report,
    StackSample,
};
use std::collections::BTreeMap;

/// What [`analyze`] adds to a report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranks {
    pub ranks: Vec<RankSummary>,
    pub findings: Vec<RankFinding>,
    pub ooms: Vec<RankOom>,
    pub notes: Vec<RankNote>,
}

/// The family of an input, as far as ranks go: inputs of different
/// families are never one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ItemKind {
    DeviceMemoryProfile,
    MemorySnapshot,
    StepLog,
    /// An XProf profile (`<host>.xplane.pb`, one per host): its allocator
    /// timelines.
    XprofProfile,
}

impl ItemKind {
    fn plural(self) -> &'static str {
        match self {
            ItemKind::DeviceMemoryProfile => "device memory profiles",
            ItemKind::MemorySnapshot => "memory snapshots",
            ItemKind::StepLog => "step logs",
            ItemKind::XprofProfile => "XProf profiles",
        }
    }
}

/// One analysed input, as the ranks see it.
#[derive(Debug, Clone)]
pub struct Item<'a> {
    pub input: &'a str,
    pub kind: ItemKind,
    pub rank: Option<(u32, RankSource)>,
    pub step: Option<u64>,
    pub device: String,
    /// The input's largest total (a profile's live buffers, a snapshot's peak).
    pub total: u64,
    /// Its total at the end.
    pub last: u64,
    pub oom: bool,
    /// Live bytes by stack at `total`.
    pub stacks: &'a [StackSample],
}

/// Every input of `report` a rank can be read for, in report order.
pub fn items(report: &Report) -> Vec<Item<'_>> {
    let mut out = Vec::new();
    for p in &report.device_memory_profiles {
        let name_rank = names::rank_of(&p.input);
        let device = match p.devices.as_slice() {
            [one] => one.device.clone(),
            _ => String::new(),
        };
        let content = device_rank(
            &p.devices
                .iter()
                .map(|d| d.device.as_str())
                .collect::<Vec<_>>(),
        );
        out.push(Item {
            input: &p.input,
            kind: ItemKind::DeviceMemoryProfile,
            rank: from_name(name_rank).or(content.map(|r| (r, RankSource::DeviceId))),
            step: names::step_of(&p.input, name_rank),
            device,
            total: p.buffer_bytes,
            last: p.buffer_bytes,
            oom: false,
            stacks: &p.top_stacks,
        });
    }
    // A snapshot file holds one entry per CUDA device; a rank's file has one
    // device in use, the one with the highest peak.
    let mut by_input: BTreeMap<&str, &oomscope_report::MemorySnapshot> = BTreeMap::new();
    let mut order = Vec::new();
    for s in &report.memory_snapshots {
        match by_input.get(s.input.as_str()) {
            Some(best) if best.peak_allocated_bytes >= s.peak_allocated_bytes => {}
            Some(_) => {
                by_input.insert(&s.input, s);
            }
            None => {
                order.push(s.input.as_str());
                by_input.insert(&s.input, s);
            }
        }
    }
    for input in order {
        let Some(s) = by_input.get(input) else {
            continue;
        };
        let name_rank = names::rank_of(input);
        out.push(Item {
            input,
            kind: ItemKind::MemorySnapshot,
            rank: from_name(name_rank).or(Some((s.device, RankSource::SnapshotDevice))),
            step: names::step_of(input, name_rank),
            device: format!("cuda:{}", s.device),
            total: s.peak_allocated_bytes,
            last: s.final_allocated_bytes,
            oom: report
                .memory_snapshots
                .iter()
                .any(|o| o.input == input && o.oom.is_some()),
            stacks: &s.stacks_at_peak,
        });
    }
    for series in &report.step_series {
        let name_rank = names::rank_of(&series.input);
        let content = series
            .device
            .strip_prefix("rank")
            .and_then(|r| r.trim().parse().ok())
            .map(|r| (r, RankSource::LogPrefix));
        out.push(Item {
            input: &series.input,
            kind: ItemKind::StepLog,
            rank: from_name(name_rank).or(content),
            step: None,
            device: series.device.clone(),
            total: series.points.iter().map(|p| p.bytes).max().unwrap_or(0),
            last: series.points.last().map_or(0, |p| p.bytes),
            oom: false,
            stacks: &[],
        });
    }
    // An XProf profile per host: the host's memory is its busiest
    // allocator's (the device that runs out first), as XProf's memory
    // profile shows one allocator at a time.
    let mut hosts: Vec<(&str, &oomscope_report::AllocatorProfile)> = Vec::new();
    for a in &report.allocator_profiles {
        match hosts.iter_mut().find(|(input, _)| *input == a.input) {
            Some(slot) if a.peak_heap_bytes > slot.1.peak_heap_bytes => slot.1 = a,
            Some(_) => {}
            None => hosts.push((&a.input, a)),
        }
    }
    for (input, a) in hosts {
        let name_rank = names::rank_of(input);
        let host_rank = names::rank_of_host(&a.host).map(|r| (r, RankSource::Hostname));
        out.push(Item {
            input,
            kind: ItemKind::XprofProfile,
            rank: from_name(name_rank).or(host_rank),
            step: names::step_of(input, name_rank),
            device: a.allocator.clone(),
            total: a.peak_heap_bytes,
            last: a.timeline.last().map_or(0, |p| p.heap_bytes),
            oom: false,
            stacks: &[],
        });
    }
    // The user's corrections win over every clue.
    for item in &mut out {
        if let Some(o) = report.rank_overrides.iter().find(|o| o.input == item.input) {
            item.rank = Some((o.rank, RankSource::User));
            item.step = o.step;
        }
    }
    out
}

fn from_name(r: Option<NameRank>) -> Option<(u32, RankSource)> {
    r.map(|r| (r.rank, RankSource::Name))
}

/// JAX numbers devices globally: on CPU, process `p`'s devices are
/// `cpu:{2048 p}`, `cpu:{2048 p + 1}`, …; a profile holds its own process's
/// devices only. Elsewhere a profile with one device gives its id (one
/// device per process, as GPU jobs run).
fn device_rank(devices: &[&str]) -> Option<u32> {
    const CPU_DEVICES_PER_PROCESS: u32 = 2048;
    let ids: Vec<(&str, u32)> = devices
        .iter()
        .filter_map(|d| {
            let (platform, id) = d.split_once(':')?;
            Some((platform, id.parse().ok()?))
        })
        .collect();
    let (platform, first) = *ids.first()?;
    if platform == "cpu" {
        let p = first / CPU_DEVICES_PER_PROCESS;
        return ids
            .iter()
            .all(|(pl, id)| *pl == "cpu" && id / CPU_DEVICES_PER_PROCESS == p)
            .then_some(p);
    }
    (ids.len() == 1).then_some(first)
}

/// How many distinct ranks `members` name.
fn distinct(members: &[&Item]) -> usize {
    let mut r: Vec<u32> = members
        .iter()
        .filter_map(|i| i.rank.as_ref().map(|r| r.0))
        .collect();
    r.sort_unstable();
    r.dedup();
    r.len()
}

/// The run's name template of an item: its kind and name, digits blanked.
fn group_key(item: &Item) -> (ItemKind, String) {
    (item.kind, names::template(item.input))
}

/// Sets the ranks view of `report` (`ranks`, `rank_findings`, `rank_ooms`,
/// `rank_notes`) from its inputs and `rank_overrides`.
pub fn attach(report: &mut Report) {
    let ranks = analyze(report);
    (report.ranks, report.rank_findings) = (ranks.ranks, ranks.findings);
    (report.rank_ooms, report.rank_notes) = (ranks.ooms, ranks.notes);
}

/// The user corrected the rank (and step) of some inputs: `overrides`
/// replace earlier ones for the same inputs and the ranks view is made
/// again from the report alone, no file read again.
pub fn regroup(report: &mut Report, overrides: Vec<RankOverride>) {
    for o in overrides {
        report.rank_overrides.retain(|old| old.input != o.input);
        report.rank_overrides.push(o);
    }
    attach(report);
}

/// Ranks of `report`'s inputs, when they are several ranks of one run, and
/// the rank that failed first when the logs say when each failed.
pub fn analyze(report: &Report) -> Ranks {
    let mut out = grouped(report);
    out.findings.extend(ooms::oom_first(report));
    out
}

/// The inputs grouped into ranks, their findings, and OOMs of several ranks.
fn grouped(report: &Report) -> Ranks {
    let mut out = Ranks {
        ooms: ooms::rank_ooms(report),
        ..Ranks::default()
    };
    let all = items(report);
    // Groups of one kind and name template, in order of first input.
    let mut groups: Vec<((ItemKind, String), Vec<&Item>)> = Vec::new();
    let user_set = |i: &Item| matches!(i.rank, Some((_, RankSource::User)));
    for item in all.iter().filter(|i| i.rank.is_some() && !user_set(i)) {
        let key = group_key(item);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(item),
            None => groups.push((key, vec![item])),
        }
    }
    // An input whose rank the user set belongs to the run of its kind with
    // most ranks, whatever its name: the user said it is one of them.
    for item in all.iter().filter(|i| user_set(i)) {
        let run = groups
            .iter_mut()
            .filter(|((kind, _), _)| *kind == item.kind)
            .rev() // the first of equals
            .max_by_key(|(_, members)| distinct(members));
        match run {
            Some((_, members)) => members.push(item),
            None => groups.push((group_key(item), vec![item])),
        }
    }
    let best = groups
        .iter()
        .enumerate()
        .filter(|(_, (_, m))| distinct(m) >= 2)
        .max_by(|(ia, (_, a)), (ib, (_, b))| {
            (distinct(a), a.len(), std::cmp::Reverse(*ia)).cmp(&(
                distinct(b),
                b.len(),
                std::cmp::Reverse(*ib),
            ))
        })
        .map(|(i, _)| i);
    let Some(best) = best else {
        return out;
    };
    for (i, ((kind, template), members)) in groups.iter().enumerate() {
        if i == best {
            continue;
        }
        out.notes.push(RankNote {
            kind: RankNoteKind::NotGrouped,
            inputs: members.iter().map(|m| m.input.to_string()).collect(),
            text: format!(
                "{} {} named `{template}` are another run or kind: not grouped with the ranks below",
                members.len(),
                kind.plural()
            ),
        });
    }
    let ((kind, template), members) = &groups[best];
    let limit = report.oom_events.iter().find_map(|e| e.limit());
    let (ranks, clash_notes) = summarise(members);
    out.notes.extend(clash_notes);
    let median = findings::median_rank(&ranks);
    // One clue for every input, or names first and contents where the names give none.
    let sources: Vec<&RankSource> = members
        .iter()
        .filter_map(|m| m.rank.as_ref().map(|r| &r.1))
        .filter(|s| **s != RankSource::User)
        .collect();
    let set_by_user = members.len() - sources.len();
    let how = match sources.first() {
        None => source_words(&RankSource::User).to_string(),
        Some(first) => {
            let clues = if sources.iter().all(|s| *s == *first) {
                source_words(first)
            } else {
                "their file or folder names, else their contents"
            };
            match set_by_user {
                0 => clues.to_string(),
                n => format!("{clues} ({n} set by you)"),
            }
        }
    };
    out.notes.insert(
        0,
        RankNote {
            kind: RankNoteKind::Grouped,
            inputs: members.iter().map(|m| m.input.to_string()).collect(),
            text: format!(
                "{} ranks in {} {} named `{template}`, recognised by {}{}",
                ranks.len(),
                members.len(),
                kind.plural(),
                how,
                median.map_or(String::new(), |m| format!(
                    "; rank {} (the median peak) is the reference",
                    ranks[m].rank
                )),
            ),
        },
    );
    out.notes.extend(failed_ranks(report, template));
    let mut ranks = ranks;
    if let Some(m) = median {
        ranks[m].median = true;
        out.findings = findings::find(&ranks, members, m, limit);
    }
    // A log's `[rankN]:` OOMs mark the ranks of the same numbers.
    for oom in &out.ooms {
        let marked: Vec<String> = ranks
            .iter_mut()
            .filter(|r| oom.ranks.contains(&r.rank))
            .map(|r| {
                r.oom = true;
                r.rank.to_string()
            })
            .collect();
        if !marked.is_empty() {
            out.notes.push(RankNote {
                kind: RankNoteKind::Grouped,
                inputs: vec![oom.input.clone()],
                text: format!(
                    "rank{} {} marked out of memory by the `[rankN]:` lines of {} (line {})",
                    if marked.len() == 1 { "" } else { "s" },
                    marked.join(", "),
                    oom.input,
                    oom.line
                ),
            });
        }
    }
    out.ranks = ranks;
    out
}

fn source_words(source: &RankSource) -> &'static str {
    match source {
        RankSource::Name => "their file or folder names",
        RankSource::DeviceId => {
            "the device ids in the profiles (JAX numbers CPU devices 2048 apart per process)"
        }
        RankSource::SnapshotDevice => "the CUDA device of each snapshot",
        RankSource::LogPrefix => "the rank each log names",
        RankSource::Hostname => "the host each XProf profile was taken on",
        RankSource::User => "the ranks you set",
        RankSource::Other(_) => "their contents",
    }
}

/// One summary per rank, inputs in step order; two inputs claiming the same
/// rank and step are both kept and a note says so.
fn summarise(members: &[&Item]) -> (Vec<RankSummary>, Vec<RankNote>) {
    let mut by_rank: BTreeMap<u32, Vec<&Item>> = BTreeMap::new();
    for m in members {
        if let Some((r, _)) = m.rank {
            by_rank.entry(r).or_default().push(m);
        }
    }
    let mut notes = Vec::new();
    let mut ranks = Vec::new();
    for (rank, mut items) in by_rank {
        items.sort_by(|a, b| (a.step, a.input).cmp(&(b.step, b.input)));
        for w in items.windows(2) {
            if w[0].step == w[1].step {
                let at = w[0]
                    .step
                    .map_or(String::new(), |s| format!(" and step {s}"));
                notes.push(RankNote {
                    kind: RankNoteKind::Clash,
                    inputs: vec![w[0].input.to_string(), w[1].input.to_string()],
                    text: format!(
                        "{} and {} both claim rank {rank}{at}: both are kept, in name order",
                        w[0].input, w[1].input
                    ),
                });
            }
        }
        let all_steps = items.iter().all(|i| i.step.is_some());
        let steps: Vec<u64> = if all_steps {
            items.iter().filter_map(|i| i.step).collect()
        } else {
            Vec::new()
        };
        let bytes: Vec<u64> = items.iter().map(|i| i.total).collect();
        let xs: Vec<f64> = if all_steps {
            steps.iter().map(|&s| s as f64).collect()
        } else {
            (0..bytes.len()).map(|i| i as f64).collect()
        };
        ranks.push(RankSummary {
            rank,
            inputs: items.iter().map(|i| i.input.to_string()).collect(),
            device: items
                .iter()
                .map(|i| i.device.as_str())
                .find(|d| !d.is_empty())
                .unwrap_or("")
                .to_string(),
            peak_bytes: bytes.iter().copied().max().unwrap_or(0),
            final_bytes: items.last().map_or(0, |i| i.last),
            oom: items.iter().any(|i| i.oom),
            source: items[0]
                .rank
                .as_ref()
                .map(|r| r.1.clone())
                .unwrap_or_default(),
            steps,
            growth_per_step_bytes: findings::slope(&xs, &bytes).map(|s| s.round() as i64),
            bytes_per_input: bytes,
            median: false,
        });
    }
    (ranks, notes)
}

/// Inputs that could not be read but name a rank of this run: the rank is
/// named, the others are still shown.
fn failed_ranks(report: &Report, template: &str) -> Vec<RankNote> {
    report
        .errors
        .iter()
        .filter_map(|e| {
            let r = names::rank_of(&e.input)?;
            (names::template(&e.input) == template).then(|| RankNote {
                kind: RankNoteKind::Failed,
                inputs: vec![e.input.clone()],
                text: format!(
                    "rank {}: {} could not be read ({}); the other ranks are shown",
                    r.rank, e.input, e.message
                ),
            })
        })
        .collect()
}
