//! Section 2 of the E1000 page: allocations over half the limit. Almost
//! always a configuration error (a debug print that materialises a tensor, a
//! mesh shape or a missing sharding annotation that replicates it); the XLA
//! label points at the source.

use crate::facts::{chips, gib, pct_fact, pct_text, signed, Alloc, Chips, CompileFacts};
use crate::ids::*;
use crate::node::NodeEval;
use oomscope_report::{BufferCategory, Confidence, MemorySpace};

use super::{buffer_json, cited, list_name, size_how, with_origin, Answer, Walk, CITED};

/// Builds section 2's nodes. Selected (pushed on the path) whenever `large`
/// is not empty, as the page says.
pub(super) fn section(
    f: &CompileFacts<'_>,
    large: &[&Alloc],
    limit: u64,
    without_largest: Option<u64>,
    nodes: &mut Vec<NodeEval>,
    walk: &mut Walk,
) {
    let half = limit / 2;
    let largest = &f.allocs[0];
    let rest_fits = without_largest.is_none_or(|rest| rest <= limit);

    let mut node = NodeEval::new(LARGE_ALLOCATIONS, "");
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
    } else {
        let rest = match without_largest {
            Some(r) if r <= limit => {
                format!("; without it the program needs {}, which fits", gib(r))
            }
            Some(r) => format!(
                "; without it the program still needs {} of {}, so the sum is too big as well (section 3)",
                gib(r),
                gib(limit)
            ),
            None => String::new(),
        };
        format!(
            "{} allocation{} above 50% of the {} limit; the largest, {} ({}), is {}{rest}.",
            large.len(),
            if large.len() == 1 { " is" } else { "s are" },
            gib(limit),
            largest.what(),
            gib(largest.size),
            pct_text(largest.size, limit),
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
    let hbm = f.space == MemorySpace::Hbm;
    if !large.is_empty() && !hbm {
        node.action(
            "kernel_blocks",
            &format!(
                "{} is {} of the {} {}.",
                largest.what(),
                gib(largest.size),
                gib(limit),
                f.space.as_str().to_ascii_uppercase()
            ),
            None,
        );
    }
    nodes.push(node);

    if large.is_empty() {
        return;
    }
    walk.path.push(LARGE_ALLOCATIONS);
    if !hbm {
        // Debug prints and sharding place HBM buffers; the walk ends here.
        for id in [DEBUG_ARTIFACTS, LARGE_SHARDING] {
            nodes.push(NodeEval::new(
                id,
                format!(
                    "Not reached: this is {}, not HBM.",
                    f.space.as_str().to_ascii_uppercase()
                ),
            ));
        }
        walk.summary = format!(
            "one buffer is {} of the {} limit → large allocations: a kernel's block or scratch",
            pct_text(largest.size, limit),
            f.space.as_str().to_ascii_uppercase()
        );
        walk.large = Some(Answer {
            node: LARGE_ALLOCATIONS,
            step: format!(
                "shrink {} ({} of the {} {}): it is a kernel's input window or scratch; smaller block sizes shrink it",
                largest.what(),
                gib(largest.size),
                gib(limit),
                f.space.as_str().to_ascii_uppercase()
            ),
            estimate: f.excess,
            confidence: None,
        });
        return;
    }
    children(f, large, limit, rest_fits, nodes, walk);
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

fn children(
    f: &CompileFacts<'_>,
    large: &[&Alloc],
    limit: u64,
    rest_fits: bool,
    nodes: &mut Vec<NodeEval>,
    walk: &mut Walk,
) {
    let debug: Vec<&&Alloc> = large.iter().filter(|a| is_debug(a)).collect();
    let largest = large[0];
    let mut dbg = NodeEval::new(DEBUG_ARTIFACTS, "");
    dbg.fact("debug_allocations", debug.len());
    dbg.cite(
        "debug print or host callback",
        cited(debug.iter().map(|a| **a)),
    );
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

    let mut shard = NodeEval::new(LARGE_SHARDING, "");
    let chip_count = chips(f);
    let several = chip_count == Chips::Several;
    let one = chip_count == Chips::One;
    // On one chip every array is labelled replicated: the label says
    // something only about a program that runs on several.
    let replicated = several && largest.label.contains("replicated");
    shard.fact("replicated_label", replicated);
    shard.cite("kept whole on one chip", [largest.cited()]);
    shard.reason = if several {
        format!(
            "{} ({} of the limit){} is kept whole on one chip{}; check its mesh axes and sharding annotation.",
            largest.what(),
            pct_text(largest.size, limit),
            if debug.is_empty() { " has no debug origin and" } else { "" },
            if replicated { " (its label says replicated)" } else { "" }
        )
    } else if one {
        format!(
            "{} ({} of the limit){} is kept whole. The module was compiled for one chip (1 replica, 1 partition): sharding cannot split it, so it must shrink or be computed in chunks.",
            largest.what(),
            pct_text(largest.size, limit),
            if debug.is_empty() { " has no debug origin and" } else { "" },
        )
    } else {
        format!(
            "{} ({} of the limit){} is kept whole. Nothing in these inputs shows the program runs on several chips (it has no collective): on one chip, sharding cannot split it, so it must shrink or be computed in chunks; on several chips, check its mesh axes and sharding annotation.",
            largest.what(),
            pct_text(largest.size, limit),
            if debug.is_empty() { " has no debug origin and" } else { "" },
        )
    };
    shard.fact("compiled_for_one_chip", one);
    if !several {
        shard.action(
            "single_chip",
            &format!("It is {}{}.", gib(largest.size), with_origin(largest)),
            None,
        );
    }
    let excess = f.excess.or_else(|| largest.size.checked_sub(limit));
    let plan = shard_plan(f, largest, excess);
    walk.large_evident = !debug.is_empty() || plan.as_ref().is_some_and(|p| p.from_program);
    let mut shard_answer = None;
    // A one-chip module has no chips to shard over: no sharding action.
    match plan.as_ref().filter(|_| !one) {
        Some(p) => {
            shard.fact("chips_to_fit", p.chips);
            let per_chip = largest.size / p.chips;
            shard.fact("per_chip_sharded_bytes", per_chip);
            let saving = largest.size - per_chip;
            shard.action(
                "shard_large_buffer",
                &format!(
                    "Replicated it takes {} on every chip; sharded over {} chips {} per chip{}.",
                    gib(largest.size),
                    p.chips,
                    gib(per_chip),
                    p.why
                ),
                Some((signed(saving), p.how.clone())),
            );
            shard_answer = Some(if several || p.from_program {
                Answer {
                    node: LARGE_SHARDING,
                    step: format!(
                        "shard {} ({} on every chip) over {} chips: check its mesh axes and sharding annotation{}",
                        largest.what(),
                        gib(largest.size),
                        p.chips,
                        if replicated { " (its label says replicated)" } else { "" }
                    ),
                    estimate: Some(saving),
                    confidence: Some(p.confidence),
                }
            } else {
                single_chip_answer(largest, limit, Some(p.chips), false)
            });
        }
        None if one => {}
        None => shard.action(
            "shard_large_buffer",
            &format!(
                "Replicated it takes {} on every chip; sharded over n chips it takes {}/n.",
                gib(largest.size),
                gib(largest.size)
            ),
            None,
        ),
    }
    nodes.push(shard);

    let leaf = if debug.is_empty() {
        LARGE_SHARDING
    } else {
        DEBUG_ARTIFACTS
    };
    walk.path.push(leaf);
    let what = if large.len() == 1 {
        "one buffer is"
    } else {
        "the largest buffer is"
    };
    walk.summary = format!(
        "{what} {} of the limit → large allocations: {}{}",
        pct_text(largest.size, limit),
        match (debug.is_empty(), several) {
            (false, _) => "debug artefacts",
            (true, true) => "mesh shape or sharding",
            (true, false) if one => "one chip: shrink it or compute it in chunks",
            (true, false) => "shrink it or compute it in chunks (or shard it, on several chips)",
        },
        if rest_fits {
            ""
        } else {
            "; the rest is too big as well"
        }
    );
    walk.large = match debug.first() {
        Some(a) => Some(Answer {
            node: DEBUG_ARTIFACTS,
            step: format!(
                "remove the debug print or host callback that materialises {} ({}){}",
                a.what(),
                gib(a.size),
                with_origin(a)
            ),
            estimate: Some(a.size),
            confidence: Some(Confidence::High),
        }),
        None if !several => shard_answer.or(Some(single_chip_answer(largest, limit, None, one))),
        None => shard_answer.or(Some(Answer {
            node: LARGE_SHARDING,
            step: format!(
                "check the mesh axes and sharding of {} ({}, {} of the limit){}",
                largest.what(),
                gib(largest.size),
                pct_text(largest.size, limit),
                with_origin(largest)
            ),
            estimate: None,
            confidence: None,
        })),
    };
}

/// The next step for a large buffer of a program that nothing shows runs on
/// several chips: what a single-chip program can do, then sharding if it
/// does run on several (`chips`: how many would absorb the excess). A
/// module compiled for one chip (`one`) gets only the first part.
fn single_chip_answer(largest: &Alloc, limit: u64, chips: Option<u64>, one: bool) -> Answer {
    if one {
        return Answer {
            node: LARGE_SHARDING,
            step: format!(
                "make {} ({}, {} of the limit){} smaller or compute it in chunks (a smaller batch or vocabulary dimension, jax.lax.map or a scan over its largest dimension, bfloat16): the module was compiled for one chip, where sharding cannot split it",
                largest.what(),
                gib(largest.size),
                pct_text(largest.size, limit),
                with_origin(largest),
            ),
            estimate: None,
            confidence: None,
        };
    }
    Answer {
        node: LARGE_SHARDING,
        step: format!(
            "make {} ({}, {} of the limit){} smaller or compute it in chunks (a smaller batch or vocabulary dimension, jax.lax.map or a scan over its largest dimension, bfloat16); nothing shows this program runs on several chips, but if it does, shard it{}",
            largest.what(),
            gib(largest.size),
            pct_text(largest.size, limit),
            with_origin(largest),
            chips
                .map(|n| format!(" over {n} chips (check its mesh axes and sharding annotation)"))
                .unwrap_or_else(|| " (check its mesh axes and sharding annotation)".into())
        ),
        estimate: None,
        confidence: None,
    }
}

/// Over how many chips to shard the large buffer, and why.
struct ShardPlan {
    chips: u64,
    /// The count comes from the program (a replicated copy of a sharded
    /// parameter), not from the excess.
    from_program: bool,
    why: String,
    how: String,
    confidence: Confidence,
}

/// The shard count the program itself shows (a parameter with the large
/// buffer's shape divided along one dimension: the same tensor as each chip
/// holds it), if it removes the excess; else the fewest chips that do.
fn shard_plan(f: &CompileFacts<'_>, a: &Alloc, excess: Option<u64>) -> Option<ShardPlan> {
    let covers = |n: u64| excess.is_none_or(|e| a.size - a.size / n >= e);
    if let Some(n) = shards_in_program(f, a).filter(|n| covers(*n)) {
        return Some(ShardPlan {
            chips: n,
            from_program: true,
            why: format!(
                ", as the program's own parameter of this tensor is already split {n} ways"
            ),
            how: format!(
                "saving per chip = size − size/{n}; {n} is the ratio of this buffer's shape to a parameter's of the same element type that differs in one dimension (the tensor as each chip already holds it)"
            ),
            confidence: Confidence::High,
        });
    }
    let e = excess?;
    let n = chips_to_absorb(a.size, e)?;
    Some(ShardPlan {
        chips: n,
        from_program: false,
        why: ", the fewest chips that bring the peak under the limit".into(),
        how: format!(
            "saving per chip = size − size/n with n = ceil(size / (size − excess)) = {n}; assumes the buffer shards evenly"
        ),
        confidence: Confidence::Medium,
    })
}

/// `n` when `a` is a replicated copy (an all-gather's output, or labelled
/// replicated) and a parameter at the peak has its element type and
/// dimensions except one, which is `a`'s divided by `n` ≥ 2: the shard each
/// chip already holds.
fn shards_in_program(f: &CompileFacts<'_>, a: &Alloc) -> Option<u64> {
    let gathered = [&a.name, &a.op_name, &a.label].iter().any(|s| {
        let s = s.to_ascii_lowercase();
        s.contains("all-gather") || s.contains("all_gather") || s.contains("replicated")
    });
    if !gathered {
        return None;
    }
    let shape = a.array.as_ref()?;
    f.allocs
        .iter()
        .filter(|p| p.category == Some(BufferCategory::Parameter))
        .filter_map(|p| p.array.as_ref())
        .filter(|p| p.element_type == shape.element_type && p.dims.len() == shape.dims.len())
        .find_map(|p| {
            let differing: Vec<(u64, u64)> = shape
                .dims
                .iter()
                .zip(&p.dims)
                .filter(|(x, y)| x != y)
                .map(|(x, y)| (*x, *y))
                .collect();
            match differing.as_slice() {
                [(full, part)] if *part > 0 && full % part == 0 && full / part >= 2 => {
                    Some(full / part)
                }
                _ => None,
            }
        })
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
