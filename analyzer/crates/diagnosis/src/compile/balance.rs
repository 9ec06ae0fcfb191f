//! Section 1 of the E1000 page: when the error reports TensorCore and
//! SparseCore usage separately, compare them.

use crate::facts::{gib, pct_fact, pct_text, signed, CompileFacts};
use crate::ids::*;
use crate::node::NodeEval;

use super::{Answer, Walk};

pub(super) fn tc_sc_balance(
    f: &CompileFacts<'_>,
    nodes: &mut Vec<NodeEval>,
    walk: &mut Walk,
) -> Option<&'static str> {
    let (tc, sc, limit) = match (f.event.tensorcore_bytes, f.event.sparsecore_bytes, f.limit) {
        (Some(tc), Some(sc), Some(limit)) => (tc, sc, limit),
        _ => {
            nodes.push(NodeEval::new(
                TC_SC_BALANCE,
                "The error does not report TensorCore and SparseCore usage separately, so this section does not apply.",
            ));
            return None;
        }
    };
    // One side is "high" when it uses at least twice the other (two thirds
    // of the sum); otherwise both are moderate and the chip is simply full.
    let leaf = if sc >= tc.saturating_mul(2) {
        SPARSECORE_HIGH
    } else if tc >= sc.saturating_mul(2) {
        TENSORCORE_HIGH
    } else {
        BALANCED
    };
    let excess = (tc.saturating_add(sc)).saturating_sub(limit);
    let mut root = NodeEval::new(
        TC_SC_BALANCE,
        format!(
            "TensorCore uses {} ({} of the {} limit) and SparseCore {} ({}); together {} over.",
            gib(tc),
            pct_text(tc, limit),
            gib(limit),
            gib(sc),
            pct_text(sc, limit),
            gib(excess)
        ),
    );
    root.fact("tensorcore_bytes", tc);
    root.fact("sparsecore_bytes", sc);
    root.fact("limit_bytes", limit);
    root.fact("excess_bytes", excess);
    root.fact("tensorcore_pct_of_limit", pct_fact(tc, limit));
    root.fact("sparsecore_pct_of_limit", pct_fact(sc, limit));
    nodes.push(root);

    let mut sc_node = NodeEval::new(
        SPARSECORE_HIGH,
        if leaf == SPARSECORE_HIGH {
            format!(
                "SparseCore uses {} = {} of the limit, {:.1}× TensorCore's {}: SparseCore memory must shrink by {} ({} of its usage).",
                gib(sc),
                pct_text(sc, limit),
                ratio(sc, tc),
                gib(tc),
                gib(excess),
                pct_text(excess, sc)
            )
        } else {
            format!(
                "SparseCore uses {} = {} of the limit, less than twice TensorCore's {}.",
                gib(sc),
                pct_text(sc, limit),
                gib(tc)
            )
        },
    );
    if leaf == SPARSECORE_HIGH {
        sc_node.action(
            "serialize_tables",
            &format!("SparseCore must give up {} to fit.", gib(excess)),
            Some((
                signed(excess),
                "excess = TensorCore + SparseCore − limit".into(),
            )),
        );
        sc_node.action(
            "table_padding",
            "The error does not list table widths: check each table's feature_width (a width of 1 float pads to 8, 8× the memory).",
            None,
        );
        sc_node.action("parallel_iterations", "", None);
        sc_node.action("table_sharding", "", None);
    }
    nodes.push(sc_node);

    let mut tc_node = NodeEval::new(
        TENSORCORE_HIGH,
        format!(
            "TensorCore uses {} = {} of the limit, {:.1}× SparseCore's {}{}.",
            gib(tc),
            pct_text(tc, limit),
            ratio(tc, sc),
            gib(sc),
            if leaf == TENSORCORE_HIGH {
                ": the allocations decide (sections 2 and 3)"
            } else {
                ""
            }
        ),
    );
    tc_node.fact("tensorcore_bytes", tc);
    nodes.push(tc_node);
    let balanced_reason = if leaf == BALANCED {
        format!(
            "Neither uses twice the other ({} and {} of the {} limit) but together they are {} over: the chip is full; reduce both.",
            pct_text(tc, limit),
            pct_text(sc, limit),
            gib(limit),
            gib(excess)
        )
    } else {
        "One side uses at least twice the other.".to_string()
    };
    nodes.push(NodeEval::new(BALANCED, balanced_reason));

    walk.path.push(TC_SC_BALANCE);
    walk.path.push(leaf);
    if leaf == SPARSECORE_HIGH {
        walk.summary = format!(
            "SparseCore uses {} of the limit → SparseCore usage high",
            pct_text(sc, limit)
        );
        walk.answer = Some(Answer {
            node: SPARSECORE_HIGH,
            step: format!(
                "shrink SparseCore memory by {}: serialize table processing (--xla_sc_num_serialized_tables_to_optimize_hbm), lower maximum_parallel_iterations, check narrow tables' padding",
                gib(excess)
            ),
            estimate: None,
            confidence: None,
        });
    }
    Some(leaf)
}

/// `a / b`, for "1.5× the other" (∞ prints as `inf`).
fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b as f64
}
