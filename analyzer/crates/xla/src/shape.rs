//! `xla.ShapeProto` → the layout crate's shape model, the shape text XProf
//! shows (`ShapeUtil::HumanStringWithLayout`), and the unpadded size.

use oomscope_layout::{ArrayShape, ElementType, Layout, Shape, SplitConfig, Tile};
use oomscope_proto::xla::{LayoutProto, ShapeProto};

const TUPLE: i32 = 13;
const OPAQUE_TYPE: i32 = 14;
const TOKEN: i32 = 17;

/// Converts a shape proto. An element type this crate does not know becomes
/// an opaque shape (it then counts as one pointer).
pub fn shape_from_proto(proto: &ShapeProto) -> Shape {
    match proto.element_type {
        TUPLE => Shape::Tuple(proto.tuple_shapes.iter().map(shape_from_proto).collect()),
        TOKEN => Shape::Token,
        OPAQUE_TYPE => Shape::Opaque,
        number => match ElementType::from_primitive_type(number) {
            Some(element_type) => {
                let dims = proto.dimensions.clone();
                let dynamic = (0..dims.len())
                    .map(|i| proto.is_dynamic_dimension.get(i).copied().unwrap_or(false))
                    .collect();
                Shape::Array(ArrayShape {
                    element_type,
                    dims,
                    dynamic,
                    layout: proto.layout.as_deref().map(layout_from_proto),
                })
            }
            None => Shape::Opaque,
        },
    }
}

fn layout_from_proto(proto: &LayoutProto) -> Layout {
    Layout {
        minor_to_major: proto.minor_to_major.clone(),
        tiles: proto
            .tiles
            .iter()
            .map(|t| Tile {
                dims: t.dimensions.clone(),
            })
            .collect(),
        tail_padding_alignment_in_elements: if proto.tail_padding_alignment_in_elements == 0 {
            1
        } else {
            proto.tail_padding_alignment_in_elements
        },
        index_primitive_type: nonzero_type(proto.index_primitive_type),
        pointer_primitive_type: nonzero_type(proto.pointer_primitive_type),
        element_size_in_bits: u32::try_from(proto.element_size_in_bits).unwrap_or(0),
        memory_space: proto.memory_space,
        split_configs: proto
            .split_configs
            .iter()
            .map(|s| SplitConfig {
                dimension: s.dimension,
                split_indices: s.split_indices.clone(),
            })
            .collect(),
        physical_shape: proto
            .physical_shape
            .as_ref()
            .map(|s| Box::new(shape_from_proto(s))),
        dynamic_shape_metadata_prefix_bytes: proto.dynamic_shape_metadata_prefix_bytes,
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
pub fn xprof_display_subshape<'a>(shape: &'a ShapeProto, shape_index: &[i64]) -> &'a ShapeProto {
    match shape_index.last().and_then(|&i| usize::try_from(i).ok()) {
        Some(i) => shape.tuple_shapes.get(i).unwrap_or(shape),
        None => shape,
    }
}

/// The subshape at a full shape index (None when the index does not exist).
pub fn subshape<'a>(shape: &'a ShapeProto, shape_index: &[i64]) -> Option<&'a ShapeProto> {
    let mut current = shape;
    for &i in shape_index {
        current = current.tuple_shapes.get(usize::try_from(i).ok()?)?;
    }
    Some(current)
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
