//! The [`HeapProgram`] of one HloProto in one memory space: the buffers,
//! allocations and heap-simulator events the Memory Viewer replays
//! (`memory_viewer.rs` picks the same trace), and the entry computation's
//! parameters with what they feed, for the what-if engine (issue 25).

use std::collections::{HashMap, HashSet};

use oomscope_proto::xla::heap_simulator_trace::event::Kind as EventKind;
use oomscope_proto::xla::{HloComputationProto, HloInstructionProto, HloModuleProto};
use oomscope_report::program::{
    EntryParameter, HeapEvent, HeapEventKind, HeapProgram, ProgramAllocation, ProgramBuffer,
};
use oomscope_report::MemoryColor;

use crate::memory_viewer::Module;
use crate::shape::{human_string_with_layout, shape_from_proto, subshape};

/// Visits at most this many (instruction, tuple index) states per parameter
/// when following it to a contraction: bounded whatever the module.
const MAX_VISITS: usize = 20_000;

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
                dying_operands: Vec::new(),
                dim_classes: Vec::new(),
                softmax: false,
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
        let defined: HashMap<(i64, &[i64]), Vec<usize>> = self
            .buffers()
            .iter()
            .enumerate()
            .filter_map(|(i, b)| Some(((b.instruction.id, b.shape_index()), *buffer_slot.get(&i)?)))
            .fold(HashMap::new(), |mut m, (k, v)| {
                m.entry(k).or_insert_with(Vec::new).push(v);
                m
            });
        let dying = DyingOperands::new(hlo_module);
        let mut dims = crate::dims::DimClasses::of(hlo_module);
        for (i, b) in self.buffers().iter().enumerate() {
            let Some(&slot) = buffer_slot.get(&i) else {
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
            let operands = dying.of(b.instruction, |key| {
                defined.get(&key).cloned().unwrap_or_default()
            });
            let f32 = b
                .instruction
                .shape
                .as_ref()
                .and_then(|s| subshape(s, b.shape_index()))
                .is_some_and(|s| s.element_type == oomscope_proto::xla::PrimitiveType::F32 as i32);
            let softmax = f32 && dying.softmax_value(b.instruction.id, b.shape_index());
            if let Some(x) = program.buffers.get_mut(slot) {
                x.dying_operands = operands.into_iter().filter(|&o| o != slot).collect();
                x.softmax = softmax;
            }
        }
        entry_facts(hlo_module, &mut program, &mut dims, |id| {
            self.buffers()
                .iter()
                .enumerate()
                .filter(|(_, b)| b.instruction.id == id)
                .filter_map(|(i, _)| buffer_slot.get(&i).copied())
                .collect()
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
    dims: &mut crate::dims::DimClasses,
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
    let positions = SchedulePositions::new(module, entry, &program.instructions);
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
    for instruction in &entry.instructions {
        if instruction.opcode != "parameter" {
            continue;
        }
        let Some(shape) = instruction.shape.as_ref() else {
            continue;
        };
        let feeds = graph.reaches_contraction(instruction.id);
        // Readers in the entry computation (through get-tuple-element and bitcast).
        let mut readers = Vec::new();
        let mut frontier = vec![instruction.id];
        while let Some(id) = frontier.pop() {
            for &u in graph.users.get(&id).map_or(&[][..], Vec::as_slice) {
                match graph.instructions.get(&u).map(|i| i.opcode.as_str()) {
                    Some("get-tuple-element" | "bitcast") if readers.len() < 10_000 => {
                        frontier.push(u)
                    }
                    Some(_) => readers.push(u),
                    None => {}
                }
            }
        }
        let uses: Vec<usize> = readers.iter().filter_map(|&r| positions.of(r)).collect();
        let (first_use, last_use) = (uses.iter().min().copied(), uses.iter().max().copied());
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
            let allocation = program.allocations.iter().position(|a| {
                a.parameter_number == Some(instruction.parameter_number)
                    && a.parameter_shape_index == index
            });
            program.parameters.push(EntryParameter {
                dim_classes: dims.classes(instruction.id, &index),
                number: instruction.parameter_number,
                shape: own_shape_text(instruction, &index),
                shape_index: index,
                allocation,
                feeds_contraction: feeds,
                first_use,
                last_use,
            });
        }
    }
    program
        .parameters
        .sort_by(|a, b| (a.number, &a.shape_index).cmp(&(b.number, &b.shape_index)));
}

/// Users of every instruction and the computations, to follow a value.
struct Graph<'a> {
    instructions: HashMap<i64, &'a HloInstructionProto>,
    users: HashMap<i64, Vec<i64>>,
    /// Parameter instructions of each computation, by parameter number.
    parameters: HashMap<i64, HashMap<i64, i64>>,
}

impl<'a> Graph<'a> {
    fn new(module: &'a HloModuleProto) -> Self {
        let mut instructions = HashMap::new();
        let mut users: HashMap<i64, Vec<i64>> = HashMap::new();
        let mut parameters: HashMap<i64, HashMap<i64, i64>> = HashMap::new();
        for c in &module.computations {
            for i in &c.instructions {
                instructions.insert(i.id, i);
                for &o in &i.operand_ids {
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
        Graph {
            instructions,
            users,
            parameters,
        }
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
                match u.opcode.as_str() {
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
                            for (k, &o) in u.operand_ids.iter().enumerate() {
                                if o == id {
                                    stack.push((user, Some(k as i64)));
                                }
                            }
                        }
                    }
                    _ => {
                        // Into called computations: operand k is parameter k
                        // (fusion, call, custom-call, while body/condition).
                        let positions: Vec<usize> = u
                            .operand_ids
                            .iter()
                            .enumerate()
                            .filter(|(_, &o)| o == id)
                            .map(|(k, _)| k)
                            .collect();
                        for &c in &u.called_computation_ids {
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
    fn new(module: &HloModuleProto, entry: &HloComputationProto, instructions: &[String]) -> Self {
        let sequence: Vec<i64> = module
            .schedule
            .as_ref()
            .and_then(|s| s.sequences.get(&entry.id))
            .map(|s| s.instruction_ids.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| entry.instructions.iter().map(|i| i.id).collect());
        let order: HashMap<i64, usize> = sequence
            .iter()
            .enumerate()
            .map(|(k, &id)| (id, k))
            .collect();
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

/// The operands of an instruction whose last reader it is, in its
/// computation's schedule: the candidates of XLA's heap simulator for
/// reusing an operand's memory for the instruction's output (an operand
/// value is shared only when its live range ends at the user).
struct DyingOperands<'a> {
    instructions: HashMap<i64, &'a HloInstructionProto>,
    users: HashMap<i64, Vec<i64>>,
    /// Each scheduled instruction's computation and place in its sequence.
    order: HashMap<i64, (i64, usize)>,
    /// (computation, parameter number) → the parameter instruction.
    parameters: HashMap<(i64, i64), i64>,
    /// Computation id → its root instruction.
    roots: HashMap<i64, i64>,
    /// Root instruction of a fused computation → the fusions calling it.
    fused_callers: HashMap<i64, Vec<i64>>,
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
    fn new(module: &'a HloModuleProto) -> Self {
        let mut instructions = HashMap::new();
        let mut users: HashMap<i64, Vec<i64>> = HashMap::new();
        for c in &module.computations {
            for i in &c.instructions {
                instructions.insert(i.id, i);
                for &o in &i.operand_ids {
                    users.entry(o).or_default().push(i.id);
                }
            }
        }
        let mut parameters = HashMap::new();
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
        let mut order = HashMap::new();
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
                .fold(HashMap::new(), |mut m: HashMap<i64, Vec<i64>>, (r, f)| {
                    m.entry(r).or_default().push(f);
                    m
                }),
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
