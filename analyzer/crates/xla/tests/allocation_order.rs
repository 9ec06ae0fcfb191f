//! Which heap-simulator trace XProf replays when a memory space has several
//! temporary allocations with traces, and how it stacks them: by allocation
//! INDEX, whatever order the proto lists the allocations in. XLA writes them
//! in index order, so real files never tell the two apart; this proto lists
//! them backwards. The expected numbers are XProf 2.24.2's own: the proto
//! below, encoded and run through `tools/fixtures/oracle.py`
//! (`for_hlo_proto(path, "multi(0)", 0)`), gives peakHeapMib 2, heapSizes
//! [0, 2, 0] MiB, one buffer block `f1` at offset 0, and allocation boxes at
//! 0, 2, 5, 9 and 14 MiB (allocations 1 to 5). (With 40 allocations whose
//! traces start at index 7 or 23 it replays index 7's or 23's.) Taking the
//! first allocation in the proto's order gave 6 MiB instead.

use oomscope_proto::xla::buffer_allocation_proto::Assigned;
use oomscope_proto::xla::heap_simulator_trace::event::Kind;
use oomscope_proto::xla::heap_simulator_trace::Event;
use oomscope_proto::xla::logical_buffer_proto::Location;
use oomscope_proto::xla::{
    BufferAllocationProto, BufferAssignmentProto, HeapSimulatorTrace, HloComputationProto,
    HloInstructionProto, HloModuleProto, HloProto, LogicalBufferProto, ShapeProto,
};

const F32: i32 = 11;
const MIB: u64 = 1 << 20;

/// Six temporary allocations of 1..6 MiB (index k holds buffer k+1, defined
/// by fusion `fk`), listed from index 5 down to 0; every one but index 0 has
/// a trace allocating and freeing its buffer.
fn six_allocations_listed_backwards() -> HloProto {
    let mut instructions = Vec::new();
    let mut logical_buffers = Vec::new();
    let mut buffer_allocations = Vec::new();
    let mut heap_simulator_traces = Vec::new();
    for k in 0..6i64 {
        let id = k + 1;
        let size = id << 20;
        instructions.push(HloInstructionProto {
            name: format!("f{k}"),
            opcode: "fusion".into(),
            id,
            shape: Some(ShapeProto {
                element_type: F32,
                dimensions: vec![1024 * id],
                ..Default::default()
            }),
            ..Default::default()
        });
        logical_buffers.push(LogicalBufferProto {
            id,
            size,
            defined_at: Some(Location {
                instruction_id: id,
                ..Default::default()
            }),
            ..Default::default()
        });
        buffer_allocations.push(BufferAllocationProto {
            index: k,
            size,
            assigned: vec![Assigned {
                logical_buffer_id: id,
                offset: 0,
                size,
            }],
            ..Default::default()
        });
        if k == 0 {
            continue;
        }
        let event = |kind: Kind| Event {
            kind: kind as i32,
            buffer_id: id,
            instruction_name: format!("f{k}"),
            ..Default::default()
        };
        heap_simulator_traces.push(HeapSimulatorTrace {
            events: vec![event(Kind::Alloc), event(Kind::Free)],
            ..Default::default()
        });
    }
    buffer_allocations.reverse();
    HloProto {
        hlo_module: Some(HloModuleProto {
            name: "multi".into(),
            computations: vec![HloComputationProto {
                name: "main".into(),
                instructions,
                ..Default::default()
            }],
            ..Default::default()
        }),
        buffer_assignment: Some(BufferAssignmentProto {
            logical_buffers,
            buffer_allocations,
            heap_simulator_traces,
            ..Default::default()
        }),
    }
}

#[test]
fn the_lowest_allocation_index_with_a_trace_is_replayed() {
    let hlo = six_allocations_listed_backwards();
    let bytes = oomscope_proto::prost::Message::encode_to_vec(&hlo);
    let reports = oomscope_xla::analyze_hlo_proto("multi.hlo.pb", &bytes).expect("analyzes");
    let hbm = reports
        .iter()
        .find(|r| r.memory_space == oomscope_report::MemoryColor::Device)
        .expect("HBM");
    assert_eq!(hbm.peak_bytes, 2 * MIB);
    assert_eq!(hbm.heap_bytes, [0, 2 * MIB, 0]);
    assert_eq!(hbm.total_allocation_bytes, 21 * MIB);
    let names: Vec<&str> = hbm.peak_buffers.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["f1"]);
    // Only the replayed trace's buffer has a lifetime; it is drawn in the
    // first stacked allocation with a trace (index 1), at offset 0.
    let blocks: Vec<(&str, u64, u64, u64)> = hbm
        .buffers
        .iter()
        .map(|b| (b.name.as_str(), b.offset_bytes, b.start, b.end))
        .collect();
    assert_eq!(blocks, [("f1", 0, 0, 1)]);
}
