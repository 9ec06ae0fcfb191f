//! The [`HeapProgram`] of one HloProto in one memory space: the buffers,
//! allocations and heap-simulator events the Memory Viewer replays
//! (`memory_viewer.rs` picks the same trace), and the entry computation's
//! parameters with what they feed, for the what-if engine (issue 25).

// Keyed by instruction ids: SipHash was a tenth of the what-if program's
// time. foldhash is as fast and seeded at random per process, so ids
// chosen to collide in a crafted file cannot make the tables quadratic.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

use std::rc::Rc;

use crate::dataflow_proto::{HloComputationProto, HloInstructionProto, HloModuleProto};
use oomscope_report::program::{
    BufferReader, HeapEvent, HeapEventKind, HeapProgram, ParameterReads, ProgramAllocation,
    ProgramBuffer,
};
use oomscope_report::MemoryColor;

use oomscope_layout::dataflow::{Dataflow, Reach};

use crate::hlo;
use crate::hlo::{HloModule, ShapeView};
use crate::ids::IdMap;
use crate::memory_viewer::shape_text;
use crate::memory_viewer::Module;

/// Visits at most this many (instruction, tuple index) states per parameter
/// when following it to a contraction: bounded whatever the module.
const MAX_VISITS: usize = 20_000;

/// Elementwise ops an activation is made of, through which a value can
/// still only feed a contraction.
const ELEMENTWISE: &[&str] = &[
    "maximum",
    "minimum",
    "multiply",
    "add",
    "subtract",
    "divide",
    "negate",
    "abs",
    "tanh",
    "logistic",
    "exponential",
    "log",
    "sqrt",
    "rsqrt",
    "power",
    "clamp",
    "select",
    "compare",
];

/// Visits at most this many uses inside fused computations when deciding
/// whether a reader only feeds contractions.
const MAX_FUSED_VISITS: usize = 256;

impl<'a> Module<'a> {
    /// The programs of every memory space with a heap-simulator trace (the
    /// module's dataflow fields decoded with prost once for all of them).
    pub fn programs(&self) -> Vec<HeapProgram> {
        let Some(proto) = self.hlo().decode_module::<HloModuleProto>() else {
            return Vec::new();
        };
        // The module's dataflow, the same for every memory space, built
        // once (each space's program reads it).
        let mut facts = ModuleFacts::new(&proto);
        self.memory_spaces()
            .into_iter()
            .filter_map(|space| self.program_with(space, &proto, &mut facts))
            .collect()
    }

    /// The program the Memory Viewer replays for memory space `color`, or
    /// `None` when that space has no heap-simulator trace.
    pub fn program(&self, color: i64) -> Option<HeapProgram> {
        let proto = self.hlo().decode_module::<HloModuleProto>()?;
        self.program_with(color, &proto, &mut ModuleFacts::new(&proto))
    }

    /// Buffers, allocations and events come from the lazy view; the
    /// dataflow facts (readers, dying operands, dimension classes) from
    /// `hlo_module`, the same module decoded with prost.
    fn program_with<'m>(
        &self,
        color: i64,
        hlo_module: &'m HloModuleProto,
        facts: &mut ModuleFacts<'m>,
    ) -> Option<HeapProgram> {
        let trace = self.trace_for(color).and_then(|t| self.traces().get(t))?;
        let view = self.module();
        let ints = self.hlo();
        let mut program = HeapProgram {
            module: view.name.to_string(),
            memory_space: MemoryColor::from(color),
            ..HeapProgram::default()
        };
        // Allocations of this colour, and their buffers.
        // Slots by the view's allocation and buffer indices: tables indexed
        // by position, not hashed (every buffer and event looks one up).
        let mut allocation_slot: Vec<Option<usize>> = Vec::new();
        for (i, a) in self.in_index_order() {
            if a.color != color {
                continue;
            }
            if allocation_slot.len() <= i {
                allocation_slot.resize(i + 1, None);
            }
            allocation_slot[i] = Some(program.allocations.len());
            program.allocations.push(ProgramAllocation {
                index: a.index,
                size_bytes: u64::try_from(a.size).unwrap_or(0),
                category: crate::memory_viewer::category(a),
                indefinite: crate::memory_viewer::is_indefinite(a),
                parameter_number: a
                    .is_entry_computation_parameter
                    .then_some(a.parameter_number),
                parameter_shape_index: ints.ints(a.parameter_shape_index).to_vec(),
                maybe_live_out: a.maybe_live_out,
                representative: None,
                output_index: None,
                defined_at: None,
            });
        }
        let mut buffer_slot: Vec<Option<usize>> = vec![None; self.buffers().len()];
        // The instruction and shape index that define each program buffer.
        let mut origins: Vec<(i64, Vec<i64>)> = Vec::new();
        for (i, b) in self.buffers().iter().enumerate() {
            let Some(allocation) = allocation_slot.get(b.allocation).copied().flatten() else {
                continue;
            };
            buffer_slot[i] = Some(program.buffers.len());
            let size = b.size();
            program.buffers.push(ProgramBuffer {
                id: b.id(),
                name: b.name_with_shape_index(),
                shape: b.own_shape_text(),
                size_bytes: size,
                unpadded_bytes: b.unpadded,
                allocation,
                opcode: b.instruction.opcode.to_string(),
                readers: Vec::new(),
                dying_operands: Vec::new(),
                dim_classes: Vec::new(),
                softmax: false,
            });
            origins.push((b.instruction.id, b.shape_index().to_vec()));
            if let Some(a) = program.allocations.get_mut(allocation) {
                let best = a
                    .representative
                    .and_then(|r| buffer_slot_size(&program.buffers, r));
                if best.is_none_or(|s| size > s) {
                    a.representative = Some(program.buffers.len() - 1);
                }
            }
        }
        for event in self.events(trace) {
            let buffer = self
                .buffer_index(event.buffer_id)
                .and_then(|b| buffer_slot.get(b).copied().flatten());
            let kind = match event.kind {
                hlo::ALLOC => HeapEventKind::Alloc,
                hlo::FREE => HeapEventKind::Free,
                hlo::SHARE_WITH => {
                    match self
                        .buffer_index(event.share_with_canonical_id)
                        .and_then(|b| buffer_slot.get(b).copied().flatten())
                    {
                        Some(c) => HeapEventKind::ShareWith(c),
                        // XProf skips a share with an unknown buffer.
                        None => {
                            program.events.push(HeapEvent {
                                kind: HeapEventKind::Alloc,
                                buffer: None,
                            });
                            program
                                .instructions
                                .push(event.instruction_name.to_string());
                            continue;
                        }
                    }
                }
                _ => return None,
            };
            program.events.push(HeapEvent { kind, buffer });
            program
                .instructions
                .push(event.instruction_name.to_string());
        }
        program.instructions.push(String::new());
        for entry in &view.aliases {
            program.aliases.push((
                entry.output_shape_index.clone(),
                entry.parameter_number,
                entry.parameter_shape_index.clone(),
            ));
        }
        // The program's buffers of each instruction, indexed once (a scan
        // per output took a minute on a module of 10^5 buffers).
        // By id, indexed by it; the buffers of one (instruction, shape
        // index) are those of the instruction with that index (`origins`
        // holds each slot's), in the same order.
        let mut by_instruction: IdMap<Vec<usize>> = IdMap::sized_as(&facts.graph.instructions);
        for (slot, (id, _)) in origins.iter().enumerate() {
            by_instruction.entry_or_default(*id).push(slot);
        }
        let defined = |(id, index): (i64, &[i64])| -> Vec<usize> {
            by_instruction.get(&id).map_or_else(Vec::new, |slots| {
                slots
                    .iter()
                    .copied()
                    .filter(|&s| origins.get(s).is_some_and(|(_, at)| at.as_slice() == index))
                    .collect()
            })
        };
        let ModuleFacts {
            dying,
            dims,
            graph,
            entry,
        } = facts;
        for (i, b) in self.buffers().iter().enumerate() {
            let Some(slot) = buffer_slot[i] else {
                continue;
            };
            let classes = dims.classes(b.instruction.id, b.shape_index());
            if let Some(x) = program.buffers.get_mut(slot) {
                x.dim_classes = classes;
            }
            // Only a temporary can reuse an operand or be cast alone (an
            // entry parameter, an output or a constant lives throughout).
            let temporary = program
                .buffers
                .get(slot)
                .and_then(|x| program.allocations.get(x.allocation))
                .is_some_and(|a| !a.indefinite);
            if !temporary {
                continue;
            }
            let Some(instruction) = dying.instruction(b.instruction.id) else {
                continue;
            };
            let operands = dying.of(instruction, defined);
            let f32 = b.own_shape.is_some_and(|s| {
                s.element_type() == oomscope_proto::xla::PrimitiveType::F32 as i32
            });
            let softmax = f32 && dying.softmax_value(b.instruction.id, b.shape_index());
            if let Some(x) = program.buffers.get_mut(slot) {
                x.dying_operands = operands.into_iter().filter(|&o| o != slot).collect();
                x.softmax = softmax;
            }
        }
        let entry = entry.get_or_insert_with(|| EntryFacts::new(hlo_module, view, graph, dims));
        if let Some(entry) = entry {
            entry_facts(entry, graph, &mut program, &origins, |id| {
                by_instruction.get(&id).cloned().unwrap_or_default()
            });
        }
        Some(program)
    }
}

/// What every memory space's program reads of one module: its value
/// graph, the operands that die at each instruction, the dimension classes.
struct ModuleFacts<'m> {
    dying: DyingOperands<'m>,
    dims: crate::dims::DimClasses,
    graph: Graph<'m>,
    /// The entry computation's facts, made for the first program (`None`
    /// inside: the module has no entry computation).
    entry: Option<Option<EntryFacts<'m>>>,
}

impl<'m> ModuleFacts<'m> {
    fn new(module: &'m HloModuleProto) -> Self {
        let graph = Graph::new(module);
        let dying = DyingOperands::new(module, &graph);
        // The dimension classes read the same tables.
        let dims = crate::dims::DimClasses::of(
            module,
            &graph.instructions,
            &dying.parameters,
            &dying.roots,
        );
        ModuleFacts {
            dying,
            dims,
            graph,
            entry: None,
        }
    }
}

fn buffer_slot_size(buffers: &[ProgramBuffer], i: usize) -> Option<u64> {
    buffers.get(i).map(|b| b.size_bytes)
}

/// What each memory space's program reads of the entry computation, the
/// same for all of them (found once: the walks from every parameter were
/// repeated per space).
struct EntryFacts<'m> {
    root_id: i64,
    /// Each entry instruction's index in the entry schedule.
    order: IdMap<usize>,
    /// The same, by instruction name (a trace names its instructions).
    by_name: HashMap<&'m str, usize>,
    ids: IdMap<()>,
    parameters: Vec<ParameterFacts>,
}

/// One entry parameter: whether and where its value is read, and its
/// array leaves.
struct ParameterFacts {
    number: i64,
    feeds: bool,
    /// Its readers in the entry computation (through get-tuple-element and
    /// bitcast).
    readers: Vec<i64>,
    /// Those through which it reaches a contraction.
    contraction_readers: Vec<i64>,
    contraction_in_loop: bool,
    /// Each array leaf: its index, shape and dimension classes.
    leaves: Vec<(Vec<i64>, String, Vec<u32>)>,
}

impl<'m> EntryFacts<'m> {
    fn new(
        module: &'m HloModuleProto,
        view: &HloModule<'_>,
        graph: &Graph<'_>,
        dims: &mut crate::dims::DimClasses,
    ) -> Option<Self> {
        // The last computation of the entry's id (as a table by id keeps).
        let entry = module
            .computations
            .iter()
            .rev()
            .find(|c| c.id == module.entry_computation_id)
            .or_else(|| {
                module
                    .computations
                    .iter()
                    .find(|c| c.name == module.entry_computation_name)
            })?;
        let order = schedule_order(module, entry);
        let by_name: HashMap<&str, usize> = entry
            .instructions
            .iter()
            .filter_map(|i| Some((i.name.as_str(), *order.get(&i.id)?)))
            .collect();
        let mut ids = IdMap::for_ids(entry.instructions.iter().map(|i| i.id));
        for i in &entry.instructions {
            ids.insert(i.id, ());
        }
        // The parameters' shapes, read through the view (as the buffers' are).
        let shapes: HashMap<i64, ShapeView<'_>> = view
            .instructions
            .iter()
            .filter(|i| i.opcode == "parameter" && ids.contains_key(&i.id))
            .filter_map(|i| Some((i.id, i.shape?)))
            .collect();
        let mut parameters = Vec::new();
        for instruction in &entry.instructions {
            if instruction.opcode != "parameter" {
                continue;
            }
            let Some(&shape) = shapes.get(&instruction.id) else {
                continue;
            };
            let feeds = graph.reaches_contraction(instruction.id);
            // Readers in the entry computation (through get-tuple-element and
            // bitcast), each with the value it reads.
            let mut readers: Vec<(i64, i64)> = Vec::new();
            let mut frontier = vec![instruction.id];
            while let Some(id) = frontier.pop() {
                for &u in graph.users.get(&id).map_or(&[][..], Vec::as_slice) {
                    match graph.instructions.get(&u).map(|i| i.opcode.as_str()) {
                        Some("get-tuple-element" | "bitcast") if readers.len() < 10_000 => {
                            frontier.push(u)
                        }
                        Some(_) => readers.push((id, u)),
                        None => {}
                    }
                }
            }
            let mut contraction_in_loop = false;
            let contraction_readers: Vec<i64> = if feeds {
                readers
                    .iter()
                    .filter(|&&(value, reader)| graph.reaches_contraction_through(value, reader))
                    .map(|&(_, reader)| {
                        if graph
                            .instructions
                            .get(&reader)
                            .is_some_and(|i| i.opcode == "while")
                        {
                            contraction_in_loop = true;
                        }
                        reader
                    })
                    .collect()
            } else {
                Vec::new()
            };
            // One entry per array leaf (JAX passes thousands of arguments as
            // one tuple). Each subshape is carried with its index: looking a
            // tuple element up again by index would walk the tuple once per
            // element.
            let mut leaves: Vec<(Vec<i64>, String, Vec<u32>)> = Vec::new();
            let mut stack: Vec<(Vec<i64>, ShapeView<'_>)> = vec![(Vec::new(), shape)];
            while let Some((index, sub)) = stack.pop() {
                let elements: Vec<ShapeView<'_>> = sub.tuple_shapes().collect();
                if elements.is_empty() {
                    let classes = dims.classes(instruction.id, &index);
                    leaves.push((index, shape_text(Some(sub)), classes));
                } else if leaves.len() + stack.len() < 100_000 {
                    for (i, element) in elements.into_iter().enumerate().rev() {
                        let mut next = index.clone();
                        next.push(i as i64);
                        stack.push((next, element));
                    }
                }
            }
            parameters.push(ParameterFacts {
                number: instruction.parameter_number,
                feeds,
                readers: readers.into_iter().map(|(_, r)| r).collect(),
                contraction_readers,
                contraction_in_loop,
                leaves,
            });
        }
        Some(EntryFacts {
            root_id: entry.root_id,
            order,
            by_name,
            ids,
            parameters,
        })
    }
}

/// Fills the entry parameters (with whether each reaches a contraction) and
/// the output index of each maybe-live-out allocation.
fn entry_facts(
    entry: &EntryFacts<'_>,
    graph: &Graph<'_>,
    program: &mut HeapProgram,
    origins: &[(i64, Vec<i64>)],
    buffers_of: impl Fn(i64) -> Vec<usize>,
) {
    // The trace names a FREE by the freed buffer's defining instruction;
    // the heap simulator frees it after its last reader, so that reader
    // places the event in the schedule. The reader is the freed buffer's
    // own (its tuple element's): a loop's counter, read by nothing, is
    // freed when the loop ends, not at the last reader of another element
    // (which would place the loss head after the backward loop).
    let mut last: HashMap<usize, Option<String>> = HashMap::default();
    let names: Vec<String> = program
        .instructions
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let freed = program
                .events
                .get(i)
                .filter(|e| e.kind == HeapEventKind::Free)
                .and_then(|e| e.buffer);
            let Some(b) = freed else {
                return name.clone();
            };
            last.entry(b)
                .or_insert_with(|| {
                    let (id, index) = origins
                        .get(b)
                        .filter(|(id, _)| entry.ids.contains_key(id))?;
                    last_reader(graph, &entry.order, *id, index)
                })
                .clone()
                .unwrap_or_else(|| name.clone())
        })
        .collect();
    let positions = SchedulePositions::new(entry, &names);
    // Output leaves: the entry root's operands when it is a tuple.
    if let Some(root) = graph.instructions.get(&entry.root_id) {
        let leaves: Vec<(Vec<i64>, i64)> = if root.opcode == "tuple" {
            root.operand_ids
                .iter()
                .enumerate()
                .map(|(i, &id)| (vec![i as i64], id))
                .collect()
        } else {
            vec![(Vec::new(), root.id)]
        };
        for (index, id) in leaves {
            for b in buffers_of(id) {
                let Some(allocation) = program.buffers.get(b).map(|b| b.allocation) else {
                    continue;
                };
                if let Some(a) = program.allocations.get_mut(allocation) {
                    if a.maybe_live_out && a.output_index.is_none() {
                        a.output_index = Some(index.clone());
                        a.defined_at = positions.of(id);
                    }
                }
            }
        }
    }
    let held = program.parameter_allocations();
    for parameter in &entry.parameters {
        let uses: Vec<usize> = parameter
            .readers
            .iter()
            .filter_map(|&r| positions.of(r))
            .collect();
        let contraction_uses: Vec<usize> = parameter
            .contraction_readers
            .iter()
            .filter_map(|&r| positions.of(r))
            .collect();
        let reads = ParameterReads::new(
            parameter.feeds,
            &uses,
            &contraction_uses,
            parameter.contraction_in_loop,
        );
        for (index, shape, classes) in &parameter.leaves {
            program.push_parameter(
                (parameter.number, index.clone()),
                shape.clone(),
                &reads,
                &held,
            );
            if let Some(p) = program.parameters.last_mut() {
                p.dim_classes = classes.clone();
            }
        }
    }
    program
        .parameters
        .sort_by(|a, b| (a.number, &a.shape_index).cmp(&(b.number, &b.shape_index)));
    for (buffer, (id, index)) in program.buffers.iter_mut().zip(origins) {
        if !entry.ids.contains_key(id) {
            continue;
        }
        let mut readers: Vec<BufferReader> = graph
            .value_readers(*id, index)
            .into_iter()
            .filter_map(|(reader, contraction_only)| {
                Some(BufferReader {
                    position: positions.of(reader)?,
                    contraction_only,
                })
            })
            .collect();
        readers.sort_by_key(|r| (r.position, r.contraction_only));
        buffer.readers = readers;
    }
}

/// A dot or convolution at default precision (no operand asks for more,
/// no algorithm named): XLA:TPU computes it on bf16 operands (JAX's
/// `jax_default_matmul_precision`, "bfloat16 on TPU"); at HIGH or HIGHEST
/// the f32 operand is kept (checked on a real compile of the remat MLP
/// with `JAX_DEFAULT_MATMUL_PRECISION=highest`: its block inputs stay f32).
fn rounds_to_bf16(contraction: &HloInstructionProto) -> bool {
    contraction
        .precision_config
        .as_ref()
        .is_none_or(|p| p.algorithm == 0 && p.operand_precision.iter().all(|&x| x == 0))
}

/// The operand positions at which `user` reads `id`.
fn operand_positions(user: &HloInstructionProto, id: i64) -> Vec<usize> {
    positions_in(&user.operand_ids, id).collect()
}

/// The reader of element `index` of entry instruction `start`'s value
/// (through get-tuple-element, bitcast and copy-done; a tuple's own table
/// is read by its get-tuple-elements too) that comes last in the entry
/// schedule, by name.
fn last_reader(
    graph: &Graph<'_>,
    order: &IdMap<usize>,
    start: i64,
    index: &[i64],
) -> Option<String> {
    let mut readers: Vec<i64> = graph
        .readers(start, index)
        .into_iter()
        .map(|(r, _)| r)
        .collect();
    if index.is_empty() {
        readers.extend(graph.users.get(&start).map_or(&[][..], Vec::as_slice));
    }
    readers
        .into_iter()
        .filter_map(|r| Some((*order.get(&r)?, r)))
        .max()
        .and_then(|(_, id)| graph.instructions.get(&id).map(|i| i.name.clone()))
}

/// The states one walk of [`Graph::readers`] has visited: an instruction
/// and how much of the walk's starting tuple index is left to follow (the
/// index held is always a suffix of the first: each step drops its first
/// element or keeps it whole, so the suffix's start names it; two suffixes
/// of different starts differ in length). A list while short (most walks
/// visit a handful; a hashed set built per walk was a tenth of the
/// program's time), a set beyond.
#[derive(Default)]
struct Seen {
    few: Vec<(i64, usize)>,
    many: HashSet<(i64, usize)>,
}

impl Seen {
    const FEW: usize = 32;

    /// Adds the state; false when it was already there.
    fn insert(&mut self, state: (i64, usize)) -> bool {
        if self.many.is_empty() {
            if self.few.contains(&state) {
                return false;
            }
            if self.few.len() < Self::FEW {
                self.few.push(state);
                return true;
            }
            self.many.extend(self.few.drain(..));
        }
        self.many.insert(state)
    }

    fn len(&self) -> usize {
        self.few.len() + self.many.len()
    }
}

/// Users of every instruction and the computations, to follow a value.
struct Graph<'a> {
    /// Shared with [`DyingOperands`] (the same tables, built once).
    instructions: Rc<IdMap<&'a HloInstructionProto>>,
    users: Rc<IdMap<Vec<i64>>>,
    /// Parameter instructions of each computation, by parameter number.
    parameters: HashMap<i64, HashMap<i64, i64>>,
    /// Whether each value followed reaches a contraction.
    reach: Reach<i64>,
    /// The operand positions of each operand of an instruction of more
    /// than [`WIDE`] operands (a tuple of thousands of outputs, scanned
    /// once per operand, was quadratic).
    wide_positions: IdMap<HashMap<i64, Vec<usize>>>,
    /// Whether each (user, operand) reads it only to contract it.
    contracts: std::cell::RefCell<HashMap<(i64, i64), bool>>,
    /// The opcodes of each computation's instructions.
    computation_opcodes: HashMap<i64, Vec<&'a str>>,
    /// get-tuple-element users of each (instruction, element).
    element_users: HashMap<(i64, i64), Vec<i64>>,
    /// The other users of each instruction.
    value_users: IdMap<Vec<i64>>,
}

/// Instructions of more operands than this have their operand positions
/// indexed.
const WIDE: usize = 16;

/// (user, operand) pairs whose contraction-only answer is remembered at most
/// (bounded whatever the module).
const MAX_MEMO: usize = 4_000_000;

impl<'a> Graph<'a> {
    fn new(module: &'a HloModuleProto) -> Self {
        // Tables by instruction id, indexed by it (XLA numbers a module's
        // instructions densely).
        let mut instructions = IdMap::for_ids(module.instruction_ids());
        let mut users: IdMap<Vec<i64>> = IdMap::sized_as(&instructions);
        let mut parameters: HashMap<i64, HashMap<i64, i64>> = HashMap::default();
        let mut computation_opcodes: HashMap<i64, Vec<&'a str>> = HashMap::default();
        let mut element_users: HashMap<(i64, i64), Vec<i64>> = HashMap::default();
        let mut value_users: IdMap<Vec<i64>> = IdMap::sized_as(&instructions);
        let mut wide_positions: IdMap<HashMap<i64, Vec<usize>>> = IdMap::default();
        for c in &module.computations {
            computation_opcodes.insert(
                c.id,
                c.instructions.iter().map(|i| i.opcode.as_str()).collect(),
            );
            for i in &c.instructions {
                instructions.insert(i.id, i);
                if i.operand_ids.len() > WIDE {
                    let mut by_operand: HashMap<i64, Vec<usize>> = HashMap::default();
                    for (k, &o) in i.operand_ids.iter().enumerate() {
                        by_operand.entry(o).or_default().push(k);
                    }
                    wide_positions.insert(i.id, by_operand);
                }
                for &o in &i.operand_ids {
                    users.entry_or_default(o).push(i.id);
                    if i.opcode == "get-tuple-element" {
                        element_users
                            .entry((o, i.tuple_index))
                            .or_default()
                            .push(i.id);
                    } else {
                        value_users.entry_or_default(o).push(i.id);
                    }
                }
                if i.opcode == "parameter" {
                    parameters
                        .entry(c.id)
                        .or_default()
                        .insert(i.parameter_number, i.id);
                }
            }
        }
        Graph {
            instructions: Rc::new(instructions),
            users: Rc::new(users),
            parameters,
            reach: Reach::default(),
            wide_positions,
            contracts: Default::default(),
            computation_opcodes,
            element_users,
            value_users,
        }
    }

    /// The instructions that read element `index` of `id`'s value, each
    /// with whether it reads it only as a contraction operand. Followed
    /// through get-tuple-element, bitcast and copy-done (an async copy's
    /// result is its destination, element {0} of the copy-start).
    fn readers(&self, id: i64, index: &[i64]) -> Vec<(i64, bool)> {
        let mut out = Vec::new();
        let mut seen = Seen::default();
        // (instruction, start of the suffix of `index` held).
        let mut stack = vec![(id, 0usize)];
        while let Some((id, at)) = stack.pop() {
            if !seen.insert((id, at)) || seen.len() > MAX_VISITS {
                continue;
            }
            let held = index.get(at..).unwrap_or(&[]);
            // The element's own get-tuple-elements, looked up (a tuple of
            // thousands of arguments has thousands of them); a
            // get-tuple-element of the whole tuple reads its table only.
            if let Some(&first) = held.first() {
                for &user in self
                    .element_users
                    .get(&(id, first))
                    .map_or(&[][..], Vec::as_slice)
                {
                    stack.push((user, at + 1));
                }
            }
            for &user in self.value_users.get(&id).map_or(&[][..], Vec::as_slice) {
                let Some(u) = self.instructions.get(&user) else {
                    continue;
                };
                match (u.opcode.as_str(), held.first()) {
                    ("bitcast", _) => stack.push((user, at)),
                    ("copy-done", Some(0)) => stack.push((user, at + 1)),
                    (_, None) => out.push((user, self.reads_only_to_contract(u, id))),
                    // An element read through its whole tuple (a loop, a
                    // call): not a contraction operand.
                    (_, Some(_)) => out.push((user, false)),
                }
            }
        }
        out
    }

    /// [`Graph::readers`], and for a copy (an async copy's destination,
    /// element {0} of a copy-start, or a copy) also the readers of the
    /// value it copies: the same value, read before the copy is made (XLA
    /// copies a residual for the backward while the forward reads the
    /// original).
    fn value_readers(&self, id: i64, index: &[i64]) -> Vec<(i64, bool)> {
        let mut out = self.readers(id, index);
        let (mut id, mut index) = (id, index.to_vec());
        for _ in 0..4 {
            let Some(i) = self.instructions.get(&id) else {
                break;
            };
            let copies = matches!(
                (i.opcode.as_str(), index.as_slice()),
                ("copy-start", [0]) | ("copy", [])
            );
            let Some(&source) = i.operand_ids.first().filter(|_| copies) else {
                break;
            };
            out.extend(
                self.readers(source, &[])
                    .into_iter()
                    .filter(|&(r, _)| r != id),
            );
            (id, index) = (source, Vec::new());
        }
        out
    }

    /// Whether `user` reads `id` only as a contraction operand
    /// ([`Self::only_contracts`] with a fresh budget), remembered per pair:
    /// every buffer's and every freed value's readers ask it again.
    fn reads_only_to_contract(&self, user: &HloInstructionProto, id: i64) -> bool {
        // The answer of any other reader, without its operand positions (a
        // tuple of thousands of operands was scanned once per operand) or
        // the memo.
        match user.opcode.as_str() {
            "dot" | "convolution" => return rounds_to_bf16(user),
            "fusion" => {}
            _ => return false,
        }
        if let Some(&known) = self.contracts.borrow().get(&(user.id, id)) {
            return known;
        }
        let operands = operand_positions(user, id);
        let mut budget = MAX_FUSED_VISITS;
        let answer = self.only_contracts(user, &operands, &mut budget);
        let mut memo = self.contracts.borrow_mut();
        if memo.len() < MAX_MEMO {
            memo.insert((user.id, id), answer);
        }
        answer
    }

    /// Whether `user` reads its operands `operands` only as operands of a
    /// dot or a convolution: directly, or inside its fused or called
    /// computation through shape-only ops and converts.
    fn only_contracts(
        &self,
        user: &HloInstructionProto,
        operands: &[usize],
        budget: &mut usize,
    ) -> bool {
        if matches!(user.opcode.as_str(), "dot" | "convolution") {
            return rounds_to_bf16(user);
        }
        if user.opcode != "fusion" || user.called_computation_ids.is_empty() {
            return false;
        }
        // `budget` bounds the visits (and so the recursion) whatever the
        // module: a fused computation's chains of converts are short.
        operands.iter().all(|&k| {
            user.called_computation_ids.iter().all(|c| {
                self.parameters
                    .get(c)
                    .and_then(|ps| ps.get(&(k as i64)))
                    .is_some_and(|&p| self.flows_only_to_contractions(p, budget))
            })
        })
    }

    /// Inside a fused computation: every use of `id` is a contraction
    /// operand, after converts and shape-only ops.
    fn flows_only_to_contractions(&self, id: i64, budget: &mut usize) -> bool {
        let users = self.users.get(&id).map_or(&[][..], Vec::as_slice);
        if users.is_empty() {
            return false;
        }
        users.iter().all(|u| {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            match self.instructions.get(u).map(|i| i.opcode.as_str()) {
                Some("dot" | "convolution") => {
                    self.instructions.get(u).is_some_and(|i| rounds_to_bf16(i))
                }
                Some("convert" | "bitcast" | "reshape" | "transpose" | "copy") => {
                    self.flows_only_to_contractions(*u, budget)
                }
                // An activation applied on the way (a ReLU: maximum with a
                // broadcast zero) keeps the value's shape; the producer can
                // round after it as well.
                Some(op) if ELEMENTWISE.contains(&op) && self.other_operands_constant(*u, id) => {
                    self.flows_only_to_contractions(*u, budget)
                }
                // A nested fusion: one that only reshapes, converts or applies
                // an activation (XLA:TPU wraps bitcasts and a ReLU's rounding
                // in one) passes the value on to its users; another must feed
                // contractions inside.
                Some("fusion") => self.instructions.get(u).is_some_and(|f| {
                    if self.reshapes_only(f) && self.other_operands_constant(*u, id) {
                        return self.flows_only_to_contractions(*u, budget);
                    }
                    self.only_contracts(f, &operand_positions(f, id), budget)
                }),
                _ => false,
            }
        })
    }

    /// The operands of `user` other than `id` are constants (or broadcast
    /// constants).
    fn other_operands_constant(&self, user: i64, id: i64) -> bool {
        let constant = |o: i64| {
            let mut o = o;
            for _ in 0..4 {
                match self.instructions.get(&o) {
                    Some(i) if i.opcode == "constant" || i.opcode == "iota" => return true,
                    Some(i) if i.opcode == "broadcast" || i.opcode == "convert" => {
                        match i.operand_ids.first() {
                            Some(&next) => o = next,
                            None => return false,
                        }
                    }
                    _ => return false,
                }
            }
            false
        };
        self.instructions
            .get(&user)
            .is_some_and(|u| u.operand_ids.iter().all(|&o| o == id || constant(o)))
    }

    /// A fusion whose computations hold only parameters, constants,
    /// converts, shape-only and elementwise ops.
    fn reshapes_only(&self, fusion: &HloInstructionProto) -> bool {
        let computations = &fusion.called_computation_ids;
        !computations.is_empty()
            && computations.iter().all(|c| {
                self.computation_opcodes.get(c).is_some_and(|ops| {
                    ops.iter().all(|op| {
                        matches!(
                            *op,
                            "parameter"
                                | "convert"
                                | "bitcast"
                                | "reshape"
                                | "transpose"
                                | "copy"
                                | "constant"
                                | "broadcast"
                                | "iota"
                        ) || ELEMENTWISE.contains(op)
                    })
                })
            })
    }

    /// Whether the value of `start` reaches a dot or a convolution
    /// ([`oomscope_layout::dataflow`]).
    fn reaches_contraction(&self, start: i64) -> bool {
        self.reach.reaches(self, start, None)
    }

    /// [`Self::reaches_contraction`] through one reader of `start` only.
    fn reaches_contraction_through(&self, start: i64, reader: i64) -> bool {
        self.reach.reaches(self, start, Some(reader))
    }
}

impl Dataflow for Graph<'_> {
    type Id = i64;

    fn users(&self, id: i64) -> &[i64] {
        self.users.get(&id).map_or(&[][..], Vec::as_slice)
    }

    fn element_users(&self, id: i64, element: i64) -> &[i64] {
        self.element_users
            .get(&(id, element))
            .map_or(&[][..], Vec::as_slice)
    }

    fn value_users(&self, id: i64) -> &[i64] {
        self.value_users.get(&id).map_or(&[][..], Vec::as_slice)
    }

    fn opcode(&self, id: i64) -> Option<&str> {
        self.instructions.get(&id).map(|i| i.opcode.as_str())
    }

    fn tuple_index(&self, id: i64) -> Option<i64> {
        self.instructions.get(&id).map(|i| i.tuple_index)
    }

    fn calls(&self, user: i64) -> bool {
        self.instructions
            .get(&user)
            .is_some_and(|u| !u.called_computation_ids.is_empty())
    }

    fn operand_positions(&self, user: i64, operand: i64, out: &mut Vec<usize>) {
        match self.wide_positions.get(&user) {
            Some(by_operand) => {
                out.extend(by_operand.get(&operand).map_or(&[][..], Vec::as_slice));
            }
            None => {
                if let Some(u) = self.instructions.get(&user) {
                    out.extend(positions_in(&u.operand_ids, operand));
                }
            }
        }
    }

    fn called_parameters(&self, user: i64, k: i64, out: &mut Vec<i64>) {
        let Some(u) = self.instructions.get(&user) else {
            return;
        };
        for c in &u.called_computation_ids {
            if let Some(&p) = self.parameters.get(c).and_then(|ps| ps.get(&k)) {
                out.push(p);
            }
        }
    }
}

/// The positions at which `operands` holds `id`.
fn positions_in(operands: &[i64], id: i64) -> impl Iterator<Item = usize> + '_ {
    operands
        .iter()
        .enumerate()
        .filter(move |(_, &o)| o == id)
        .map(|(k, _)| k)
}

/// Where the replay is when the entry schedule reaches an instruction: each
/// event is placed at its instruction's schedule index (events of nested
/// computations at the last entry instruction before them), and an
/// instruction's position is the first event placed at or after it.
struct SchedulePositions<'e> {
    order: &'e IdMap<usize>,
    /// Schedule index reached by each event (non-decreasing).
    reached: Vec<usize>,
}

/// Each entry instruction's index in the entry schedule (the order of
/// the computation when the module has no schedule).
fn schedule_order(module: &HloModuleProto, entry: &HloComputationProto) -> IdMap<usize> {
    let sequence: Vec<i64> = module
        .schedule
        .as_ref()
        .and_then(|s| s.sequences.get(&entry.id))
        .map(|s| s.instruction_ids.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| entry.instructions.iter().map(|i| i.id).collect());
    sequence
        .iter()
        .enumerate()
        .map(|(k, &id)| (id, k))
        .collect()
}

impl<'e> SchedulePositions<'e> {
    fn new(entry: &'e EntryFacts<'_>, instructions: &[String]) -> Self {
        let mut reached = Vec::with_capacity(instructions.len());
        let mut now = 0usize;
        for name in instructions {
            if let Some(&k) = entry.by_name.get(name.as_str()) {
                now = now.max(k);
            }
            reached.push(now);
        }
        SchedulePositions {
            order: &entry.order,
            reached,
        }
    }

    fn of(&self, instruction: i64) -> Option<usize> {
        let k = *self.order.get(&instruction)?;
        Some(self.reached.partition_point(|&r| r < k))
    }
}

/// The operands of an instruction whose last reader it is, in its
/// computation's schedule: the candidates of XLA's heap simulator for
/// reusing an operand's memory for the instruction's output (an operand
/// value is shared only when its live range ends at the user).
struct DyingOperands<'a> {
    instructions: Rc<IdMap<&'a HloInstructionProto>>,
    users: Rc<IdMap<Vec<i64>>>,
    /// Each scheduled instruction's computation and place in its sequence.
    order: IdMap<(i64, usize)>,
    /// (computation, parameter number) → the parameter instruction.
    parameters: HashMap<(i64, i64), i64>,
    /// Computation id → its root instruction.
    roots: HashMap<i64, i64>,
    /// Root instruction of a fused computation → the fusions calling it.
    fused_callers: IdMap<Vec<i64>>,
}

/// XLA's elementwise opcodes (`HloInstruction::IsElementwise`: the unary,
/// binary and ternary operations applied element by element).
pub(crate) fn is_elementwise(opcode: &str) -> bool {
    matches!(
        opcode,
        "abs"
            | "add"
            | "and"
            | "atan2"
            | "bitcast-convert"
            | "cbrt"
            | "ceil"
            | "clamp"
            | "clz"
            | "compare"
            | "complex"
            | "convert"
            | "copy"
            | "cos"
            | "divide"
            | "erf"
            | "exponential"
            | "exponential-minus-one"
            | "floor"
            | "imag"
            | "is-finite"
            | "log"
            | "log-plus-one"
            | "logistic"
            | "maximum"
            | "minimum"
            | "multiply"
            | "negate"
            | "not"
            | "or"
            | "popcnt"
            | "power"
            | "real"
            | "reduce-precision"
            | "remainder"
            | "round-nearest-afz"
            | "round-nearest-even"
            | "rsqrt"
            | "select"
            | "shift-left"
            | "shift-right-arithmetic"
            | "shift-right-logical"
            | "sign"
            | "sin"
            | "sqrt"
            | "stochastic-convert"
            | "subtract"
            | "tan"
            | "tanh"
            | "xor"
    )
}

/// At most this many users are followed from one operand (through
/// get-tuple-element and bitcast chains): bounded whatever the module.
const MAX_READERS: usize = 10_000;

impl<'a> DyingOperands<'a> {
    /// The instruction with this id.
    fn instruction(&self, id: i64) -> Option<&'a HloInstructionProto> {
        self.instructions.get(&id).copied()
    }

    /// `graph`'s instructions and users are the module's (built once for
    /// both).
    fn new(module: &'a HloModuleProto, graph: &Graph<'a>) -> Self {
        let instructions = Rc::clone(&graph.instructions);
        let users = Rc::clone(&graph.users);
        let mut parameters = HashMap::default();
        let roots: HashMap<i64, i64> = module
            .computations
            .iter()
            .map(|c| (c.id, c.root_id))
            .collect();
        for c in &module.computations {
            for i in c.instructions.iter().filter(|i| i.opcode == "parameter") {
                parameters.insert((c.id, i.parameter_number), i.id);
            }
        }
        let mut order = IdMap::sized_as(&graph.instructions);
        if let Some(schedule) = &module.schedule {
            for (&computation, sequence) in &schedule.sequences {
                for (k, &id) in sequence.instruction_ids.iter().enumerate() {
                    order.insert(id, (computation, k));
                }
            }
        }
        DyingOperands {
            instructions,
            users,
            order,
            parameters,
            fused_callers: module
                .computations
                .iter()
                .flat_map(|c| c.instructions.iter())
                .filter(|i| i.opcode == "fusion")
                .filter_map(|i| Some((*roots.get(i.called_computation_ids.first()?)?, i.id)))
                .fold(
                    IdMap::sized_as(&graph.instructions),
                    |mut m: IdMap<Vec<i64>>, (r, f)| {
                        m.entry_or_default(r).push(f);
                        m
                    },
                ),
            roots,
        }
    }

    /// The buffers (from `buffers_at(instruction, shape index)`) of the
    /// operands of `user` whose every reader is scheduled no later than it.
    fn of(
        &self,
        user: &HloInstructionProto,
        buffers_at: impl Fn((i64, &[i64])) -> Vec<usize>,
    ) -> Vec<usize> {
        // A copy never takes its operand's memory (the heap simulator skips it),
        // nor does an instruction outside a schedule.
        if matches!(
            user.opcode.as_str(),
            "copy" | "copy-start" | "parameter" | "tuple" | "get-tuple-element" | "bitcast"
        ) {
            return Vec::new();
        }
        let Some(&(computation, at)) = self.order.get(&user.id) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for &operand in &user.operand_ids {
            // Only a value the operand itself defines: the heap simulator
            // requires the user to be a user of the value's defining
            // instruction (`IsUserOf`), so a value read through a
            // get-tuple-element or a bitcast is never shared.
            let id = operand;
            let index: Vec<i64> = Vec::new();
            let Some(source) = self.instructions.get(&id) else {
                continue;
            };
            if matches!(source.opcode.as_str(), "parameter" | "constant") {
                continue;
            }
            let k = user
                .operand_ids
                .iter()
                .position(|&o| o == operand)
                .unwrap_or(0);
            if self.elementwise_on(user, k) && self.last_reader_is(id, &index, computation, at) {
                out.extend(buffers_at((id, index.as_slice())));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether `user` reads its operand `k` element by element: an
    /// elementwise instruction, or a fusion whose parameter `k` reaches only
    /// elementwise instructions and tuples inside it (nested fusions
    /// followed). XLA shares an operand's buffer only then
    /// (`AreTransitiveUsesElementwiseOrTuple`): a dot or a convolution reads
    /// its operand after its output is written.
    fn elementwise_on(&self, user: &HloInstructionProto, k: usize) -> bool {
        let mut stack = vec![(user.id, k)];
        let mut seen = 0usize;
        while let Some((id, k)) = stack.pop() {
            seen += 1;
            if seen > MAX_READERS {
                return false;
            }
            let Some(u) = self.instructions.get(&id) else {
                return false;
            };
            if u.opcode != "fusion" {
                if !is_elementwise(&u.opcode) {
                    return false;
                }
                continue;
            }
            let Some(parameter) = u
                .called_computation_ids
                .first()
                .and_then(|c| self.parameters.get(&(*c, k as i64)))
            else {
                return false;
            };
            // Every use of the fused parameter, through tuples.
            let mut values = vec![*parameter];
            while let Some(v) = values.pop() {
                for &r in self.users.get(&v).map_or(&[][..], Vec::as_slice) {
                    let Some(reader) = self.instructions.get(&r) else {
                        return false;
                    };
                    match reader.opcode.as_str() {
                        "tuple" => values.push(r),
                        "fusion" => {
                            for (j, &o) in reader.operand_ids.iter().enumerate() {
                                if o == v {
                                    stack.push((r, j));
                                }
                            }
                            values.push(r);
                        }
                        op if is_elementwise(op) => values.push(r),
                        _ => return false,
                    }
                    seen += 1;
                    if seen > MAX_READERS {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Whether the value `(id, index)` is a dot's or a convolution's result
    /// as written (a fusion's root or root tuple element, through layout-only
    /// operations): a contraction writes its compute type, and a cast to f32
    /// happens in its reader.
    fn contraction_output(&self, id: i64, index: &[i64]) -> bool {
        let (mut x, mut index) = (id, index.to_vec());
        for _ in 0..64 {
            let Some(i) = self.instructions.get(&x) else {
                return false;
            };
            match i.opcode.as_str() {
                "dot" | "convolution" => return index.is_empty(),
                "bitcast" | "copy" | "reshape" | "transpose" => {
                    x = i.operand_ids.first().copied().unwrap_or(-1);
                }
                "tuple" => {
                    let Some((&k, rest)) = index.split_first() else {
                        return false;
                    };
                    x = i.operand_ids.get(k as usize).copied().unwrap_or(-1);
                    index = rest.to_vec();
                }
                "fusion" => {
                    let Some(r) = i
                        .called_computation_ids
                        .first()
                        .and_then(|c| self.roots.get(c))
                    else {
                        return false;
                    };
                    x = *r;
                }
                _ => return false,
            }
        }
        false
    }

    /// Whether the value `(id, index)` is computed from an exponential by
    /// elementwise operations (a softmax's output `exp(x - m) / l`),
    /// looking into fusions and through layout-only operations.
    fn produced_by_exponential(&self, id: i64, index: &[i64]) -> bool {
        let mut stack: Vec<(i64, Vec<i64>)> = vec![(id, index.to_vec())];
        let mut seen = 0usize;
        while let Some((x, index)) = stack.pop() {
            seen += 1;
            if seen > MAX_READERS {
                return false;
            }
            let Some(i) = self.instructions.get(&x) else {
                continue;
            };
            match i.opcode.as_str() {
                "exponential" => return true,
                "get-tuple-element" => {
                    let mut inner = vec![i.tuple_index];
                    inner.extend_from_slice(&index);
                    stack.extend(i.operand_ids.first().map(|&o| (o, inner)));
                }
                "tuple" => {
                    if let Some((&k, rest)) = index.split_first() {
                        stack.extend(i.operand_ids.get(k as usize).map(|&o| (o, rest.to_vec())));
                    }
                }
                "fusion" => {
                    if let Some(r) = i
                        .called_computation_ids
                        .first()
                        .and_then(|c| self.roots.get(c))
                    {
                        stack.push((*r, index.clone()));
                    }
                }
                "bitcast" | "reshape" | "transpose" | "copy" => {
                    stack.extend(i.operand_ids.first().map(|&o| (o, index.clone())));
                }
                op if is_elementwise(op) && index.is_empty() => {
                    stack.extend(i.operand_ids.iter().map(|&o| (o, Vec::new())));
                }
                _ => {}
            }
        }
        false
    }

    /// Whether the value `(id, index)` is a softmax's input or output: an
    /// exponential reads it, it is computed from one, or it is a stack a
    /// loop fills with such values (a scan's saved softmax).
    fn softmax_value(&self, id: i64, index: &[i64]) -> bool {
        !self.contraction_output(id, index)
            && (self.produced_by_exponential(id, index) || self.feeds_exponential(id, index))
    }

    /// Whether an exponential reads the value `(id, index)` through
    /// elementwise operations (inside fusions too): a softmax's or a
    /// log-softmax's input, `x - max(x)` or `x` itself.
    fn feeds_exponential(&self, id: i64, index: &[i64]) -> bool {
        // (instruction, the tuple element of it we follow: empty = all of it).
        let mut stack: Vec<(i64, Vec<i64>)> = vec![(id, index.to_vec())];
        let mut seen = 0usize;
        while let Some((x, index)) = stack.pop() {
            // Out of a fused computation through its root: the fusion's result.
            for &f in self.fused_callers.get(&x).map_or(&[][..], Vec::as_slice) {
                stack.push((f, index.clone()));
            }
            for &u in self.users.get(&x).map_or(&[][..], Vec::as_slice) {
                seen += 1;
                if seen > MAX_READERS {
                    return false;
                }
                let Some(user) = self.instructions.get(&u) else {
                    continue;
                };
                match user.opcode.as_str() {
                    "exponential" => return true,
                    // A stack filled with softmax values (a scan's residuals).
                    "dynamic-update-slice" => {
                        let update = user.operand_ids.get(1).copied();
                        if user.operand_ids.first() == Some(&x)
                            && update.is_some_and(|u| self.produced_by_exponential(u, &[]))
                        {
                            return true;
                        }
                    }
                    "get-tuple-element" => {
                        if let Some((&first, rest)) = index.split_first() {
                            if first == user.tuple_index {
                                stack.push((u, rest.to_vec()));
                            }
                        }
                    }
                    "bitcast" | "reshape" | "transpose" | "copy" | "broadcast" | "slice"
                    | "dynamic-slice" | "copy-done" => stack.push((u, index.clone())),
                    // Into a tuple, and a loop's state: a scan's stacked
                    // values are read in its body.
                    "tuple" => {
                        for (k, &o) in user.operand_ids.iter().enumerate() {
                            if o == x {
                                let mut inner = vec![k as i64];
                                inner.extend_from_slice(&index);
                                stack.push((u, inner));
                            }
                        }
                    }
                    "while" => {
                        for &c in &user.called_computation_ids {
                            if let Some(&p) = self.parameters.get(&(c, 0)) {
                                stack.push((p, index.clone()));
                            }
                        }
                        stack.push((u, index.clone()));
                    }
                    "fusion" => {
                        if !index.is_empty() {
                            continue;
                        }
                        for (k, &o) in user.operand_ids.iter().enumerate() {
                            let parameter = user
                                .called_computation_ids
                                .first()
                                .and_then(|c| self.parameters.get(&(*c, k as i64)));
                            if let (true, Some(&p)) = (o == x, parameter) {
                                stack.push((p, Vec::new()));
                            }
                        }
                    }
                    op if is_elementwise(op) && index.is_empty() => stack.push((u, Vec::new())),
                    _ => {}
                }
            }
        }
        false
    }

    /// Whether every reader of `(id, index)` is scheduled in `computation`
    /// at or before `at`.
    fn last_reader_is(&self, id: i64, index: &[i64], computation: i64, at: usize) -> bool {
        let mut stack: Vec<(i64, Vec<i64>)> = vec![(id, index.to_vec())];
        let mut seen = 0usize;
        while let Some((x, index)) = stack.pop() {
            for &u in self.users.get(&x).map_or(&[][..], Vec::as_slice) {
                seen += 1;
                if seen > MAX_READERS {
                    return false;
                }
                let Some(user) = self.instructions.get(&u) else {
                    return false;
                };
                match user.opcode.as_str() {
                    "get-tuple-element" => {
                        if let Some((&first, rest)) = index.split_first() {
                            if first == user.tuple_index {
                                stack.push((u, rest.to_vec()));
                            }
                            continue;
                        }
                    }
                    "bitcast" => {
                        stack.push((u, index.clone()));
                        continue;
                    }
                    _ => {}
                }
                match self.order.get(&u) {
                    Some(&(c, k)) if c == computation && k <= at => {}
                    _ => return false,
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk without memory: every state from `start` (through `only`).
    fn walked(graph: &Graph<'_>, start: i64, only: Option<i64>) -> bool {
        use oomscope_layout::dataflow::successors;
        let mut seen: HashSet<(i64, Option<i64>)> = HashSet::default();
        let mut stack = Vec::new();
        if successors(graph, (start, None), only, &mut stack) {
            return true;
        }
        while let Some(state) = stack.pop() {
            if seen.insert(state) && successors(graph, state, None, &mut stack) {
                return true;
            }
        }
        false
    }

    #[test]
    fn the_remembered_walk_answers_as_the_plain_walk_on_real_modules() {
        // Parameters and their readers of real modules: loops (a scan),
        // tuples of thousands of arguments, async copies, collectives.
        let mut checked = 0;
        for dir in [
            "transformer-scan",
            "donate-zoo/tuple-args",
            "pair-transformer-shard/fixed",
            "pair-mlp-offload/fixed",
            "fsdp-transformer-scan",
        ] {
            let dir = oomscope_testdata::fixtures().join(dir);
            let path = oomscope_testdata::hlo_proto_in(&dir).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let hlo = crate::decode_hlo_proto("m", &bytes).unwrap();
            let module = &hlo.decode_module::<HloModuleProto>().unwrap();
            let graph = Graph::new(module);
            for c in &module.computations {
                for i in c.instructions.iter().filter(|i| i.opcode == "parameter") {
                    assert_eq!(
                        graph.reaches_contraction(i.id),
                        walked(&graph, i.id, None),
                        "{}",
                        i.name
                    );
                    for &u in graph.users.get(&i.id).map_or(&[][..], Vec::as_slice) {
                        assert_eq!(
                            graph.reaches_contraction_through(i.id, u),
                            walked(&graph, i.id, Some(u))
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 1000, "{checked} readers checked");
    }
}
