//! The OOM troubleshooting decision tree as data, evaluated on a report's facts.
//!
//! [`tree_definition`] is the tree (stable ids, parents, conditions, advice);
//! [`diagnose`] walks it on everything a [`Report`] holds (OOM events, module
//! analyses with their peak buffers and padding, step series) and returns
//! every node with whether it is selected, a one-sentence reason with the
//! user's numbers, the facts it used and the advice with computed estimates
//! (each saying how it was computed). What the data cannot decide ends the
//! walk early with a question instead of a guess. [`verdict`] is the one-line
//! summary naming the selected leaf.
//!
//! Which tree: a compile-time OOM event selects `compile_hbm_oom`; otherwise
//! a runtime OOM event selects `runtime_oom`; otherwise step series that
//! grow or jump select `memory_growth`; otherwise `none`.

use oomscope_report::{Diagnosis, DiagnosisNode, Report, TreeKind};
use serde::Serialize;

mod compile;
mod facts;
mod node;
mod runtime;
mod shape;
mod tree;

pub use tree::{node_def, tree_definition, ActionDef, NodeDef};

/// The result of walking the tree (shared by [`diagnose`] and [`verdict`]).
pub(crate) struct Evaluation {
    pub tree: TreeKind,
    pub path: Vec<String>,
    pub nodes: Vec<DiagnosisNode>,
    pub headline: String,
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
    let e = evaluate(report);
    Diagnosis {
        tree: e.tree,
        path: e.path,
        nodes: e.nodes,
        headline: None,
    }
}

/// The one-line verdict naming the selected leaf.
pub fn verdict(report: &Report) -> Verdict {
    let e = evaluate(report);
    Verdict {
        headline: e.headline,
        tree: e.tree,
        leaf_id: e.path.last().cloned(),
        path: e.path,
    }
}

fn choose_tree(report: &Report) -> TreeKind {
    if facts::primary_compile_event(report).is_some() {
        TreeKind::CompileHbmOom
    } else if runtime::primary_runtime_event(report).is_some() {
        TreeKind::RuntimeOom
    } else if runtime::series_show_problem(report) {
        TreeKind::MemoryGrowth
    } else {
        TreeKind::None
    }
}

fn evaluate(report: &Report) -> Evaluation {
    let tree = choose_tree(report);
    let rt = runtime::evaluate(report, tree);
    let ct = facts::compile_facts(report).map(|f| compile::evaluate(&f));
    let compile_nodes = match &ct {
        Some(c) => c.nodes.clone(),
        None => compile::not_reached("No compile-time OOM error is loaded."),
    };
    let mut nodes = compile_nodes;
    nodes.extend(rt.nodes);
    match (tree, ct) {
        (TreeKind::CompileHbmOom, Some(c)) => Evaluation {
            tree,
            path: c.path,
            nodes,
            headline: c.headline,
        },
        (TreeKind::None, _) => Evaluation {
            tree,
            path: rt.path,
            nodes,
            headline: none_headline(report),
        },
        _ => Evaluation {
            tree,
            path: rt.path,
            nodes,
            headline: rt.headline,
        },
    }
}

/// No error and no trend: say what was looked at.
fn none_headline(report: &Report) -> String {
    let largest = report
        .modules
        .iter()
        .filter(|m| m.memory_space == 0)
        .max_by_key(|m| m.peak_bytes);
    match largest {
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
