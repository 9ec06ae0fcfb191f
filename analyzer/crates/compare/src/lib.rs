//! Compare two runs (issue 18): the report of the run before a change (A)
//! and after it (B), aligned, with the difference explained.
//!
//! - [`modules`]: which compiled module of A is which of B;
//! - [`buffers`]: which buffer at A's peak is which at B's;
//! - [`causes`]: why each buffer changed (dtype, donation, remat, batch,
//!   sharding, padding, or just appeared/disappeared/grew/shrank);
//! - [`module_diff`]: one module's peak difference cut into named changes
//!   that sum to it;
//! - [`events`], [`series`], [`stacks`]: OOM errors number by number,
//!   memory per step, allocator and stack profiles;
//! - [`estimates`]: A's decision-tree estimates next to the real change.
//!
//! Pure analysis over two [`Report`]s: no decoding, no I/O.

pub mod buffers;
pub mod causes;
pub mod estimates;
pub mod events;
pub mod module_diff;
pub mod modules;
pub mod series;
pub mod stacks;

use oomscope_report::compare::{
    ComparedSide, Comparison, ComparisonNote, ModuleMatch, ModulePeak, NoteKind,
};
use oomscope_report::Report;

pub use oomscope_report::compare;

/// Compare report `a` (before) with report `b` (after).
pub fn compare(a: &Report, b: &Report, label_a: &str, label_b: &str) -> Comparison {
    let mut c = Comparison {
        a: side(a, label_a),
        b: side(b, label_b),
        ..Comparison::default()
    };
    for s in [&c.a, &c.b] {
        if s.failed {
            let why = s
                .errors
                .first()
                .map(String::as_str)
                .unwrap_or("no input given");
            c.notes.push(ComparisonNote {
                kind: NoteKind::SideFailed,
                text: format!(
                    "{} could not be loaded ({why}); the other side is shown alone",
                    s.label
                ),
            });
        }
    }

    let (pairs, only_a, only_b) = modules::pair_modules(&a.modules, &b.modules);
    c.modules = pairs
        .iter()
        .map(|p| module_diff::compare_module(&a.modules[p.a], &b.modules[p.b], p))
        .collect();
    c.modules.sort_by(|x, y| {
        y.difference_bytes
            .unsigned_abs()
            .cmp(&x.difference_bytes.unsigned_abs())
            .then(x.name.cmp(&y.name))
    });
    c.only_in_a = only_a
        .iter()
        .map(|&i| module_label(&a.modules[i]))
        .collect();
    c.only_in_b = only_b
        .iter()
        .map(|&j| module_label(&b.modules[j]))
        .collect();
    if pairs.is_empty() && !a.modules.is_empty() && !b.modules.is_empty() {
        c.notes.push(ComparisonNote {
            kind: NoteKind::NoModuleInCommon,
            text: format!(
                "No module in common: {} has {}, {} has {}; both are shown as they are",
                c.a.label,
                names(
                    &only_a
                        .iter()
                        .map(|&i| a.modules[i].display_name())
                        .collect::<Vec<_>>()
                ),
                c.b.label,
                names(
                    &only_b
                        .iter()
                        .map(|&j| b.modules[j].display_name())
                        .collect::<Vec<_>>()
                )
            ),
        });
    }
    for m in c
        .modules
        .iter()
        .filter(|m| m.matched_by == ModuleMatch::LowConfidence)
    {
        c.notes.push(ComparisonNote {
            kind: NoteKind::LowConfidenceMatch,
            text: format!(
                "{} and {} were paired for lack of a better match ({:.0}% of their program in common): their buffers are compared, no cause is named",
                m.module_a,
                m.module_b,
                m.similarity * 100.0
            ),
        });
    }

    c.oom_events = events::compare_events(&a.oom_events, &b.oom_events);
    c.step_series = series::compare_series(&a.step_series, &b.step_series);
    c.allocator_profiles = series::compare_allocators(&a.allocator_profiles, &b.allocator_profiles);
    c.memory_timelines = series::compare_timelines(&a.memory_timelines, &b.memory_timelines);
    c.stack_profiles = stacks::compare_stack_profiles(a, b);
    c.estimates = estimates::check_estimates(a, &c.modules);

    let anything = !c.modules.is_empty()
        || !c.oom_events.is_empty()
        || !c.step_series.is_empty()
        || !c.allocator_profiles.is_empty()
        || !c.memory_timelines.is_empty()
        || !c.stack_profiles.is_empty();
    if !anything
        && !c.a.failed
        && !c.b.failed
        && !c.notes.iter().any(|n| n.kind == NoteKind::NoModuleInCommon)
    {
        c.notes.push(ComparisonNote {
            kind: NoteKind::NothingInCommon,
            text: format!(
                "{} and {} hold no input of the same kind; both are shown as they are",
                c.a.label, c.b.label
            ),
        });
    }
    c
}

/// `jit_f(3)`, or `jit_f(3) in VMEM (on-chip vector memory)` outside HBM.
fn module_label(m: &oomscope_report::ModuleReport) -> String {
    match m.memory_space {
        oomscope_report::MemoryColor::Device => m.display_name(),
        space => format!("{} in {}", m.display_name(), space.words()),
    }
}

/// Up to five distinct names, `a, b and 3 more`.
fn names(list: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut list = list.to_vec();
    list.dedup();
    let mut s = list
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if list.len() > SHOWN {
        s.push_str(&format!(" and {} more", list.len() - SHOWN));
    }
    s
}

/// A side's label, inputs and errors; it failed when nothing of it loaded.
fn side(r: &Report, label: &str) -> ComparedSide {
    let loaded = !r.modules.is_empty()
        || !r.oom_events.is_empty()
        || !r.step_series.is_empty()
        || !r.allocator_profiles.is_empty()
        || !r.memory_snapshots.is_empty()
        || !r.device_memory_profiles.is_empty()
        || !r.memory_timelines.is_empty();
    let mut module_peaks: Vec<ModulePeak> = r
        .modules
        .iter()
        .map(|m| ModulePeak {
            module: m.display_name(),
            memory_space: m.memory_space,
            peak_bytes: m.peak_bytes,
            peak_kind: m.peak_kind.clone(),
        })
        .collect();
    module_peaks.sort_by(|x, y| {
        y.peak_bytes
            .cmp(&x.peak_bytes)
            .then(x.module.cmp(&y.module))
    });
    ComparedSide {
        label: label.to_string(),
        inputs: r.inputs.iter().map(|i| i.name.clone()).collect(),
        failed: !loaded,
        errors: r.errors.iter().map(|e| e.message.clone()).collect(),
        headline: r
            .diagnosis
            .headline
            .as_ref()
            .map(|h| h.text.clone())
            .unwrap_or_default(),
        module_peaks,
    }
}
