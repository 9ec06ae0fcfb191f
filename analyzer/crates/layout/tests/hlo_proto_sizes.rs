//! Our padded size of every array logical buffer in every real `HloProto`
//! (`BufferAssignmentProto.logical_buffers[].size`, the compiler's number)
//! against the shape its defining instruction gives it.

use oomscope_layout::{
    tpu_tuple_table_bytes, ArrayShape, ElementType, Layout, Shape, SplitConfig, Tile,
};
use oomscope_proto::prost::Message;
use oomscope_proto::xla::{HloProto, LayoutProto, ShapeProto};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const TUPLE: i32 = 13;

fn files_under(root: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_under(&path, suffix, out);
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
}

fn layout(proto: &LayoutProto) -> Layout {
    Layout {
        minor_to_major: proto.minor_to_major.clone(),
        tiles: proto
            .tiles
            .iter()
            .map(|t| Tile {
                dims: t.dimensions.clone(),
            })
            .collect(),
        tail_padding_alignment_in_elements: proto.tail_padding_alignment_in_elements.max(1),
        element_size_in_bits: u32::try_from(proto.element_size_in_bits).unwrap(),
        memory_space: proto.memory_space,
        split_configs: proto
            .split_configs
            .iter()
            .map(|s| SplitConfig {
                dimension: s.dimension,
                split_indices: s.split_indices.clone(),
            })
            .collect(),
        dynamic_shape_metadata_prefix_bytes: proto.dynamic_shape_metadata_prefix_bytes,
        ..Layout::default()
    }
}

/// The array at `index` in `shape`, `None` for tuples and non-arrays.
fn array_at(shape: &ShapeProto, index: &[i64]) -> Option<ArrayShape> {
    let mut current = shape;
    for &i in index {
        current = current.tuple_shapes.get(usize::try_from(i).ok()?)?;
    }
    if current.element_type == TUPLE {
        return None;
    }
    let element_type = ElementType::from_primitive_type(current.element_type)?;
    element_type.is_array().then(|| ArrayShape {
        element_type,
        dims: current.dimensions.clone(),
        dynamic: current.is_dynamic_dimension.clone(),
        layout: current.layout.as_deref().map(layout),
    })
}

/// The number of elements of the tuple at `index` in `shape`, `None` when it
/// is not a tuple.
fn tuple_length_at(shape: &ShapeProto, index: &[i64]) -> Option<usize> {
    let mut current = shape;
    for &i in index {
        current = current.tuple_shapes.get(usize::try_from(i).ok()?)?;
    }
    (current.element_type == TUPLE).then_some(current.tuple_shapes.len())
}

/// The TPU's allocation granule of the chip an HloProto was compiled for
/// (`topology` in its fixture's `versions.txt`): 32 bytes on v5p and v6e, 512
/// on v4 and v5e (the corpus HloProtos are v5e and have no `versions.txt`).
fn allocation_granule(file: &Path) -> u64 {
    let text = std::fs::read_to_string(file.with_file_name("versions.txt")).unwrap_or_default();
    let topology = text
        .lines()
        .find_map(|l| l.strip_prefix("topology "))
        .unwrap_or("v5e");
    if topology.starts_with("v5p") || topology.starts_with("v6e") {
        32
    } else {
        512
    }
}

#[test]
fn hlo_proto_logical_buffer_sizes_equal_the_compilers() {
    let mut files = Vec::new();
    files_under(&oomscope_testdata::fixtures(), ".hlo.pb", &mut files);
    files_under(&oomscope_testdata::corpus(), ".hlo.pb", &mut files);
    // TPU compiles only: an XLA:CPU dump (`cpu_after_optimizations`) has no
    // tiled layouts, and a before-optimizations proto no buffer assignment.
    files.retain(|f| {
        let name = f.file_name().unwrap_or_default().to_string_lossy();
        !name.contains("cpu_after_optimizations") && !name.contains("before_optimizations")
    });
    assert!(
        files.len() >= 10,
        "expected the fixture HloProtos, found {files:?}"
    );
    let (mut checked, mut untiled, mut tuples, mut other) = (0, 0, 0, 0);
    let mut mismatches = Vec::new();
    for file in &files {
        let proto = HloProto::decode(std::fs::read(file).unwrap().as_slice()).unwrap();
        let module = proto.hlo_module.unwrap_or_default();
        let mut shapes: HashMap<i64, &ShapeProto> = HashMap::new();
        let mut shapes_by_name: HashMap<&str, &ShapeProto> = HashMap::new();
        for instruction in module.computations.iter().flat_map(|c| &c.instructions) {
            if let Some(shape) = &instruction.shape {
                shapes.insert(instruction.id, shape);
                shapes_by_name.insert(&instruction.name, shape);
            }
        }
        for buffer in &proto.buffer_assignment.as_ref().unwrap().logical_buffers {
            let location = buffer.defined_at.as_ref().unwrap();
            #[allow(deprecated)]
            let shape = shapes
                .get(&location.instruction_id)
                .or_else(|| shapes_by_name.get(location.instruction_name.as_str()))
                .expect("defining instruction");
            let size = u64::try_from(buffer.size).unwrap();
            let Some(array) = array_at(shape, &location.shape_index) else {
                // A tuple's own buffer: its index table, sized by the chip's granule.
                if let Some(elements) = tuple_length_at(shape, &location.shape_index) {
                    tuples += 1;
                    let ours = tpu_tuple_table_bytes(elements, allocation_granule(file));
                    if ours != size {
                        mismatches.push(format!(
                            "{}: tuple of {elements} at {:?}: compiler {size}, ours {ours}",
                            file.display(),
                            location.shape_index
                        ));
                    }
                } else {
                    other += 1;
                }
                continue;
            };
            if array.is_tiled() {
                checked += 1;
            } else {
                untiled += 1;
            }
            let ours = array.tpu_padded_bytes();
            if ours != size {
                mismatches.push(format!(
                    "{}: {}: compiler {size}, ours {ours}",
                    file.display(),
                    Shape::Array(array)
                ));
            }
        }
    }
    mismatches.dedup();
    eprintln!(
        "checked {checked} tiled array logical buffers, {untiled} untiled, {tuples} tuple tables, skipped {other} others in {} HloProtos",
        files.len()
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
