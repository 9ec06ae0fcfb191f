//! The ranks of a job (issue 26) as the facade runs them: on one report
//! ([`attach`]), on reports of single files analysed apart and then put
//! together ([`combine`]: the page analyses a drop of many snapshots in a
//! pool of workers, one file each, and keeps only each file's report).
//! After the user corrects a rank the page regroups the report it holds
//! itself (`oomscope_ranks::regroup`, a pure function of the report).
//!
//! A PyTorch memory snapshot is the one input read entirely on its own:
//! no cross-input analysis but the ranks and the diagnosis looks at it,
//! so a file's report is nearly its summary ([`summary`]: peak, the Active
//! Memory curve downsampled keeping its exact peak, the top stacks at the
//! peak) and the reports of single snapshots put together are the report
//! of the drop.

use oomscope_report::Report;

pub use oomscope_ranks::attach;

/// Whether an input named `name` is analysed on its own (nothing but the
/// ranks and the diagnosis combines it with other inputs): a snapshot.
pub fn analysed_alone(name: &str) -> bool {
    crate::readers::analysed_alone(name)
}

/// Whether a drop of inputs named `names` can be analysed one file at a
/// time and [`combine`]d: two or more, each [`analysed_alone`]. Anything
/// else is analysed together, as one job.
pub fn per_file(names: &[&str]) -> bool {
    names.len() >= 2 && names.iter().all(|n| analysed_alone(n))
}

/// Stacks a file's summary keeps per snapshot: the largest at the peak (the
/// reader keeps 200). The stack that makes two ranks differ is found among
/// them: it holds more than any stack outside a rank's top 50.
pub const SUMMARY_STACKS: usize = 50;

/// What the page keeps of one file's report in a drop analysed file by
/// file: the report, each snapshot's stacks at the peak cut to the largest
/// [`SUMMARY_STACKS`] (they are most of a big snapshot's report: 800 KB of
/// a 1 MB one, 200 stacks of long Python tracebacks). The rest is already a summary: the snapshot's numbers, its
/// curve downsampled keeping the exact peak, its top lines.
pub fn summary(mut report: Report) -> Report {
    for s in &mut report.memory_snapshots {
        // Largest first, as the snapshot reader sorts them.
        s.stacks_at_peak.truncate(SUMMARY_STACKS);
    }
    report
}

/// The report of a drop from the reports of its files, each analysed
/// alone (in drop order): their inputs, findings and errors in order, then
/// the analyses over every input (ranks, diagnosis). Equal to analysing
/// the files together when [`per_file`] holds (the parts' [`summary`] cut
/// only stacks beyond the top ones).
pub fn combine(parts: Vec<Report>) -> Report {
    let mut out = Report::new();
    for part in parts {
        // Destructured whole, so that a field added to `Report` must be
        // placed here (the build fails until it is).
        let Report {
            schema: _,
            inputs,
            oom_events,
            modules,
            step_series,
            allocator_profiles,
            memory_snapshots,
            device_memory_profiles,
            device_memory_series,
            memory_timelines,
            compile_usages,
            // Recomputed over every part below.
            ranks: _,
            rank_findings: _,
            rank_ooms: _,
            rank_notes: _,
            diagnosis: _,
            rank_overrides,
            errors,
            shared: _,
        } = part;
        out.inputs.extend(inputs);
        out.oom_events.extend(oom_events);
        out.modules.extend(modules);
        out.step_series.extend(step_series);
        out.allocator_profiles.extend(allocator_profiles);
        out.memory_snapshots.extend(memory_snapshots);
        out.device_memory_profiles.extend(device_memory_profiles);
        out.device_memory_series.extend(device_memory_series);
        out.memory_timelines.extend(memory_timelines);
        out.compile_usages.extend(compile_usages);
        out.rank_overrides.extend(rank_overrides);
        out.errors.extend(errors);
    }
    attach(&mut out);
    out.diagnosis = oomscope_diagnosis::diagnose(&out);
    // The snapshots' own what-ifs (each part's trace replayed) join the
    // diagnosis as they do in a whole analysis; no part keeps a program.
    crate::what_if::attach(&mut out, &[], None);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_drops_of_several_snapshots_are_analysed_file_by_file() {
        assert!(per_file(&["rank0.pickle", "rank1/snap.pkl"]));
        assert!(!per_file(&["rank0.pickle"]));
        assert!(!per_file(&["rank0.pickle", "train.log"]));
        assert!(!per_file(&["rank0/memory.prof", "rank1/memory.prof"]));
    }
}
