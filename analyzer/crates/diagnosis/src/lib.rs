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
    DeviceLimit, Diagnosis, DiagnosisNode, Headline, OomEvent, OomKind, Report, TreeKind,
};
use serde::Serialize;

mod allocator;
mod compile;
mod facts;
pub mod ids;
mod near_limit;
mod node;
mod profiles;
mod runtime;
mod shape;
mod torch;
mod tree;
mod verdict;

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
    let e = evaluate(report, device);
    Diagnosis {
        tree: e.tree,
        path: e.path,
        nodes: e.nodes,
        headline: Some(e.headline),
    }
}

/// The one-line verdict naming the selected leaf.
pub fn verdict(report: &Report) -> Verdict {
    let e = evaluate(report, None);
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

fn evaluate(report: &Report, device: Option<&DeviceLimit>) -> Evaluation {
    let predicted = predicted_event(report, device);
    let tree = choose_tree(report, predicted.as_ref());
    let rt = runtime::evaluate(report, tree);
    match tree {
        TreeKind::CompileHbmOom => {
            let Some(event) = facts::primary_compile_event(report).or(predicted.as_ref()) else {
                return rt;
            };
            let c = compile::evaluate(&facts::compile_facts(report, event));
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
            Evaluation {
                tree,
                path: vec![headline.node.clone()],
                nodes: verdict_nodes.into_iter().map(|n| n.build()).collect(),
                summary: none_summary(report),
                headline,
            }
        }
    }
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
