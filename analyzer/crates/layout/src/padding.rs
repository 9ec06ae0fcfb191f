//! Padding waste: what a layout's rounding costs, where, and how to get it back.
//!
//! - per dimension ([`dimension_breakdown`]): the bytes each dimension's
//!   rounding to its tile costs;
//! - fix suggestions ([`suggest_fix`]): the nearest aligned size of the
//!   offending dimension, or a transpose that makes a large dimension minor,
//!   sized with the same model and labelled as estimates;
//! - per module ([`module_padding`], grouped by shape; [`padding_groups`] by
//!   op name or source line; [`buffer_padding`] per buffer) and per OOM event
//!   ([`event_padding`]).
//!
//! A module's buffers carry the compiler's own padded and unpadded sizes;
//! those are used as given. Only a missing unpadded size is computed from the shape.

use crate::shape::{parse_shape, ArrayShape, Shape, ShapeError};
use oomscope_report::units::format_bytes;
use oomscope_report::{ModuleReport, OomEvent, OomKind, PaddingEntry, PaddingSummary};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How many shapes [`module_padding`] and [`event_padding`] list in `top`.
pub const TOP_ENTRIES: usize = 20;

/// Highest rank [`dimension_breakdown`] and [`suggest_fix`] look into (their
/// work grows with the square of the rank; real ranks are far lower).
pub const MAX_ANALYSED_RANK: usize = 32;

/// The sizes `oomscope size SHAPE` prints for one shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeInfo {
    /// The shape as XLA prints it (normalised by parsing and printing back).
    pub shape: String,
    pub padded_bytes: u64,
    pub unpadded_bytes: u64,
}

/// Sizes of one shape string, e.g. `f32[129,1024]{1,0:T(8,128)}`. A tuple
/// counts its elements plus an 8-byte index table entry per element.
pub fn size_of(shape_text: &str) -> Result<SizeInfo, ShapeError> {
    let shape: Shape = parse_shape(shape_text)?;
    Ok(SizeInfo {
        shape: shape.to_string(),
        padded_bytes: shape.padded_bytes(),
        unpadded_bytes: shape.unpadded_bytes(),
    })
}

// ---------------------------------------------------------------------------
// Per dimension

/// What one dimension's rounding costs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DimPadding {
    /// Dimension number (index into the shape's dimensions).
    pub dimension: usize,
    /// 0 = the most-minor dimension.
    pub minor_position: usize,
    /// The dimension's size (for a split dimension, its largest piece).
    pub size: u64,
    /// The multiple the tile rounds it up to (1 = not rounded).
    pub tile: u64,
    pub padded_size: u64,
    /// Bytes this rounding alone costs: the padded size minus the padded size
    /// were this dimension not rounded (the others still are).
    pub padding_bytes: u64,
}

/// Per dimension, the bytes its rounding costs. Empty for untiled layouts
/// and ranks above [`MAX_ANALYSED_RANK`].
pub fn dimension_breakdown(array: &ArrayShape) -> Vec<DimPadding> {
    if array.dims.len() > MAX_ANALYSED_RANK {
        return Vec::new();
    }
    let (Some((multiples, beyond_rank)), Some((padded, _))) =
        (array.tile_multiples(), array.tiled_dims())
    else {
        return Vec::new();
    };
    let total = array.bytes_of_tiled(&padded, beyond_rank);
    let sizes = array.split_dims();
    let order = array.minor_to_major();
    order
        .iter()
        .enumerate()
        .filter_map(|(minor_position, &dimension)| {
            let size = sizes.get(dimension).copied()?;
            let mut exact = padded.clone();
            *exact.get_mut(dimension)? = size;
            Some(DimPadding {
                dimension,
                minor_position,
                size,
                tile: multiples.get(dimension).copied().unwrap_or(1),
                padded_size: padded.get(dimension).copied().unwrap_or(size),
                padding_bytes: total.saturating_sub(array.bytes_of_tiled(&exact, beyond_rank)),
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Suggestions

/// What a suggestion changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Change {
    /// Shrink a dimension to the nearest multiple of its tile.
    Resize {
        dimension: usize,
        from: u64,
        to: u64,
    },
    /// Lay the array out with this minor-to-major order (transpose it so
    /// that `minor_dimension` is the most minor).
    Transpose {
        minor_to_major: Vec<usize>,
        minor_dimension: usize,
    },
}

/// A way to get padding back, sized with the same model. Always an estimate:
/// the compiler may choose other tiles for the changed shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suggestion {
    pub change: Change,
    /// One line for people, e.g. `dimension 0: 129 → 128 saves 40.00 KiB (estimate)`.
    pub text: String,
    /// The changed shape as XLA would print it.
    pub new_shape: String,
    /// Bytes saved per buffer: padded size now minus padded size after.
    pub saves_bytes: u64,
    pub expansion_before: f64,
    pub expansion_after: f64,
}

fn expansion(padded: u64, unpadded: u64) -> f64 {
    if unpadded == 0 {
        1.0
    } else {
        padded as f64 / unpadded as f64
    }
}

fn resize_candidates(array: &ArrayShape) -> Vec<(Change, ArrayShape)> {
    let Some((multiples, _)) = array.tile_multiples() else {
        return Vec::new();
    };
    let splits = array
        .layout
        .as_ref()
        .is_some_and(|l| !l.split_configs.is_empty());
    let mut out = Vec::new();
    for (dimension, &tile) in multiples.iter().enumerate() {
        let from = array
            .dims
            .get(dimension)
            .and_then(|&d| u64::try_from(d).ok())
            .unwrap_or(0);
        let to = from - from % tile.max(1);
        if splits || tile <= 1 || to == 0 || to == from {
            continue;
        }
        let mut resized = array.clone();
        if let (Some(slot), Ok(to_i64)) = (resized.dims.get_mut(dimension), i64::try_from(to)) {
            *slot = to_i64;
            out.push((
                Change::Resize {
                    dimension,
                    from,
                    to,
                },
                resized,
            ));
        }
    }
    out
}

/// Layouts with another dimension most minor or second-most minor (the
/// positions a 2-D tile rounds), the rest in their current order.
fn transpose_candidates(array: &ArrayShape) -> Vec<(Change, ArrayShape)> {
    let Some(layout) = &array.layout else {
        return Vec::new();
    };
    if layout.tiles.is_empty() || !layout.split_configs.is_empty() {
        return Vec::new();
    }
    let current = array.minor_to_major();
    let mut out = Vec::new();
    for &first in &current {
        for &second in current.iter().filter(|&&d| d != first) {
            let order: Vec<usize> = [first, second]
                .into_iter()
                .chain(
                    current
                        .iter()
                        .copied()
                        .filter(|&d| d != first && d != second),
                )
                .collect();
            if order == current {
                continue;
            }
            let mut transposed = array.clone();
            if let Some(l) = transposed.layout.as_mut() {
                l.minor_to_major = order.iter().map(|&d| d as i64).collect();
            }
            out.push((
                Change::Transpose {
                    minor_to_major: order,
                    minor_dimension: first,
                },
                transposed,
            ));
        }
    }
    out
}

/// The change that saves the most padded bytes for this array: the nearest
/// aligned (smaller) size of one dimension, or a layout with other minor
/// dimensions. `None` when nothing saves bytes or the rank is above
/// [`MAX_ANALYSED_RANK`].
pub fn suggest_fix(array: &ArrayShape) -> Option<Suggestion> {
    if array.dims.len() > MAX_ANALYSED_RANK {
        return None;
    }
    let padded = array.padded_bytes();
    let unpadded = array.unpadded_bytes();
    if padded <= unpadded {
        return None;
    }
    let mut candidates = resize_candidates(array);
    candidates.extend(transpose_candidates(array));
    let (change, changed) = candidates
        .into_iter()
        .filter(|(_, changed)| changed.padded_bytes() < padded)
        .min_by_key(|(_, changed)| changed.padded_bytes())?;
    let after = changed.padded_bytes();
    let saves_bytes = padded - after;
    let expansion_before = expansion(padded, unpadded);
    let expansion_after = expansion(after, changed.unpadded_bytes());
    let text = match &change {
        Change::Resize {
            dimension,
            from,
            to,
        } => {
            format!(
                "dimension {dimension}: {from} → {to} saves {} (estimate)",
                format_bytes(saves_bytes)
            )
        }
        Change::Transpose {
            minor_to_major,
            minor_dimension,
        } => {
            // Name the dimension that moves: the most-minor one, or the
            // second-most-minor one when the most-minor stays.
            let (moved, position) = if array.minor_to_major().first() == Some(minor_dimension) {
                (
                    minor_to_major.get(1).copied().unwrap_or(*minor_dimension),
                    "second-most minor",
                )
            } else {
                (*minor_dimension, "minor")
            };
            format!(
                "transpose so that {} is {position}: {expansion_before:.1}× → {expansion_after:.1}× saves {} (estimate)",
                array.dims.get(moved).copied().unwrap_or(0),
                format_bytes(saves_bytes)
            )
        }
    };
    Some(Suggestion {
        change,
        text,
        new_shape: changed.to_string(),
        saves_bytes,
        expansion_before,
        expansion_after,
    })
}

// ---------------------------------------------------------------------------
// Modules and events

/// One buffer's padding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferPadding {
    /// The buffer's id in the module (`BufferLifetime::id`, a peak buffer's
    /// `logical_buffer_id`), to find it in the timeline; `None` when unknown.
    pub id: Option<i64>,
    pub name: String,
    pub shape: String,
    pub op_name: String,
    pub source: String,
    pub padded_bytes: u64,
    pub unpadded_bytes: u64,
    pub padding_bytes: u64,
    /// padded / unpadded (1.0 when the unpadded size is 0).
    pub expansion: f64,
}

impl BufferPadding {
    fn new(
        id: Option<i64>,
        name: &str,
        shape: &str,
        op_name: &str,
        source: &str,
        padded: u64,
        unpadded: Option<u64>,
    ) -> Self {
        // A missing unpadded size comes from the shape; tuples and
        // unparseable shapes count as unpadded.
        let unpadded = unpadded.unwrap_or_else(|| match parse_shape(shape) {
            Ok(Shape::Array(array)) => array.unpadded_bytes(),
            _ => padded,
        });
        BufferPadding {
            id,
            name: name.to_string(),
            shape: shape.to_string(),
            op_name: op_name.to_string(),
            source: source.to_string(),
            padded_bytes: padded,
            unpadded_bytes: unpadded,
            padding_bytes: padded.saturating_sub(unpadded),
            expansion: expansion(padded, unpadded),
        }
    }
}

/// A compiler-given unpadded size of 0 for a non-empty buffer means "not known".
fn known(unpadded: u64, padded: u64) -> Option<u64> {
    (unpadded > 0 || padded == 0).then_some(unpadded)
}

/// Every buffer of a module with its padding: `m.buffers` (all buffers over
/// the program) when present, else the buffers live at the peak.
pub fn buffer_padding(m: &ModuleReport) -> Vec<BufferPadding> {
    if m.buffers.is_empty() {
        return peak_buffer_padding(m);
    }
    let mut all: Vec<BufferPadding> = m
        .buffers
        .iter()
        .map(|b| {
            let unpadded = known(b.unpadded_bytes, b.size_bytes);
            BufferPadding::new(
                Some(b.id),
                &b.name,
                &b.shape,
                &b.op_name,
                &b.source,
                b.size_bytes,
                unpadded,
            )
        })
        .collect();
    // Buffers live for the whole program (parameters, constants) have no
    // lifetime band, but they are at the peak and their padding counts.
    all.extend(
        peak_buffer_padding(m)
            .into_iter()
            .zip(m.peak_buffer_lifetimes())
            .filter_map(|(b, lifetime)| lifetime.is_none().then_some(b)),
    );
    all
}

fn peak_buffer_padding(m: &ModuleReport) -> Vec<BufferPadding> {
    m.peak_buffers
        .iter()
        .map(|b| {
            let unpadded = known(b.unpadded_bytes, b.size_bytes);
            BufferPadding::new(
                b.logical_buffer_id,
                &b.name,
                &b.shape,
                &b.op_name,
                &b.source,
                b.size_bytes,
                unpadded,
            )
        })
        .collect()
}

/// What [`padding_groups`] groups buffers by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    Shape,
    OpName,
    Source,
}

/// Buffers sharing a shape, op name or source line, with their padding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaddingGroup {
    /// The shape, op name or `file:line` (empty when unknown).
    pub key: String,
    pub count: u64,
    pub padded_bytes: u64,
    pub unpadded_bytes: u64,
    pub padding_bytes: u64,
    /// padded / unpadded over the group.
    pub expansion: f64,
}

/// Groups buffers by `by`, largest padding first; groups without padding are left out.
pub fn group_buffers(buffers: &[BufferPadding], by: GroupBy) -> Vec<PaddingGroup> {
    let mut groups: Vec<PaddingGroup> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for b in buffers {
        let key = match by {
            GroupBy::Shape => b.shape.as_str(),
            GroupBy::OpName => b.op_name.as_str(),
            GroupBy::Source => b.source.as_str(),
        };
        let slot = *index.entry(key).or_insert_with(|| {
            groups.push(PaddingGroup {
                key: key.to_string(),
                count: 0,
                padded_bytes: 0,
                unpadded_bytes: 0,
                padding_bytes: 0,
                expansion: 1.0,
            });
            groups.len() - 1
        });
        if let Some(group) = groups.get_mut(slot) {
            group.count += 1;
            group.padded_bytes = group.padded_bytes.saturating_add(b.padded_bytes);
            group.unpadded_bytes = group.unpadded_bytes.saturating_add(b.unpadded_bytes);
            group.padding_bytes = group.padding_bytes.saturating_add(b.padding_bytes);
        }
    }
    groups.retain(|g| g.padding_bytes > 0);
    for g in &mut groups {
        g.expansion = expansion(g.padded_bytes, g.unpadded_bytes);
    }
    groups.sort_by(|a, b| {
        b.padding_bytes
            .cmp(&a.padding_bytes)
            .then_with(|| a.key.cmp(&b.key))
    });
    groups
}

/// A module's buffers grouped by shape, op name or source line.
pub fn padding_groups(m: &ModuleReport, by: GroupBy) -> Vec<PaddingGroup> {
    group_buffers(&buffer_padding(m), by)
}

fn total_padding(buffers: &[BufferPadding]) -> u64 {
    buffers
        .iter()
        .fold(0u64, |acc, b| acc.saturating_add(b.padding_bytes))
}

/// The `top` entries: the shapes that waste most, with a fix for each.
fn top_entries(buffers: &[BufferPadding]) -> Vec<PaddingEntry> {
    group_buffers(buffers, GroupBy::Shape)
        .into_iter()
        .take(TOP_ENTRIES)
        .map(|g| {
            let suggestion = match parse_shape(&g.key) {
                Ok(Shape::Array(array)) => suggest_fix(&array),
                _ => None,
            };
            PaddingEntry {
                shape: g.key,
                count: g.count,
                padding_bytes: g.padding_bytes,
                expansion: g.expansion,
                suggestion: suggestion
                    .as_ref()
                    .map(|s| s.text.clone())
                    .unwrap_or_default(),
                suggestion_saves_bytes: suggestion.map(|s| s.saves_bytes.saturating_mul(g.count)),
            }
        })
        .collect()
}

/// Padding of a module: across all its buffers, at the peak (the buffers
/// live there, XProf's merged small-buffer entry included), and the shapes
/// that waste most.
pub fn module_padding(m: &ModuleReport) -> PaddingSummary {
    let all = buffer_padding(m);
    let peak_padding_bytes = if m.peak_buffers.is_empty() {
        m.peak_bytes.saturating_sub(m.peak_unpadded_bytes)
    } else {
        total_padding(&peak_buffer_padding(m))
    };
    PaddingSummary {
        total_padding_bytes: total_padding(&all),
        peak_padding_bytes,
        top: top_entries(&all),
    }
}

/// The shape that wastes most among the buffers live at the peak (where
/// [`PaddingSummary::top`] ranks shapes over all buffers), with its fix.
pub fn peak_padding_top(m: &ModuleReport) -> Option<PaddingEntry> {
    top_entries(&peak_buffer_padding(m)).into_iter().next()
}

/// Each allocation an OOM message lists, with its padding: its listing rank
/// stands for the id (it is how the decision tree cites a listed
/// allocation), its XLA label for the name. The logged sizes are rounded
/// (`512.00M`); for an array shape the model's exact sizes are used, as they
/// equal the compiler's (on TPU with its untiled-array rule,
/// [`ArrayShape::tpu_padded_bytes`]). The one derivation, for the
/// analyzer's [`event_padding`] and the padding view's rows alike.
pub fn event_buffer_padding(e: &OomEvent) -> Vec<BufferPadding> {
    let on_tpu = !matches!(e.kind, OomKind::XlaGpu | OomKind::TorchCuda);
    e.top_allocations
        .iter()
        .map(|a| {
            let id = Some(i64::from(a.rank));
            let op_name = a.op_name.clone().unwrap_or_default();
            let source = a.source.clone().unwrap_or_default();
            let name = a
                .xla_label
                .clone()
                .unwrap_or_else(|| format!("allocation #{}", a.rank));
            match parse_shape(&a.shape) {
                Ok(Shape::Array(array)) => BufferPadding::new(
                    id,
                    &name,
                    &a.shape,
                    &op_name,
                    &source,
                    if on_tpu {
                        array.tpu_padded_bytes()
                    } else {
                        array.padded_bytes()
                    },
                    Some(array.unpadded_bytes()),
                ),
                _ => {
                    let unpadded = a
                        .unpadded_bytes
                        .or(a.padding_bytes.map(|p| a.size_bytes.saturating_sub(p)));
                    BufferPadding::new(
                        id,
                        &name,
                        &a.shape,
                        &op_name,
                        &source,
                        a.size_bytes,
                        unpadded,
                    )
                }
            }
        })
        .collect()
}

/// Padding of the allocations an OOM message lists (all live at the failing
/// point, so total and peak padding are the same), from
/// [`event_buffer_padding`]. `None` when the message lists no allocations.
pub fn event_padding(e: &OomEvent) -> Option<PaddingSummary> {
    if e.top_allocations.is_empty() {
        return None;
    }
    let buffers = event_buffer_padding(e);
    let total = total_padding(&buffers);
    Some(PaddingSummary {
        total_padding_bytes: total,
        peak_padding_bytes: total,
        top: top_entries(&buffers),
    })
}
