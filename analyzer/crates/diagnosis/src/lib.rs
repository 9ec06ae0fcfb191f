//! The OOM troubleshooting decision tree as data, evaluated on a report's facts.
//!
//! [`tree_definition`] is the tree (stable ids, parents, conditions, advice);
//! [`diagnose`] walks it on everything a [`Report`] holds (OOM events, module
//! analyses with their peak buffers and padding, step series, allocator
//! timelines) and returns every node with whether it is selected, a
//! one-sentence reason with the user's numbers, the facts it used and the
//! advice with computed estimates (each saying how it was computed), and the
//! headline: the verdict or the next step first, for every report.
//! [`diagnose_with`] does the same with a device limit the user picked (for
//! inputs that carry none: a lone HloProto, a step log). [`verdict`] is the
//! one-line summary naming the selected leaf.
//!
//! Run-time profiles feed the same nodes: PyTorch memory snapshots (an OOM
//! in the trace joins its `oom_events[]` entry, and a CUDA message of the
//! same run, so the `torch.*` nodes use the snapshot's pools, fragmentation
//! and biggest holders), JAX device memory profiles and their series, and
//! PyTorch memory timelines.
//!
//! Which tree: a compile-time OOM event (or, with a picked device, a module
//! whose peak exceeds its limit) selects `compile_hbm_oom`; otherwise a
//! runtime OOM event selects `runtime_oom` (GPU allocator messages get the
//! `torch.*` nodes); otherwise step series or allocator timelines that grow,
//! jump or run at the limit select `memory_growth`; otherwise `none`, whose
//! verdict says whether it fits, is padding-dominated, or needs a limit.

use oomscope_report::{
    units, Confidence, DeviceLimit, Diagnosis, DiagnosisNode, Headline, OomEvent, OomKind, Report,
    TreeKind,
};
use serde::Serialize;

mod allocator;
mod compile;
mod facts;
mod framework;
pub mod ids;
mod near_limit;
mod node;
mod profiles;
mod runtime;
mod shape;
mod torch;
mod tpu_runtime;
mod tree;
mod verdict;
pub mod what_if;

pub use tree::{node_def, tree_definition, ActionDef, NodeDef};

/// The result of walking the tree (shared by [`diagnose`] and [`verdict`]).
pub(crate) struct Evaluation {
    pub tree: TreeKind,
    pub path: Vec<String>,
    pub nodes: Vec<DiagnosisNode>,
    /// The one-line verdict of [`verdict`].
    pub summary: String,
    pub headline: Headline,
}

/// The one-line verdict shown at the top of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// E.g. "HBM ran out at compile time: used 17.67 GiB of 15.75 GiB (+1.92 GiB, 112%); one buffer is 108% of the limit → large allocations: mesh shape or sharding".
    pub headline: String,
    pub tree: TreeKind,
    /// The selected leaf; `None` when the data cannot decide (the headline
    /// then says what to add).
    pub leaf_id: Option<String>,
    pub path: Vec<String>,
}

/// Evaluates the whole tree on the report's facts.
pub fn diagnose(report: &Report) -> Diagnosis {
    diagnose_with(report, None)
}

/// [`diagnose`] with the device the user picked: its limit is compared with
/// module peaks and step series that carry none.
pub fn diagnose_with(report: &Report, device: Option<&DeviceLimit>) -> Diagnosis {
    let with_limits = device.and_then(|d| series_with_limit(report, d));
    // The series' limit is the device's only when they had none.
    let series_device = device.filter(|_| with_limits.is_some());
    let e = evaluate(
        with_limits.as_ref().unwrap_or(report),
        device,
        series_device,
    );
    Diagnosis {
        tree: e.tree,
        path: e.path,
        nodes: e.nodes,
        headline: Some(e.headline),
        what_if: Vec::new(),
    }
}

/// Whether no input gives the memory limit its peak should be judged
/// against, so that a picked device would decide the verdict (the page then
/// offers the device list, [`oomscope_report::devices::KNOWN_DEVICES`]).
///
/// It is true exactly when a picked device changes the verdict: a module's
/// peak or a step series (the compile tree, or the step a growing series
/// runs out at), or, when nothing else is wrong, a run-time peak (snapshot,
/// timeline, device memory profile) to judge against the device.
pub fn asks_for_device(report: &Report) -> bool {
    if !report.oom_events.is_empty() || verdict::known_limit(report, None).is_some() {
        return false;
    }
    verdict::largest_module(report).is_some()
        || verdict::largest_compile_usage(report).is_some()
        || report.step_series.iter().any(|s| !s.points.is_empty())
        || (choose_tree(report, None) == TreeKind::None && verdict::other_peak(report).is_some())
}

/// The step series that carry no limit, given the picked device's, with
/// the step at which their trend reaches it (at the series' own slope, from
/// its last point, as the steps reader projects a logged limit); `None` when
/// every series has its own limit.
fn series_with_limit(report: &Report, device: &DeviceLimit) -> Option<Report> {
    if device.limit_bytes == 0 || report.step_series.iter().all(|s| s.limit_bytes.is_some()) {
        return None;
    }
    let mut r = report.clone();
    for s in r.step_series.iter_mut().filter(|s| s.limit_bytes.is_none()) {
        s.limit_bytes = Some(device.limit_bytes);
        // Only a series that grows is projected.
        if let (Some(last), Some(slope)) = (s.points.last(), runtime::growth_slope(s)) {
            let remaining = device.limit_bytes.saturating_sub(last.bytes) as f64;
            let steps = (remaining / slope).ceil().min(u64::MAX as f64) as u64;
            s.projected_limit_step = Some(last.step.saturating_add(steps));
        }
    }
    Some(r)
}

/// The one-line verdict naming the selected leaf.
pub fn verdict(report: &Report) -> Verdict {
    let e = evaluate(report, None, None);
    Verdict {
        headline: e.summary,
        tree: e.tree,
        leaf_id: e.path.last().cloned(),
        path: e.path,
    }
}

/// Marks an event made from a module peak and a picked device (no message).
pub(crate) const PREDICTED: &str = "predicted: the module's peak exceeds the picked device's limit";

/// With a picked device and no OOM message: an event for the largest HBM
/// module when its peak exceeds the device's limit.
fn predicted_event(report: &Report, device: Option<&DeviceLimit>) -> Option<OomEvent> {
    let limit = device?.limit_bytes;
    if limit == 0 || !report.oom_events.is_empty() {
        return None;
    }
    let m = verdict::largest_module(report)?;
    (m.peak_bytes > limit).then(|| OomEvent {
        kind: OomKind::TpuCompileHbm,
        memory_space: oomscope_report::MemorySpace::Hbm,
        message: PREDICTED.into(),
        used_bytes: Some(m.peak_bytes),
        limit_bytes: Some(limit),
        exceeded_bytes: Some(m.peak_bytes - limit),
        repeats: 1,
        ..Default::default()
    })
}

fn choose_tree(report: &Report, predicted: Option<&OomEvent>) -> TreeKind {
    if facts::primary_compile_event(report).is_some() || predicted.is_some() {
        TreeKind::CompileHbmOom
    } else if runtime::primary_runtime_event(report).is_some() {
        TreeKind::RuntimeOom
    } else if runtime::series_show_problem(report) {
        TreeKind::MemoryGrowth
    } else {
        TreeKind::None
    }
}

/// `device` is the picked device; `series_device` the same when it gave
/// the step series their limit.
fn evaluate(
    report: &Report,
    device: Option<&DeviceLimit>,
    series_device: Option<&DeviceLimit>,
) -> Evaluation {
    let predicted = predicted_event(report, device);
    let tree = choose_tree(report, predicted.as_ref());
    let rt = runtime::evaluate(report, tree, series_device);
    match tree {
        TreeKind::CompileHbmOom => {
            let (event, picked) = match (facts::primary_compile_event(report), predicted.as_ref()) {
                (Some(message), _) => (message, None),
                (None, Some(predicted)) => (predicted, device),
                (None, None) => return rt,
            };
            let mut c = compile::evaluate(&facts::compile_facts(report, event, picked));
            if let Some(note) = disagreement(report, event) {
                c.headline.text = format!("{} {note}", c.headline.text);
                // The remedy's estimate comes from the module's buffers.
                if c.headline.confidence.is_some() {
                    c.headline.confidence = Some(Confidence::Low);
                }
            }
            let mut nodes = c.nodes;
            nodes.extend(rt.nodes);
            Evaluation { nodes, ..c }
        }
        TreeKind::RuntimeOom => match torch::primary_gpu_event(report) {
            Some(event) => {
                let t = torch::evaluate(event, torch::snapshot_of(report, event));
                let mut nodes: Vec<DiagnosisNode> =
                    t.nodes.into_iter().map(|n| n.build()).collect();
                nodes.extend(rt.nodes.into_iter().filter(|n| !n.id.starts_with("torch.")));
                let mut path = vec![t.leaf.to_string()];
                path.extend(rt.path);
                Evaluation {
                    tree,
                    path,
                    nodes,
                    summary: t.summary,
                    headline: t.headline,
                }
            }
            None => rt,
        },
        TreeKind::MemoryGrowth => rt,
        TreeKind::None => {
            let (headline, verdict_nodes) = verdict::none_verdict(report, device);
            let mut nodes: Vec<DiagnosisNode> =
                verdict_nodes.into_iter().map(|n| n.build()).collect();
            // What the run-time inputs show of the peak (its categories,
            // fragmentation, the devices' balance), unselected: facts to
            // read, no problem to fix.
            nodes.extend(rt.nodes.into_iter().filter(|n| {
                [
                    ids::PEAK_COMPOSITION,
                    ids::TORCH_FRAGMENTATION,
                    ids::DEVICE_BALANCE,
                ]
                .contains(&n.id.as_str())
                    && !n.facts.is_empty()
            }));
            Evaluation {
                tree,
                path: vec![headline.node.clone()],
                nodes,
                summary: none_summary(report),
                headline,
            }
        }
    }
}

/// A module peak this far from the message's "used" is another program:
/// the same compile's figures agree within about 2% (older libtpu leaves
/// small buffers out of "used"), across every fixture and corpus run.
const DISAGREE_FRACTION: f64 = 0.10;

/// When the compiler's message and the module analysis disagree (a log from
/// one run, a dump from another), the sentence that says so: the message is
/// the more direct fact, so its used, limit and excess are the ones shown.
fn disagreement(report: &Report, event: &OomEvent) -> Option<String> {
    let used = event.used_bytes.filter(|_| event.message != PREDICTED)?;
    let module = facts::matching_module(report, &facts::event_space(event))?;
    let gap = module.peak_bytes.abs_diff(used);
    (gap as f64 > used as f64 * DISAGREE_FRACTION).then(|| {
        format!(
            "These inputs disagree: the message says {} used, but {}'s {} is {} ({} apart), so they look like different runs or programs; the message's numbers are used, and estimates from the module's buffers are less sure.",
            units::format_bytes(used),
            module.display_name(),
            module.peak_kind.words(),
            units::format_bytes(module.peak_bytes),
            units::format_bytes(gap)
        )
    })
}

/// No error and no trend: say what was looked at.
fn none_summary(report: &Report) -> String {
    match verdict::largest_module(report) {
        Some(m) => format!(
            "No out-of-memory error found; the largest module peak is {} ({})",
            oomscope_report::units::format_bytes(m.peak_bytes),
            m.display_name()
        ),
        None if !report.step_series.is_empty() => {
            "No out-of-memory error found and memory does not grow over the steps".to_string()
        }
        None => "No out-of-memory error found".to_string(),
    }
}
