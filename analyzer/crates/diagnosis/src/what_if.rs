//! Predictions by replay in the tree and the headline (issue 25).
//!
//! The what-if engine (`oomscope_whatif`, run by the facade on the module
//! that ran out) gives each remedy's predicted peak. Here they join the
//! diagnosis: the tree's actions that are a remedy carry it, a node lists
//! every remedy (replayed, or why it does not apply), and the headline
//! becomes the cheapest remedy whose predicted peak fits with a margin, or
//! the cheapest combination that does. A remedy that buys less than the
//! excess is never the headline.

use oomscope_report::whatif::{Remedy, WhatIf};
use oomscope_report::{Confidence, Diagnosis, DiagnosisAction, DiagnosisNode, Headline};

use crate::facts::gib;
use crate::ids::*;
use crate::tree::action_text;

/// A prediction fits when it leaves this share of the limit free: the
/// engine is held to 5 % on real pairs (15 % for remat, which needs more).
const MARGIN: f64 = 0.05;
const REMAT_MARGIN: f64 = 0.15;

/// The node that lists the replayed remedies.
pub const WHAT_IF: &str = "aggregate.what_if";

/// The tree's actions that are a remedy: (node, action key, remedy).
const ACTIONS: &[(&str, &str, Remedy)] = &[
    (CONFIG, "donate", Remedy::Donation),
    (CONFIG, "bf16", Remedy::Bf16),
    (CONFIG, "batch", Remedy::Batch),
    (REMAT, "checkpoint", Remedy::Remat),
    (PADDING, "align_dims", Remedy::Padding),
    (ARCHITECTURE, "shard", Remedy::Sharding),
    (ARCHITECTURE, "host_offload", Remedy::Offload),
    (LARGE_SHARDING, "shard_large_buffer", Remedy::Sharding),
];

/// What the facade replayed for one module.
#[derive(Debug, Clone, Default)]
pub struct Replayed {
    /// One per applicable single remedy.
    pub singles: Vec<WhatIf>,
    /// The cheapest combination whose prediction fits, when no single one does.
    pub combination: Option<WhatIf>,
    /// Remedies that do not apply, with why.
    pub absent: Vec<(Remedy, String)>,
    /// Today's peak of the module.
    pub peak_bytes: u64,
    pub limit_bytes: Option<u64>,
}

fn node_of(remedy: Remedy) -> &'static str {
    match remedy {
        Remedy::Donation | Remedy::Bf16 | Remedy::Batch => CONFIG,
        Remedy::Remat => REMAT,
        Remedy::Padding => PADDING,
        Remedy::Sharding | Remedy::Offload => ARCHITECTURE,
        // Never replayed on a compiled module (a snapshot's what-ifs join no tree node).
        Remedy::WithoutAllocations
        | Remedy::ExpandableSegments
        | Remedy::FailedAllocationPlaced => CONFIG,
    }
}

/// The remedy as a step, for the headline.
pub fn step(remedy: Remedy) -> &'static str {
    match remedy {
        Remedy::Donation => "donate_argnums on every argument XLA can alias",
        Remedy::Bf16 => "bfloat16 parameters and activations (optimizer state kept f32)",
        Remedy::Batch => "the batch halved",
        Remedy::Remat => "jax.checkpoint on the repeated block",
        Remedy::Sharding => "parameters and optimizer state sharded",
        Remedy::Offload => "the optimizer state offloaded to host memory",
        Remedy::Padding => "the padding fixes",
        Remedy::WithoutAllocations => "those allocations removed",
        Remedy::ExpandableSegments => "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        Remedy::FailedAllocationPlaced => "the failed allocation placed",
    }
}

fn margin(w: &WhatIf) -> f64 {
    if w.remedy == Remedy::Remat || w.with.contains(&Remedy::Remat) {
        REMAT_MARGIN
    } else {
        MARGIN
    }
}

/// Whether a prediction fits the limit with the margin its error asks for.
pub fn fits_with_margin(w: &WhatIf, limit: u64) -> bool {
    (w.predicted_peak_bytes as f64) <= limit as f64 * (1.0 - margin(w))
}

fn steps(w: &WhatIf) -> String {
    let mut all = vec![step(w.remedy)];
    all.extend(w.with.iter().map(|&r| step(r)));
    all.join(" + ")
}

/// Joins the replayed predictions to the diagnosis.
pub fn attach(d: &mut Diagnosis, replayed: Replayed) {
    // Actions that are a remedy carry its prediction.
    for node in &mut d.nodes {
        for action in &mut node.actions {
            let Some(remedy) = ACTIONS.iter().find_map(|&(id, key, r)| {
                let advice = action_text(id, key);
                (node.id == id && !advice.is_empty() && action.text.starts_with(advice))
                    .then_some(r)
            }) else {
                continue;
            };
            if let Some(w) = replayed.singles.iter().find(|w| w.remedy == remedy) {
                action.remedy = Some(remedy);
                action.predicted_peak_bytes = Some(w.predicted_peak_bytes);
            }
        }
    }
    if replayed.singles.is_empty() && replayed.absent.is_empty() {
        return;
    }
    let module = replayed
        .singles
        .first()
        .map(|w| w.module.clone())
        .unwrap_or_default();
    let mut node = DiagnosisNode {
        id: WHAT_IF.into(),
        title: "What if: each remedy replayed on the program".into(),
        selected: false,
        reason: if module.is_empty() {
            // No remedy replayed (the module has no program): each says why.
            format!(
                "No remedy could be replayed on this module; today's peak {}{}.",
                gib(replayed.peak_bytes),
                replayed.limit_bytes.map(|l| format!(", limit {}", gib(l))).unwrap_or_default()
            )
        } else {
            format!(
                "Each remedy applied to the buffers of {module} and replayed with the Memory Viewer's heap replay; today's peak {}{}.",
                gib(replayed.peak_bytes),
                replayed.limit_bytes.map(|l| format!(", limit {}", gib(l))).unwrap_or_default()
            )
        },
        ..DiagnosisNode::default()
    };
    let mut ordered: Vec<&WhatIf> = replayed
        .singles
        .iter()
        .chain(replayed.combination.as_ref())
        .collect();
    ordered.sort_by_key(|w| (w.remedy.cost_rank(), w.with.len()));
    for w in ordered {
        let verdict = match (w.fits, w.headroom_bytes) {
            (Some(true), Some(h)) => {
                format!(" (fits, {} headroom)", gib(u64::try_from(h).unwrap_or(0)))
            }
            (Some(false), Some(h)) => format!(" (still {} over)", gib(h.unsigned_abs())),
            _ => String::new(),
        };
        node.actions.push(DiagnosisAction {
            text: format!(
                "{}: peak {} → {}{verdict}. {}",
                steps(w),
                gib(replayed.peak_bytes),
                gib(w.predicted_peak_bytes),
                w.scope
            ),
            estimate_bytes: Some(w.saving_bytes),
            how: Some(w.how.clone()),
            remedy: Some(w.remedy),
            predicted_peak_bytes: Some(w.predicted_peak_bytes),
        });
    }
    for (remedy, why) in &replayed.absent {
        node.actions.push(DiagnosisAction {
            text: format!("{}: does not apply: {why}", remedy.as_str()),
            ..DiagnosisAction::default()
        });
    }
    d.nodes.push(node);
    d.what_if = replayed.singles.clone();
    d.what_if.extend(replayed.combination.clone());

    // The headline: the cheapest prediction that fits with a margin. A
    // section-2 configuration error (one allocation over half the limit:
    // a missing sharding, a debug print) stays the answer: it is a bug to
    // fix, not a remedy to trade.
    if d.path.iter().any(|id| id == LARGE_ALLOCATIONS) {
        return;
    }
    let Some(limit) = replayed.limit_bytes else {
        return;
    };
    let excess = replayed.peak_bytes.saturating_sub(limit);
    if excess == 0 {
        return;
    }
    let mut fitting: Vec<&WhatIf> = replayed
        .singles
        .iter()
        .filter(|w| fits_with_margin(w, limit))
        .collect();
    fitting.sort_by_key(|w| w.remedy.cost_rank());
    let chosen = fitting.first().copied().or(replayed
        .combination
        .as_ref()
        .filter(|w| fits_with_margin(w, limit)));
    if d.headline.is_none() {
        return;
    }
    match chosen {
        Some(w) => {
            reselect(
                d.path.as_mut_slice(),
                &mut d.nodes,
                node_of(w.remedy),
                &format!(
                    "Replayed on the program, {} brings the peak from {} to {} (fits the limit of {}).",
                    steps(w),
                    gib(replayed.peak_bytes),
                    gib(w.predicted_peak_bytes),
                    gib(limit)
                ),
            );
            let Some(headline) = d.headline.as_mut() else {
                return;
            };
            *headline = Headline {
                node: node_of(w.remedy).into(),
                text: format!(
                    "{} ran out by {}: peak {} → {} with {} (fits, {} headroom; predicted by replaying the program)",
                    w.module,
                    gib(excess),
                    gib(replayed.peak_bytes),
                    gib(w.predicted_peak_bytes),
                    steps(w),
                    gib(u64::try_from(w.headroom_bytes.unwrap_or(0)).unwrap_or(0))
                ),
                estimate_bytes: u64::try_from(w.saving_bytes).ok(),
                severity: headline.severity,
                confidence: Some(Confidence::Medium),
            };
        }
        None => {
            let Some(headline) = d.headline.as_mut() else {
                return;
            };
            // No prediction fits: a remedy that buys less than the excess
            // must not stay the answer.
            let best = replayed
                .singles
                .iter()
                .chain(replayed.combination.as_ref())
                .min_by_key(|w| w.predicted_peak_bytes);
            let remedy_node =
                [CONFIG, REMAT, PADDING, ARCHITECTURE].contains(&headline.node.as_str());
            if remedy_node {
                headline.estimate_bytes = None;
                headline.confidence = None;
            }
            if let Some(b) = best {
                headline.text = format!(
                    "{} Replayed on the program, no remedy fits alone or combined: the best, {}, still needs {} (limit {}).",
                    headline.text,
                    steps(b),
                    gib(b.predicted_peak_bytes),
                    gib(limit)
                );
            }
        }
    }
}

/// The replay's choice is the tree's answer too, so that the headline and
/// the path never name two remedies: the path ends at the chosen remedy's
/// node, which says what the replay found first, and the node the
/// estimates had chosen no longer claims that nothing cheaper covers the
/// excess. Only a path that ends at a remedy node is changed.
fn reselect(path: &mut [String], nodes: &mut [DiagnosisNode], chosen: &str, found: &str) {
    const REMEDY_NODES: [&str; 4] = [CONFIG, REMAT, PADDING, ARCHITECTURE];
    let Some(last) = path.last_mut() else {
        return;
    };
    if !REMEDY_NODES.contains(&last.as_str()) {
        return;
    }
    let previous = std::mem::replace(last, chosen.to_string());
    let chosen_title = nodes
        .iter()
        .find(|n| n.id == chosen)
        .map(|n| n.title.clone())
        .unwrap_or_else(|| chosen.to_string());
    for node in nodes.iter_mut() {
        if node.id == chosen {
            node.selected = true;
            // The estimates' pointer elsewhere is what the replay overturned.
            let reason = match node.reason.find(crate::compile::A_CHEAPER_REMEDY) {
                Some(at) => {
                    let end = node.reason[at..].find(')').map_or(node.reason.len(), |e| at + e + 1);
                    format!("{}{}", &node.reason[..at], &node.reason[end..])
                }
                None => node.reason.clone(),
            };
            let reason = without_choice_claims(&reason);
            node.reason = format!("{found} {reason}").trim_end().to_string();
        } else if node.id == previous {
            node.selected = false;
            node.reason = format!(
                "{} Replayed on the program, a cheaper remedy fits: see {chosen_title}.",
                without_choice_claims(&node.reason)
            );
        }
    }
}

/// A reason without the estimates' claim that nothing cheaper covers the
/// excess: once the replay has chosen, its numbers are the answer.
fn without_choice_claims(reason: &str) -> String {
    reason
        .replace(crate::compile::NO_CHEAPER_REMEDY, "")
        .replace(crate::compile::NO_CHEAPER_ESTIMATE, "")
}
