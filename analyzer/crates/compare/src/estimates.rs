//! The decision tree's estimates put to the test: on a same-program pair,
//! what A's tree said a remedy would save, next to what the change of that
//! kind really saved between A and B.

use oomscope_report::compare::{ChangeKind, EstimateCheck, ModuleComparison};
use oomscope_report::Report;

/// Which fact of which tree node estimates which change.
const ESTIMATES: [(ChangeKind, &str, &str); 5] = [
    (ChangeKind::Dtype, "aggregate.config", "bf16_saving_bytes"),
    (
        ChangeKind::Donation,
        "aggregate.config",
        "donate_saving_bytes",
    ),
    (ChangeKind::Batch, "aggregate.config", "batch_saving_bytes"),
    (
        ChangeKind::Remat,
        "aggregate.remat",
        "checkpoint_saving_bytes",
    ),
    (ChangeKind::Padding, "aggregate.padding", "padding_bytes"),
];

/// Estimates of A's tree for the kinds of change the main module shows
/// (the HBM module with the largest difference).
pub fn check_estimates(a: &Report, modules: &[ModuleComparison]) -> Vec<EstimateCheck> {
    let Some(main) = modules
        .iter()
        .filter(|m| m.memory_space == oomscope_report::MemoryColor::Device)
        .max_by_key(|m| m.difference_bytes.unsigned_abs())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (kind, node, fact) in ESTIMATES {
        let Some(change) = main.changes.iter().find(|c| c.kind == kind) else {
            continue;
        };
        let estimate = a
            .diagnosis
            .nodes
            .iter()
            .find(|n| n.id == node)
            .and_then(|n| n.facts.get(fact))
            .and_then(|v| {
                v.as_i64()
                    .or_else(|| v.as_u64().map(|u| u.min(i64::MAX as u64) as i64))
            });
        let Some(estimate_bytes) = estimate else {
            continue;
        };
        out.push(EstimateCheck {
            kind,
            node: node.to_string(),
            fact: fact.to_string(),
            estimate_bytes,
            actual_bytes: change.bytes.saturating_neg(),
            module: main.module_a.clone(),
        });
    }
    out
}
