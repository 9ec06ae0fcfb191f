//! The compile-time tree (OpenXLA error E1000): section 1 compares
//! TensorCore and SparseCore usage, section 2 looks for one allocation that
//! explains the excess, section 3 (the sum is too big) estimates what each
//! remedy would save and selects the first that covers the excess.
//!
//! Section 2's "larger than 50% of the limit" is read together with the
//! excess: an allocation is *unexpectedly* large when the program would fit
//! without it. Three 8.55 GiB temporaries on a 15.75 GiB chip are each 54% of
//! the limit, but removing one still leaves 17.09 GiB: the sum is the
//! problem, and the tree says so in both nodes.

use oomscope_report::{BufferCategory, CitedBuffer, TreeKind};
use serde_json::json;

use crate::facts::{
    cite_lifetime, gib, pct_fact, pct_text, signed, total, Alloc, AllocSource, CompileFacts,
};
use crate::node::NodeEval;
use crate::tree::tree_definition;
use crate::Evaluation;

/// Excess at most this share of the limit counts as "close to fitting".
const NEAR_FIT_FRACTION: f64 = 0.10;
/// How many buffers the nodes cite by name.
const CITED: usize = 5;

pub(crate) fn evaluate(f: &CompileFacts<'_>) -> Evaluation {
    let mut walk = Walk::default();
    let mut nodes: Vec<NodeEval> = Vec::new();

    let sc_leaf = tc_sc_balance(f, &mut nodes, &mut walk);
    if sc_leaf != Some("tc_sc_balance.sparsecore_high") {
        allocation_sections(f, &mut nodes, &mut walk);
    } else {
        for id in ["large_allocations", "aggregate"] {
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
    Evaluation {
        tree: TreeKind::CompileHbmOom,
        path: walk.path.iter().map(|s| s.to_string()).collect(),
        nodes: ordered,
        headline: format!("{}; {}", headline_numbers(f), walk.summary),
    }
}

#[derive(Default)]
struct Walk {
    path: Vec<&'static str>,
    /// The verdict's phrase for how the walk ended.
    summary: String,
}

fn headline_numbers(f: &CompileFacts<'_>) -> String {
    let space = f.space.to_ascii_uppercase();
    match (f.used, f.limit) {
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
// Section 1

fn tc_sc_balance(
    f: &CompileFacts<'_>,
    nodes: &mut Vec<NodeEval>,
    walk: &mut Walk,
) -> Option<&'static str> {
    let (tc, sc, limit) = match (f.event.tensorcore_bytes, f.event.sparsecore_bytes, f.limit) {
        (Some(tc), Some(sc), Some(limit)) => (tc, sc, limit),
        _ => {
            nodes.push(NodeEval::new(
                "tc_sc_balance",
                "The error does not report TensorCore and SparseCore usage separately, so this section does not apply.",
            ));
            return None;
        }
    };
    // One side is "high" when it uses at least twice the other (two thirds
    // of the sum); otherwise both are moderate and the chip is simply full.
    let leaf = if sc >= tc.saturating_mul(2) {
        "tc_sc_balance.sparsecore_high"
    } else if tc >= sc.saturating_mul(2) {
        "tc_sc_balance.tensorcore_high"
    } else {
        "tc_sc_balance.balanced"
    };
    let excess = (tc.saturating_add(sc)).saturating_sub(limit);
    let mut root = NodeEval::new(
        "tc_sc_balance",
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
        "tc_sc_balance.sparsecore_high",
        if leaf == "tc_sc_balance.sparsecore_high" {
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
    if leaf == "tc_sc_balance.sparsecore_high" {
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
        "tc_sc_balance.tensorcore_high",
        format!(
            "TensorCore uses {} = {} of the limit, {:.1}× SparseCore's {}{}.",
            gib(tc),
            pct_text(tc, limit),
            ratio(tc, sc),
            gib(sc),
            if leaf == "tc_sc_balance.tensorcore_high" {
                ": the allocations decide (sections 2 and 3)"
            } else {
                ""
            }
        ),
    );
    tc_node.fact("tensorcore_bytes", tc);
    nodes.push(tc_node);
    let balanced_reason = if leaf == "tc_sc_balance.balanced" {
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
    nodes.push(NodeEval::new("tc_sc_balance.balanced", balanced_reason));

    walk.path.push("tc_sc_balance");
    walk.path.push(leaf);
    if leaf == "tc_sc_balance.sparsecore_high" {
        walk.summary = format!(
            "SparseCore uses {} of the limit → SparseCore usage high",
            pct_text(sc, limit)
        );
    }
    Some(leaf)
}

/// `a / b`, for "1.5× the other" (∞ prints as `inf`).
fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b as f64
}

// ---------------------------------------------------------------------------
// Sections 2 and 3

fn allocation_sections(f: &CompileFacts<'_>, nodes: &mut Vec<NodeEval>, walk: &mut Walk) {
    let limit = match f.limit {
        Some(l) if l > 0 => l,
        _ => {
            let q = "The error gives no memory limit, so allocations cannot be compared with it: check the device's HBM size.";
            nodes.push(NodeEval::new("large_allocations", q));
            nodes.push(NodeEval::new("aggregate", q));
            walk.summary = "the error gives no limit to compare allocations with".into();
            return;
        }
    };
    let largest = match f.allocs.first() {
        Some(a) => a,
        None => {
            // Old libtpu aborts early on hopeless programs and says which flag
            // makes it print the listing.
            let (q, summary) = if f.event.message.contains("oom_fast_exit") {
                (
                    "The compiler gave up early without listing allocations: rerun with --xla_tpu_impure_oom_fast_exit_threshold=-1 (it then prints the largest allocations) or add an XLA dump, to tell one large allocation (2) from a sum that is too big (3).",
                    "the compiler gave up early: rerun with --xla_tpu_impure_oom_fast_exit_threshold=-1 to list the allocations",
                )
            } else {
                (
                    "The log does not list allocations: add an XLA dump (XLA_FLAGS=--xla_dump_to=DIR) or a profile to tell one large allocation (2) from a sum that is too big (3).",
                    "the log does not list allocations: add an XLA dump to tell large allocations from the sum",
                )
            };
            nodes.push(NodeEval::new("large_allocations", q));
            nodes.push(NodeEval::new("aggregate", q));
            walk.summary = summary.into();
            return;
        }
    };
    let half = limit / 2;
    let large: Vec<&Alloc> = f.allocs.iter().filter(|a| a.size > half).collect();
    let without_largest = f.used.map(|u| u.saturating_sub(largest.size));
    let explains = without_largest.is_none_or(|rest| rest <= limit);
    let selected = !large.is_empty() && explains;

    let mut node = NodeEval::new("large_allocations", "");
    node.fact("limit_bytes", limit);
    node.fact("half_limit_bytes", half);
    node.fact("largest_bytes", largest.size);
    node.fact("largest_pct_of_limit", pct_fact(largest.size, limit));
    node.fact("allocations_over_half", large.len());
    node.fact("allocation_list", list_name(f));
    if let Some(rest) = without_largest {
        node.fact("used_without_largest_bytes", rest);
    }
    node.fact(
        "buffers",
        large
            .iter()
            .take(CITED)
            .map(|a| buffer_json(a, limit))
            .collect::<Vec<_>>(),
    );
    node.reason = if large.is_empty() {
        format!(
            "The largest allocation, {} ({}), is {} of the {} limit: none is above 50%.",
            largest.what(),
            gib(largest.size),
            pct_text(largest.size, limit),
            gib(limit)
        )
    } else if selected {
        let rest = without_largest
            .map(|r| format!("; without it the program needs {}, which fits", gib(r)))
            .unwrap_or_default();
        format!(
            "{} ({}) is {} of the {} limit{rest}.",
            largest.what(),
            gib(largest.size),
            pct_text(largest.size, limit),
            gib(limit)
        )
    } else {
        format!(
            "{} allocation{} above 50% of the {} limit (largest {} = {}), but none accounts for the excess alone: without the largest the program still needs {}.",
            large.len(),
            if large.len() == 1 { " is" } else { "s are" },
            gib(limit),
            gib(largest.size),
            pct_text(largest.size, limit),
            gib(without_largest.unwrap_or(0))
        )
    };
    node.cite("over half the limit", cited(large.iter().copied()));
    for a in large.iter().take(CITED) {
        node.action(
            "find_source",
            &format!(
                "{} ({}, {} of the limit){}.",
                a.what(),
                gib(a.size),
                pct_text(a.size, limit),
                with_origin(a)
            ),
            Some((signed(a.size), size_how(f))),
        );
    }
    let hbm = f.space == "hbm";
    if selected && !hbm {
        node.action(
            "kernel_blocks",
            &format!(
                "{} is {} of the {} {}.",
                largest.what(),
                gib(largest.size),
                gib(limit),
                f.space.to_ascii_uppercase()
            ),
            None,
        );
    }
    nodes.push(node);

    if selected && !hbm {
        // Debug prints and sharding place HBM buffers; the walk ends here.
        walk.path.push("large_allocations");
        for id in [
            "large_allocations.debug_artifacts",
            "large_allocations.sharding",
        ] {
            nodes.push(NodeEval::new(
                id,
                format!(
                    "Not reached: this is {}, not HBM.",
                    f.space.to_ascii_uppercase()
                ),
            ));
        }
        nodes.push(NodeEval::new(
            "aggregate",
            "Not reached: one allocation accounts for the excess.",
        ));
        walk.summary = format!(
            "one buffer is {} of the {} limit → large allocations: a kernel's block or scratch",
            pct_text(largest.size, limit),
            f.space.to_ascii_uppercase()
        );
    } else if selected {
        walk.path.push("large_allocations");
        large_children(f, &large, limit, nodes, walk);
        nodes.push(NodeEval::new(
            "aggregate",
            format!(
                "Not reached: one allocation ({}) accounts for the excess.",
                gib(largest.size)
            ),
        ));
    } else {
        walk.path.push("aggregate");
        aggregate(f, limit, nodes, walk);
    }
}

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

/// Markers of debug prints and host callbacks in op names and labels.
const DEBUG_MARKERS: [&str; 6] = [
    "debug_callback",
    "debug_print",
    "jax.debug",
    "python_cpu_callback",
    "host_callback",
    "outfeed",
];

fn is_debug(a: &Alloc) -> bool {
    let haystack = format!("{} {} {}", a.op_name, a.label, a.name).to_ascii_lowercase();
    DEBUG_MARKERS.iter().any(|m| haystack.contains(m))
}

fn large_children(
    f: &CompileFacts<'_>,
    large: &[&Alloc],
    limit: u64,
    nodes: &mut Vec<NodeEval>,
    walk: &mut Walk,
) {
    let debug: Vec<&&Alloc> = large.iter().filter(|a| is_debug(a)).collect();
    let largest = large.first().copied();
    let mut dbg = NodeEval::new("large_allocations.debug_artifacts", "");
    dbg.fact("debug_allocations", debug.len());
    dbg.cite("debug print or host callback", cited(debug.iter().map(|a| **a)));
    if let Some(a) = debug.first() {
        dbg.reason = format!(
            "{} ({}, {} of the limit) comes from a debug print or host callback{}.",
            a.what(),
            gib(a.size),
            pct_text(a.size, limit),
            with_origin(a)
        );
        dbg.action(
            "remove_debug_print",
            &format!("Removing it frees {}.", gib(a.size)),
            Some((signed(a.size), "size of the debug-print buffer".into())),
        );
    } else {
        dbg.reason = "No large allocation's op name or label mentions a debug print or host callback; if the program calls jax.debug.print on large arrays, remove it and compare.".into();
    }
    nodes.push(dbg);

    let mut shard = NodeEval::new("large_allocations.sharding", "");
    if let Some(a) = largest {
        let replicated = a.label.contains("replicated");
        shard.fact("replicated_label", replicated);
        shard.cite("kept whole on one chip", [a.cited()]);
        let excess = f.excess.or_else(|| a.size.checked_sub(limit));
        let chips = excess.and_then(|e| chips_to_absorb(a.size, e));
        shard.reason = format!(
            "{} ({} of the limit){} is kept whole on one chip{}; check its mesh axes and sharding annotation.",
            a.what(),
            pct_text(a.size, limit),
            if debug.is_empty() { " has no debug origin and" } else { "" },
            if replicated { " (its label says replicated)" } else { "" }
        );
        match chips {
            Some(n) => {
                shard.fact("chips_to_fit", n);
                let per_chip = a.size / n;
                shard.fact("per_chip_sharded_bytes", per_chip);
                shard.action(
                    "shard_large_buffer",
                    &format!(
                        "Replicated it takes {} on every chip; sharded over {n} chips {} per chip, the fewest chips that bring the peak under the limit.",
                        gib(a.size),
                        gib(per_chip)
                    ),
                    Some((
                        signed(a.size - per_chip),
                        format!(
                            "saving per chip = size − size/n with n = ceil(size / (size − excess)) = {n}; assumes the buffer shards evenly"
                        ),
                    )),
                );
            }
            None => shard.action(
                "shard_large_buffer",
                &format!(
                    "Replicated it takes {} on every chip; sharded over n chips it takes {}/n.",
                    gib(a.size),
                    gib(a.size)
                ),
                None,
            ),
        }
    }
    nodes.push(shard);

    let leaf = if debug.is_empty() {
        "large_allocations.sharding"
    } else {
        "large_allocations.debug_artifacts"
    };
    walk.path.push(leaf);
    let what = if large.len() == 1 {
        "one buffer is"
    } else {
        "the largest buffer is"
    };
    walk.summary = format!(
        "{what} {} of the limit → large allocations: {}",
        largest.map_or_else(String::new, |a| pct_text(a.size, limit)),
        if debug.is_empty() {
            "mesh shape or sharding"
        } else {
            "debug artefacts"
        }
    );
}

/// Fewest chips `n` such that sharding a buffer of `size` over them removes
/// `excess`: size·(1 − 1/n) ≥ excess. `None` when even n → ∞ would not.
fn chips_to_absorb(size: u64, excess: u64) -> Option<u64> {
    if excess >= size {
        return None;
    }
    let keep = size - excess;
    Some(size.div_ceil(keep).max(2))
}

// ---------------------------------------------------------------------------
// Section 3

/// A computed saving.
#[derive(Debug, Clone)]
struct Estimate {
    bytes: u64,
    detail: String,
    how: String,
    /// The buffers it counted, largest first (empty when it counted totals).
    counted: Vec<CitedBuffer>,
}

/// `allocs` as cited buffers, largest first.
fn cited<'a>(allocs: impl IntoIterator<Item = &'a Alloc>) -> Vec<CitedBuffer> {
    let mut out: Vec<CitedBuffer> = allocs.into_iter().map(Alloc::cited).collect();
    out.sort_by_key(|b| std::cmp::Reverse(b.size_bytes));
    out
}

fn aggregate(f: &CompileFacts<'_>, limit: u64, nodes: &mut Vec<NodeEval>, walk: &mut Walk) {
    let excess = f.excess;
    let peak = f.module.map(|m| m.peak_bytes).filter(|p| *p > 0).or(f.used);
    let partial = f.allocs_source != AllocSource::ModulePeak;
    let scope = match (f.allocs_source, f.module) {
        (AllocSource::ModulePeak, Some(m)) => {
            format!(
                "the {} buffers live at the peak of {}",
                f.allocs.len(),
                m.display_name()
            )
        }
        _ => format!(
            "the {} allocations the log lists (only the largest: a lower bound)",
            f.allocs.len()
        ),
    };

    let mut agg = NodeEval::new("aggregate", "");
    if let Some(u) = f.used {
        agg.fact("used_bytes", u);
    }
    agg.fact("limit_bytes", limit);
    if let Some(e) = excess {
        agg.fact("excess_bytes", e);
        agg.fact("excess_pct_of_limit", pct_fact(e, limit));
    }
    agg.fact("allocation_list", list_name(f));
    agg.fact("allocations", f.allocs.len());
    agg.fact(
        "buffers",
        f.allocs
            .iter()
            .take(CITED)
            .map(|a| buffer_json(a, limit))
            .collect::<Vec<_>>(),
    );
    agg.reason = match (f.used, excess) {
        (Some(u), Some(e)) => format!(
            "No single allocation accounts for the {} excess ({} used of {}); the largest is {} = {} of the limit.",
            gib(e),
            gib(u),
            gib(limit),
            gib(f.allocs.first().map_or(0, |a| a.size)),
            pct_text(f.allocs.first().map_or(0, |a| a.size), limit)
        ),
        _ => format!(
            "No allocation is above 50% of the {} limit; the sum is too big.",
            gib(limit)
        ),
    };
    agg.cite("top contributor", cited(f.allocs.iter()));
    for a in f.allocs.iter().take(CITED) {
        agg.action(
            "top_contributor",
            &format!(
                "{} ({}, {} of the limit){}.",
                a.what(),
                gib(a.size),
                pct_text(a.size, limit),
                with_origin(a)
            ),
            Some((signed(a.size), size_how(f))),
        );
    }
    nodes.push(agg);

    let padding = padding_estimate(f, &scope);
    let bf16 = bf16_estimate(f, &scope);
    let donate = donate_estimate(f);
    let batch = batch_estimate(f, peak, &scope);
    let checkpoint = checkpoint_estimate(f);

    let covers = |e: &Option<Estimate>| match (e, excess) {
        (Some(e), Some(x)) => e.bytes >= x,
        _ => false,
    };
    let near = excess.is_some_and(|e| (e as f64) <= limit as f64 * NEAR_FIT_FRACTION);
    let hbm = f.space == "hbm";
    let config_covers = covers(&bf16) || covers(&donate) || covers(&batch);
    let leaf = if covers(&padding) {
        "aggregate.padding"
    } else if near && hbm {
        "aggregate.remat"
    } else if config_covers {
        "aggregate.config"
    } else if !partial && hbm {
        "aggregate.architecture"
    } else {
        "aggregate.profile"
    };
    let excess_text = excess.map_or_else(|| "the excess".to_string(), gib);

    // A. padding
    let mut pad = NodeEval::new("aggregate.padding", "");
    match &padding {
        Some(e) => {
            pad.fact("padding_bytes", e.bytes);
            pad.cite("padded", e.counted.iter().cloned());
            pad.reason = format!(
                "Padding is {} ({}), {} the {} excess.",
                gib(e.bytes),
                e.detail,
                if covers(&padding) {
                    "at least"
                } else {
                    "less than"
                },
                excess_text
            );
            pad.action(
                "align_dims",
                &e.detail,
                Some((signed(e.bytes), e.how.clone())),
            );
            if let Some(p) = f.module.and_then(|m| m.padding.as_ref()) {
                for entry in p.top.iter().take(3) {
                    let saves = entry.suggestion_saves_bytes.unwrap_or(entry.padding_bytes);
                    pad.action(
                        "align_dims",
                        &format!(
                            "{} ×{}: {} of padding ({:.1}× expansion). {}",
                            entry.shape,
                            entry.count,
                            gib(entry.padding_bytes),
                            entry.expansion,
                            entry.suggestion
                        ),
                        Some((
                            signed(saves),
                            "padding model: padded − unpadded size of these buffers".into(),
                        )),
                    );
                }
            }
        }
        None => {
            pad.reason = "The data gives no unpadded sizes, so padding cannot be measured: check the shapes of the largest buffers against the (8, 128) tile.".into();
        }
    }
    nodes.push(pad);

    // B. configuration
    let mut cfg = NodeEval::new("aggregate.config", "");
    let mut cfg_parts = Vec::new();
    for (key, est, question) in [
        ("bf16", &bf16, "No f32 buffer with a readable shape is listed, so the bfloat16 saving cannot be computed."),
        ("donate", &donate, "Parameters and outputs are not known separately: load the XLA dump or a profile to see whether outputs could reuse parameter memory."),
        ("batch", &batch, "No buffer shape shows a batch dimension: check which buffers scale with the batch size."),
    ] {
        match est {
            Some(e) => {
                cfg.fact(&format!("{key}_saving_bytes"), e.bytes);
                cfg.cite(
                    match key {
                        "bf16" => "f32",
                        "donate" => "parameter with an output of its shape",
                        _ => "scales with the batch",
                    },
                    e.counted.iter().cloned(),
                );
                cfg_parts.push(format!("{key} {}", gib(e.bytes)));
                cfg.action(key, &e.detail, Some((signed(e.bytes), e.how.clone())));
            }
            None => cfg.action(key, question, None),
        }
    }
    cfg.reason = if cfg_parts.is_empty() {
        "No configuration saving can be computed from this data.".into()
    } else {
        format!(
            "Estimated savings: {}; {} the {} excess.",
            cfg_parts.join(", "),
            if config_covers {
                "one of them covers"
            } else {
                "none covers"
            },
            excess_text
        )
    };
    nodes.push(cfg);

    // C. architecture
    let mut arch = NodeEval::new("aggregate.architecture", "");
    if let Some(used) = f.used.or(peak) {
        let chips = used.div_ceil(limit).max(2);
        let per_chip = used / chips;
        arch.fact("chips_to_fit", chips);
        arch.fact("per_chip_bytes", per_chip);
        arch.reason = format!(
            "{} does not fit in {}: spread evenly it needs {chips} chips ({} each) or a chip with at least {} of HBM.",
            gib(used),
            gib(limit),
            gib(per_chip),
            gib(used)
        );
        let largest_note = f
            .allocs
            .first()
            .map(|a| {
                format!(
                    " The largest buffer, {}, takes {} per chip replicated and {} sharded over {chips}.",
                    a.what(),
                    gib(a.size),
                    gib(a.size / chips)
                )
            })
            .unwrap_or_default();
        arch.action(
            "shard",
            &format!("Over {chips} chips the program needs about {} per chip instead of {}.{largest_note}", gib(per_chip), gib(used)),
            Some((
                signed(used - per_chip),
                format!("chips = max(2, ceil(used / limit)) = {chips}; saving per chip = used − used/chips; assumes every buffer shards evenly (replicated buffers do not shrink)"),
            )),
        );
        arch.action(
            "bigger_chip",
            &format!("It needs at least {} per chip.", gib(used)),
            None,
        );
    } else {
        arch.reason = "The error does not say how much memory the program needs.".into();
    }
    if let Some(m) = f.module {
        let offloadable = total(
            f.allocs
                .iter()
                .filter(|a| {
                    matches!(
                        a.category,
                        Some(BufferCategory::Parameter | BufferCategory::Output)
                    )
                })
                .map(|a| a.size),
        );
        arch.action(
            "host_offload",
            &format!("Parameters and outputs live at the peak of {}: {}.", m.display_name(), gib(offloadable)),
            Some((signed(offloadable), "Σ sizes of parameter and output buffers live at the peak (what offloading them could move off the chip)".into())),
        );
    } else {
        arch.action("host_offload", "", None);
    }
    if leaf == "aggregate.architecture" {
        arch.reason
            .push_str(" No cheaper remedy covers the excess.");
    }
    nodes.push(arch);

    // D. flags
    let mut flags = NodeEval::new(
        "aggregate.flags",
        "A last resort: never selected from the data; try the other remedies first.",
    );
    flags.action("memory_flags", "", None);
    nodes.push(flags);

    // E. remat
    let mut remat = NodeEval::new("aggregate.remat", "");
    remat.reason = match excess {
        Some(e) if near && hbm => format!(
            "The program is close to fitting: {} over is {} of the limit (at most 10%).",
            gib(e),
            pct_text(e, limit)
        ),
        Some(e) if !hbm => format!(
            "The rematerialisation flags act on HBM; this error is about {} ({} over).",
            f.space.to_ascii_uppercase(),
            gib(e)
        ),
        Some(e) => format!(
            "{} over is {} of the limit: more than the 10% rematerialisation usually recovers.",
            gib(e),
            pct_text(e, limit)
        ),
        None => "The excess is not known.".into(),
    };
    if hbm {
        let mib = 1u64 << 20;
        let target = limit.saturating_sub(excess.unwrap_or(0)) / mib;
        remat.fact("limit_mib", limit / mib);
        remat.fact("max_hbm_size_mib", target);
        remat.action(
            "max_hbm",
            &format!(
                "Start with --xla_tpu_max_hbm_size_mib={target} (your limit is {} MiB; aim lower by the {} excess) and lower it further if the pass still falls short.",
                limit / mib,
                excess_text
            ),
            None,
        );
        if let Some(e) = excess {
            remat.facts.insert(
                "max_hbm_size_how".into(),
                json!(format!(
                    "floor((limit {} − excess {}) / 1 MiB)",
                    gib(limit),
                    gib(e)
                )),
            );
        }
        remat.action("remat_flags", "", None);
    }
    match &checkpoint {
        Some(e) => {
            remat.fact("checkpoint_saving_bytes", e.bytes);
            remat.cite("held across the peak", e.counted.iter().cloned());
            remat.action("checkpoint", &e.detail, Some((signed(e.bytes), e.how.clone())));
        }
        None => remat.action(
            "checkpoint",
            "The input has no buffer lifetimes, so the activations it would free cannot be estimated: load the XLA dump (buffer assignment) or a profile.",
            None,
        ),
    }
    nodes.push(remat);

    // F. profile
    let mut profile = NodeEval::new("aggregate.profile", "");
    profile.reason =
        if partial {
            format!(
            "Only {} allocation{} listed{}: see every buffer at the peak before choosing a remedy.",
            f.allocs.len(),
            if f.allocs.len() == 1 { " is" } else { "s are" },
            match (f.used, f.allocs.iter().map(|a| a.size).reduce(u64::saturating_add)) {
                (Some(u), Some(listed)) => format!(" ({} of the {} used)", gib(listed), gib(u)),
                _ => String::new(),
            }
        )
        } else {
            "The module analysis lists every buffer at the peak; open it in the timeline view."
                .into()
        };
    profile.action("memory_viewer", "", None);
    nodes.push(profile);

    walk.path.push(leaf);
    walk.summary = match leaf {
        "aggregate.padding" => format!(
            "padding at the peak ({}) covers the excess → sum of allocations: padding",
            padding.as_ref().map_or_else(String::new, |e| gib(e.bytes))
        ),
        "aggregate.remat" => format!(
            "no single buffer accounts for it and it is {} over → sum of allocations: rematerialisation",
            excess_text
        ),
        "aggregate.config" => {
            let best = [&bf16, &donate, &batch]
                .into_iter()
                .zip(["bfloat16", "donate_argnums", "half the batch"])
                .filter_map(|(e, name)| e.as_ref().map(|e| (e.bytes, name)))
                .max_by_key(|(b, _)| *b);
            format!(
                "no single buffer accounts for it; {} would save about {} → sum of allocations: configuration",
                best.map_or("a configuration change", |b| b.1),
                gib(best.map_or(0, |b| b.0))
            )
        }
        "aggregate.architecture" => format!(
            "no single buffer or cheap change covers the {} excess → sum of allocations: architecture and sharding",
            excess_text
        ),
        _ => format!(
            "no single buffer accounts for it and the log lists only {} allocations → sum of allocations: profile the peak",
            f.allocs.len()
        ),
    };
}

fn padding_estimate(f: &CompileFacts<'_>, scope: &str) -> Option<Estimate> {
    if let Some(p) = f.module.and_then(|m| m.padding.as_ref()) {
        return Some(Estimate {
            bytes: p.peak_padding_bytes,
            detail: format!(
                "{} of padding in the buffers live at the peak",
                gib(p.peak_padding_bytes)
            ),
            how: "padding model: Σ (padded − unpadded size) over the buffers live at the peak"
                .into(),
            counted: by_padding(f.allocs.iter()),
        });
    }
    if f.allocs_source != AllocSource::ModulePeak {
        if let (Some(padded), Some(unpadded)) = (
            f.event.hlo_temp_padded_bytes,
            f.event.hlo_temp_unpadded_bytes,
        ) {
            let bytes = padded.saturating_sub(unpadded);
            return Some(Estimate {
                bytes,
                detail: format!("HLO temporaries: {} padded vs {} unpadded", gib(padded), gib(unpadded)),
                how: "HLO temp padded − unpadded, as the error prints them (rounded to its 2 decimals)".into(),
                counted: by_padding(f.allocs.iter()),
            });
        }
    }
    let known: Vec<&Alloc> = f.allocs.iter().filter(|a| a.unpadded.is_some()).collect();
    if known.is_empty() {
        return None;
    }
    let bytes = total(known.iter().filter_map(|a| a.padding()));
    Some(Estimate {
        bytes,
        detail: format!("{} of padding in {scope}", gib(bytes)),
        how: format!("Σ (size − unpadded size) over {} of {scope}", known.len()),
        counted: by_padding(known.iter().copied()),
    })
}

fn bf16_estimate(f: &CompileFacts<'_>, scope: &str) -> Option<Estimate> {
    let f32s: Vec<&Alloc> = f
        .allocs
        .iter()
        .filter(|a| a.array.as_ref().is_some_and(|s| s.dtype == "f32"))
        .collect();
    if f32s.is_empty() {
        return None;
    }
    let f32_bytes = total(f32s.iter().map(|a| a.size));
    Some(Estimate {
        bytes: f32_bytes / 2,
        detail: format!(
            "{} f32 buffer{} of {scope} take{} {}; in bfloat16 they would take about {}.",
            f32s.len(),
            if f32s.len() == 1 { "" } else { "s" },
            if f32s.len() == 1 { "s" } else { "" },
            gib(f32_bytes),
            gib(f32_bytes - f32_bytes / 2)
        ),
        how: format!(
            "half of the f32 bytes among {scope} ({} ÷ 2); assumes bf16 halves each padded size",
            gib(f32_bytes)
        ),
        counted: cited(f32s.iter().copied()),
    })
}

fn donate_estimate(f: &CompileFacts<'_>) -> Option<Estimate> {
    if f.allocs_source == AllocSource::ModulePeak {
        let params: Vec<&Alloc> = f
            .allocs
            .iter()
            .filter(|a| a.category == Some(BufferCategory::Parameter))
            .collect();
        let mut outputs: Vec<&Alloc> = f
            .allocs
            .iter()
            .filter(|a| a.category == Some(BufferCategory::Output))
            .collect();
        let param_bytes = total(params.iter().map(|a| a.size));
        let mut matched = 0u64;
        let mut matched_count = 0usize;
        let mut donatable = Vec::new();
        for p in &params {
            let Some(key) = p.array.as_ref().map(|s| s.key()) else {
                continue;
            };
            if let Some(i) = outputs
                .iter()
                .position(|o| o.array.as_ref().is_some_and(|s| s.key() == key))
            {
                outputs.swap_remove(i);
                matched = matched.saturating_add(p.size);
                matched_count += 1;
                donatable.push(*p);
            }
        }
        let detail = if matched_count > 0 {
            format!(
                "{matched_count} of the {} parameters at the peak ({} of {}) have an output of the same shape live at the same time: donating them lets XLA write the outputs in place.",
                params.len(),
                gib(matched),
                gib(param_bytes)
            )
        } else {
            format!(
                "Parameters at the peak take {} ({} buffers) but no output live at the peak has a parameter's shape, so donation would not lower this peak.",
                gib(param_bytes),
                params.len()
            )
        };
        return Some(Estimate {
            bytes: matched,
            detail,
            how: "Σ sizes of parameter buffers at the peak matched one-to-one with an output buffer of the same element type and dimensions at the peak".into(),
            counted: cited(donatable),
        });
    }
    let ev = f.event;
    let (args, out) = (ev.arguments_bytes?, ev.output_bytes?);
    let shared = ev
        .extra
        .iter()
        .find(|(k, _)| k.contains("shar") || k.contains("alias"))
        .map(|(_, v)| *v)
        .unwrap_or(0);
    let bytes = args.min(out).saturating_sub(shared);
    Some(Estimate {
        bytes,
        detail: format!(
            "Arguments take {}, outputs {}, already sharing {}: at most {} more could be reused, if outputs have the parameters' shapes (the log gives sizes, not shapes).",
            gib(args),
            gib(out),
            gib(shared),
            gib(bytes)
        ),
        how: "min(arguments, outputs) − bytes already shared, from the error's totals; an upper bound".into(),
        counted: Vec::new(),
    })
}

fn batch_estimate(f: &CompileFacts<'_>, peak: Option<u64>, scope: &str) -> Option<Estimate> {
    // The batch: the leading dimension that holds the most bytes among the
    // non-parameter buffers of rank ≥ 2.
    let mut by_leading: Vec<(u64, u64)> = Vec::new();
    for a in &f.allocs {
        if matches!(
            a.category,
            Some(BufferCategory::Parameter | BufferCategory::Constant)
        ) {
            continue;
        }
        let Some(s) = &a.array else { continue };
        let (Some(&lead), true) = (s.dims.first(), s.dims.len() >= 2) else {
            continue;
        };
        if lead < 2 {
            continue;
        }
        match by_leading.iter_mut().find(|(d, _)| *d == lead) {
            Some(entry) => entry.1 = entry.1.saturating_add(a.size),
            None => by_leading.push((lead, a.size)),
        }
    }
    let (batch, _) = by_leading.into_iter().max_by_key(|(_, bytes)| *bytes)?;
    let scaling_allocs: Vec<&Alloc> = f
        .allocs
        .iter()
        .filter(|a| a.array.as_ref().is_some_and(|s| s.dims.contains(&batch)))
        .collect();
    let scaling = total(scaling_allocs.iter().map(|a| a.size));
    let peak = peak.filter(|p| *p > 0)?;
    Some(Estimate {
        bytes: scaling / 2,
        detail: format!(
            "Buffers with a dimension of {batch} take {} = {} of the peak; halving the batch would save about {}. Check that {batch} is the batch size.",
            gib(scaling),
            pct_text(scaling, peak),
            gib(scaling / 2)
        ),
        how: format!(
            "{batch} is the leading dimension holding the most bytes among the non-parameter buffers of {scope}, taken as the batch; saving = ½ × Σ sizes of buffers with a dimension of {batch}"
        ),
        counted: cited(scaling_allocs),
    })
}

fn checkpoint_estimate(f: &CompileFacts<'_>) -> Option<Estimate> {
    let m = f.module?;
    if m.buffers.is_empty() {
        return None;
    }
    let p = m.peak_position;
    let mut held: Vec<_> = m
        .buffers
        .iter()
        .filter(|b| b.category == BufferCategory::Temporary && b.start < p && b.end > p)
        .collect();
    held.sort_by_key(|b| std::cmp::Reverse(b.size_bytes));
    let counted = held.iter().map(|b| cite_lifetime(m, b)).collect();
    let held_bytes = total(held.iter().map(|b| b.size_bytes));
    // Recomputing brings one of them back while the backward pass uses it.
    let recomputed = held.iter().map(|b| b.size_bytes).max().unwrap_or(0);
    let bytes = held_bytes - recomputed;
    Some(Estimate {
        bytes,
        detail: format!(
            "{} temporar{} produced before the peak and used after it ({}) are what jax.checkpoint would recompute instead of keeping; recomputing needs the largest ({}) back, so about {} would be freed.",
            held.len(),
            if held.len() == 1 { "y" } else { "ies" },
            gib(held_bytes),
            gib(recomputed),
            gib(bytes)
        ),
        how: format!(
            "Σ sizes of temporaries whose lifetime [start, end] spans the peak position {p} strictly, less the largest of them (live again while it is recomputed)"
        ),
        counted,
    })
}

/// The allocations with padding, most padding first.
fn by_padding<'a>(allocs: impl IntoIterator<Item = &'a Alloc>) -> Vec<CitedBuffer> {
    let mut padded: Vec<&Alloc> = allocs
        .into_iter()
        .filter(|a| a.padding().is_some_and(|p| p > 0))
        .collect();
    padded.sort_by_key(|a| std::cmp::Reverse(a.padding()));
    padded.into_iter().map(Alloc::cited).collect()
}

/// Every compile node, unselected, with the same reason.
pub(crate) fn not_reached(reason: &str) -> Vec<oomscope_report::DiagnosisNode> {
    tree_definition()
        .iter()
        .filter(|d| d.tree == TreeKind::CompileHbmOom)
        .map(|d| NodeEval::new(d.id, reason).build())
        .collect()
}
