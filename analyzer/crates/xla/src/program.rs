//! The [`HeapProgram`] of one HloProto in one memory space: the buffers,
//! allocations and heap-simulator events the Memory Viewer replays
//! (`memory_viewer.rs` picks the same trace), and the entry computation's
//! parameters with what they feed, for the what-if engine (issue 25).

use std::collections::{HashMap, HashSet};

use crate::hlo::{self, Computation, Hlo, HloModule, Instruction};
use oomscope_report::program::{
    EntryParameter, HeapEvent, HeapEventKind, HeapProgram, ProgramAllocation, ProgramBuffer,
};
use oomscope_report::MemoryColor;

use crate::hlo::ShapeView;
use crate::memory_viewer::shape_text;
use crate::memory_viewer::Module;

/// Users with at most this many operands are scanned for an operand's
/// positions; those with more (root and loop tuples: thousands) have them
/// indexed once.
const SCANNED_OPERANDS: usize = 16;

/// Visits at most this many (instruction, tuple index) states per parameter
/// when following it to a contraction: bounded whatever the module.
const MAX_VISITS: usize = 20_000;

impl<'a> Module<'a> {
    /// The programs of every memory space with a heap-simulator trace (the
    /// value graph, the same for all of them, built once).
    pub fn programs(&self) -> Vec<HeapProgram> {
        let mut graph = None;
        self.memory_spaces()
            .into_iter()
            .filter_map(|space| self.program_with(space, &mut graph))
            .collect()
    }

    /// The program the Memory Viewer replays for memory space `color`, or
    /// `None` when that space has no heap-simulator trace.
    pub fn program(&self, color: i64) -> Option<HeapProgram> {
        self.program_with(color, &mut None)
    }

    fn program_with(&self, color: i64, graph: &mut Option<Graph<'a>>) -> Option<HeapProgram> {
        let trace = self.trace_for(color).and_then(|t| self.traces().get(t))?;
        let hlo_module = self.module();
        let ints = self.hlo();
        let mut program = HeapProgram {
            module: hlo_module.name.to_string(),
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
                parameter_shape_index: ints.ints(a.parameter_shape_index).to_vec(),
                maybe_live_out: a.maybe_live_out,
                representative: None,
                output_index: None,
                defined_at: None,
            });
        }
        let mut buffer_slot: HashMap<usize, usize> = HashMap::new();
        for (i, b) in self.buffers().iter().enumerate() {
            let Some(&allocation) = allocation_slot.get(&b.allocation) else {
                continue;
            };
            buffer_slot.insert(i, program.buffers.len());
            let size = b.size();
            program.buffers.push(ProgramBuffer {
                id: b.id(),
                name: b.name_with_shape_index(),
                shape: b.own_shape_text(),
                size_bytes: size,
                unpadded_bytes: b.unpadded,
                allocation,
                opcode: b.instruction.opcode.to_string(),
            });
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
                .and_then(|b| buffer_slot.get(&b).copied());
            let kind = match event.kind {
                hlo::ALLOC => HeapEventKind::Alloc,
                hlo::FREE => HeapEventKind::Free,
                hlo::SHARE_WITH => {
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
        for entry in &hlo_module.aliases {
            program.aliases.push((
                entry.output_shape_index.clone(),
                entry.parameter_number,
                entry.parameter_shape_index.clone(),
            ));
        }
        // The program's buffers of each instruction, in buffer order (one
        // walk: a root tuple can have thousands of operands).
        let mut of_instruction: HashMap<i64, Vec<usize>> = HashMap::new();
        for (i, b) in self.buffers().iter().enumerate() {
            if let Some(&slot) = buffer_slot.get(&i) {
                of_instruction
                    .entry(b.instruction.id)
                    .or_default()
                    .push(slot);
            }
        }
        let graph = graph.get_or_insert_with(|| Graph::new(ints, hlo_module));
        entry_facts(ints, hlo_module, graph, &mut program, |id| {
            of_instruction.get(&id).cloned().unwrap_or_default()
        });
        Some(program)
    }
}

fn buffer_slot_size(buffers: &[ProgramBuffer], i: usize) -> Option<u64> {
    buffers.get(i).map(|b| b.size_bytes)
}

/// Fills the entry parameters (with whether each reaches a contraction) and
/// the output index of each maybe-live-out allocation.
fn entry_facts(
    hlo: &Hlo<'_>,
    module: &HloModule<'_>,
    graph: &Graph<'_>,
    program: &mut HeapProgram,
    buffers_of: impl Fn(i64) -> Vec<usize>,
) {
    let computations: HashMap<i64, &Computation<'_>> =
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
    let positions = SchedulePositions::new(hlo, module, entry, &program.instructions);
    // Output leaves: the entry root's operands when it is a tuple.
    if let Some(root) = graph.instructions.get(&entry.root_id) {
        let leaves: Vec<(Vec<i64>, i64)> = if root.opcode == "tuple" {
            hlo.ints(root.operand_ids)
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
    // The first allocation of each (parameter, shape index).
    let mut parameter_allocation: HashMap<(i64, &[i64]), usize> = HashMap::new();
    for (k, a) in program.allocations.iter().enumerate() {
        if let Some(number) = a.parameter_number {
            parameter_allocation
                .entry((number, a.parameter_shape_index.as_slice()))
                .or_insert(k);
        }
    }
    let mut parameters = Vec::new();
    for facts in graph.entry_parameters(module, entry) {
        let uses: Vec<usize> = facts
            .readers
            .iter()
            .filter_map(|&r| positions.of(r))
            .collect();
        let (first_use, last_use) = (uses.iter().min().copied(), uses.iter().max().copied());
        for (index, shape) in &facts.leaves {
            let allocation = parameter_allocation
                .get(&(facts.number, index.as_slice()))
                .copied();
            parameters.push(EntryParameter {
                number: facts.number,
                shape: shape.clone(),
                shape_index: index.clone(),
                allocation,
                feeds_contraction: facts.feeds,
                first_use,
                last_use,
            });
        }
    }
    drop(parameter_allocation);
    program.parameters.extend(parameters);
    program
        .parameters
        .sort_by(|a, b| (a.number, &a.shape_index).cmp(&(b.number, &b.shape_index)));
}

/// What the entry computation's parameter instructions are, whatever the
/// memory space (found once for all of them).
struct ParameterFacts {
    number: i64,
    /// Whether the value reaches a contraction ([`Graph::reaches_contraction`]).
    feeds: bool,
    /// Its readers in the entry computation (through get-tuple-element and bitcast).
    readers: Vec<i64>,
    /// Each array leaf: its shape index and shape text.
    leaves: Vec<(Vec<i64>, String)>,
}

fn parameter_facts(graph: &Graph<'_>, instruction: &Instruction<'_>) -> Option<ParameterFacts> {
    let shape = instruction.shape?;
    let feeds = graph.reaches_contraction(instruction.id);
    let mut readers = Vec::new();
    let mut frontier = vec![instruction.id];
    while let Some(id) = frontier.pop() {
        for &u in graph.users.get(&id).map_or(&[][..], Vec::as_slice) {
            match graph.instructions.get(&u).map(|i| i.opcode) {
                Some("get-tuple-element" | "bitcast") if readers.len() < 10_000 => frontier.push(u),
                Some(_) => readers.push(u),
                None => {}
            }
        }
    }
    // One entry per array leaf (JAX passes thousands of arguments as one tuple).
    // Each subshape is carried with its index: looking a tuple element
    // up again by index would walk the tuple once per element.
    let mut leaves: Vec<(Vec<i64>, String)> = Vec::new();
    let mut stack: Vec<(Vec<i64>, ShapeView<'_>)> = vec![(Vec::new(), shape)];
    while let Some((index, sub)) = stack.pop() {
        let elements: Vec<ShapeView<'_>> = sub.tuple_shapes().collect();
        if elements.is_empty() {
            leaves.push((index, shape_text(Some(sub))));
        } else if leaves.len() + stack.len() < 100_000 {
            for (i, element) in elements.into_iter().enumerate().rev() {
                let mut next = index.clone();
                next.push(i as i64);
                stack.push((next, element));
            }
        }
    }
    Some(ParameterFacts {
        number: instruction.parameter_number,
        feeds,
        readers,
        leaves,
    })
}

/// Users of every instruction and the computations, to follow a value.
struct Graph<'a> {
    /// The entry computation's parameters ([`Graph::entry_parameters`]).
    entry_parameters: std::cell::OnceCell<Vec<ParameterFacts>>,
    hlo: &'a Hlo<'a>,
    instructions: HashMap<i64, &'a Instruction<'a>>,
    users: HashMap<i64, Vec<i64>>,
    /// (operand, user) → the operand's positions in the user, ascending, for
    /// users of more than [`SCANNED_OPERANDS`] operands: a root or loop
    /// tuple has thousands, too many to scan at every visit.
    positions: HashMap<(i64, i64), Vec<usize>>,
    /// Parameter instructions of each computation, by parameter number.
    parameters: HashMap<i64, HashMap<i64, i64>>,
}

impl<'a> Graph<'a> {
    fn new(hlo: &'a Hlo<'a>, module: &'a HloModule<'a>) -> Self {
        let mut instructions = HashMap::with_capacity(module.instructions.len());
        let mut users: HashMap<i64, Vec<i64>> = HashMap::new();
        let mut parameters: HashMap<i64, HashMap<i64, i64>> = HashMap::new();
        for c in &module.computations {
            for i in module.instructions_of(c) {
                instructions.insert(i.id, i);
                for &o in hlo.ints(i.operand_ids) {
                    users.entry(o).or_default().push(i.id);
                }
                if i.opcode == "parameter" {
                    parameters
                        .entry(c.id)
                        .or_default()
                        .insert(i.parameter_number, i.id);
                }
            }
        }
        let mut positions: HashMap<(i64, i64), Vec<usize>> = HashMap::new();
        for (&id, i) in &instructions {
            let operands = hlo.ints(i.operand_ids);
            if operands.len() <= SCANNED_OPERANDS {
                continue;
            }
            for (k, &o) in operands.iter().enumerate() {
                positions.entry((o, id)).or_default().push(k);
            }
        }
        Graph {
            entry_parameters: std::cell::OnceCell::new(),
            hlo,
            instructions,
            users,
            positions,
            parameters,
        }
    }

    /// The facts of the entry computation's parameters, found at the first call.
    fn entry_parameters(
        &self,
        module: &HloModule<'_>,
        entry: &Computation<'_>,
    ) -> &[ParameterFacts] {
        self.entry_parameters.get_or_init(|| {
            module
                .instructions_of(entry)
                .iter()
                .filter(|i| i.opcode == "parameter")
                .filter_map(|i| parameter_facts(self, i))
                .collect()
        })
    }

    /// Where `operand` is among the operands of `user`.
    fn positions_of(&self, operand: i64, user: i64) -> Vec<usize> {
        let operands = self
            .instructions
            .get(&user)
            .map_or(&[][..], |u| self.hlo.ints(u.operand_ids));
        if operands.len() <= SCANNED_OPERANDS {
            return (0..operands.len())
                .filter(|&k| operands.get(k) == Some(&operand))
                .collect();
        }
        self.positions
            .get(&(operand, user))
            .cloned()
            .unwrap_or_default()
    }

    /// Whether the value of `start` reaches a dot or a convolution: through
    /// users, into fusions and calls (the called computation's parameter),
    /// through tuples into loops (the element's `get-tuple-element`).
    fn reaches_contraction(&self, start: i64) -> bool {
        // State: an instruction whose value we hold, and the tuple element we
        // hold of it when it is a tuple we were put into (None: all of it).
        let mut seen: HashSet<(i64, Option<i64>)> = HashSet::new();
        let mut stack = vec![(start, None::<i64>)];
        while let Some((id, element)) = stack.pop() {
            if !seen.insert((id, element)) || seen.len() > MAX_VISITS {
                if seen.len() > MAX_VISITS {
                    return false;
                }
                continue;
            }
            for &user in self.users.get(&id).map_or(&[][..], Vec::as_slice) {
                let Some(u) = self.instructions.get(&user) else {
                    continue;
                };
                match u.opcode {
                    "dot" | "convolution" | "ragged-dot" => {
                        if element.is_none() {
                            return true;
                        }
                    }
                    "get-tuple-element" => {
                        if element.is_none_or(|e| e == u.tuple_index) {
                            stack.push((user, None));
                        }
                    }
                    "tuple" => {
                        if element.is_none() {
                            for k in self.positions_of(id, user) {
                                stack.push((user, Some(k as i64)));
                            }
                        }
                    }
                    _ => {
                        // Into called computations: operand k is parameter k
                        // (fusion, call, custom-call, while body/condition).
                        let positions = self.positions_of(id, user);
                        for &c in self.hlo.ints(u.called_computation_ids) {
                            for &k in &positions {
                                let k = if u.opcode == "while" { 0 } else { k as i64 };
                                if let Some(&p) = self.parameters.get(&c).and_then(|ps| ps.get(&k))
                                {
                                    stack.push((p, element));
                                }
                            }
                        }
                        if element.is_none() {
                            stack.push((user, None));
                        } else if u.opcode == "while" {
                            // The loop's result holds the same element.
                            stack.push((user, element));
                        }
                    }
                }
            }
        }
        false
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

impl SchedulePositions {
    fn new(
        hlo: &Hlo<'_>,
        module: &HloModule<'_>,
        entry: &Computation<'_>,
        instructions: &[String],
    ) -> Self {
        let sequence: Vec<i64> = module
            .sequence(entry.id)
            .map(|s| hlo.ints(s).to_vec())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| module.instructions_of(entry).iter().map(|i| i.id).collect());
        let order: HashMap<i64, usize> = sequence
            .iter()
            .enumerate()
            .map(|(k, &id)| (id, k))
            .collect();
        let by_name: HashMap<&str, usize> = module
            .instructions_of(entry)
            .iter()
            .filter_map(|i| Some((i.name, *order.get(&i.id)?)))
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
