//! The human summary `oomscope analyze` prints: the answer first (the
//! diagnosis headline), then what ran out and by how much, each module's
//! peak and its largest buffers, memory over steps, and the decision-tree
//! path in the words the page uses (node titles, not ids).

use oomscope_report::units::format_bytes;
use oomscope_report::{ModuleReport, PeakBuffer, PeakKind, Report};
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
            .map(|m| format!("{} in {}", m.display_name(), m.space_words()))
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
    runtime_sections(&mut s, r);
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

/// How many of a run-time input's lines are listed.
const TOP_LINES: usize = 3;

/// `cpu:2` before `cpu:10`: devices in their own order, not the text's.
fn device_order(name: &str) -> (String, u64) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, number) = name.split_at(name.len() - digits);
    (stem.to_string(), number.parse().unwrap_or(0))
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A snapshot's what-ifs (its trace replayed with a change), one line each.
fn snapshot_what_ifs(s: &mut String, snap: &oomscope_report::MemorySnapshot) {
    use oomscope_report::whatif::Remedy;
    for w in &snap.what_if {
        let _ = match w.remedy {
            Remedy::WithoutAllocations => writeln!(
                s,
                "  what if without {}: peak allocated {} → {}",
                w.scope,
                format_bytes(snap.peak_allocated_bytes),
                format_bytes(w.predicted_peak_bytes)
            ),
            Remedy::ExpandableSegments => writeln!(
                s,
                "  what if expandable_segments:True: reserved at most {} instead of {}",
                format_bytes(w.predicted_peak_bytes),
                format_bytes(snap.reserved_peak_bytes.max(snap.reserved_bytes))
            ),
            Remedy::FailedAllocationPlaced => writeln!(
                s,
                "  what if the failed allocation were placed: {} had to be freed; allocated memory would peak at {}",
                format_bytes(w.must_free_bytes.unwrap_or(0)),
                format_bytes(w.predicted_peak_bytes)
            ),
            _ => Ok(()),
        };
    }
}

/// The numbers the page shows for snapshots, device memory profiles and
/// memory timelines: the peak, per device, and the lines that hold it.
fn runtime_sections(s: &mut String, r: &Report) {
    for snap in &r.memory_snapshots {
        let _ =
            writeln!(
            s,
            "\nMemory snapshot {} (device {}): peak allocated {}{}; {} reserved at the snapshot{}",
            snap.input,
            snap.device,
            format_bytes(snap.peak_allocated_bytes),
            snap.peak_event_index
                .map(|i| format!(" at trace event {i}"))
                .unwrap_or_default(),
            format_bytes(snap.reserved_bytes),
            if snap.reserved_peak_bytes > snap.reserved_bytes {
                format!(" (up to {} during the trace)", format_bytes(snap.reserved_peak_bytes))
            } else {
                String::new()
            }
        );
        if let Some(o) = &snap.oom {
            let _ = writeln!(
                s,
                "  out of memory at trace event {}: asked for {} with {} free on the device",
                o.event_index,
                format_bytes(o.requested_bytes),
                format_bytes(o.device_free_bytes)
            );
        }
        for l in snap.top_lines_at_peak.iter().take(TOP_LINES) {
            let _ = writeln!(
                s,
                "    {:>12} {:>7}  {}  {}",
                format_bytes(l.bytes),
                percent(l.bytes, snap.peak_allocated_bytes),
                plural(l.count, "allocation", "allocations"),
                l.frame
            );
        }
        snapshot_what_ifs(s, snap);
    }
    for p in &r.device_memory_profiles {
        let _ = writeln!(
            s,
            "\nJAX device memory profile {}: {} in {} on {}; {}{}",
            p.input,
            format_bytes(p.buffer_bytes),
            plural(p.buffer_count, "live buffer", "live buffers"),
            plural(p.devices.len() as u64, "device", "devices"),
            plural(p.executable_count, "executable", "executables"),
            if p.executable_bytes > 0 {
                format!(" ({})", format_bytes(p.executable_bytes))
            } else {
                String::new()
            }
        );
        let mut devices: Vec<_> = p.devices.iter().collect();
        devices.sort_by_key(|d| device_order(&d.device));
        for d in devices {
            let _ = writeln!(
                s,
                "    {:<12} {:>12}  {}",
                d.device,
                format_bytes(d.buffer_bytes),
                plural(d.buffer_count, "buffer", "buffers")
            );
        }
        for l in p.top_lines.iter().take(TOP_LINES) {
            let _ = writeln!(
                s,
                "    {:>12}  {}  {} {}:{}",
                format_bytes(l.bytes),
                plural(l.count, "buffer", "buffers"),
                l.frame.function,
                l.frame.file,
                l.frame.line
            );
        }
    }
    for t in &r.memory_timelines {
        let _ = writeln!(
            s,
            "\nMemory timeline {} on {}: peak {}",
            t.input,
            t.device,
            format_bytes(t.peak_bytes)
        );
        let mut parts: Vec<(&String, &u64)> =
            t.peak_by_category.iter().filter(|(_, b)| **b > 0).collect();
        parts.sort_by_key(|(_, b)| std::cmp::Reverse(**b));
        for (name, bytes) in parts {
            let _ = writeln!(
                s,
                "    {:>12} {:>7}  {}",
                format_bytes(*bytes),
                percent(*bytes, t.peak_bytes),
                name.replace('_', " ")
            );
        }
    }
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
    // A headline no node decided (what to add) has no node to name.
    let title = format!("{}{estimate}", node_title(r, &h.node));
    if title.is_empty() {
        let _ = writeln!(s);
    } else {
        let _ = writeln!(s, "  ({title})\n");
    }
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "?".into();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}


/// One line per distinct OOM, with how many times it occurs and where first.
fn oom_events(s: &mut String, r: &Report) {
    let groups = oomscope_report::same_failures(&r.oom_events);
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nOut-of-memory errors: {}", groups.len());
    for group in groups {
        let e = group[0];
        // Where it is first, then the other files that print it (repeats
        // within one file are counted, not listed).
        let places: Vec<String> = group
            .iter()
            .enumerate()
            .filter(|(i, g)| *i == 0 || g.input != e.input)
            .map(|(_, g)| format!("{}:{}", g.input, g.line))
            .collect();
        // Repeated within a file (ranks, retries) it happened that often;
        // the same failure in two files happened once.
        let mut per_input: Vec<(&str, u64)> = Vec::new();
        for g in &group {
            let n = u64::from(g.repeats.max(1));
            match per_input.iter_mut().find(|(i, _)| *i == g.input) {
                Some((_, c)) => *c += n,
                None => per_input.push((&g.input, n)),
            }
        }
        let count = per_input.iter().map(|(_, n)| *n).max().unwrap_or(1);
        let times = if count > 1 {
            format!(" ×{count}")
        } else {
            String::new()
        };
        // The same numbers in several files (the error and the log of one
        // run) are one OOM seen in each.
        let more = match places.len() {
            1 => String::new(),
            2 => format!(" (the same OOM also in {})", places[1]),
            n => format!(" (the same OOM also in {} and {} more)", places[1], n - 2),
        };
        let _ = writeln!(
            s,
            "  {} ({}){times}, at {}{more}",
            e.source_words(),
            e.memory_space,
            places[0]
        );
        let needs = if e.is_requirement() {
            "the compiler estimates it requires"
        } else {
            "needs"
        };
        match (e.used().or(e.requested_bytes), e.limit()) {
            (Some(used), Some(limit)) if e.is_impossible() => {
                let _ = writeln!(
                    s,
                    "    {needs} {} with {} available: an impossible requirement (no device holds that much), so a size in the program is wrong",
                    format_bytes(used),
                    format_bytes(limit),
                );
            }
            (Some(used), Some(limit)) => {
                let _ = writeln!(
                    s,
                    "    {needs} {} of {} ({} of the limit){}",
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
            // `5×f32[…]` is one chunk five values use in turn, not copies.
            // An instruction named without its shape (E1001) by its name.
            let shape = match a.shape_words() {
                s if s.is_empty() => a.xla_label.clone().unwrap_or_default(),
                s => s,
            };
            let _ = writeln!(
                s,
                "    {:>12} {:>7}  {}  {}",
                format_bytes(a.size_bytes),
                percent(a.size_bytes, limit),
                shape,
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
        m.space_words(),
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
