//! Section 3 of the E1000 page: the sum of allocations exceeds the limit.
//! Every remedy (A padding, B configuration, C architecture, E remat)
//! computes what it would save from the user's buffers; the cheapest whose
//! estimate covers the excess is selected. Architecture (more chips) comes
//! only when nothing cheaper covers it; D (flags) is never selected by data.

use oomscope_report::{BufferCategory, MemorySpace};
use serde_json::json;

use crate::facts::{gib, pct_fact, pct_text, signed, total, AllocSource, CompileFacts};
use crate::ids::*;
use crate::node::NodeEval;

use super::estimates::{self, Estimate};
use super::remedy::{self, Remedy};
use super::{buffer_json, cited, list_name, size_how, with_origin, Answer, Walk, CITED};

/// The remat pass is worth pointing at with flags only when the program is
/// this close to fitting (excess as a share of the limit): beyond it the
/// flags cannot recover the difference by themselves.
const REMAT_FLAGS_FRACTION: f64 = 0.10;

pub(super) fn section(
    f: &CompileFacts<'_>,
    limit: u64,
    nodes: &mut Vec<NodeEval>,
    walk: &mut Walk,
) {
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
    let excess_text = excess.map_or_else(|| "the excess".to_string(), gib);
    let hbm = f.space == MemorySpace::Hbm;

    nodes.push(aggregate_node(f, limit));

    let estimates: Vec<(Remedy, Option<Estimate>)> = vec![
        (Remedy::Donation, estimates::donation(f)),
        (Remedy::Padding, estimates::padding(f, &scope)),
        (
            Remedy::Checkpoint,
            if hbm { estimates::checkpoint(f) } else { None },
        ),
        (Remedy::Bf16, estimates::bf16(f, &scope)),
        (Remedy::Batch, estimates::batch(f, peak, &scope)),
    ];
    let get = |r: Remedy| {
        estimates
            .iter()
            .find(|(k, _)| *k == r)
            .and_then(|(_, e)| e.as_ref())
    };
    let covers = |e: Option<&Estimate>| match (e, excess) {
        (Some(e), Some(x)) => e.bytes >= x,
        _ => false,
    };
    let chosen = remedy::cheapest_covering(&estimates, excess);
    let leaf = match chosen {
        Some((r, _)) => r.node(),
        None if !partial && hbm && excess.is_some() => ARCHITECTURE,
        None => PROFILE,
    };

    // A. padding
    let mut pad = NodeEval::new(PADDING, "");
    match get(Remedy::Padding) {
        Some(e) => {
            pad.fact("padding_bytes", e.bytes);
            pad.cite("padded", e.counted.iter().cloned());
            pad.reason = format!(
                "Padding is {} ({}), {} the {} excess.",
                gib(e.bytes),
                e.detail,
                if covers(Some(e)) {
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
                            "{} ({} of this shape, live at the peak or not): {} of padding ({:.1}× expansion). {}",
                            entry.shape,
                            crate::facts::counted(entry.count as f64, "buffer", "buffers"),
                            gib(entry.padding_bytes),
                            entry.expansion,
                            entry.suggestion
                        ),
                        Some((
                            signed(saves),
                            "padding model: padded − unpadded size of every buffer of this shape, live at the peak or not".into(),
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
    let mut cfg = NodeEval::new(CONFIG, "");
    let mut cfg_parts = Vec::new();
    for (key, r, question) in [
        ("donate", Remedy::Donation, "Parameters and outputs are not known separately: load the XLA dump or a profile to see whether outputs could reuse parameter memory."),
        ("bf16", Remedy::Bf16, "No f32 buffer with a readable shape is listed, so the bfloat16 saving cannot be computed."),
        ("batch", Remedy::Batch, "No buffer shape shows a batch dimension: check which buffers scale with the batch size."),
    ] {
        match get(r) {
            Some(e) => {
                cfg.fact(&format!("{key}_saving_bytes"), e.bytes);
                cfg.cite(
                    match r {
                        Remedy::Bf16 => "f32",
                        Remedy::Donation => "parameter with an output of its shape",
                        _ => "scales with the batch",
                    },
                    e.counted.iter().cloned(),
                );
                cfg_parts.push(format!(
                    "{} {}{}",
                    r.name(),
                    gib(e.bytes),
                    if covers(Some(e)) { " (covers)" } else { "" }
                ));
                cfg.action(key, &e.detail, Some((signed(e.bytes), e.how.clone())));
            }
            None => cfg.action(key, question, None),
        }
    }
    cfg.reason = if cfg_parts.is_empty() {
        "No configuration saving can be computed from this data.".into()
    } else {
        format!(
            "Estimated savings: {}; the excess is {}{}.",
            cfg_parts.join(", "),
            excess_text,
            match chosen {
                Some((r, _)) if r.node() == CONFIG =>
                    format!("; {} is the cheapest remedy that covers it", r.name()),
                Some((r, _)) => format!("{}{})", super::A_CHEAPER_REMEDY, r.name()),
                None => String::new(),
            }
        )
    };
    nodes.push(cfg);

    // C. architecture
    nodes.push(architecture_node(f, limit, peak, leaf == ARCHITECTURE));

    // D. flags
    let mut flags = NodeEval::new(
        FLAGS,
        "A last resort: never selected from the data; try the other remedies first.",
    );
    flags.action("memory_flags", "", None);
    nodes.push(flags);

    // E. remat
    nodes.push(remat_node(
        f,
        limit,
        get(Remedy::Checkpoint),
        chosen.map(|c| c.0),
        &excess_text,
    ));

    // F. profile
    let mut profile = NodeEval::new(PROFILE, "");
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
    walk.summary = match chosen {
        Some((r, e)) => format!(
            "{} would save about {}, which covers the {} excess → sum of allocations: {}",
            r.name(),
            gib(e.bytes),
            excess_text,
            crate::tree::node_def(r.node()).map_or("", |d| d.title)
        ),
        None if leaf == ARCHITECTURE => format!(
            "no single buffer or cheaper change covers the {excess_text} excess → sum of allocations: architecture and sharding"
        ),
        None => format!(
            "no estimate covers the {excess_text} excess and the log lists only {} allocations → sum of allocations: profile the peak",
            f.allocs.len()
        ),
    };
    walk.answer = Some(match chosen {
        Some((r, e)) => Answer {
            node: r.node(),
            step: format!(
                "{} (saves about {}, estimate, {} excess). {}",
                r.step(),
                gib(e.bytes),
                excess_text,
                e.detail
            ),
            estimate: Some(e.bytes),
            confidence: excess.map(|x| remedy::confidence(e, x)),
        },
        None if leaf == ARCHITECTURE => {
            let used = f.used.or(peak).unwrap_or(0);
            let chips = used.div_ceil(limit).max(2);
            Answer {
                node: ARCHITECTURE,
                step: format!(
                    "no cheaper remedy covers the {excess_text} excess: shard over {chips} chips (about {} each), use a chip with at least {} of HBM, or offload to the host",
                    gib(used / chips),
                    gib(used)
                ),
                estimate: Some(used - used / chips),
                confidence: Some(oomscope_report::Confidence::Low),
            }
        }
        None => Answer {
            node: PROFILE,
            step: format!(
                "see every buffer at the peak: add an XLA dump (XLA_FLAGS=--xla_dump_to=DIR) or a profile; the {} allocations the log lists do not show a remedy that covers the {excess_text} excess",
                f.allocs.len()
            ),
            estimate: None,
            confidence: None,
        },
    });
}

fn aggregate_node(f: &CompileFacts<'_>, limit: u64) -> NodeEval {
    let mut agg = NodeEval::new(AGGREGATE, "");
    if let Some(u) = f.used {
        agg.fact("used_bytes", u);
    }
    agg.fact("limit_bytes", limit);
    if let Some(e) = f.excess {
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
    let largest = f.allocs.first().map_or(0, |a| a.size);
    agg.reason = match (f.used, f.excess) {
        (Some(u), Some(e)) if largest > limit / 2 => format!(
            "Without the largest allocation ({}) the program still needs {} of {}: the sum is too big as well ({} used, {} over).",
            gib(largest),
            gib(u.saturating_sub(largest)),
            gib(limit),
            gib(u),
            gib(e)
        ),
        (Some(u), Some(e)) => format!(
            "No allocation is above 50% of the limit: the sum is too big ({} used of {}, {} over); the largest is {} = {} of the limit.",
            gib(u),
            gib(limit),
            gib(e),
            gib(largest),
            pct_text(largest, limit)
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
    agg
}

fn architecture_node(
    f: &CompileFacts<'_>,
    limit: u64,
    peak: Option<u64>,
    selected: bool,
) -> NodeEval {
    let mut arch = NodeEval::new(ARCHITECTURE, "");
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
    if selected {
        arch.reason
            .push_str(super::NO_CHEAPER_ESTIMATE);
    }
    arch
}

fn remat_node(
    f: &CompileFacts<'_>,
    limit: u64,
    checkpoint: Option<&Estimate>,
    chosen: Option<Remedy>,
    excess_text: &str,
) -> NodeEval {
    let hbm = f.space == MemorySpace::Hbm;
    let excess = f.excess;
    let mut remat = NodeEval::new(REMAT, "");
    remat.reason = match (excess, checkpoint) {
        (Some(e), _) if !hbm => format!(
            "The rematerialisation flags act on HBM; this error is about {} ({} over).",
            f.space.as_str().to_ascii_uppercase(),
            gib(e)
        ),
        (Some(e), Some(c)) => format!(
            "jax.checkpoint would free about {} (activations held across the peak), {} the {} excess{}.",
            gib(c.bytes),
            if c.bytes >= e { "which covers" } else { "less than" },
            gib(e),
            match chosen {
                Some(Remedy::Checkpoint) => super::NO_CHEAPER_REMEDY,
                Some(r) if c.bytes >= e => {
                    if matches!(r, Remedy::Donation | Remedy::Padding) {
                        "; a cheaper remedy covers it too"
                    } else {
                        ""
                    }
                }
                _ => "",
            }
        ),
        (Some(e), None) => format!(
            "{} over is {} of the limit; without buffer lifetimes what jax.checkpoint would free cannot be estimated.",
            gib(e),
            pct_text(e, limit)
        ),
        (None, _) => "The excess is not known.".into(),
    };
    if hbm {
        let mib = 1u64 << 20;
        remat.fact("limit_mib", limit / mib);
        // The flag sets the HBM size the remat pass aims for: only a value a
        // little under the limit makes sense, and only when the program is
        // close to fitting (a target of 0 or far below the limit cannot be right).
        match excess {
            Some(e) if (e as f64) <= limit as f64 * REMAT_FLAGS_FRACTION => {
                let target = (limit - e) / mib;
                remat.fact("max_hbm_size_mib", target);
                remat.action(
                    "max_hbm",
                    &format!(
                        "Start with --xla_tpu_max_hbm_size_mib={target} (your limit is {} MiB; aim lower by the {excess_text} excess) and lower it further if the pass still falls short.",
                        limit / mib,
                    ),
                    None,
                );
                remat.facts.insert(
                    "max_hbm_size_how".into(),
                    json!(format!("floor((limit {} − excess {}) / 1 MiB)", gib(limit), gib(e))),
                );
                remat.action("remat_flags", "", None);
            }
            Some(e) => remat.action(
                "remat_flags",
                &format!(
                    "The excess ({}) is {} of the limit: more than the rematerialisation pass recovers by itself, so no --xla_tpu_max_hbm_size_mib value is proposed.",
                    gib(e),
                    pct_text(e, limit)
                ),
                None,
            ),
            None => remat.action("remat_flags", "", None),
        }
    }
    match checkpoint {
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
    remat
}
