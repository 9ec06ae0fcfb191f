//! The compile-time tree (OpenXLA error E1000; E1001, one instruction's
//! scoped VMEM, is [`scoped`]): section 1 ([`balance`])
//! compares TensorCore and SparseCore usage, section 2 ([`large`]) looks at
//! allocations over half the limit, section 3 ([`aggregate`]) estimates what
//! each remedy would save ([`estimates`]) and selects the cheapest whose
//! estimate covers the excess ([`remedy`]).
//!
//! Section 2 follows the page exactly: it is selected whenever an allocation
//! is over half the limit. When the rest alone still exceeds the limit
//! (three 8.55 GiB temporaries on a 15.75 GiB chip: without one, 17.09 GiB
//! remain), section 3 is selected as well, after it.

mod aggregate;

/// What the remat and architecture nodes say when the estimates chose them:
/// a replay that finds a cheaper remedy that fits (`crate::what_if`) takes
/// the claim back, so the two never stand side by side.
pub(crate) const NO_CHEAPER_REMEDY: &str = "; no cheaper remedy covers it";
pub(crate) const NO_CHEAPER_ESTIMATE: &str = " No cheaper remedy's estimate covers the excess.";
/// The configuration node's pointer to the remedy the estimates chose
/// (`…; a cheaper remedy covers it (jax.checkpoint)`), up to its `)`.
pub(crate) const A_CHEAPER_REMEDY: &str = "; a cheaper remedy covers it (";
mod balance;
mod estimates;
mod large;
mod remedy;
mod scoped;

use oomscope_report::{CitedBuffer, Confidence, Headline, Severity, TreeKind};
use serde_json::json;

use crate::facts::{gib, pct_fact, pct_text, Alloc, AllocSource, CompileFacts};
use crate::ids::*;
use crate::node::NodeEval;
use crate::tree::tree_definition;
use crate::Evaluation;

/// How many buffers the nodes cite by name.
const CITED: usize = 5;

/// The next step the walk found, for the headline.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub node: &'static str,
    /// What to do, with the user's numbers.
    pub step: String,
    pub estimate: Option<u64>,
    pub confidence: Option<Confidence>,
}

#[derive(Default)]
struct Walk {
    path: Vec<&'static str>,
    /// The verdict's phrase for how the walk ended.
    summary: String,
    /// Section 2's next step, when section 2 is selected.
    large: Option<Answer>,
    /// Whether section 2's step rests on evidence in the program (a debug
    /// print's op name, a replicating all-gather), not only on size.
    large_evident: bool,
    /// Section 3's (or section 1's) next step.
    answer: Option<Answer>,
}

pub(crate) fn evaluate(f: &CompileFacts<'_>) -> Evaluation {
    if f.event.kind == oomscope_report::OomKind::TpuScopedVmem {
        return scoped::evaluate(f);
    }
    let mut walk = Walk::default();
    let mut nodes: Vec<NodeEval> = Vec::new();

    let sc_leaf = balance::tc_sc_balance(f, &mut nodes, &mut walk);
    if sc_leaf != Some(SPARSECORE_HIGH) {
        allocation_sections(f, &mut nodes, &mut walk);
    } else {
        for id in [LARGE_ALLOCATIONS, AGGREGATE] {
            nodes.push(NodeEval::new(
                id,
                "Not reached: SparseCore usage dominates, so section 1 decides.",
            ));
        }
    }
    // Every node of the compile tree appears once, in definition order.
    let mut ordered = Vec::new();
    for def in tree_definition()
        .iter()
        .filter(|d| d.tree == TreeKind::CompileHbmOom)
    {
        let mut node = match nodes.iter().position(|n| n.id == def.id) {
            Some(i) => nodes.swap_remove(i),
            None => NodeEval::new(def.id, "Not reached on this data."),
        };
        node.selected = walk.path.contains(&def.id);
        ordered.push(node.build());
    }
    let numbers = headline_numbers(f);
    let mut answer = choose_answer(f, &walk);
    if f.event.is_impossible() {
        // No remedy trims a need beyond every device: the size is wrong.
        if let Some(a) = answer.as_mut() {
            a.step = format!(
                "find the shape or size computed wrong (an overflowing dimension, a broadcast over the wrong axis, a size read from the wrong variable); then {}",
                a.step
            );
            a.estimate = None;
            a.confidence = None;
        }
    }
    let headline = match &answer {
        Some(a) => Headline {
            node: a.node.to_string(),
            text: format!("{numbers}. Next step: {}", a.step),
            estimate_bytes: a.estimate,
            severity: Severity::Failure,
            confidence: a.confidence,
        },
        None => Headline {
            node: walk.path.last().unwrap_or(&AGGREGATE).to_string(),
            text: format!("{numbers}; {}", walk.summary),
            estimate_bytes: None,
            severity: Severity::Failure,
            confidence: None,
        },
    };
    Evaluation {
        tree: TreeKind::CompileHbmOom,
        path: walk.path.iter().map(|s| s.to_string()).collect(),
        nodes: ordered,
        summary: format!("{numbers}; {}", walk.summary),
        headline,
    }
}

/// Section 2's step when it covers the excess (a configuration error is the
/// first thing to fix), else section 3's, else section 2's anyway (it is
/// still the cause the page names), else none.
fn choose_answer(f: &CompileFacts<'_>, walk: &Walk) -> Option<Answer> {
    let covers = |a: &Answer| match (a.estimate, f.excess) {
        (Some(e), Some(x)) => e >= x,
        (_, None) => true,
        _ => false,
    };
    match (&walk.large, &walk.answer) {
        (Some(l), _) if covers(l) && walk.large_evident => Some(l.clone()),
        (_, Some(a)) => Some(a.clone()),
        (Some(l), None) => Some(l.clone()),
        (None, None) => None,
    }
    // (walk.answer is set only when section 3 is selected: see
    // allocation_sections.)
}

fn headline_numbers(f: &CompileFacts<'_>) -> String {
    let space = f.space.as_str().to_ascii_uppercase();
    if let Some(device) = f.picked {
        if let (Some(used), Some(limit)) = (f.used, f.limit) {
            return format!(
                "{space} will not fit on {}: the peak is {} of its {} (+{}, {})",
                device.name,
                gib(used),
                gib(limit),
                gib(used.saturating_sub(limit)),
                pct_text(used, limit)
            );
        }
    }
    if f.event.is_requirement() {
        if let (Some(need), Some(limit)) = (f.used, f.limit) {
            // "Requires X, has Y available": the compiler's estimate before
            // it gave up, not what the program used.
            return if f.event.is_impossible() {
                format!(
                    "{space}: the compiler gave up early, printing an impossible requirement of {} with {} available: no device holds that much, so a size in the program is wrong",
                    gib(need),
                    gib(limit)
                )
            } else {
                format!(
                    "{space}: the compiler gave up early: it estimates the program requires {} with {} available (+{})",
                    gib(need),
                    gib(limit),
                    gib(need.saturating_sub(limit))
                )
            };
        }
    }
    match (f.used, f.limit) {
        (Some(used), Some(limit)) if f.event.is_impossible() => format!(
            "{space} ran out at compile time: the program needs {} with a {} limit, an impossible size for any device, so a size in the program is wrong",
            gib(used),
            gib(limit)
        ),
        (Some(used), Some(limit)) => {
            let excess = f.excess.unwrap_or(used.saturating_sub(limit));
            format!(
                "{space} ran out at compile time: used {} of {} (+{}, {})",
                gib(used),
                gib(limit),
                gib(excess),
                pct_text(used, limit)
            )
        }
        (None, Some(limit)) => match f.event.requested_bytes {
            Some(req) => format!(
                "{space} ran out at compile time: an allocation of {} does not fit in {} ({})",
                gib(req),
                gib(limit),
                pct_text(req, limit)
            ),
            None => format!("{space} ran out at compile time (limit {})", gib(limit)),
        },
        _ => format!("{space} ran out at compile time"),
    }
}

// ---------------------------------------------------------------------------
// Sections 2 and 3

fn allocation_sections(f: &CompileFacts<'_>, nodes: &mut Vec<NodeEval>, walk: &mut Walk) {
    let limit = match f.limit {
        Some(l) if l > 0 => l,
        _ => {
            let q = "The error gives no memory limit, so allocations cannot be compared with it: check the device's HBM size.";
            nodes.push(NodeEval::new(LARGE_ALLOCATIONS, q));
            nodes.push(NodeEval::new(AGGREGATE, q));
            walk.summary = "the error gives no limit to compare allocations with".into();
            return;
        }
    };
    if f.allocs.is_empty() {
        // Old libtpu aborts early on hopeless programs and says which flag
        // makes it print the listing.
        let (q, summary, step) = if f.event.early_abort
            == Some(oomscope_report::EarlyAbort::NamesListingFlag)
        {
            (
                "The compiler gave up early without listing allocations: rerun with --xla_tpu_impure_oom_fast_exit_threshold=-1 (it then prints the largest allocations) or add an XLA dump, to tell one large allocation (2) from a sum that is too big (3).",
                "the compiler gave up early: rerun with --xla_tpu_impure_oom_fast_exit_threshold=-1 to list the allocations",
                "rerun with --xla_tpu_impure_oom_fast_exit_threshold=-1 (the compiler then lists its largest allocations) or add an XLA dump (XLA_FLAGS=--xla_dump_to=DIR)",
            )
        } else {
            (
                "The log does not list allocations: add an XLA dump (XLA_FLAGS=--xla_dump_to=DIR) or a profile to tell one large allocation (2) from a sum that is too big (3).",
                "the log does not list allocations: add an XLA dump to tell large allocations from the sum",
                "add an XLA dump (XLA_FLAGS=--xla_dump_to=DIR) or an XProf profile of the failing program: the message does not list its allocations, and the remedy depends on which are largest",
            )
        };
        nodes.push(NodeEval::new(LARGE_ALLOCATIONS, q));
        nodes.push(NodeEval::new(AGGREGATE, q));
        walk.summary = summary.into();
        walk.answer = Some(Answer {
            node: PROFILE,
            step: step.into(),
            estimate: None,
            confidence: None,
        });
        return;
    }
    let half = limit / 2;
    let large: Vec<&Alloc> = f.allocs.iter().filter(|a| a.size > half).collect();
    let largest = &f.allocs[0];
    let without_largest = f.used.map(|u| u.saturating_sub(largest.size));
    // Section 3 as well when the rest alone still exceeds the limit.
    let rest_exceeds = without_largest.is_some_and(|rest| rest > limit);
    large::section(f, &large, limit, without_largest, nodes, walk);
    let hbm = f.space == oomscope_report::MemorySpace::Hbm;
    // Section 3 as well when the rest alone exceeds the limit. When nothing
    // in the program shows the large buffer is a mistake (no debug origin, no
    // replicating all-gather), section 3 is weighed too, and selected when
    // one of its remedies covers the excess (a batch-sized activation over
    // half the limit is fixed by a smaller batch, not by sharding it).
    let must = large.is_empty() || (hbm && rest_exceeds);
    // A buffer larger than the whole limit is no activation to trim: the
    // page's advice (sharding, debug prints) stands alone.
    let may = hbm && !walk.large_evident && largest.size < limit;
    if must || may {
        let mut section3 = Walk::default();
        let mut nodes3 = Vec::new();
        aggregate::section(f, limit, &mut nodes3, &mut section3);
        let covering = section3
            .answer
            .as_ref()
            .is_some_and(|a| a.node != PROFILE && a.node != ARCHITECTURE);
        if must || covering {
            walk.path.push(AGGREGATE);
            walk.path.extend(section3.path);
            walk.answer = section3.answer;
            walk.summary = if large.is_empty() {
                section3.summary
            } else {
                format!("{}; {}", walk.summary, section3.summary)
            };
            nodes.extend(nodes3);
            return;
        }
    }
    nodes.push(NodeEval::new(
        AGGREGATE,
        match without_largest {
            Some(rest) => format!(
                "Not reached: without the largest allocation ({}) the program needs {}, which fits in {}, and no remedy of the sum covers the excess.",
                gib(largest.size),
                gib(rest),
                gib(limit)
            ),
            None => format!(
                "Not reached: the allocation the error names ({}) is over half the limit by itself.",
                gib(largest.size)
            ),
        },
    ));
}

// ---------------------------------------------------------------------------
// Helpers shared by the sections

fn list_name(f: &CompileFacts<'_>) -> &'static str {
    match f.allocs_source {
        AllocSource::ModulePeak => "module_peak",
        AllocSource::LogListing => "log_listing",
        AllocSource::SingleRequest => "single_request",
        AllocSource::None => "none",
    }
}

fn size_how(f: &CompileFacts<'_>) -> String {
    match (f.allocs_source, f.module) {
        (AllocSource::ModulePeak, Some(m)) => {
            format!("buffer size at the peak of module {}", m.display_name())
        }
        (AllocSource::SingleRequest, _) => "size of the allocation the error names".into(),
        _ => "size as listed in the log".into(),
    }
}

fn with_origin(a: &Alloc) -> String {
    let origin = a.origin();
    let name = if !a.name.is_empty() && a.name != a.shape {
        format!(" {}", a.name)
    } else {
        String::new()
    };
    match (name.is_empty(), origin.is_empty()) {
        (true, true) => String::new(),
        (false, true) => format!(",{name}"),
        (_, false) => format!(",{name} {origin}"),
    }
}

fn buffer_json(a: &Alloc, limit: u64) -> serde_json::Value {
    json!({
        "name": a.name,
        "shape": a.shape,
        "size_bytes": a.size,
        "pct_of_limit": pct_fact(a.size, limit),
        "op_name": a.op_name,
        "source": a.source,
    })
}

/// `allocs` as cited buffers, largest first. XProf's merged entry of buffers
/// under 16 KiB is no buffer a view can show, so it is not cited.
fn cited<'a>(allocs: impl IntoIterator<Item = &'a Alloc>) -> Vec<CitedBuffer> {
    let mut out: Vec<CitedBuffer> = allocs
        .into_iter()
        .filter(|a| a.category != Some(oomscope_report::BufferCategory::Small))
        .map(Alloc::cited)
        .collect();
    out.sort_by_key(|b| std::cmp::Reverse(b.size_bytes));
    out
}

/// Every compile node, unselected, with the same reason.
#[allow(dead_code)]
pub(crate) fn not_reached(reason: &str) -> Vec<oomscope_report::DiagnosisNode> {
    tree_definition()
        .iter()
        .filter(|d| d.tree == TreeKind::CompileHbmOom)
        .map(|d| NodeEval::new(d.id, reason).build())
        .collect()
}
