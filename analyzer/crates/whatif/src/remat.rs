//! `jax.checkpoint` on the repeated block, replayed.
//!
//! Without checkpointing, the forward pass saves each block's residuals for
//! the backward pass, and the backward frees them in reverse: at the peak
//! (the turn from forward to backward) they are all live. They show in the
//! program as buffers live at the peak that either repeat once per block
//! with nested lifetimes (the same shape allocated block after block in the
//! forward and freed in the reverse order in the backward: an unrolled
//! block) or are stacked by a scan (the loop's outputs with the trip count
//! as their leading dimension).
//!
//! With the block checkpointed (`jax.checkpoint`, whose default policy
//! saves nothing but the block's arguments), XLA's program differs in three
//! ways, each replayed here on the program's own buffers and lifetimes:
//!
//! - What the forward keeps is each block's input: the residual that the
//!   next block's forward reads (the value crossing a block boundary). It
//!   keeps its own lifetime. Its size is its dtype's, except that XLA:TPU
//!   keeps an f32 input in bf16 when every forward reader only feeds a dot or
//!   a convolution (at default precision the operand is rounded to bf16, and
//!   with the backward's elementwise readers gone the rounding fuses into
//!   the producer): checked on real pairs (fixtures/pair-mlp-remat,
//!   pair-convnet-remat: the checkpointed side stores bf16 block inputs;
//!   pair-mlp-remat-highest, matmuls at highest precision: f32).
//! - Every other residual is recomputed when the backward reaches its block:
//!   it lives from the end of the next block's backward (just after the
//!   turn, for the last block) until the backward frees it, as it did.
//! - Repeated blocks chain: most block boundaries are crossed by a block
//!   input. Same-shape buffers that do not chain (several activations of
//!   one matmul) are no repeated block.
//! - Everything else (the loss head, the backward's own temporaries, the
//!   parameters) stays as compiled.
//!
//! A scan's stacked residuals become the stacked carry (one carry per
//! iteration, in the carry's dtype) for the loops' span, and one
//! iteration's residuals live during the backward loop.
//!
//! When nothing repeats, or the replay would not lower the peak, the remedy
//! does not apply (never a prediction at or above today's peak).

use std::collections::BTreeMap;

use oomscope_report::program::{BufferReader, HeapEventKind, HeapProgram};

use crate::{live_at, memory_roots, Curve, Extra, WhatIfError, Work};

/// A buffer's first allocation and last free (root buffers), as event
/// indices; `None` when never allocated, `events.len()` when never freed.
fn lifetimes(program: &HeapProgram, roots: &[usize]) -> Vec<Option<(usize, usize)>> {
    let n = program.events.len();
    let mut span: Vec<Option<(usize, usize)>> = vec![None; program.buffers.len()];
    for (i, e) in program.events.iter().enumerate() {
        let Some(b) = e.buffer else { continue };
        let r = roots.get(b).copied().unwrap_or(b);
        let Some(slot) = span.get_mut(r) else {
            continue;
        };
        match e.kind {
            HeapEventKind::Free => {
                if let Some((_, f)) = slot.as_mut() {
                    *f = i;
                }
            }
            HeapEventKind::Alloc | HeapEventKind::ShareWith(_) => {
                if slot.is_none() {
                    *slot = Some((i, n));
                } else if let Some((_, f)) = slot.as_mut() {
                    // Allocated again after a free: live to the new free.
                    if *f < i {
                        *f = n;
                    }
                }
            }
        }
    }
    span
}

/// The instruction a buffer's name belongs to (`while.7{5}` → `while.7`).
fn instruction_of(name: &str) -> &str {
    name.split('{').next().unwrap_or(name)
}

/// Whether a group's lifetimes nest (later allocated, earlier freed) for
/// most pairs: a forward that saves and a backward that frees in reverse.
fn nested(spans: &[(usize, usize)]) -> bool {
    let mut sorted = spans.to_vec();
    sorted.sort_unstable();
    let (mut reversed, mut kept) = (0usize, 0usize);
    for (i, a) in sorted.iter().enumerate() {
        for b in &sorted[i + 1..] {
            match a.1.cmp(&b.1) {
                std::cmp::Ordering::Greater => reversed += 1,
                std::cmp::Ordering::Less => kept += 1,
                std::cmp::Ordering::Equal => {}
            }
        }
    }
    reversed > kept
}

struct Found {
    residuals: Vec<usize>,
    blocks: usize,
}

pub(crate) fn apply(work: &mut Work<'_>, before: &Curve) -> Result<(String, String), WhatIfError> {
    let program = work.program;
    // Which block reads a residual decides what the checkpoint keeps; a
    // program from dump text names no readers (an HloProto always does).
    if !program.buffers.is_empty() && program.buffers.iter().all(|b| b.readers.is_empty()) {
        return Err(WhatIfError::NotApplicable(
            "the program names no readers of its buffers (dump text): remat is replayed from the module's HloProto only".into(),
        ));
    }
    let peak = usize::try_from(before.peak_position).unwrap_or(usize::MAX);
    // Each live buffer's memory is its root's (a scan's stacked residuals
    // share their initial buffer's memory); counted once.
    let roots = memory_roots(program);
    let root = |b: usize| roots.get(b).copied().unwrap_or(b);
    let spans = lifetimes(program, &roots);
    let span = |b: usize| spans.get(b).copied().flatten();
    let size = |w: &Work<'_>, b: usize| w.plan.buffer_bytes.get(b).copied().unwrap_or(0);
    let live_buffers = live_at(program, before.peak_position);
    // A loop's output shares the memory of the loop's initial value: the
    // memory (the root) is a loop output when one of its live sharers is.
    let mut loop_output: BTreeMap<usize, usize> = BTreeMap::new();
    for &b in &live_buffers {
        if program.buffers.get(b).is_some_and(|x| x.opcode == "while") {
            loop_output.entry(root(b)).or_insert(b);
        }
    }
    let mut live: Vec<usize> = live_buffers
        .into_iter()
        .map(root)
        .filter(|&b| size(work, b) > 0)
        // Saved before the peak, read after it.
        .filter(|&b| span(b).is_some_and(|(a, f)| a < peak && f > peak))
        .collect();
    live.sort_unstable();
    live.dedup();
    let is_loop = |b: usize| loop_output.contains_key(&b);

    // Scanned blocks: a loop's outputs stacked along its trip count.
    let mut stacks: BTreeMap<(&str, i64), Vec<usize>> = BTreeMap::new();
    for &b in live.iter().filter(|&&b| is_loop(b)) {
        let Some(a) = work.array(b) else { continue };
        if let (true, Some(&t)) = (a.dims.len() >= 2, a.dims.first()) {
            if t >= 2 {
                let name = loop_output
                    .get(&b)
                    .and_then(|&o| program.buffers.get(o))
                    .map_or("", |x| instruction_of(&x.name));
                stacks.entry((name, t)).or_default().push(b);
            }
        }
    }
    let stacked = stacks
        .into_iter()
        .filter(|(_, g)| g.len() >= 2)
        .max_by_key(|(_, g)| g.iter().map(|&b| size(work, b)).sum::<u64>());
    let stacked_bytes: u64 = stacked
        .as_ref()
        .map_or(0, |(_, g)| g.iter().map(|&b| size(work, b)).sum());

    // Unrolled blocks: shapes repeated with nested lifetimes.
    let mut by_shape: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for &b in live.iter().filter(|&&b| !is_loop(b)) {
        if let Some(s) = work.shape_text(b) {
            by_shape.entry(s).or_default().push(b);
        }
    }
    let groups: Vec<Vec<usize>> = by_shape
        .into_values()
        .filter(|g| g.len() >= 2)
        .filter(|g| nested(&g.iter().filter_map(|&b| span(b)).collect::<Vec<_>>()))
        .collect();
    let unrolled_bytes: u64 = groups.iter().flatten().map(|&b| size(work, b)).sum();

    let before_peak = crate::replay(program, &work.plan)
        .map_err(WhatIfError::CannotReplay)?
        .peak_bytes;
    let (scope, how) = if stacked_bytes > unrolled_bytes {
        let Some(((name, t), g)) = stacked else {
            return Err(not_applicable());
        };
        let outputs: Vec<usize> = g
            .iter()
            .filter_map(|r| loop_output.get(r).copied())
            .collect();
        scanned(work, name, t, &g, &outputs, &spans, peak)
    } else {
        // The blocks: how often the heaviest group repeats; their starts:
        // the group of that count allocated first in the forward.
        let Some(heaviest) = groups
            .iter()
            .max_by_key(|g| g.iter().map(|&b| size(work, b)).sum::<u64>())
        else {
            return Err(not_applicable());
        };
        let n = heaviest.len();
        let found = Found {
            residuals: groups.concat(),
            blocks: n,
        };
        let Some(first) = groups
            .iter()
            .filter(|g| g.len() == n)
            .min_by_key(|g| g.iter().filter_map(|&b| span(b)).map(|s| s.0).min())
        else {
            return Err(not_applicable());
        };
        // A block starts where the instruction defining its member starts
        // (its first output allocated: a fusion of the last block with
        // the loss allocates the loss first).
        let mut first_event: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, e) in program.events.iter().enumerate() {
            if let Some(x) = e.buffer.and_then(|b| program.buffers.get(b)) {
                first_event.entry(instruction_of(&x.name)).or_insert(i);
            }
        }
        let mut starts: Vec<usize> = first
            .iter()
            .filter_map(|&b| {
                let own = span(b)?.0;
                let name = program.buffers.get(b).map(|x| instruction_of(&x.name))?;
                Some(first_event.get(name).map_or(own, |&f| f.min(own)))
            })
            .collect();
        starts.sort_unstable();
        unrolled(work, &found, &starts, &spans, peak)?
    };
    let after = crate::replay(program, &work.plan)
        .map_err(WhatIfError::CannotReplay)?
        .peak_bytes;
    if after >= before_peak {
        return Err(WhatIfError::NotApplicable(format!(
            "checkpointing would not lower the peak ({scope}; replayed, {} against {} today)",
            crate::units(after),
            crate::units(before_peak)
        )));
    }
    Ok((scope, how))
}

fn not_applicable() -> WhatIfError {
    WhatIfError::NotApplicable(format!(
        "no residuals live at the peak repeat per block (saved in the forward, freed in reverse in the backward) or are stacked by a scan: no repeated block to checkpoint{UNMODELLED}"
    ))
}

/// What "no repeated block" does not say: blocks that all differ in shape
/// (an encoder-decoder's resolutions) are not modelled, and checkpointing
/// them can still save memory (pair-unet-remat: 28 %).
const UNMODELLED: &str = "; blocks that all differ in shape are not modelled, so this is no prediction that jax.checkpoint saves nothing";

/// Takes buffer `b` out of the replay (listed as changed); its bytes.
fn drop_buffer(work: &mut Work<'_>, b: usize) -> u64 {
    let bytes = work.plan.buffer_bytes.get(b).copied().unwrap_or(0);
    if let Some(slot) = work.plan.buffer_bytes.get_mut(b) {
        *slot = 0;
    }
    if let Some(buffer) = work.program.buffers.get(b) {
        work.changed.push(crate::ChangedBuffer {
            name: buffer.name.clone(),
            shape_before: buffer.shape.clone(),
            shape_after: String::new(),
            bytes_before: bytes,
            bytes_after: 0,
        });
    }
    bytes
}

/// The forward readers of a buffer (before the peak: the turn is the
/// backward's first step).
fn forward_readers(program: &HeapProgram, b: usize, peak: usize) -> Vec<BufferReader> {
    program
        .buffers
        .get(b)
        .map(|x| {
            x.readers
                .iter()
                .copied()
                .filter(|r| r.position < peak)
                .collect()
        })
        .unwrap_or_default()
}

/// f32 on a tiled (TPU) layout: what XLA:TPU rounds to bf16 for a contraction.
fn rounds_to_bf16(a: &oomscope_layout::ArrayShape) -> bool {
    a.element_type == oomscope_layout::ElementType::F32
        && a.layout.as_ref().is_some_and(|l| !l.tiles.is_empty())
}

fn unrolled(
    work: &mut Work<'_>,
    found: &Found,
    starts: &[usize],
    spans: &[Option<(usize, usize)>],
    peak: usize,
) -> Result<(String, String), WhatIfError> {
    let program = work.program;
    let span = |b: usize| spans.get(b).copied().flatten();
    let n = found.blocks;
    let total: u64 = found
        .residuals
        .iter()
        .map(|&b| work.plan.buffer_bytes.get(b).copied().unwrap_or(0))
        .sum();
    // Block k runs in the forward from starts[k] to starts[k + 1]; the last
    // one ends after the last residual is allocated.
    let end = found
        .residuals
        .iter()
        .filter_map(|&b| span(b))
        .map(|s| s.0 + 1)
        .max()
        .unwrap_or(peak);
    let block_of = |a: usize| starts.partition_point(|&s| s <= a).saturating_sub(1);
    let next_start = |k: usize| starts.get(k + 1).copied().unwrap_or(end);
    let mut inputs: Vec<usize> = Vec::new();
    let mut recomputed: Vec<(usize, usize, usize)> = Vec::new(); // (buffer, block, free)
    for &b in &found.residuals {
        let Some((a, f)) = span(b) else { continue };
        let k = block_of(a);
        let crosses = forward_readers(program, b, peak)
            .iter()
            .any(|r| r.position >= next_start(k));
        if crosses {
            inputs.push(b);
        } else {
            recomputed.push((b, k, f));
        }
    }
    // Repeated blocks chain: each block's output is the next one's input,
    // so most block boundaries are crossed by a residual. Same-shape
    // temporaries that all come from one value (several activations of one
    // matmul, summed in reverse) cross none: no repeated block.
    let mut chained: Vec<usize> = inputs
        .iter()
        .filter_map(|&b| span(b))
        .map(|(a, _)| block_of(a))
        .filter(|&k| k + 1 < n)
        .collect();
    chained.sort_unstable();
    chained.dedup();
    if chained.is_empty() || chained.len() * 2 < n - 1 {
        return Err(WhatIfError::NotApplicable(format!(
            "the {} same-shape buffers live at the peak do not chain as repeated blocks do (a residual crosses {} of {} block boundaries): no repeated block to checkpoint{UNMODELLED}",
            found.residuals.len(),
            chained.len(),
            n - 1
        )));
    }
    // Block k's recompute starts when the backward is done with block k+1
    // (its recomputed residuals all freed); the last block's just after the
    // turn (the turn's own event is the loss head's).
    let mut done = vec![None::<usize>; n + 1];
    for &(_, k, f) in &recomputed {
        if let Some(slot) = done.get_mut(k) {
            *slot = Some(slot.map_or(f, |d: usize| d.max(f)));
        }
    }
    let mut start = vec![peak + 1; n];
    for k in (0..n.saturating_sub(1)).rev() {
        start[k] = done
            .get(k + 1)
            .copied()
            .flatten()
            .unwrap_or(start[k + 1])
            .max(peak + 1);
    }
    // Inputs: kept, in bf16 where XLA:TPU would round them.
    let mut rounded = 0usize;
    let (mut kept_bytes, mut recomputed_bytes) = (0u64, 0u64);
    for &b in &inputs {
        let readers = forward_readers(program, b, peak);
        let round = !readers.is_empty()
            && readers.iter().all(|r| r.contraction_only)
            && work.array(b).is_some_and(rounds_to_bf16);
        if round {
            let n0 = work.changed.len();
            work.resize_buffer(b, &|a| Some(crate::to_bf16(a)));
            rounded += work.changed.len() - n0;
        }
        kept_bytes += work.plan.buffer_bytes.get(b).copied().unwrap_or(0);
    }
    for &(b, k, f) in &recomputed {
        let bytes = drop_buffer(work, b);
        recomputed_bytes += bytes;
        let from = start.get(k).copied().unwrap_or(peak);
        if f > from {
            work.plan.extra.push(Extra { from, to: f, bytes });
        }
    }
    Ok((
        format!(
            "jax.checkpoint on the repeated block: {} residual buffers repeated per block over {n} blocks ({}) live at the peak",
            found.residuals.len(),
            crate::units(total),
        ),
        format!(
            "the forward keeps {} block input{} (the residuals the next block reads: {}{}); the other {} residual{} ({}) {} recomputed block by block in the backward, each live from its block's recompute to its last use",
            inputs.len(),
            crate::plural(inputs.len()),
            crate::units(kept_bytes),
            if rounded > 0 {
                format!(", {rounded} kept in bf16 as they only feed a dot or convolution at default precision")
            } else {
                String::new()
            },
            recomputed.len(),
            crate::plural(recomputed.len()),
            crate::units(recomputed_bytes),
            if recomputed.len() == 1 { "is" } else { "are" },
        ),
    ))
}

fn scanned(
    work: &mut Work<'_>,
    name: &str,
    trips: i64,
    residuals: &[usize],
    outputs: &[usize],
    spans: &[Option<(usize, usize)>],
    peak: usize,
) -> (String, String) {
    let program = work.program;
    let span = |b: usize| spans.get(b).copied().flatten();
    let blocks = u64::try_from(trips).unwrap_or(1).max(1);
    let total: u64 = residuals
        .iter()
        .map(|&b| work.plan.buffer_bytes.get(b).copied().unwrap_or(0))
        .sum();
    // The carry (the block's input, which the checkpointed scan stacks
    // instead): the loop's state has one iteration's dims of a stacked
    // residual. The state itself may live outside HBM (XLA:TPU keeps a
    // small carry in VMEM), so its dtype is read off the entry
    // computation's own buffers of those dims (the scan's input or its
    // result, which the loss head reads): the widest.
    let per_block: Vec<Vec<i64>> = residuals
        .iter()
        .filter_map(|&b| work.array(b).map(|a| a.dims[1..].to_vec()))
        .collect();
    let entry_defined = |b: usize| {
        program
            .buffers
            .get(b)
            .is_some_and(|x| !x.readers.is_empty())
    };
    let carry = (0..program.buffers.len())
        .filter(|&b| entry_defined(b) && !residuals.contains(&b) && !outputs.contains(&b))
        .filter_map(|b| {
            let a = work.array(b)?;
            per_block
                .contains(&a.dims)
                .then(|| work.plan.buffer_bytes.get(b).copied().unwrap_or(0))
        })
        .max();
    let input = carry.unwrap_or_else(|| {
        residuals
            .iter()
            .map(|&b| work.plan.buffer_bytes.get(b).copied().unwrap_or(0) / blocks)
            .min()
            .unwrap_or(0)
    });
    let one_block = total / blocks;
    let from = residuals
        .iter()
        .filter_map(|&b| span(b))
        .map(|s| s.0)
        .min()
        .unwrap_or(0);
    let to = residuals
        .iter()
        .filter_map(|&b| span(b))
        .map(|s| s.1)
        .max()
        .unwrap_or(program.events.len());
    // The backward loop: the first reader of the stacked residuals after
    // the peak.
    let backward = outputs
        .iter()
        .filter_map(|&b| program.buffers.get(b))
        .flat_map(|x| x.readers.iter())
        .map(|r| r.position)
        .filter(|&p| p > peak)
        .min()
        .unwrap_or(peak);
    for &b in residuals {
        drop_buffer(work, b);
    }
    work.plan.extra.push(Extra {
        from,
        to,
        bytes: input.saturating_mul(blocks),
    });
    work.plan.extra.push(Extra {
        from: backward,
        to,
        bytes: one_block,
    });
    (
        format!(
            "jax.checkpoint on the scan body: {} residual buffers stacked by {name} over {blocks} iterations ({}) live at the peak",
            residuals.len(),
            crate::units(total)
        ),
        format!(
            "the residuals are replaced by the carry saved per iteration ({blocks} × {}{}) plus one iteration's recomputed residuals ({}) during the backward loop",
            crate::units(input),
            if carry.is_some() { ", in the carry's dtype" } else { "" },
            crate::units(one_block)
        ),
    )
}
