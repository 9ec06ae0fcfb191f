//! `jax.checkpoint` on the repeated block, replayed.
//!
//! Without checkpointing, the forward pass saves each block's residuals for
//! the backward pass: at the peak (the turn from forward to backward) they
//! are all live. They show in the program as temporaries live at the peak
//! that repeat once per block (the same shape several times, a block
//! unrolled) or that a scan stacks (a leading dimension equal to the trip
//! count, shared by several live buffers). With the block checkpointed, the
//! forward pass keeps only each block's input (the smallest repeated
//! residual stands for it) and the backward pass recomputes one block at a
//! time, so one block's residuals are live at once.
//!
//! So the residuals leave the replay, and in their place, from the first
//! residual's allocation to the last one's release: one block input per
//! block plus one block's residuals.

use std::collections::BTreeMap;

use oomscope_report::program::HeapEventKind;

use crate::{live_at, memory_roots, Curve, Extra, WhatIfError, Work};

pub(crate) fn apply(work: &mut Work<'_>, before: &Curve) -> Result<(String, String), WhatIfError> {
    // Each live buffer's memory is its root's (a scan's stacked residuals
    // share their initial buffer's memory); counted once.
    let roots = memory_roots(work.program);
    let root = |b: usize| roots.get(b).copied().unwrap_or(b);
    let mut live: Vec<usize> = live_at(work.program, before.peak_position)
        .into_iter()
        .map(root)
        .collect();
    live.sort_unstable();
    live.dedup();
    let size = |b: usize| work.plan.buffer_bytes.get(b).copied().unwrap_or(0);
    // Unrolled blocks: the same shape live several times at the peak.
    // Ordered maps: the residuals, and the buffers the report lists as
    // changed, come out in one order on every run.
    let mut by_shape: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for &b in &live {
        if let Some(s) = work.shape_text(b) {
            if size(b) > 0 {
                by_shape.entry(s).or_default().push(b);
            }
        }
    }
    let repeated: Vec<Vec<usize>> = by_shape.into_values().filter(|g| g.len() >= 2).collect();
    // The blocks: how often the heaviest repeated residual repeats (a
    // block can save several residuals of one shape, so the largest count
    // overstates it).
    let unrolled_blocks = repeated
        .iter()
        .max_by_key(|g| g.iter().map(|&b| size(b)).sum::<u64>())
        .map_or(0, Vec::len);
    // Scanned blocks: live buffers stacked along a leading trip count.
    let mut by_leading: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for &b in &live {
        if let Some(a) = work.array(b) {
            if a.dims.len() >= 3 {
                if let Some(&t) = a.dims.first() {
                    if t >= 2 {
                        by_leading.entry(t).or_default().push(b);
                    }
                }
            }
        }
    }
    let stacked = by_leading
        .into_iter()
        .filter(|(_, g)| g.len() >= 2)
        .max_by_key(|(_, g)| g.iter().map(|&b| size(b)).sum::<u64>());
    let stacked_bytes: u64 = stacked
        .as_ref()
        .map_or(0, |(_, g)| g.iter().map(|&b| size(b)).sum());
    let unrolled_bytes: u64 = repeated.iter().flatten().map(|&b| size(b)).sum();
    let (residuals, blocks, kind): (Vec<usize>, u64, &str) = if stacked_bytes > unrolled_bytes {
        match stacked {
            Some((t, g)) => (g, u64::try_from(t).unwrap_or(1), "stacked by a scan"),
            None => (Vec::new(), 1, ""),
        }
    } else {
        (
            repeated.concat(),
            unrolled_blocks as u64,
            "repeated per block",
        )
    };
    if residuals.is_empty() || blocks < 2 {
        return Err(WhatIfError::NotApplicable(
            "no residuals repeated per block or stacked by a scan are live at the peak".into(),
        ));
    }
    let total: u64 = residuals.iter().map(|&b| size(b)).sum();
    // The smallest residual per block stands for the block's input.
    let input = residuals
        .iter()
        .map(|&b| {
            size(b)
                / if kind.starts_with("stacked") {
                    blocks
                } else {
                    1
                }
        })
        .min()
        .unwrap_or(0);
    let one_block = total / blocks;
    let kept = input.saturating_mul(blocks).saturating_add(one_block);
    // The span the residuals covered.
    let residual_set: std::collections::HashSet<usize> = residuals.iter().copied().collect();
    let (mut from, mut to) = (usize::MAX, 0usize);
    for (i, e) in work.program.events.iter().enumerate() {
        if let Some(b) = e.buffer {
            if residual_set.contains(&root(b)) {
                match e.kind {
                    HeapEventKind::Alloc => from = from.min(i),
                    HeapEventKind::Free => to = to.max(i),
                    HeapEventKind::ShareWith(_) => {}
                }
            }
        }
    }
    if from == usize::MAX {
        from = 0;
    }
    if to <= from {
        to = work.program.events.len();
    }
    for &b in &residuals {
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
    }
    work.plan.extra.push(Extra {
        from,
        to,
        bytes: kept,
    });
    Ok((
        format!(
            "jax.checkpoint on the repeated block: {} residual buffers {kind} over {blocks} blocks ({}) live at the peak",
            residuals.len(),
            crate::units(total)
        ),
        format!(
            "the residuals are replaced by one block input per block ({} × {}) plus one block's recomputed residuals ({})",
            blocks,
            crate::units(input),
            crate::units(one_block)
        ),
    ))
}
