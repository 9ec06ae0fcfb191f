//! XProf's Memory Viewer analysis of one HloProto in one memory space,
//! reproducing `xprof/convert/hlo_proto_to_memory_visualization_utils.cc`
//! (PyPI `xprof==2.24.2`) number for number:
//!
//! - logical buffers are those assigned to some buffer allocation; padded size
//!   = `LogicalBufferProto.size`, unpadded = the layout-free size of the
//!   subshape XProf shows for it (the last shape-index entry applied to the
//!   top-level tuple, as `ResolveShapeIndex`);
//! - the heap-simulator trace replayed is the one owned by the first
//!   non-indefinite allocation of the colour in index order, whatever order
//!   the proto lists allocations in (a trace is owned by the
//!   allocation of its first event's buffer), else the trace with the most
//!   events of that colour;
//! - replay: ALLOC adds the buffer, FREE drops a reference and removes the
//!   canonical buffer at zero, SHARE_WITH takes a reference on the canonical
//!   buffer (and re-adds its memory when it had been freed); the heap size is
//!   recorded before each event, plus once at the end;
//! - indefinite allocations (entry parameters, constants, maybe-live-out) are
//!   added to every point and, for memory space 0, listed first at the peak;
//! - buffers under 16 KiB at the peak are merged into one "small" entry.

use crate::error::{XlaError, XlaErrorKind};
use crate::hlo::ShapeView;
use crate::hlo::{
    self, BufferAllocation, Event, HeapSimulatorTrace, Hlo, HloModule, Instruction, LogicalBuffer,
    StackFrameIndex,
};
use crate::ids::IdIndex;
use crate::shape::{human_string_with_layout, shape_from_view, subshape, unpadded_view_bytes};
use oomscope_report::{
    AllocationFlags, BufferCategory, BufferLifetime, MemoryColor, ModuleReport, PeakBuffer,
    PeakKind, SourceKind,
};
use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// XProf's default: buffers smaller than this are merged at the peak.
pub const SMALL_BUFFER_BYTES: u64 = 16 * 1024;

/// Whether an allocation lives for the whole program (XProf 2.24.2 counts
/// thread-local allocations as ordinary ones).
pub(crate) fn is_indefinite(a: &BufferAllocation) -> bool {
    a.is_entry_computation_parameter || a.is_constant || a.maybe_live_out
}

pub(crate) fn category(a: &BufferAllocation) -> BufferCategory {
    BufferCategory::from_flags(AllocationFlags {
        parameter: a.is_entry_computation_parameter,
        maybe_live_out: a.maybe_live_out,
        thread_local: a.is_thread_local,
        constant: a.is_constant,
    })
}

fn bytes(size: i64) -> u64 {
    u64::try_from(size).unwrap_or(0)
}

/// A logical buffer assigned to an allocation, with what the views show of it.
pub(crate) struct Buffer<'a> {
    proto: &'a LogicalBuffer,
    pub(crate) allocation: usize,
    pub(crate) instruction: &'a Instruction<'a>,
    shape_index: &'a [i64],
    /// The subshape XProf shows ([`xprof_display_subshape`]).
    display_shape: Option<ShapeView<'a>>,
    /// The subshape the full shape index names (None when it does not exist).
    pub(crate) own_shape: Option<ShapeView<'a>>,
    /// Offset inside its allocation.
    offset: i64,
    pub(crate) unpadded: u64,
    /// The texts of the two subshapes, made once (every memory space's
    /// lifetimes, the peak and the what-if program show them).
    display_text: OnceCell<Rc<str>>,
    own_text: OnceCell<String>,
}

impl<'a> Buffer<'a> {
    pub(crate) fn id(&self) -> i64 {
        self.proto.id
    }
    pub(crate) fn size(&self) -> u64 {
        bytes(self.proto.size)
    }
    pub(crate) fn shape_index(&self) -> &'a [i64] {
        self.shape_index
    }
    /// `name{i,j}` for a tuple element, else the instruction name.
    pub(crate) fn name_with_shape_index(&self) -> String {
        use std::fmt::Write;
        let index = self.shape_index();
        let name = self.instruction.name;
        if index.is_empty() {
            return name.to_string();
        }
        let mut text = String::with_capacity(name.len() + 2 + 4 * index.len());
        text.push_str(name);
        text.push('{');
        for (k, i) in index.iter().enumerate() {
            if k > 0 {
                text.push(',');
            }
            let _ = write!(text, "{i}");
        }
        text.push('}');
        text
    }
    fn shape_text(&self) -> String {
        self.display_text
            .get_or_init(|| shape_text(self.display_shape).into())
            .to_string()
    }

    /// The text of the subshape the full shape index names.
    pub(crate) fn own_shape_text(&self) -> String {
        match (self.own_shape, self.display_shape) {
            (Some(own), Some(display)) if own.same(display) => self.shape_text(),
            _ => self
                .own_text
                .get_or_init(|| shape_text(self.own_shape))
                .clone(),
        }
    }
}

/// XProf's text of a shape (empty when there is none).
pub(crate) fn shape_text(shape: Option<ShapeView<'_>>) -> String {
    shape
        .map(|s| human_string_with_layout(&shape_from_view(s)))
        .unwrap_or_default()
}

impl Buffer<'_> {}

/// The HloProto indexed the way XProf's `HloProtoBufferWrapper` indexes it.
pub struct Module<'a> {
    hlo: &'a Hlo<'a>,
    module: &'a HloModule<'a>,
    assignment: &'a hlo::BufferAssignment<'a>,
    /// In the proto's order (a logical buffer listed by two allocations
    /// belongs to the later one, as XProf reads them).
    allocations: Vec<&'a BufferAllocation>,
    /// Positions in `allocations` by ascending `BufferAllocationProto.index`:
    /// XProf walks allocations in index order (which trace it replays, the
    /// order of the stacked view), whatever order the proto lists them in.
    index_order: Vec<usize>,
    /// Heap-simulator trace owned by each allocation (same index as `allocations`).
    allocation_trace: Vec<Option<usize>>,
    buffers: Vec<Buffer<'a>>,
    /// Position in `buffers` of each logical buffer id.
    buffer_by_id: IdIndex,
    /// The text of each distinct shape shown, by its bytes: a module's
    /// buffers repeat a few shapes (every layer's), and building a shape's
    /// model to print it was a third of the Memory Viewer's time.
    shape_texts: RefCell<HashMap<&'a [u8], Rc<str>>>,
}

impl<'a> Module<'a> {
    pub fn new(input: &str, hlo: &'a Hlo<'a>) -> Result<Self, XlaError> {
        let (Some(module), Some(assignment)) = (hlo.module.as_ref(), hlo.assignment.as_ref())
        else {
            return Err(XlaError::new(
                input,
                XlaErrorKind::NoBufferAssignment,
                "the HloProto has no module or no buffer assignment (dump it after optimizations)",
            ));
        };
        let instructions = IdIndex::new(module.instructions.iter().map(|i| i.id));
        let logical = IdIndex::new(assignment.logical_buffers.iter().map(|b| b.id));
        let allocations: Vec<&BufferAllocation> = assignment.buffer_allocations.iter().collect();
        let mut index_order: Vec<usize> = (0..allocations.len()).collect();
        index_order.sort_by_key(|&i| allocations.get(i).map_or(0, |a| a.index));
        let mut buffers = Vec::with_capacity(assignment.logical_buffers.len());
        // The top-level elements of each tuple-shaped instruction (by its
        // position), found once: a JAX entry parameter can be a tuple of
        // thousands of arrays, each its own buffer.
        let mut elements: Vec<Option<Vec<ShapeView<'a>>>> = Vec::new();
        // A module's buffers repeat a few shapes: each is sized once.
        let mut unpadded_by_shape: HashMap<&'a [u8], u64> = HashMap::default();
        for (allocation_index, allocation) in allocations.iter().enumerate() {
            for assigned in assignment.assigned_of(allocation) {
                let Some(proto) = logical
                    .get(assigned.logical_buffer_id)
                    .and_then(|i| assignment.logical_buffers.get(i))
                else {
                    continue;
                };
                let (instruction_id, index) = proto.defined_at.unwrap_or_default();
                let Some(position) = instructions.get(instruction_id) else {
                    continue;
                };
                let Some(instruction) = module.instructions.get(position) else {
                    continue;
                };
                let index = hlo.ints(index);
                // XProf sizes the shape it shows (`ResolveShapeIndex`: only
                // the last index, applied to the top-level tuple), not the
                // subshape the full index names; they differ for a buffer
                // defined inside a nested tuple.
                let (display_shape, own_shape) = match (instruction.shape, index.split_first()) {
                    (None, _) => (None, None),
                    (Some(shape), None) => (Some(shape), Some(shape)),
                    (Some(shape), Some((&first, rest))) => {
                        if elements.is_empty() {
                            elements.resize_with(module.instructions.len(), || None);
                        }
                        let elements = match elements.get_mut(position) {
                            Some(slot) => {
                                &*slot.get_or_insert_with(|| shape.tuple_shapes().collect())
                            }
                            None => &Vec::new(),
                        };
                        let element = |i: i64| {
                            usize::try_from(i)
                                .ok()
                                .and_then(|i| elements.get(i))
                                .copied()
                        };
                        let last = index.last().copied().unwrap_or(first);
                        let own = element(first).and_then(|e| subshape(e, rest));
                        (Some(element(last).unwrap_or(shape)), own)
                    }
                };
                let unpadded = display_shape.map_or(0, |shape| {
                    *unpadded_by_shape
                        .entry(shape.bytes())
                        .or_insert_with(|| unpadded_view_bytes(shape))
                });
                buffers.push(Buffer {
                    proto,
                    allocation: allocation_index,
                    instruction,
                    shape_index: index,
                    display_shape,
                    own_shape,
                    display_text: OnceCell::new(),
                    own_text: OnceCell::new(),
                    offset: assigned.offset,
                    unpadded,
                });
            }
        }
        let buffer_by_id = IdIndex::new(buffers.iter().map(Buffer::id));
        let mut allocation_trace = vec![None; allocations.len()];
        for (trace_index, trace) in assignment.heap_simulator_traces.iter().enumerate() {
            let Some(first) = assignment.events_of(trace).first() else {
                continue;
            };
            if let Some(b) = buffer_by_id.get(first.buffer_id) {
                if let Some(slot) = buffers
                    .get(b)
                    .and_then(|b| allocation_trace.get_mut(b.allocation))
                {
                    *slot = Some(trace_index);
                }
            }
        }
        Ok(Module {
            hlo,
            module,
            assignment,
            allocations,
            index_order,
            allocation_trace,
            buffers,
            buffer_by_id,
            shape_texts: RefCell::default(),
        })
    }

    /// Memory spaces (allocation colours) present, ascending.
    pub fn memory_spaces(&self) -> Vec<i64> {
        let spaces: BTreeSet<i64> = self.allocations.iter().map(|a| a.color).collect();
        spaces.into_iter().collect()
    }

    pub(crate) fn hlo(&self) -> &'a Hlo<'a> {
        self.hlo
    }

    pub(crate) fn module(&self) -> &'a HloModule<'a> {
        self.module
    }

    /// The events of a trace.
    pub(crate) fn events(&self, trace: &HeapSimulatorTrace) -> &'a [Event<'a>] {
        self.assignment.events_of(trace)
    }

    pub(crate) fn buffers(&self) -> &[Buffer<'a>] {
        &self.buffers
    }

    pub(crate) fn buffer_index(&self, id: i64) -> Option<usize> {
        self.buffer(id)
    }

    pub(crate) fn traces(&self) -> &'a [HeapSimulatorTrace] {
        &self.assignment.heap_simulator_traces
    }

    fn stack_frames(&self) -> Option<&'a StackFrameIndex<'a>> {
        self.module.stack_frame_index.as_ref()
    }

    fn buffer(&self, id: i64) -> Option<usize> {
        self.buffer_by_id.get(id)
    }

    /// The allocations in index order, with their positions in `allocations`.
    pub(crate) fn in_index_order(
        &self,
    ) -> impl Iterator<Item = (usize, &'a BufferAllocation)> + '_ {
        self.index_order
            .iter()
            .filter_map(|&i| self.allocations.get(i).map(|&a| (i, a)))
    }

    pub(crate) fn trace_for(&self, color: i64) -> Option<usize> {
        let owned = self
            .in_index_order()
            .filter(|(_, a)| a.color == color && !is_indefinite(a))
            .find_map(|(i, _)| self.allocation_trace.get(i).copied().flatten());
        if owned.is_some() {
            return owned;
        }
        let mut best: Option<(usize, usize)> = None;
        for (i, trace) in self.traces().iter().enumerate() {
            let count = self
                .events(trace)
                .iter()
                .filter(|e| {
                    self.buffer(e.buffer_id)
                        .and_then(|b| self.buffers.get(b))
                        .is_some_and(|b| b.proto.color == color)
                })
                .count();
            if count > best.map_or(0, |(_, c)| c) {
                best = Some((i, count));
            }
        }
        best.map(|(i, _)| i)
    }

    fn source(&self, metadata: &hlo::OpMetadata<'_>) -> String {
        if !metadata.source_file.is_empty() {
            return format!("{}:{}", metadata.source_file, metadata.source_line);
        }
        // The innermost frame of the stack-frame index: `file:line`.
        let Some(index) = self.stack_frames() else {
            return String::new();
        };
        let frame_id = metadata.stack_frame_id;
        let Some(frame) = usize::try_from(frame_id)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| index.stack_frames.get(i))
        else {
            return String::new();
        };
        let location = usize::try_from(*frame)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| index.file_locations.get(i));
        let Some(location) = location else {
            return String::new();
        };
        let file = usize::try_from(location.0)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| index.file_names.get(i))
            .copied()
            .unwrap_or("");
        // XProf parses `file:line:col` by splitting on ':'; a file name with a
        // colon keeps only its first part there, and so here; no file, no source.
        let file = file.split(':').next().unwrap_or("");
        if file.is_empty() {
            return String::new();
        }
        let line = location.1;
        format!("{file}:{line}")
    }

    /// The text of the subshape XProf shows for `b` ([`Buffer::shape_text`],
    /// through the module's texts by shape).
    fn display_text(&self, b: &Buffer<'a>) -> String {
        b.display_text
            .get_or_init(|| match b.display_shape {
                None => Rc::from(""),
                Some(shape) => self
                    .shape_texts
                    .borrow_mut()
                    .entry(shape.bytes())
                    .or_insert_with(|| shape_text(Some(shape)).into())
                    .clone(),
            })
            .to_string()
    }

    pub(crate) fn peak_buffer(&self, b: &Buffer<'a>) -> PeakBuffer {
        let allocation = self.allocations.get(b.allocation);
        let metadata = b.instruction.metadata.map(|m| m.read());
        PeakBuffer {
            name: b.name_with_shape_index(),
            shape: self.display_text(b),
            size_bytes: b.size(),
            unpadded_bytes: b.unpadded,
            op_name: metadata
                .as_ref()
                .map_or_else(String::new, |m| m.op_name.to_string()),
            source: metadata
                .as_ref()
                .map_or_else(String::new, |m| self.source(m)),
            category: allocation.map_or(BufferCategory::Temporary, |a| category(a)),
            logical_buffer_id: Some(b.id()),
            opcode: b.instruction.opcode.to_string(),
            maybe_live_out: allocation.is_some_and(|a| a.maybe_live_out),
        }
    }

    /// The Memory Viewer analysis for memory space `color`.
    pub fn analyze(&self, input: &str, color: i64) -> Result<ModuleReport, XlaError> {
        let module = self.module;
        let mut report = ModuleReport {
            name: module.name.to_string(),
            memory_space: MemoryColor::from(color),
            source_kind: SourceKind::HloProto,
            input: input.to_string(),
            peak_kind: PeakKind::HeapSimulator,
            chips: chips_of(module),
            ..ModuleReport::default()
        };
        let replay = match self.trace_for(color).and_then(|t| self.traces().get(t)) {
            Some(trace) => Some(self.replay(input, trace)?),
            None => None,
        };

        // Indefinite allocations: the largest logical buffer of each stands for it.
        let mut indefinite_heap_bytes = 0u64;
        let mut heap_objects: Vec<PeakBuffer> = Vec::new();
        let mut small_bytes = 0u64;
        let mut add_object = |buffer: &Buffer<'a>, objects: &mut Vec<PeakBuffer>| {
            if buffer.size() < SMALL_BUFFER_BYTES {
                small_bytes += buffer.size();
            } else {
                objects.push(self.peak_buffer(buffer));
            }
        };
        for (allocation_index, allocation) in self.in_index_order() {
            if allocation.color != color || !is_indefinite(allocation) {
                continue;
            }
            let mut best: Option<&Buffer<'a>> = None;
            for assigned in self.assignment.assigned_of(allocation) {
                let Some(b) = self
                    .buffer(assigned.logical_buffer_id)
                    .and_then(|i| self.buffers.get(i))
                else {
                    continue;
                };
                // A buffer re-assigned to a later allocation belongs to that one.
                if b.allocation != allocation_index {
                    continue;
                }
                if b.size() > best.map_or(0, Buffer::size) {
                    best = Some(b);
                }
            }
            if let Some(best) = best {
                indefinite_heap_bytes += bytes(allocation.size);
                if color == 0 {
                    add_object(best, &mut heap_objects);
                }
            }
        }

        if let Some(mut replay) = replay {
            for &id in &replay.peak_buffers {
                let Some(b) = self.buffer(id).and_then(|i| self.buffers.get(i)) else {
                    break;
                };
                add_object(b, &mut heap_objects);
            }
            report.heap_bytes = replay
                .heap
                .iter()
                .map(|&h| h + indefinite_heap_bytes)
                .collect();
            report.unpadded_heap_bytes = replay
                .unpadded_heap
                .iter()
                .map(|&h| h + indefinite_heap_bytes)
                .collect();
            report.peak_bytes = replay.peak + indefinite_heap_bytes;
            report.peak_unpadded_bytes = replay.peak_unpadded + indefinite_heap_bytes;
            report.peak_position = replay.peak_position;
            report.instructions = std::mem::take(&mut replay.instructions);
            report.buffers = self.lifetimes(color, &replay);
        } else {
            report.peak_bytes = indefinite_heap_bytes;
            report.peak_unpadded_bytes = indefinite_heap_bytes;
        }
        if small_bytes != 0 {
            heap_objects.push(PeakBuffer {
                name: format!("small (<{SMALL_BUFFER_BYTES} bytes)"),
                size_bytes: small_bytes,
                category: BufferCategory::Small,
                ..PeakBuffer::default()
            });
        }
        report.peak_buffers = heap_objects;

        for allocation in self.allocations.iter().filter(|a| a.color == color) {
            let size = bytes(allocation.size);
            if allocation.is_entry_computation_parameter {
                report.parameters_bytes += size;
            }
            if allocation.maybe_live_out {
                report.maybe_live_out_bytes += size;
            }
            if is_indefinite(allocation) {
                report.indefinite_bytes += size;
            }
            // `xla::ComputeTotalAllocationBytes` leaves thread-local allocations out.
            if !allocation.is_thread_local {
                report.total_allocation_bytes += size;
            }
        }
        Ok(report)
    }

    /// Every buffer with a lifetime in the replayed trace (an ALLOC, or a
    /// SHARE_WITH that reuses freed memory), stacked by its allocation
    /// (XProf's `buffer_blocks`).
    fn lifetimes(&self, color: i64, replay: &Replay) -> Vec<BufferLifetime> {
        let mut out = Vec::new();
        let mut allocation_offset = 0u64;
        for (allocation_index, allocation) in self.in_index_order() {
            if allocation.color != color || is_indefinite(allocation) {
                continue;
            }
            if self
                .allocation_trace
                .get(allocation_index)
                .copied()
                .flatten()
                .is_none()
            {
                continue;
            }
            for assigned in self.assignment.assigned_of(allocation) {
                let Some(i) = self.buffer(assigned.logical_buffer_id) else {
                    continue;
                };
                let (Some(b), Some(state)) = (self.buffers.get(i), replay.state.get(i)) else {
                    continue;
                };
                let Some((start, end)) = state.span else {
                    continue;
                };
                let peak = self.peak_buffer(b);
                out.push(BufferLifetime {
                    id: b.id(),
                    name: peak.name,
                    shape: peak.shape,
                    size_bytes: peak.size_bytes,
                    unpadded_bytes: peak.unpadded_bytes,
                    start,
                    end,
                    category: peak.category,
                    op_name: peak.op_name,
                    source: peak.source,
                    opcode: peak.opcode,
                    offset_bytes: allocation_offset + bytes(b.offset),
                });
            }
            allocation_offset += bytes(allocation.size);
        }
        out
    }

    fn replay(&self, input: &str, trace: &HeapSimulatorTrace) -> Result<Replay, XlaError> {
        let events = self.events(trace);
        let mut replay = Replay::new(self.buffers.len(), events.len());
        let mut seen_allocations = BTreeSet::new();
        let mut last_allocation = None;
        for (event_index, event) in events.iter().enumerate() {
            replay.heap.push(replay.heap_now);
            replay.unpadded_heap.push(replay.unpadded_now);
            replay.instructions.push(event.instruction_name.to_string());
            let Some(b) = self.buffer(event.buffer_id) else {
                continue;
            };
            if let Some(allocation) = self.buffers.get(b).map(|b| b.allocation) {
                // Consecutive events mostly share an allocation: the set is
                // only touched when it changes.
                if last_allocation != Some(allocation) {
                    last_allocation = Some(allocation);
                    seen_allocations.insert(allocation);
                }
            }
            replay
                .step(self, event, b, event_index, false)
                .map_err(|m| XlaError::new(input, XlaErrorKind::BadTrace, m))?;
        }
        replay.heap.push(replay.heap_now);
        replay.unpadded_heap.push(replay.unpadded_now);
        replay.instructions.push(String::new());
        if seen_allocations.len() != 1 {
            return Err(XlaError::new(
                input,
                XlaErrorKind::BadTrace,
                format!(
                    "the heap-simulator trace spans {} buffer allocations, not one (XProf rejects it too)",
                    seen_allocations.len()
                ),
            ));
        }
        // Second pass up to the peak event for the live buffers in program order.
        if let Some(peak_event) = replay.peak_event {
            let mut again = Replay::new(self.buffers.len(), events.len());
            for (event_index, event) in events.iter().enumerate().take(peak_event + 1) {
                again.heap.push(again.heap_now);
                let Some(b) = self.buffer(event.buffer_id) else {
                    continue;
                };
                again
                    .step(self, event, b, event_index, true)
                    .map_err(|m| XlaError::new(input, XlaErrorKind::BadTrace, m))?;
            }
            replay.peak_buffers = again
                .live
                .values()
                .map(|&id| again.display.get(&id).copied().unwrap_or(id))
                .collect();
        }
        Ok(replay)
    }
}

#[derive(Clone, Default)]
struct BufferState {
    ref_count: i64,
    /// The buffer this one shares memory with (SHARE_WITH).
    canonical: Option<usize>,
    span: Option<(u64, u64)>,
}

/// State of a heap-simulator replay.
struct Replay {
    state: Vec<BufferState>,
    last_position: u64,
    heap_now: u64,
    unpadded_now: u64,
    heap: Vec<u64>,
    unpadded_heap: Vec<u64>,
    instructions: Vec<String>,
    peak: u64,
    peak_unpadded: u64,
    peak_position: u64,
    peak_event: Option<usize>,
    /// Live canonical buffer ids in the order they were added (second pass only).
    live: BTreeMap<u64, i64>,
    live_keys: HashMap<i64, Vec<u64>>,
    next_key: u64,
    /// Root canonical buffer id → the sharer now using its memory.
    display: HashMap<i64, i64>,
    /// Peak buffers (display ids) in program order.
    peak_buffers: Vec<i64>,
}

impl Replay {
    fn new(buffers: usize, events: usize) -> Self {
        Replay {
            state: vec![BufferState::default(); buffers],
            last_position: events.saturating_sub(1) as u64,
            heap_now: 0,
            unpadded_now: 0,
            heap: Vec::with_capacity(events + 1),
            unpadded_heap: Vec::with_capacity(events + 1),
            instructions: Vec::with_capacity(events + 1),
            peak: 0,
            peak_unpadded: 0,
            peak_position: 0,
            peak_event: None,
            live: BTreeMap::new(),
            live_keys: HashMap::default(),
            next_key: 0,
            display: HashMap::default(),
            peak_buffers: Vec::new(),
        }
    }

    fn position(&self) -> u64 {
        self.heap.len().saturating_sub(1) as u64
    }

    fn root(&self, mut b: usize) -> usize {
        // Share chains are acyclic in valid traces; bound the walk anyway.
        for _ in 0..=self.state.len() {
            match self.state.get(b).and_then(|s| s.canonical) {
                Some(c) => b = c,
                None => break,
            }
        }
        b
    }

    fn add_ref(&mut self, b: usize) -> i64 {
        let root = self.root(b);
        match self.state.get_mut(root) {
            Some(s) => {
                s.ref_count += 1;
                s.ref_count
            }
            None => 0,
        }
    }

    fn drop_ref(&mut self, b: usize) -> i64 {
        let root = self.root(b);
        match self.state.get_mut(root) {
            Some(s) => {
                s.ref_count -= 1;
                s.ref_count
            }
            None => 0,
        }
    }

    fn increase(
        &mut self,
        module: &Module<'_>,
        b: usize,
        event_index: usize,
        init_span: bool,
        track: bool,
    ) {
        let Some(buffer) = module.buffers.get(b) else {
            return;
        };
        if track {
            let key = self.next_key;
            self.next_key += 1;
            self.live.insert(key, buffer.id());
            self.live_keys.entry(buffer.id()).or_default().push(key);
        }
        self.heap_now += buffer.size();
        self.unpadded_now += buffer.unpadded;
        if self.heap_now > self.peak {
            self.peak = self.heap_now;
            self.peak_unpadded = self.unpadded_now;
            self.peak_position = self.position();
            self.peak_event = Some(event_index);
        }
        if init_span {
            let start = self.position();
            if let Some(s) = self.state.get_mut(b) {
                s.span = Some((start, self.last_position));
            }
        }
    }

    fn decrease(&mut self, module: &Module<'_>, root: usize, track: bool) -> Result<(), String> {
        let Some(buffer) = module.buffers.get(root) else {
            return Ok(());
        };
        if track {
            for key in self.live_keys.remove(&buffer.id()).unwrap_or_default() {
                self.live.remove(&key);
            }
        }
        self.heap_now = self.heap_now.checked_sub(buffer.size()).ok_or_else(|| {
            format!(
                "the heap size goes negative when buffer {} is freed",
                buffer.id()
            )
        })?;
        self.unpadded_now = self.unpadded_now.saturating_sub(buffer.unpadded);
        // The root's lifetime ends at its first release; once a sharer has
        // reused the memory, the sharer's own FREE ends the sharer's span
        // and the root's stays as it was (XProf 2.24.2).
        if !self.display.contains_key(&buffer.id()) {
            let end = self.position();
            if let Some((_, e)) = self.state.get_mut(root).and_then(|s| s.span.as_mut()) {
                *e = end;
            }
        }
        Ok(())
    }

    fn step(
        &mut self,
        module: &Module<'_>,
        event: &Event<'_>,
        b: usize,
        event_index: usize,
        track: bool,
    ) -> Result<(), String> {
        match event.kind {
            hlo::ALLOC => {
                self.add_ref(b);
                self.increase(module, b, event_index, true, track);
            }
            hlo::FREE => {
                let refs = self.drop_ref(b);
                if refs < 0 {
                    return Err(format!(
                        "buffer {} is freed more times than it is allocated",
                        event.buffer_id
                    ));
                }
                if refs == 0 {
                    let root = self.root(b);
                    self.decrease(module, root, track)?;
                }
                let end = self.position();
                if let Some(s) = self.state.get_mut(b) {
                    if s.canonical.is_some() {
                        if let Some((_, e)) = s.span.as_mut() {
                            *e = end;
                        }
                    }
                }
            }
            hlo::SHARE_WITH => {
                let Some(canonical) = module.buffer(event.share_with_canonical_id) else {
                    return Ok(());
                };
                if self.root(canonical) == b {
                    return Err(format!("buffer {} shares with itself", event.buffer_id));
                }
                if let Some(s) = self.state.get_mut(b) {
                    s.canonical = Some(canonical);
                }
                if self.add_ref(canonical) == 1 {
                    // The canonical buffer had been freed: its memory is reused.
                    let root = self.root(canonical);
                    if let (Some(r), Some(sharer)) =
                        (module.buffers.get(root), module.buffers.get(b))
                    {
                        self.display.insert(r.id(), sharer.id());
                    }
                    let start = self.position();
                    if let Some(s) = self.state.get_mut(b) {
                        s.span = Some((start, self.last_position));
                    }
                    self.increase(module, root, event_index, false, track);
                }
            }
            _ => return Err(format!("unknown heap-simulator event kind {}", event.kind)),
        }
        Ok(())
    }
}

/// How many chips a module was compiled for: replicas × partitions of its
/// device assignment (`computation_count` is the partition count). XLA
/// writes the assignment for every compiled module; without one (an older
/// or hand-made HloProto) the count is unknown.
fn chips_of(module: &HloModule<'_>) -> Option<u64> {
    let d = module.device_assignment.as_ref()?;
    let replicas = u64::try_from(d.replica_count).ok().filter(|n| *n > 0)?;
    let partitions = u64::try_from(d.computation_count).ok().filter(|n| *n > 0)?;
    Some(replicas.saturating_mul(partitions))
}
