//! What each section-3 remedy would save, computed from the user's buffers.
//! Each estimate says how it was computed and how sure it is.

use oomscope_report::{BufferCategory, CitedBuffer, Confidence};

use crate::facts::{cite_lifetime, gib, pct_text, total, Alloc, AllocSource, CompileFacts};

use super::cited;

/// A computed saving.
#[derive(Debug, Clone)]
pub(super) struct Estimate {
    pub bytes: u64,
    pub detail: String,
    pub how: String,
    pub confidence: Confidence,
    /// The buffers it counted, largest first (empty when it counted totals).
    pub counted: Vec<CitedBuffer>,
}

pub(super) fn padding(f: &CompileFacts<'_>, scope: &str) -> Option<Estimate> {
    if let Some(p) = f.module.and_then(|m| m.padding.as_ref()) {
        return Some(Estimate {
            bytes: p.peak_padding_bytes,
            detail: format!(
                "{} of padding in the buffers live at the peak",
                gib(p.peak_padding_bytes)
            ),
            how: "padding model: Σ (padded − unpadded size) over the buffers live at the peak"
                .into(),
            confidence: Confidence::High,
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
                confidence: Confidence::High,
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
        confidence: Confidence::Medium,
        counted: by_padding(known.iter().copied()),
    })
}

pub(super) fn bf16(f: &CompileFacts<'_>, scope: &str) -> Option<Estimate> {
    let f32s: Vec<&Alloc> = f
        .allocs
        .iter()
        .filter(|a| a.array.as_ref().is_some_and(|s| s.is_f32()))
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
        confidence: Confidence::Medium,
        counted: cited(f32s.iter().copied()),
    })
}

/// What donating the parameters frees. A donated parameter can alias one
/// output of its element type and dimensions, once: that output then needs
/// no memory of its own. Counted over the buffers live at the peak (each
/// output paired with one parameter, each parameter used once); without a
/// module, an upper bound from the message's totals.
///
/// (Measured against the whole heap curve instead, the saving misses what
/// XLA gains by writing fused updates in place: on pair-donate the peak sits
/// before the new weights are live, yet donation frees 7.66 GiB of 16.25.)
pub(super) fn donation(f: &CompileFacts<'_>) -> Option<Estimate> {
    if f.allocs_source == AllocSource::ModulePeak {
        return Some(donation_at_peak(f));
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
        confidence: Confidence::Low,
        counted: Vec::new(),
    })
}

/// Pairs each output with one parameter of the same element type and
/// dimensions (each parameter used once): (parameter index, output index).
fn pair_outputs<T>(
    items: &[T],
    category: impl Fn(&T) -> BufferCategory,
    key: impl Fn(&T) -> Option<String>,
) -> Vec<(usize, usize)> {
    let mut params: Vec<(String, usize)> = items
        .iter()
        .enumerate()
        .filter(|(_, b)| category(b) == BufferCategory::Parameter)
        .filter_map(|(i, b)| Some((key(b)?, i)))
        .collect();
    params.sort();
    let mut used = vec![false; params.len()];
    let mut pairs = Vec::new();
    for (o, b) in items.iter().enumerate() {
        if category(b) != BufferCategory::Output {
            continue;
        }
        let Some(k) = key(b) else { continue };
        let start = params.partition_point(|(pk, _)| pk.as_str() < k.as_str());
        let free = (start..params.len())
            .take_while(|&j| params[j].0 == k)
            .find(|&j| !used[j]);
        if let Some(j) = free {
            used[j] = true;
            pairs.push((params[j].1, o));
        }
    }
    pairs
}

fn donation_at_peak(f: &CompileFacts<'_>) -> Estimate {
    let pairs = pair_outputs(
        &f.allocs,
        |a| a.category.unwrap_or_default(),
        |a| a.array.as_ref().map(|s| s.key()),
    );
    let params = f
        .allocs
        .iter()
        .filter(|a| a.category == Some(BufferCategory::Parameter))
        .count();
    let param_bytes = total(
        f.allocs
            .iter()
            .filter(|a| a.category == Some(BufferCategory::Parameter))
            .map(|a| a.size),
    );
    let matched = total(pairs.iter().map(|&(_, o)| f.allocs[o].size));
    let detail = if !pairs.is_empty() {
        format!(
            "{} of the {params} parameters at the peak ({} of {}) have an output of the same shape live at the same time: donating them lets XLA write the outputs in place.",
            pairs.len(),
            gib(matched),
            gib(param_bytes)
        )
    } else {
        format!(
            "Parameters at the peak take {} ({params} buffers) but no output live at the peak has a parameter's shape, so donation would not lower this peak.",
            gib(param_bytes),
        )
    };
    Estimate {
        bytes: matched,
        detail,
        how: "Σ sizes of output buffers at the peak matched one-to-one with a parameter buffer of the same element type and dimensions at the peak (the peak's position may move: an upper bound)".into(),
        confidence: Confidence::Medium,
        counted: cited(pairs.iter().map(|&(p, _)| &f.allocs[p])),
    }
}

/// Shapes of the parameters an output of the same shape updates (weights).
fn weight_keys(f: &CompileFacts<'_>) -> Vec<String> {
    let pairs = pair_outputs(
        &f.allocs,
        |a| a.category.unwrap_or_default(),
        |a| a.array.as_ref().map(|s| s.key()),
    );
    pairs
        .iter()
        .filter_map(|&(p, _)| f.allocs[p].array.as_ref().map(|s| s.key()))
        .collect()
}

/// The data input: the largest parameter of rank ≥ 2 whose shape no output
/// has (not a weight the step updates).
fn data_input<'a>(f: &'a CompileFacts<'_>) -> Option<&'a Alloc> {
    let weights = weight_keys(f);
    f.allocs
        .iter()
        .filter(|a| a.category == Some(BufferCategory::Parameter))
        .filter(|a| {
            a.array
                .as_ref()
                .is_some_and(|s| s.dims.len() >= 2 && s.dims[0] >= 2 && !weights.contains(&s.key()))
        })
        .max_by_key(|a| a.size)
}

/// The batch dimension, read from the program: the leading dimension of the
/// largest parameter that no output has the shape of (the data, not a weight
/// that the step updates), which activation buffers share.
pub(super) fn batch(f: &CompileFacts<'_>, peak: Option<u64>, scope: &str) -> Option<Estimate> {
    let peak = peak.filter(|p| *p > 0)?;
    let weights = weight_keys(f);
    let is_weight_shaped = |a: &Alloc| a.array.as_ref().is_some_and(|s| weights.contains(&s.key()));
    let data = data_input(f);
    let (batch, evidence) = match data {
        Some(d) => {
            let s = d.array.as_ref()?;
            (
                s.dims[0],
                format!(
                    "the leading dimension of the input {} ({})",
                    d.what(),
                    d.name
                ),
            )
        }
        None => {
            // No parameter at the peak: the leading dimension holding the most
            // bytes among the activations (non-parameter, not weight-shaped).
            let mut by_leading: Vec<(u64, u64)> = Vec::new();
            for a in &f.allocs {
                if matches!(
                    a.category,
                    Some(BufferCategory::Parameter | BufferCategory::Constant)
                ) || is_weight_shaped(a)
                {
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
            let (lead, _) = by_leading.into_iter().max_by_key(|(_, bytes)| *bytes)?;
            (
                lead,
                "the leading dimension holding the most bytes among the activations".to_string(),
            )
        }
    };
    // Activations scale with the batch: buffers (not weights or their
    // gradients) whose leading dimension is the batch.
    let scaling_allocs: Vec<&Alloc> = f
        .allocs
        .iter()
        .filter(|a| !is_weight_shaped(a) && a.category != Some(BufferCategory::Constant))
        .filter(|a| {
            a.array
                .as_ref()
                .is_some_and(|s| s.dims.first() == Some(&batch))
        })
        .collect();
    let scaling = total(scaling_allocs.iter().map(|a| a.size));
    Some(Estimate {
        bytes: scaling / 2,
        detail: format!(
            "The batch is {batch} ({evidence}); buffers that scale with it take {} = {} of the peak; halving the batch to {} would save about {}.",
            gib(scaling),
            pct_text(scaling, peak),
            batch / 2,
            gib(scaling / 2)
        ),
        how: format!(
            "batch = {evidence}; saving = ½ × Σ sizes of {scope} whose leading dimension is {batch}, weights and their gradients excluded"
        ),
        confidence: if data.is_some() {
            Confidence::Medium
        } else {
            Confidence::Low
        },
        counted: cited(scaling_allocs),
    })
}

/// What `jax.checkpoint` around each layer would free: the temporaries held
/// across the peak (produced before it, used after it), except the layers'
/// inputs, which a checkpoint keeps. Those have the data input's element
/// type and dimensions (the residual stream), read from the program.
pub(super) fn checkpoint(f: &CompileFacts<'_>) -> Option<Estimate> {
    let m = f.module?;
    if m.buffers.is_empty() {
        return None;
    }
    let input_key = data_input(f)
        .and_then(|a| a.array.as_ref())
        .map(|s| s.key());
    let is_layer_input = |b: &&oomscope_report::BufferLifetime| {
        input_key.is_some() && crate::shape::parse_array(&b.shape).map(|s| s.key()) == input_key
    };
    let p = m.peak_position;
    let spanning: Vec<_> = m
        .buffers
        .iter()
        .filter(|b| b.category == BufferCategory::Temporary && b.start < p && b.end > p)
        .collect();
    let (kept, mut held): (Vec<_>, Vec<_>) = spanning.into_iter().partition(is_layer_input);
    let kept_bytes = total(kept.iter().map(|b| b.size_bytes));
    let kept = kept.len();
    held.sort_by_key(|b| std::cmp::Reverse(b.size_bytes));
    let counted = held.iter().map(|b| cite_lifetime(m, b)).collect();
    let held_bytes = total(held.iter().map(|b| b.size_bytes));
    // Recomputing brings one of them back while the backward pass uses it.
    let recomputed = held.iter().map(|b| b.size_bytes).max().unwrap_or(0);
    let bytes = held_bytes - recomputed;
    Some(Estimate {
        bytes,
        detail: format!(
            "{} temporar{} produced before the peak and used after it ({}) are what jax.checkpoint would recompute instead of keeping{}; recomputing needs the largest ({}) back, so about {} would be freed.",
            held.len(),
            if held.len() == 1 { "y" } else { "ies" },
            gib(held_bytes),
            if kept == 0 {
                String::new()
            } else {
                format!(
                    " ({kept} layer input{} of the data input's shape, {}, stay as checkpoints)",
                    if kept == 1 { "" } else { "s" },
                    gib(kept_bytes)
                )
            },
            gib(recomputed),
            gib(bytes)
        ),
        how: format!(
            "Σ sizes of temporaries whose lifetime [start, end] spans the peak position {p} strictly and whose shape is not the data input's (layer inputs are kept as checkpoints), less the largest of them (live again while it is recomputed)"
        ),
        confidence: Confidence::Medium,
        counted,
    })
}

/// The allocations with padding, most padding first.
fn by_padding<'a>(allocs: impl IntoIterator<Item = &'a Alloc>) -> Vec<CitedBuffer> {
    let mut padded: Vec<&Alloc> = allocs
        .into_iter()
        .filter(|a| a.padding().is_some_and(|p| p > 0))
        .filter(|a| a.category != Some(BufferCategory::Small))
        .collect();
    padded.sort_by_key(|a| std::cmp::Reverse(a.padding()));
    padded.into_iter().map(Alloc::cited).collect()
}
