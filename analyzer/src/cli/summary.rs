//! The human summary `oomscope analyze` prints: the answer first (the
//! diagnosis headline), then what ran out and by how much, each module's
//! peak and its largest buffers, memory over steps, and the decision-tree
//! path in the words the page uses (node titles, not ids).

use oomscope_report::units::format_bytes;
use oomscope_report::{ModuleReport, OomEvent, OomKind, PeakBuffer, PeakKind, Report};
use std::fmt::Write;

/// How many of a module's (or an OOM message's) largest buffers are listed.
pub const LARGEST_BUFFERS: usize = 5;

pub fn summary(r: &Report) -> String {
    let mut s = String::new();
    headline(&mut s, r);
    let _ = writeln!(s, "oomscope report: {} input(s)", r.inputs.len());
    for i in &r.inputs {
        let _ = writeln!(
            s,
            "  {:<14} {:>12}  {}",
            i.kind.as_str(),
            format_bytes(i.size_bytes),
            i.name
        );
    }
    oom_events(&mut s, r);
    super::ranks::ranks(&mut s, r);
    // A memory space the program never uses (VMEM of a program with no
    // kernel, say) is one line, not a module block reading "peak 0 B".
    let (used, empty): (Vec<_>, Vec<_>) = r.modules.iter().partition(|m| m.peak_bytes > 0);
    for m in used {
        module(&mut s, m);
    }
    if !empty.is_empty() {
        let names: Vec<String> = empty
            .iter()
            .map(|m| format!("{} in {}", m.display_name(), m.memory_space.words()))
            .collect();
        let _ = writeln!(
            s,
            "
Nothing allocated: {}",
            names.join("; ")
        );
    }
    for st in &r.step_series {
        let _ = writeln!(
            s,
            "\nMemory per step: {} {} {} ({} points){}",
            st.source,
            st.device,
            st.metric,
            st.points.len(),
            st.slope_bytes_per_step
                .map(|x| format!(", trend {}/step", format_bytes(x.max(0.0) as u64)))
                .unwrap_or_default()
        );
        if let Some(step) = st.projected_limit_step {
            let when = st
                .projected_limit_seconds
                .map(|s| format!(", in about {:.1} h", s / 3600.0))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  at this slope the limit is reached at step {step}{when} (estimate)"
            );
        }
    }
    for p in &r.allocator_profiles {
        let _ = writeln!(
            s,
            "\nAllocator {}: peak heap {} at {} ps",
            p.allocator,
            format_bytes(p.peak_heap_bytes),
            p.peak_time_ps
        );
    }
    diagnosis(&mut s, r);
    if !r.errors.is_empty() {
        let _ = writeln!(s, "\nCould not read: {}", r.errors.len());
        for e in &r.errors {
            let _ = writeln!(s, "  {}", e.message);
        }
    }
    s
}

/// The title of a decision-tree node, falling back to its id when the report
/// carries no title for it.
fn node_title(r: &Report, id: &str) -> String {
    r.diagnosis
        .nodes
        .iter()
        .find(|n| n.id == id && !n.title.is_empty())
        .map_or_else(|| id.to_string(), |n| n.title.clone())
}

/// The answer first: the verdict or next step, its node and its estimate.
fn headline(s: &mut String, r: &Report) {
    let Some(h) = &r.diagnosis.headline else {
        return;
    };
    let _ = writeln!(s, "{}", h.text);
    let estimate = h
        .estimate_bytes
        .map(|b| format!("; estimate {}", format_bytes(b)))
        .unwrap_or_default();
    let _ = writeln!(s, "  ({}{estimate})\n", node_title(r, &h.node));
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "?".into();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

fn kind_label(kind: OomKind) -> &'static str {
    match kind {
        OomKind::TpuCompileHbm | OomKind::TpuCompileOtherSpace => "TPU compile-time",
        OomKind::TpuSparsecore => "TPU SparseCore",
        OomKind::TpuRuntime => "TPU runtime",
        OomKind::XlaGpu => "XLA GPU",
        OomKind::TorchCuda => "PyTorch CUDA",
        OomKind::TorchXla => "PyTorch/XLA",
    }
}

/// The numbers that make two events the same OOM (the same failure printed
/// by several ranks, or read from a log and from the dump's compile log).
fn same_oom(a: &OomEvent, b: &OomEvent) -> bool {
    (
        a.kind,
        &a.memory_space,
        a.used_bytes,
        a.limit_bytes,
        a.exceeded_bytes,
    ) == (
        b.kind,
        &b.memory_space,
        b.used_bytes,
        b.limit_bytes,
        b.exceeded_bytes,
    ) && a.requested_bytes == b.requested_bytes
        && a.free_bytes == b.free_bytes
}

/// One line per distinct OOM, with how many times it occurs and where first.
fn oom_events(s: &mut String, r: &Report) {
    let mut distinct: Vec<(&OomEvent, u64, Vec<String>)> = Vec::new();
    for e in &r.oom_events {
        let place = format!("{}:{}", e.input, e.line);
        let count = u64::from(e.repeats.max(1));
        match distinct.iter_mut().find(|(d, _, _)| same_oom(d, e)) {
            Some((_, n, places)) => {
                *n += count;
                places.push(place);
            }
            None => distinct.push((e, count, vec![place])),
        }
    }
    if distinct.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nOut-of-memory errors: {}", distinct.len());
    for (e, count, places) in distinct {
        let times = if count > 1 {
            format!(" ×{count}")
        } else {
            String::new()
        };
        let more = if places.len() > 1 {
            format!(" and {} more", places.len() - 1)
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  {} ({}){times}, at {}{more}",
            kind_label(e.kind),
            e.memory_space,
            places[0]
        );
        match (e.used().or(e.requested_bytes), e.limit()) {
            (Some(used), Some(limit)) => {
                let _ = writeln!(
                    s,
                    "    needs {} of {} ({} of the limit){}",
                    format_bytes(used),
                    format_bytes(limit),
                    percent(used, limit),
                    e.excess()
                        .map(|x| format!(", exceeded by {}", format_bytes(x)))
                        .unwrap_or_default()
                );
            }
            (Some(used), None) => {
                let _ = writeln!(s, "    needs {}", format_bytes(used));
            }
            _ => {}
        }
        let limit = e.limit().unwrap_or(0);
        let mut largest: Vec<_> = e.top_allocations.iter().collect();
        largest.sort_by(|a, b| b.size_bytes.cmp(&a.size_bytes).then(a.rank.cmp(&b.rank)));
        for a in largest.into_iter().take(LARGEST_BUFFERS) {
            let _ = writeln!(
                s,
                "    {:>12} {:>7}  {}  {}",
                format_bytes(a.size_bytes),
                percent(a.size_bytes, limit),
                a.shape,
                a.op_name.as_deref().unwrap_or("")
            );
        }
    }
}

/// A module's buffers at the peak, largest first (the report keeps XProf's
/// order, which lists parameters and outputs before the temporaries).
pub fn largest_peak_buffers(m: &ModuleReport) -> Vec<&PeakBuffer> {
    let mut buffers: Vec<&PeakBuffer> = m.peak_buffers.iter().collect();
    buffers.sort_by_key(|b| std::cmp::Reverse(b.size_bytes));
    buffers.truncate(LARGEST_BUFFERS);
    buffers
}

fn module(s: &mut String, m: &ModuleReport) {
    let peak_kind = match &m.peak_kind {
        PeakKind::Other(word) if word.is_empty() => String::new(),
        kind => format!("; the {}", kind.words()),
    };
    let _ = writeln!(
        s,
        "\nModule {} in {}, from {}: peak {} ({} unpadded){peak_kind}",
        m.display_name(),
        m.memory_space.words(),
        m.source_kind,
        format_bytes(m.peak_bytes),
        format_bytes(m.peak_unpadded_bytes),
    );
    for b in largest_peak_buffers(m) {
        let _ = writeln!(
            s,
            "    {:>12}  {:<10} {}  {}",
            format_bytes(b.size_bytes),
            format!("{:?}", b.category).to_lowercase(),
            b.shape,
            b.name
        );
    }
    if let Some(p) = &m.padding {
        if p.total_padding_bytes > 0 {
            let _ = writeln!(
                s,
                "    padding: {} at the peak, {} over all buffers",
                format_bytes(p.peak_padding_bytes),
                format_bytes(p.total_padding_bytes)
            );
        }
    }
}

/// The decision tree's path and its selected leaf, by title.
fn diagnosis(s: &mut String, r: &Report) {
    if r.diagnosis.path.is_empty() {
        return;
    }
    let titles: Vec<String> = r
        .diagnosis
        .path
        .iter()
        .map(|id| node_title(r, id))
        .collect();
    let _ = writeln!(s, "\nDiagnosis: {}", titles.join(" → "));
    let leaf = r
        .diagnosis
        .path
        .last()
        .and_then(|id| r.diagnosis.nodes.iter().find(|n| &n.id == id));
    if let Some(leaf) = leaf {
        let _ = writeln!(s, "  {}", leaf.reason);
        for a in &leaf.actions {
            let _ = writeln!(s, "  - {}", a.text);
        }
    }
}

/// `--what-if a,b`: the combination's prediction, or why there is none.
pub fn what_if_line(
    remedies: &[oomscope_report::whatif::Remedy],
    result: &Result<oomscope_report::whatif::WhatIf, String>,
) -> String {
    let names: Vec<&str> = remedies.iter().map(|r| r.as_str()).collect();
    let mut s = String::new();
    match result {
        Ok(w) => {
            let verdict = match (w.fits, w.headroom_bytes) {
                (Some(true), Some(h)) => format!(
                    ", fits with {} headroom",
                    format_bytes(u64::try_from(h).unwrap_or(0))
                ),
                (Some(false), Some(h)) => {
                    format!(", still {} over the limit", format_bytes(h.unsigned_abs()))
                }
                _ => ", no limit known".to_string(),
            };
            let before = u64::try_from(
                i64::try_from(w.predicted_peak_bytes)
                    .unwrap_or(i64::MAX)
                    .saturating_add(w.saving_bytes),
            )
            .unwrap_or(0);
            let _ = writeln!(
                s,
                "What if {} on {}: peak {} → {} (predicted by replaying the program{verdict})",
                names.join(" + "),
                w.module,
                format_bytes(before),
                format_bytes(w.predicted_peak_bytes),
            );
            let _ = writeln!(s, "  applied to: {}", w.scope);
            let _ = writeln!(s, "  how: {}", w.how);
        }
        Err(why) => {
            let _ = writeln!(s, "What if {}: {why}", names.join(" + "));
        }
    }
    s
}
