//! The unpadded size XProf gives a logical buffer defined inside a nested
//! tuple. Upstream (`hlo_proto_to_memory_visualization_utils.cc`,
//! `LogicalBufferStruct`) sizes `ResolveShapeIndex(instruction shape,
//! shape_index)`, which applies only the LAST index entry to the top-level
//! tuple ("to maintain historical behavior") and keeps the whole shape when
//! that entry is out of range; the unpadded heap curve sums those sizes. No
//! real HloProto we have defines a buffer at a nested index (all 125 fixture
//! oracles match either way), so the case is built here by hand. The expected
//! numbers are XProf 2.24.2's own: these four protos, encoded and run through
//! `tools/fixtures/oracle.py` (`for_hlo_proto(path, "nested(0)", 0)`), give
//! peak unpadded heaps of 8 ({1,0}), 16 ({0,1}), 16 ({1,5}) and 16 ({1})
//! bytes, with shape strings `(f32[1024])`, `(f32[2048], f32[4096])`, the
//! whole tuple and `(f32[2048], f32[4096])`. Sizing the full index instead
//! gave 8192 for {1,0} (f32[2048]) and 0 for {1,5}.

use oomscope_proto::xla::buffer_allocation_proto::Assigned;
use oomscope_proto::xla::heap_simulator_trace::event::Kind;
use oomscope_proto::xla::heap_simulator_trace::Event;
use oomscope_proto::xla::logical_buffer_proto::Location;
use oomscope_proto::xla::{
    BufferAllocationProto, BufferAssignmentProto, HeapSimulatorTrace, HloComputationProto,
    HloInstructionProto, HloModuleProto, HloProto, LogicalBufferProto, ShapeProto,
};

const F32: i32 = 11;
const TUPLE: i32 = 13;

fn array(elements: i64) -> ShapeProto {
    ShapeProto {
        element_type: F32,
        dimensions: vec![elements],
        ..Default::default()
    }
}

fn tuple(elements: Vec<ShapeProto>) -> ShapeProto {
    ShapeProto {
        element_type: TUPLE,
        tuple_shapes: elements,
        ..Default::default()
    }
}

/// One instruction of shape `((f32[1024]), (f32[2048], f32[4096]))` and one
/// temporary buffer of 1 MiB defined at `shape_index`, allocated then freed.
fn module_with_a_buffer_at(shape_index: Vec<i64>) -> HloProto {
    let instruction = HloInstructionProto {
        name: "start".into(),
        opcode: "async-start".into(),
        id: 7,
        shape: Some(tuple(vec![
            tuple(vec![array(1024)]),
            tuple(vec![array(2048), array(4096)]),
        ])),
        ..Default::default()
    };
    let event = |kind: Kind| Event {
        kind: kind as i32,
        buffer_id: 1,
        instruction_name: "start".into(),
        ..Default::default()
    };
    HloProto {
        hlo_module: Some(HloModuleProto {
            name: "nested".into(),
            computations: vec![HloComputationProto {
                name: "main".into(),
                instructions: vec![instruction],
                ..Default::default()
            }],
            ..Default::default()
        }),
        buffer_assignment: Some(BufferAssignmentProto {
            logical_buffers: vec![LogicalBufferProto {
                id: 1,
                size: 1 << 20,
                defined_at: Some(Location {
                    instruction_id: 7,
                    shape_index,
                    ..Default::default()
                }),
                ..Default::default()
            }],
            buffer_allocations: vec![BufferAllocationProto {
                index: 0,
                size: 1 << 20,
                assigned: vec![Assigned {
                    logical_buffer_id: 1,
                    offset: 0,
                    size: 1 << 20,
                }],
                ..Default::default()
            }],
            heap_simulator_traces: vec![HeapSimulatorTrace {
                events: vec![event(Kind::Alloc), event(Kind::Free)],
                ..Default::default()
            }],
            ..Default::default()
        }),
    }
}

fn peak_unpadded(shape_index: Vec<i64>) -> u64 {
    let hlo = module_with_a_buffer_at(shape_index);
    let bytes = oomscope_proto::prost::Message::encode_to_vec(&hlo);
    let reports = oomscope_xla::analyze_hlo_proto("nested.hlo.pb", &bytes).expect("analyzes");
    let hbm = reports
        .iter()
        .find(|r| r.memory_space == oomscope_report::MemoryColor::Device)
        .expect("HBM");
    assert_eq!(hbm.peak_bytes, 1 << 20, "the padded size is the compiler's");
    hbm.peak_unpadded_bytes
}

#[test]
fn a_buffer_at_a_nested_index_is_sized_as_xprof_resolves_it() {
    // {1, 0}: XProf resolves the last entry, 0, on the top-level tuple: the
    // tuple (f32[1024]), whose own buffer is one 8-byte pointer (not the
    // 8192 bytes of f32[2048] the full index names).
    assert_eq!(peak_unpadded(vec![1, 0]), 8);
    // {0, 1}: entry 1 of the top-level tuple, (f32[2048], f32[4096]): 16 bytes.
    assert_eq!(peak_unpadded(vec![0, 1]), 16);
}

#[test]
fn an_index_past_the_top_level_tuple_keeps_the_whole_shape() {
    // {1, 5}: 5 is out of range for the 2-element top-level tuple.
    assert_eq!(peak_unpadded(vec![1, 5]), 16);
}

#[test]
fn a_one_level_index_is_the_element_itself() {
    assert_eq!(peak_unpadded(vec![1]), 16);
    assert_eq!(peak_unpadded(vec![]), 16);
}
