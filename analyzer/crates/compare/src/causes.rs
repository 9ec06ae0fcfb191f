//! Naming the cause of each buffer's change at the peak.
//!
//! A paired buffer changed because its element type changed (dtype), its
//! padding changed (padding), or one of its dimensions was scaled (batch or
//! sharding, decided over all such buffers together); else it grew or
//! shrank. A buffer on one side only is a donation (an output of one side
//! with the shape of a parameter of the other, which aliases it), a remat
//! (the side that rematerializes lacks saved activations and has
//! recomputations), or else it appeared or disappeared.
//!
//! Causes are named only for programs known to be the same; for a
//! low-confidence module pairing every change stays appeared, disappeared,
//! grew or shrank.

use crate::buffers::{array_of, has_remat_marker, is_recomputation, BufferPairing};
use oomscope_layout::ArrayShape;
use oomscope_report::compare::{BufferChange, BufferMatch, ChangeKind};
use oomscope_report::{BufferCategory, ModuleReport, PeakBuffer};

/// What one paired buffer's change looks like before the module-wide
/// decisions (batch or sharding).
#[derive(Debug, Clone, PartialEq)]
pub enum PairChange {
    Dtype {
        from: String,
        to: String,
    },
    Padding,
    /// Exactly one dimension differs: `from` → `to`.
    Scaled {
        from: i64,
        to: i64,
    },
    Resized,
}

/// A buffer change with the details the wording needs.
#[derive(Debug, Clone)]
pub struct Attributed {
    pub change: BufferChange,
    pub detail: Option<PairChange>,
}

/// Every buffer whose bytes at the peak differ, with its cause.
pub fn attribute(
    a: &ModuleReport,
    b: &ModuleReport,
    pairing: &BufferPairing,
    name_causes: bool,
) -> Vec<Attributed> {
    let mut out = Vec::new();
    for &(i, j, how) in &pairing.pairs {
        let (x, y) = (&a.peak_buffers[i], &b.peak_buffers[j]);
        if x.size_bytes == y.size_bytes {
            continue;
        }
        let detail = classify_pair(x, y);
        let kind = if !name_causes {
            grew_or_shrank(x.size_bytes, y.size_bytes)
        } else {
            match detail {
                PairChange::Dtype { .. } => ChangeKind::Dtype,
                PairChange::Padding => ChangeKind::Padding,
                // Decided below, over all scaled buffers.
                PairChange::Scaled { .. } | PairChange::Resized => {
                    grew_or_shrank(x.size_bytes, y.size_bytes)
                }
            }
        };
        out.push(Attributed {
            change: paired_change(x, y, how, kind),
            detail: Some(detail),
        });
    }
    if name_causes {
        decide_scaling(&mut out, a, b);
        // A dtype is named only when the program's parameters changed
        // element type; a pred buffer paired with a bf16 one of the same
        // dimensions is two different buffers, not a precision change.
        if parameter_types(a) == parameter_types(b) {
            for c in out
                .iter_mut()
                .filter(|c| c.change.kind == ChangeKind::Dtype)
            {
                c.change.kind = grew_or_shrank(c.change.bytes_a, c.change.bytes_b);
            }
        }
    }

    let mut only_a: Vec<Attributed> = pairing
        .only_a
        .iter()
        .map(|&i| Attributed {
            change: one_side_change(&a.peak_buffers[i], true),
            detail: None,
        })
        .collect();
    let mut only_b: Vec<Attributed> = pairing
        .only_b
        .iter()
        .map(|&j| Attributed {
            change: one_side_change(&b.peak_buffers[j], false),
            detail: None,
        })
        .collect();
    // Donation is named only when the programs' input-output aliases
    // differ: parameters whose allocation is also an output's.
    if name_causes && aliased_parameters(a) != aliased_parameters(b) {
        find_donations(&mut only_a, b);
        find_donations(&mut only_b, a);
    }
    if name_causes {
        find_remat(a, b, &mut only_a, &mut only_b);
        find_gathered(a, b, &mut only_a, &mut only_b);
        find_gathered(b, a, &mut only_b, &mut only_a);
    }
    out.extend(only_a);
    out.extend(only_b);
    out.retain(|c| c.change.difference_bytes != 0);
    out
}

fn grew_or_shrank(a: u64, b: u64) -> ChangeKind {
    if b > a {
        ChangeKind::Grew
    } else {
        ChangeKind::Shrank
    }
}

fn difference(a: u64, b: u64) -> i64 {
    (b as i128 - a as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

fn paired_change(
    x: &PeakBuffer,
    y: &PeakBuffer,
    how: BufferMatch,
    kind: ChangeKind,
) -> BufferChange {
    BufferChange {
        kind,
        matched_by: how,
        name_a: x.name.clone(),
        name_b: y.name.clone(),
        shape_a: x.shape.clone(),
        shape_b: y.shape.clone(),
        bytes_a: x.size_bytes,
        bytes_b: y.size_bytes,
        difference_bytes: difference(x.size_bytes, y.size_bytes),
        op_name: y.op_name.clone(),
        source: y.source.clone(),
        category: y.category,
    }
}

fn one_side_change(p: &PeakBuffer, in_a: bool) -> BufferChange {
    let (bytes_a, bytes_b) = if in_a {
        (p.size_bytes, 0)
    } else {
        (0, p.size_bytes)
    };
    BufferChange {
        kind: if in_a {
            ChangeKind::Disappeared
        } else {
            ChangeKind::Appeared
        },
        matched_by: BufferMatch::Unmatched,
        name_a: if in_a { p.name.clone() } else { String::new() },
        name_b: if in_a { String::new() } else { p.name.clone() },
        shape_a: if in_a { p.shape.clone() } else { String::new() },
        shape_b: if in_a { String::new() } else { p.shape.clone() },
        bytes_a,
        bytes_b,
        difference_bytes: difference(bytes_a, bytes_b),
        op_name: p.op_name.clone(),
        source: p.source.clone(),
        category: p.category,
    }
}

/// How two paired buffers differ in shape.
pub fn classify_pair(x: &PeakBuffer, y: &PeakBuffer) -> PairChange {
    let (Some(sx), Some(sy)) = (array_of(&x.shape), array_of(&y.shape)) else {
        return PairChange::Resized;
    };
    if sx.element_type != sy.element_type {
        if sx.dims == sy.dims {
            return PairChange::Dtype {
                from: sx.element_type.name().into(),
                to: sy.element_type.name().into(),
            };
        }
        return PairChange::Resized;
    }
    if sx.dims == sy.dims {
        // Same logical array, different bytes: the layout's padding changed.
        return if x.unpadded_bytes == y.unpadded_bytes {
            PairChange::Padding
        } else {
            PairChange::Resized
        };
    }
    match single_scaled_dimension(&sx, &sy) {
        Some((from, to)) => PairChange::Scaled { from, to },
        None => PairChange::Resized,
    }
}

/// The one dimension that differs between two arrays of the same rank.
fn single_scaled_dimension(x: &ArrayShape, y: &ArrayShape) -> Option<(i64, i64)> {
    if x.dims.len() != y.dims.len() {
        return None;
    }
    let mut differing = x.dims.iter().zip(&y.dims).filter(|(p, q)| p != q);
    let (&from, &to) = differing.next()?;
    if differing.next().is_some() || from <= 0 || to <= 0 {
        return None;
    }
    Some((from, to))
}

/// Buffers whose one dimension was scaled, taken together: the ratio most
/// bytes go with decides. With parameters among them, on a side that also
/// gained a collective (more all-gathers, reduce-scatters, ...), the per-device
/// shapes were divided by sharding; with most of the weights scaled, the
/// model itself changed (layers stacked by a scan, width); else only
/// activations and data moved: a batch change.
fn decide_scaling(changes: &mut [Attributed], a: &ModuleReport, b: &ModuleReport) {
    // Ratio as a reduced fraction `to/from`, with its bytes.
    let ratio_of = |from: i64, to: i64| {
        let g = gcd(from, to);
        (to / g, from / g)
    };
    let mut ratios: Vec<((i64, i64), u64)> = Vec::new();
    for c in changes.iter() {
        if let Some(PairChange::Scaled { from, to }) = c.detail {
            let r = ratio_of(from, to);
            match ratios.iter_mut().find(|(k, _)| *k == r) {
                Some((_, bytes)) => {
                    *bytes = bytes.saturating_add(c.change.difference_bytes.unsigned_abs())
                }
                None => ratios.push((r, c.change.difference_bytes.unsigned_abs())),
            }
        }
    }
    let Some(&(dominant, _)) = ratios.iter().max_by_key(|(_, bytes)| *bytes) else {
        return;
    };
    let members: Vec<usize> = changes
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c.detail, Some(PairChange::Scaled { from, to }) if ratio_of(from, to) == dominant))
        .map(|(i, _)| i)
        .collect();
    // One buffer scaled is not a pattern.
    if members.len() < 2 {
        return;
    }
    let parameters_scaled = members
        .iter()
        .filter(|&&i| changes[i].change.category == BufferCategory::Parameter)
        .count();
    let parameters_listed = a
        .peak_buffers
        .iter()
        .filter(|p| p.category == BufferCategory::Parameter)
        .count();
    let shrinks = dominant.0 < dominant.1;
    let (smaller, larger) = if shrinks { (b, a) } else { (a, b) };
    let kind = if parameters_scaled > 0 && gained_a_collective(smaller, larger) {
        ChangeKind::Sharding
    } else if parameters_scaled >= 2 && parameters_scaled * 2 >= parameters_listed {
        ChangeKind::ModelSize
    } else if parameters_scaled > 0 || parameter_scaled_by(a, b, dominant) {
        // A data input (a parameter that is no weight) has its batch
        // dimension scaled.
        ChangeKind::Batch
    } else {
        // Activations scaled with no input that did: no named cause.
        return;
    };
    for i in members {
        changes[i].change.kind = kind;
    }
}

/// Whether `sharded` has more of some collective than `whole`: what SPMD
/// partitioning adds where it divides the weights. Counted by collective,
/// not in total: the two sides may both run data parallel, and then the
/// whole side's gradient all-reduces (one per weight, issued as several
/// trace events) outnumber the few all-gathers FSDP adds (pair-moe-shard:
/// 36 all-reduce events and buffers in HBM against 3 all-gathers, 3
/// all-reduces and 15 collective-permutes: of the HloProto's 45
/// all-gathers, few define an HBM buffer of their own in the trace).
fn gained_a_collective(sharded: &ModuleReport, whole: &ModuleReport) -> bool {
    let (s, w) = (collectives(sharded), collectives(whole));
    s.iter().zip(&w).any(|(s, w)| s > w)
}

/// Cross-device communication in a module, by collective (in
/// [`COLLECTIVE_OPCODES`](oomscope_report::COLLECTIVE_OPCODES)' order):
/// the names of its heap-simulator trace's events (`instructions`, one per
/// event) and its buffers' names and opcodes (of this memory space) that
/// begin with the collective's name.
fn collectives(m: &ModuleReport) -> [usize; oomscope_report::COLLECTIVE_OPCODES.len()] {
    let mut counts = [0; oomscope_report::COLLECTIVE_OPCODES.len()];
    let mut count = |name: &str| {
        if let Some(k) = oomscope_report::COLLECTIVE_OPCODES
            .iter()
            .position(|op| name.starts_with(op))
        {
            counts[k] += 1;
        }
    };
    for i in &m.instructions {
        count(i);
    }
    for l in &m.buffers {
        if oomscope_report::is_collective(&l.name) {
            count(&l.name);
        } else {
            count(&l.opcode);
        }
    }
    counts
}

/// Whether a parameter of `a` and one of `b` (paired or not: their names
/// may differ between compiles) have the same element type and differ in
/// one dimension by `ratio` (`to/from`, reduced).
fn parameter_scaled_by(a: &ModuleReport, b: &ModuleReport, ratio: (i64, i64)) -> bool {
    let parameters = |m: &ModuleReport| -> Vec<ArrayShape> {
        m.peak_buffers
            .iter()
            .filter(|p| p.category == BufferCategory::Parameter)
            .filter_map(|p| array_of(&p.shape))
            .collect()
    };
    let (pa, pb) = (parameters(a), parameters(b));
    pa.iter().any(|x| {
        pb.iter().any(|y| {
            x.element_type == y.element_type
                && single_scaled_dimension(x, y).is_some_and(|(from, to)| {
                    let g = gcd(from, to);
                    (to / g, from / g) == ratio
                })
        })
    })
}

/// The element types of a module's parameters with their bytes: the
/// precision the program keeps its inputs and weights in.
fn parameter_types(m: &ModuleReport) -> Vec<(String, u64)> {
    let mut types: Vec<(String, u64)> = Vec::new();
    for p in m
        .peak_buffers
        .iter()
        .filter(|p| p.category == BufferCategory::Parameter)
    {
        let Some(s) = array_of(&p.shape) else {
            continue;
        };
        let name = s.element_type.name().to_string();
        match types.iter_mut().find(|(t, _)| *t == name) {
            Some((_, bytes)) => *bytes = bytes.saturating_add(p.size_bytes),
            None => types.push((name, p.size_bytes)),
        }
    }
    types.sort();
    types
}

/// The parameters whose allocation is also a program output (an
/// input-output alias: a donated argument the output reuses), by shape.
/// The buffer assignment says it (`maybe_live_out` on the parameter's
/// allocation), whichever outputs are live at the peak: counting outputs
/// that have a buffer of their own named donation in a pair aliased
/// identically on both sides whose outputs left the peak on one side.
fn aliased_parameters(m: &ModuleReport) -> Vec<&str> {
    let mut shapes: Vec<&str> = m
        .peak_buffers
        .iter()
        .filter(|p| p.category == BufferCategory::Parameter && p.maybe_live_out)
        .map(|p| p.shape.as_str())
        .collect();
    shapes.sort_unstable();
    shapes
}

fn gcd(mut a: i64, mut b: i64) -> i64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.saturating_abs().max(1)
}

/// Outputs of one side with no counterpart, shaped like a parameter of the
/// other side: there the output aliases the donated parameter, so it has
/// no buffer of its own. Each parameter explains one output.
fn find_donations(only_here: &mut [Attributed], other: &ModuleReport) {
    let mut parameters: Vec<Option<(String, Vec<i64>)>> = other
        .peak_buffers
        .iter()
        .filter(|p| p.category == BufferCategory::Parameter)
        .map(|p| array_of(&p.shape).map(|s| (s.element_type.name().to_string(), s.dims)))
        .collect();
    for c in only_here
        .iter_mut()
        .filter(|c| c.change.category == BufferCategory::Output)
    {
        let shape = if c.change.shape_a.is_empty() {
            &c.change.shape_b
        } else {
            &c.change.shape_a
        };
        let Some(s) = array_of(shape) else { continue };
        let key = (s.element_type.name().to_string(), s.dims);
        if let Some(slot) = parameters.iter_mut().find(|p| p.as_ref() == Some(&key)) {
            *slot = None;
            c.change.kind = ChangeKind::Donation;
        }
    }
}

/// Buffers of one side made by an all-gather that the other side does not
/// materialise, while the other side holds the array's shard (the gathered
/// shape with one dimension divided by the number of chips): there the
/// array stays sharded, here a sharding constraint or annotation made XLA
/// gather it whole on every chip. Such a buffer, and the one-sided buffer
/// of the shard's shape that replaces it on the other side (if any), are
/// a sharding change.
fn find_gathered(
    here: &ModuleReport,
    other: &ModuleReport,
    only_here: &mut [Attributed],
    only_other: &mut [Attributed],
) {
    let is_gather = |name: &str| name.starts_with("all-gather");
    for attributed in only_here.iter_mut() {
        let c = &attributed.change;
        if c.kind != ChangeKind::Disappeared && c.kind != ChangeKind::Appeared {
            continue;
        }
        let (name, shape) = if c.name_a.is_empty() {
            (&c.name_b, &c.shape_b)
        } else {
            (&c.name_a, &c.shape_a)
        };
        let opcode = here
            .peak_buffers
            .iter()
            .find(|p| &p.name == name)
            .map(|p| p.opcode.as_str())
            .unwrap_or("");
        if !(is_gather(name) || is_gather(opcode)) {
            continue;
        }
        let Some(whole) = array_of(shape) else {
            continue;
        };
        let is_shard = |candidate: &str| {
            array_of(candidate).is_some_and(|s| {
                s.element_type == whole.element_type
                    && single_scaled_dimension(&whole, &s)
                        .is_some_and(|(from, to)| to > 0 && from > to && from % to == 0)
            })
        };
        if !other.peak_buffers.iter().any(|p| is_shard(&p.shape)) {
            continue;
        }
        attributed.change.kind = ChangeKind::Sharding;
        let replacement = only_other.iter_mut().find(|o| {
            let shape = if o.change.shape_a.is_empty() {
                &o.change.shape_b
            } else {
                &o.change.shape_a
            };
            matches!(
                o.change.kind,
                ChangeKind::Appeared | ChangeKind::Disappeared
            ) && o.change.category == attributed.change.category
                && is_shard(shape)
        });
        if let Some(r) = replacement {
            r.change.kind = ChangeKind::Sharding;
        }
    }
}

/// How much rematerialization a module shows: buffers that recompute, or
/// that JAX placed under `checkpoint`/`remat`.
fn remat_markers(m: &ModuleReport) -> usize {
    if m.buffers.is_empty() {
        m.peak_buffers
            .iter()
            .filter(|p| has_remat_marker(&p.name, &p.op_name))
            .count()
    } else {
        m.buffers
            .iter()
            .filter(|l| has_remat_marker(&l.name, &l.op_name))
            .count()
    }
}

/// The side with more rematerialization lacks the other's saved
/// activations (temporaries only on the other side) and has recomputed
/// buffers of its own: both are the remat change.
fn find_remat(
    a: &ModuleReport,
    b: &ModuleReport,
    only_a: &mut [Attributed],
    only_b: &mut [Attributed],
) {
    let (ra, rb) = (remat_markers(a), remat_markers(b));
    if ra == rb {
        return;
    }
    let (kept, rematerialized) = if rb > ra {
        (only_a, only_b)
    } else {
        (only_b, only_a)
    };
    let recomputed = |c: &Attributed| {
        let name = if c.change.name_a.is_empty() {
            &c.change.name_b
        } else {
            &c.change.name_a
        };
        c.change.category == BufferCategory::Temporary && is_recomputation(name, &c.change.op_name)
    };
    // Without a recomputation at the peak, activations that left it did so
    // for some other reason.
    if !rematerialized.iter().any(recomputed) {
        return;
    }
    for c in rematerialized.iter_mut() {
        if recomputed(c) {
            c.change.kind = ChangeKind::Remat;
        }
    }
    for c in kept
        .iter_mut()
        .filter(|c| c.change.category == BufferCategory::Temporary)
    {
        c.change.kind = ChangeKind::Remat;
    }
}
