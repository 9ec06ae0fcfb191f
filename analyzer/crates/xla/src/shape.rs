//! `xla.ShapeProto` (a [`ShapeView`]) → the layout crate's shape model, the shape text XProf
//! shows (`ShapeUtil::HumanStringWithLayout`), and the unpadded size.

use crate::hlo::{LayoutView, ShapeView};
use oomscope_layout::shape::POINTER_BYTES;
use oomscope_layout::{ArrayShape, ElementType, Layout, Shape, SplitConfig, Tile};

const TUPLE: i32 = 13;
const OPAQUE_TYPE: i32 = 14;
const TOKEN: i32 = 17;

/// Converts a shape. An element type this crate does not know becomes an
/// opaque shape (it then counts as one pointer).
pub fn shape_from_view(view: ShapeView<'_>) -> Shape {
    match view.element_type() {
        TUPLE => Shape::Tuple(view.tuple_shapes().map(shape_from_view).collect()),
        TOKEN => Shape::Token,
        OPAQUE_TYPE => Shape::Opaque,
        number => match ElementType::from_primitive_type(number) {
            Some(element_type) => {
                let dims = view.dimensions();
                let given = view.is_dynamic_dimension();
                let dynamic = (0..dims.len())
                    .map(|i| given.get(i).copied().unwrap_or(false))
                    .collect();
                Shape::Array(ArrayShape {
                    element_type,
                    dims,
                    dynamic,
                    layout: view.layout().map(layout_from_view),
                })
            }
            None => Shape::Opaque,
        },
    }
}

fn layout_from_view(view: LayoutView<'_>) -> Layout {
    let [element_size_in_bits, memory_space, index_type, pointer_type, prefix, tail] =
        view.scalars();
    Layout {
        minor_to_major: view.minor_to_major(),
        tiles: view.tiles().into_iter().map(|dims| Tile { dims }).collect(),
        tail_padding_alignment_in_elements: if tail == 0 { 1 } else { tail },
        index_primitive_type: nonzero_type(index_type as i32),
        pointer_primitive_type: nonzero_type(pointer_type as i32),
        element_size_in_bits: u32::try_from(element_size_in_bits).unwrap_or(0),
        memory_space,
        split_configs: view
            .split_configs()
            .into_iter()
            .map(|(dimension, split_indices)| SplitConfig {
                dimension,
                split_indices,
            })
            .collect(),
        physical_shape: view.physical_shape().map(|s| Box::new(shape_from_view(s))),
        dynamic_shape_metadata_prefix_bytes: prefix,
        ..Layout::default()
    }
}

fn nonzero_type(number: i32) -> Option<ElementType> {
    if number == 0 {
        None
    } else {
        ElementType::from_primitive_type(number)
    }
}

/// The text XProf shows for a shape (`ShapeUtil::HumanStringWithLayout`):
/// like XLA's printer, except that a scalar's empty layout `{}` is left out.
pub fn human_string_with_layout(shape: &Shape) -> String {
    match shape {
        Shape::Array(array) if array.dims.is_empty() => {
            let text = array.to_string();
            text.strip_suffix("{}").map(str::to_string).unwrap_or(text)
        }
        Shape::Tuple(elements) => {
            // Upstream marks every fifth element with its index (as the
            // layout crate's printer does), nested tuples too.
            let mut text = String::from("(");
            for (i, element) in elements.iter().enumerate() {
                if i > 0 {
                    text.push_str(", ");
                    if i % 5 == 0 {
                        text.push_str(&format!("/*index={i}*/"));
                    }
                }
                text.push_str(&human_string_with_layout(element));
            }
            text.push(')');
            text
        }
        other => other.to_string(),
    }
}

/// The subshape XProf shows for a logical buffer (`ResolveShapeIndex`): only
/// the last shape-index entry is applied, to the top-level tuple ("historical
/// behaviour" upstream); an out-of-range index keeps the whole shape.
pub fn xprof_display_subshape<'a>(shape: ShapeView<'a>, shape_index: &[i64]) -> ShapeView<'a> {
    match shape_index.last().and_then(|&i| usize::try_from(i).ok()) {
        Some(i) => shape.tuple_shape(i).unwrap_or(shape),
        None => shape,
    }
}

/// The subshape at a full shape index (None when the index does not exist).
pub fn subshape<'a>(shape: ShapeView<'a>, shape_index: &[i64]) -> Option<ShapeView<'a>> {
    let mut current = shape;
    for &i in shape_index {
        current = current.tuple_shape(usize::try_from(i).ok()?)?;
    }
    Some(current)
}

/// [`unpadded_buffer_bytes`] of a shape view, without building a tuple's
/// elements (a tuple's buffer is its index table).
/// It reads the element type, the dimensions and the layout's element size
/// only: the Memory Viewer sizes every buffer, and building each one's
/// shape (its layout, tiles, dynamic flags) cost more than the rest of its
/// analysis. `unpadded_view_bytes_match_the_shape_model` holds it equal to
/// [`unpadded_buffer_bytes`] of [`shape_from_view`].
pub fn unpadded_view_bytes(shape: ShapeView<'_>) -> u64 {
    let facts = shape.size_facts();
    match facts.element_type {
        TUPLE => POINTER_BYTES.saturating_mul(facts.tuple_elements),
        TOKEN => 0,
        OPAQUE_TYPE => POINTER_BYTES,
        number => match ElementType::from_primitive_type(number) {
            None => POINTER_BYTES,
            Some(element_type) => {
                let bits = match facts
                    .layout
                    .map(|l| u32::try_from(l.scalar(7)).unwrap_or(0))
                {
                    Some(bits) if bits != 0 => u64::from(bits),
                    _ => element_type.default_storage_bytes().saturating_mul(8),
                };
                facts
                    .elements
                    .checked_mul(bits)
                    .map_or(u64::MAX, |b| b.div_ceil(8))
            }
        },
    }
}

/// Bytes of a buffer of this shape without layout padding: element count ×
/// element size for an array (tiles removed, sub-byte element sizes kept); a
/// tuple's buffer is its index table, 8 bytes per element.
pub fn unpadded_buffer_bytes(shape: &Shape) -> u64 {
    match shape {
        Shape::Tuple(_) | Shape::Token | Shape::Opaque => shape.own_padded_bytes(),
        Shape::Array(array) => array.unpadded_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shape of every fixture HloProto (and their tuple elements):
    /// the short path gives the shape model's unpadded size.
    #[test]
    fn unpadded_view_bytes_match_the_shape_model() {
        let mut files = Vec::new();
        let mut dirs = vec![oomscope_testdata::fixtures()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.to_string_lossy().ends_with(".hlo.pb") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() > 50, "{} HloProtos", files.len());
        let mut checked = 0;
        for file in files {
            let bytes = std::fs::read(&file).unwrap();
            let Ok(hlo) = crate::hlo::decode(&bytes) else {
                continue;
            };
            for i in hlo.module.iter().flat_map(|m| &m.instructions) {
                let Some(shape) = i.shape else { continue };
                for s in std::iter::once(shape).chain(shape.tuple_shapes()) {
                    assert_eq!(
                        unpadded_view_bytes(s),
                        unpadded_buffer_bytes(&shape_from_view(s)),
                        "{}: {}",
                        file.display(),
                        i.name
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000, "{checked} shapes");
    }
}
