//! The [`HeapProgram`] of one HloProto in one memory space: the buffers,
//! allocations and heap-simulator events the Memory Viewer replays
//! (`memory_viewer.rs` picks the same trace), and the entry computation's
//! parameters with what they feed, for the what-if engine (issue 25).

use std::collections::{HashMap, HashSet};

use oomscope_proto::xla::heap_simulator_trace::event::Kind as EventKind;
use oomscope_proto::xla::{HloComputationProto, HloInstructionProto, HloModuleProto};
use oomscope_report::program::{
    BufferReader, HeapEvent, HeapEventKind, HeapProgram, ParameterReads,
    ProgramAllocation, ProgramBuffer,
};
use oomscope_report::MemoryColor;

use crate::memory_viewer::Module;
use crate::shape::{human_string_with_layout, shape_from_proto, subshape};

/// Visits at most this many (instruction, tuple index) states per parameter
/// when following it to a contraction: bounded whatever the module.
const MAX_VISITS: usize = 20_000;

/// Elementwise ops an activation is made of, through which a value can
/// still only feed a contraction.
const ELEMENTWISE: &[&str] = &[
    "maximum", "minimum", "multiply", "add", "subtract", "divide", "negate", "abs", "tanh",
    "logistic", "exponential", "log", "sqrt", "rsqrt", "power", "clamp", "select", "compare",
];

/// Visits at most this many uses inside fused computations when deciding
/// whether a reader only feeds contractions.
const MAX_FUSED_VISITS: usize = 256;

impl Module<'_> {
    /// The program the Memory Viewer replays for memory space `color`, or
    /// `None` when that space has no heap-simulator trace.
    pub fn program(&self, color: i64) -> Option<HeapProgram> {
        let trace = self.trace_for(color).and_then(|t| self.traces().get(t))?;
        let hlo_module = self.hlo().hlo_module.as_ref()?;
        let mut program = HeapProgram {
            module: hlo_module.name.clone(),
            memory_space: MemoryColor::from(color),
            ..HeapProgram::default()
        };
        // Allocations of this colour, and their buffers.
        let mut allocation_slot: HashMap<usize, usize> = HashMap::new();
        for (i, a) in self.in_index_order() {
            if a.color != color {
                continue;
            }
            allocation_slot.insert(i, program.allocations.len());
            program.allocations.push(ProgramAllocation {
                index: a.index,
                size_bytes: u64::try_from(a.size).unwrap_or(0),
                category: crate::memory_viewer::category(a),
                indefinite: crate::memory_viewer::is_indefinite(a),
                parameter_number: a
                    .is_entry_computation_parameter
                    .then_some(a.parameter_number),
                parameter_shape_index: a.parameter_shape_index.clone(),
                maybe_live_out: a.maybe_live_out,
                representative: None,
                output_index: None,
                defined_at: None,
            });
        }
        let mut buffer_slot: HashMap<usize, usize> = HashMap::new();
        // The instruction and shape index that define each program buffer.
        let mut origins: Vec<(i64, Vec<i64>)> = Vec::new();
        for (i, b) in self.buffers().iter().enumerate() {
            let Some(&allocation) = allocation_slot.get(&b.allocation) else {
                continue;
            };
            buffer_slot.insert(i, program.buffers.len());
            let peak = self.peak_buffer(b);
            let size = peak.size_bytes;
            program.buffers.push(ProgramBuffer {
                id: peak.logical_buffer_id.unwrap_or(0),
                name: peak.name,
                shape: own_shape_text(b.instruction, b.shape_index()),
                size_bytes: size,
                unpadded_bytes: peak.unpadded_bytes,
                allocation,
                opcode: peak.opcode,
                readers: Vec::new(),
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
        for event in &trace.events {
            let buffer = self
                .buffer_index(event.buffer_id)
                .and_then(|b| buffer_slot.get(&b).copied());
            let kind = match EventKind::try_from(event.kind) {
                Ok(EventKind::Alloc) => HeapEventKind::Alloc,
                Ok(EventKind::Free) => HeapEventKind::Free,
                Ok(EventKind::ShareWith) => {
                    match self
                        .buffer_index(event.share_with_canonical_id)
                        .and_then(|b| buffer_slot.get(&b).copied())
                    {
                        Some(c) => HeapEventKind::ShareWith(c),
                        // XProf skips a share with an unknown buffer.
                        None => {
                            program.events.push(HeapEvent {
                                kind: HeapEventKind::Alloc,
                                buffer: None,
                            });
                            program.instructions.push(event.instruction_name.clone());
                            continue;
                        }
                    }
                }
                Err(_) => return None,
            };
            program.events.push(HeapEvent { kind, buffer });
            program.instructions.push(event.instruction_name.clone());
        }
        program.instructions.push(String::new());
        if let Some(io) = &hlo_module.input_output_alias {
            for entry in &io.entries {
                program.aliases.push((
                    entry.output_shape_index.clone(),
                    entry.parameter_number,
                    entry.parameter_shape_index.clone(),
                ));
            }
        }
        // The program's buffers of each instruction, indexed once (a scan
        // per output took a minute on a module of 10^5 buffers).
        let mut by_instruction: HashMap<i64, Vec<usize>> = HashMap::new();
        for (i, b) in self.buffers().iter().enumerate() {
            if let Some(&slot) = buffer_slot.get(&i) {
                by_instruction.entry(b.instruction.id).or_default().push(slot);
            }
        }
        entry_facts(hlo_module, &mut program, &origins, |id| {
            by_instruction.get(&id).cloned().unwrap_or_default()
        });
        Some(program)
    }
}

fn buffer_slot_size(buffers: &[ProgramBuffer], i: usize) -> Option<u64> {
    buffers.get(i).map(|b| b.size_bytes)
}

/// The exact subshape a logical buffer holds, with its layout.
fn own_shape_text(instruction: &HloInstructionProto, index: &[i64]) -> String {
    instruction
        .shape
        .as_ref()
        .and_then(|s| subshape(s, index))
        .map(|s| human_string_with_layout(&shape_from_proto(s)))
        .unwrap_or_default()
}

/// Fills the entry parameters (with whether each reaches a contraction) and
/// the output index of each maybe-live-out allocation.
fn entry_facts(
    module: &HloModuleProto,
    program: &mut HeapProgram,
    origins: &[(i64, Vec<i64>)],
    buffers_of: impl Fn(i64) -> Vec<usize>,
) {
    let computations: HashMap<i64, &HloComputationProto> =
        module.computations.iter().map(|c| (c.id, c)).collect();
    let Some(entry) = computations
        .get(&module.entry_computation_id)
        .copied()
        .or_else(|| {
            module
                .computations
                .iter()
                .find(|c| c.name == module.entry_computation_name)
        })
    else {
        return;
    };
    let graph = Graph::new(module);
    // The trace names a FREE by the freed buffer's defining instruction;
    // the heap simulator frees it after its last reader, so that reader
    // places the event in the schedule.
    let order = schedule_order(module, entry);
    let by_name: HashMap<&str, i64> = entry
        .instructions
        .iter()
        .map(|i| (i.name.as_str(), i.id))
        .collect();
    let mut readers: HashMap<&str, Option<String>> = HashMap::new();
    let names: Vec<String> = program
        .instructions
        .iter()
        .enumerate()
        .map(|(i, name)| match program.events.get(i).map(|e| e.kind) {
            Some(HeapEventKind::Free) => readers
                .entry(name.as_str())
                .or_insert_with(|| {
                    let id = *by_name.get(name.as_str())?;
                    last_reader(&graph, &order, id)
                })
                .clone()
                .unwrap_or_else(|| name.clone()),
            _ => name.clone(),
        })
        .collect();
    let positions = SchedulePositions::new(module, entry, &names);
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
    for instruction in &entry.instructions {
        if instruction.opcode != "parameter" {
            continue;
        }
        let Some(shape) = instruction.shape.as_ref() else {
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
        let uses: Vec<usize> = readers
            .iter()
            .filter_map(|&(_, r)| positions.of(r))
            .collect();
        let mut contraction_in_loop = false;
        let contraction_uses: Vec<usize> = if feeds {
            readers
                .iter()
                .filter(|&&(value, reader)| graph.reaches_contraction_through(value, reader))
                .filter_map(|&(_, reader)| {
                    if graph
                        .instructions
                        .get(&reader)
                        .is_some_and(|i| i.opcode == "while")
                    {
                        contraction_in_loop = true;
                    }
                    positions.of(reader)
                })
                .collect()
        } else {
            Vec::new()
        };
        let reads = ParameterReads::new(feeds, &uses, &contraction_uses, contraction_in_loop);
        // One entry per array leaf (JAX passes thousands of arguments as one tuple).
        let mut leaves: Vec<Vec<i64>> = Vec::new();
        let mut stack: Vec<Vec<i64>> = vec![Vec::new()];
        while let Some(index) = stack.pop() {
            let Some(sub) = subshape(shape, &index) else {
                continue;
            };
            if sub.tuple_shapes.is_empty() {
                leaves.push(index);
            } else if leaves.len() + stack.len() < 100_000 {
                for i in (0..sub.tuple_shapes.len()).rev() {
                    let mut next = index.clone();
                    next.push(i as i64);
                    stack.push(next);
                }
            }
        }
        for index in leaves {
            let shape = own_shape_text(instruction, &index);
            program.push_parameter((instruction.parameter_number, index), shape, &reads, &held);
        }
    }
    program
        .parameters
        .sort_by(|a, b| (a.number, &a.shape_index).cmp(&(b.number, &b.shape_index)));
    let entry_ids: HashSet<i64> = entry.instructions.iter().map(|i| i.id).collect();
    for (buffer, (id, index)) in program.buffers.iter_mut().zip(origins) {
        if !entry_ids.contains(id) {
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
    contraction.precision_config.as_ref().is_none_or(|p| {
        p.algorithm == 0 && p.operand_precision.iter().all(|&x| x == 0)
    })
}

/// The operand positions at which `user` reads `id`.
fn operand_positions(user: &HloInstructionProto, id: i64) -> Vec<usize> {
    user.operand_ids
        .iter()
        .enumerate()
        .filter(|(_, &o)| o == id)
        .map(|(k, _)| k)
        .collect()
}

/// The reader of entry instruction `name`'s value (through get-tuple-element
/// and bitcast) that comes last in the entry schedule, by name.
fn last_reader(graph: &Graph<'_>, order: &HashMap<i64, usize>, start: i64) -> Option<String> {
    let mut best: Option<(usize, i64)> = None;
    let mut frontier = vec![start];
    let mut seen = HashSet::new();
    while let Some(id) = frontier.pop() {
        if !seen.insert(id) || seen.len() > MAX_VISITS {
            continue;
        }
        for &u in graph.users.get(&id).map_or(&[][..], Vec::as_slice) {
            match graph.instructions.get(&u).map(|i| i.opcode.as_str()) {
                Some("get-tuple-element" | "bitcast") => frontier.push(u),
                Some(_) => {
                    if let Some(&k) = order.get(&u) {
                        if best.is_none_or(|(b, _)| k > b) {
                            best = Some((k, u));
                        }
                    }
                }
                None => {}
            }
        }
    }
    best.and_then(|(_, id)| graph.instructions.get(&id).map(|i| i.name.clone()))
}

/// Users of every instruction and the computations, to follow a value.
struct Graph<'a> {
    instructions: HashMap<i64, &'a HloInstructionProto>,
    users: HashMap<i64, Vec<i64>>,
    /// Parameter instructions of each computation, by parameter number.
    parameters: HashMap<i64, HashMap<i64, i64>>,
    /// Whether each state visited reaches a contraction.
    memo: std::cell::RefCell<HashMap<State, bool>>,
    /// The opcodes of each computation's instructions.
    computation_opcodes: HashMap<i64, Vec<String>>,
    /// get-tuple-element users of each (instruction, element).
    element_users: HashMap<(i64, i64), Vec<i64>>,
    /// The other users of each instruction.
    value_users: HashMap<i64, Vec<i64>>,
}

/// A value followed through the module: an instruction, and the tuple
/// element of it we hold (None: all of it).
type State = (i64, Option<i64>);

/// States remembered per module at most (bounded whatever the module).
const MAX_MEMO: usize = 4_000_000;

impl<'a> Graph<'a> {
    fn new(module: &'a HloModuleProto) -> Self {
        let mut instructions = HashMap::new();
        let mut users: HashMap<i64, Vec<i64>> = HashMap::new();
        let mut parameters: HashMap<i64, HashMap<i64, i64>> = HashMap::new();
        let mut computation_opcodes: HashMap<i64, Vec<String>> = HashMap::new();
        let mut element_users: HashMap<(i64, i64), Vec<i64>> = HashMap::new();
        let mut value_users: HashMap<i64, Vec<i64>> = HashMap::new();
        for c in &module.computations {
            computation_opcodes.insert(
                c.id,
                c.instructions.iter().map(|i| i.opcode.clone()).collect(),
            );
            for i in &c.instructions {
                instructions.insert(i.id, i);
                for &o in &i.operand_ids {
                    users.entry(o).or_default().push(i.id);
                    if i.opcode == "get-tuple-element" {
                        element_users.entry((o, i.tuple_index)).or_default().push(i.id);
                    } else {
                        value_users.entry(o).or_default().push(i.id);
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
            instructions,
            users,
            parameters,
            memo: Default::default(),
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
        let mut seen: HashSet<(i64, Vec<i64>)> = HashSet::new();
        let mut stack = vec![(id, index.to_vec())];
        while let Some((id, index)) = stack.pop() {
            if !seen.insert((id, index.clone())) || seen.len() > MAX_VISITS {
                continue;
            }
            // The element's own get-tuple-elements, looked up (a tuple of
            // thousands of arguments has thousands of them); a
            // get-tuple-element of the whole tuple reads its table only.
            if let Some((&first, rest)) = index.split_first() {
                for &user in self.element_users.get(&(id, first)).map_or(&[][..], Vec::as_slice) {
                    stack.push((user, rest.to_vec()));
                }
            }
            for &user in self.value_users.get(&id).map_or(&[][..], Vec::as_slice) {
                let Some(u) = self.instructions.get(&user) else {
                    continue;
                };
                match (u.opcode.as_str(), index.split_first()) {
                    ("bitcast", _) => stack.push((user, index.clone())),
                    ("copy-done", Some((0, rest))) => stack.push((user, rest.to_vec())),
                    (_, None) => {
                        let operands = operand_positions(u, id);
                        let mut budget = MAX_FUSED_VISITS;
                        out.push((user, self.only_contracts(u, &operands, &mut budget)));
                    }
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
            let Some(i) = self.instructions.get(&id) else { break };
            let copies = match (i.opcode.as_str(), index.as_slice()) {
                ("copy-start", [0]) | ("copy", []) => true,
                _ => false,
            };
            let Some(&source) = i.operand_ids.first().filter(|_| copies) else {
                break;
            };
            out.extend(self.readers(source, &[]).into_iter().filter(|&(r, _)| r != id));
            (id, index) = (source, Vec::new());
        }
        out
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
                Some("dot" | "convolution") => self.instructions.get(u).is_some_and(|i| rounds_to_bf16(i)),
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
        self.instructions.get(&user).is_some_and(|u| {
            u.operand_ids.iter().all(|&o| o == id || constant(o))
        })
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
                            op.as_str(),
                            "parameter"
                                | "convert"
                                | "bitcast"
                                | "reshape"
                                | "transpose"
                                | "copy"
                                | "constant"
                                | "broadcast"
                                | "iota"
                        ) || ELEMENTWISE.contains(&op.as_str())
                    })
                })
            })
    }

    /// Whether the value of `start` reaches a dot or a convolution: through
    /// users, into fusions and calls (the called computation's parameter),
    /// through tuples into loops (the element's `get-tuple-element`).
    fn reaches_contraction(&self, start: i64) -> bool {
        self.reaches_contraction_via(start, None)
    }

    /// [`Self::reaches_contraction`] through one reader of `start` only.
    fn reaches_contraction_through(&self, start: i64, reader: i64) -> bool {
        self.reaches_contraction_via(start, Some(reader))
    }

    fn reaches_contraction_via(&self, start: i64, only: Option<i64>) -> bool {
        let mut next = Vec::new();
        if self.successors((start, None), only, &mut next) {
            return true;
        }
        next.into_iter().any(|s| self.reaches_from(s))
    }

    /// The states a value flows to from `state` (through its users, or only
    /// `only` among them), and whether one of those users is a contraction.
    /// State: an instruction whose value we hold, and the tuple element we
    /// hold of it when it is a tuple we were put into (None: all of it).
    fn successors(&self, (id, element): State, only: Option<i64>, out: &mut Vec<State>) -> bool {
        // (One reader of thousands: looked at alone, not found among them.)
        let users = match &only {
            Some(reader) => std::slice::from_ref(reader),
            None => self.users.get(&id).map_or(&[][..], Vec::as_slice),
        };
        for &user in users {
            let Some(u) = self.instructions.get(&user) else {
                continue;
            };
            match u.opcode.as_str() {
                "dot" | "convolution" | "ragged-dot" => {
                    if element.is_none() {
                        return true;
                    }
                }
                "get-tuple-element" => {
                    if element.is_none_or(|e| e == u.tuple_index) {
                        out.push((user, None));
                    }
                }
                "tuple" => {
                    if element.is_none() {
                        for (k, &o) in u.operand_ids.iter().enumerate() {
                            if o == id {
                                out.push((user, Some(k as i64)));
                            }
                        }
                    }
                }
                _ => {
                    // Into called computations: operand k is parameter k
                    // (fusion, call, custom-call, while body/condition).
                    for (k, _) in u.operand_ids.iter().enumerate().filter(|(_, &o)| o == id) {
                        for &c in &u.called_computation_ids {
                            let k = if u.opcode == "while" { 0 } else { k as i64 };
                            if let Some(&p) = self.parameters.get(&c).and_then(|ps| ps.get(&k)) {
                                out.push((p, element));
                            }
                        }
                    }
                    if element.is_none() {
                        out.push((user, None));
                    } else if u.opcode == "while" {
                        // The loop's result holds the same element.
                        out.push((user, element));
                    }
                }
            }
        }
        false
    }

    /// Whether a value held as `start` reaches a contraction, remembered
    /// for every state visited (the dataflow is acyclic: many parameters
    /// and readers share the same paths, each walked once per module).
    fn reaches_from(&self, start: State) -> bool {
        let mut memo = self.memo.borrow_mut();
        if let Some(&known) = memo.get(&start) {
            return known;
        }
        // Depth-first, children before parents; a state met again while
        // open (malformed input) counts as not reaching.
        let mut stack: Vec<(State, Vec<State>)> = Vec::new();
        let mut open: HashSet<State> = HashSet::new();
        let enter = |state: State,
                     stack: &mut Vec<(State, Vec<State>)>,
                     memo: &mut HashMap<State, bool>,
                     open: &mut HashSet<State>| {
            let mut next = Vec::new();
            if self.successors(state, None, &mut next) {
                memo.insert(state, true);
            } else {
                open.insert(state);
                stack.push((state, next));
            }
        };
        enter(start, &mut stack, &mut memo, &mut open);
        while let Some((state, pending)) = stack.last_mut() {
            let state = *state;
            if memo.len() > MAX_MEMO {
                return false;
            }
            let Some(child) = pending.pop() else {
                // Every child examined: none reaches.
                memo.insert(state, false);
                open.remove(&state);
                stack.pop();
                continue;
            };
            if !memo.contains_key(&child) && !open.contains(&child) {
                enter(child, &mut stack, &mut memo, &mut open);
            }
            if memo.get(&child) == Some(&true) {
                // A state reaching a contraction: so does every open state
                // above it on the path.
                while let Some((open_state, _)) = stack.pop() {
                    memo.insert(open_state, true);
                    open.remove(&open_state);
                }
            }
        }
        memo.get(&start).copied().unwrap_or(false)
    }
}

/// Where the replay is when the entry schedule reaches an instruction: each
/// event is placed at its instruction's schedule index (events of nested
/// computations at the last entry instruction before them), and an
/// instruction's position is the first event placed at or after it.
struct SchedulePositions {
    order: HashMap<i64, usize>,
    /// Schedule index reached by each event (non-decreasing).
    reached: Vec<usize>,
}

/// Each entry instruction's index in the entry schedule (the order of
/// the computation when the module has no schedule).
fn schedule_order(module: &HloModuleProto, entry: &HloComputationProto) -> HashMap<i64, usize> {
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

impl SchedulePositions {
    fn new(module: &HloModuleProto, entry: &HloComputationProto, instructions: &[String]) -> Self {
        let order = schedule_order(module, entry);
        let by_name: HashMap<&str, usize> = entry
            .instructions
            .iter()
            .filter_map(|i| Some((i.name.as_str(), *order.get(&i.id)?)))
            .collect();
        let mut reached = Vec::with_capacity(instructions.len());
        let mut now = 0usize;
        for name in instructions {
            if let Some(&k) = by_name.get(name.as_str()) {
                now = now.max(k);
            }
            reached.push(now);
        }
        SchedulePositions { order, reached }
    }

    fn of(&self, instruction: i64) -> Option<usize> {
        let k = *self.order.get(&instruction)?;
        Some(self.reached.partition_point(|&r| r < k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk without memory: every state from `start` (through `only`).
    fn walked(graph: &Graph<'_>, start: i64, only: Option<i64>) -> bool {
        let mut seen: HashSet<State> = HashSet::new();
        let mut stack = Vec::new();
        if graph.successors((start, None), only, &mut stack) {
            return true;
        }
        while let Some(state) = stack.pop() {
            if seen.insert(state) && graph.successors(state, None, &mut stack) {
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
            let path = std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| p.to_string_lossy().ends_with(".after_optimizations.hlo.pb"))
                .unwrap();
            let hlo = crate::decode_hlo_proto("m", &std::fs::read(&path).unwrap()).unwrap();
            let module = hlo.hlo_module.as_ref().unwrap();
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
