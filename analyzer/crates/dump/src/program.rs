//! The [`HeapProgram`] of a module read from dump text (issue 25): what the
//! what-if engine replays, built from the same values and lifetimes as the
//! `buffer_liveness` report, so that its replay as compiled gives that
//! report's curve and peak (equal to XProf's heap-simulator peak on every
//! fixture; `tests/program.rs` holds it to the HloProto of the same module).
//!
//! What the text gives and the engine needs:
//! - allocations, their kinds and sizes, and which values each holds
//!   (`*-buffer-assignment.txt`);
//! - each value's lifetime in the compiler's flattened schedule (the live
//!   ranges, `*-live-range.txt` or the older buffer assignment's section):
//!   the heap-simulator events are their starts and ends, in schedule
//!   order, as the heap simulator visits an instruction: the values it
//!   defines allocated, then those it was the last to use freed (a value
//!   ending at `t` is live at `t`); values sharing an allocation slot
//!   with touching lifetimes are one buffer, as the heap simulator's
//!   SHARE_WITH makes them;
//! - the entry parameters, what they feed and where they are read, and the
//!   entry outputs (the optimized HLO text, `*.after_optimizations.txt`).
//!
//! What it lacks: the heap simulator's own order among the allocations (or
//! the frees) of one instruction; the peak does not depend on it. Without live ranges the lifetimes are estimated, and no
//! program is built: a prediction would replay an estimate.

// Seeded per process like std's maps (names come from the input), but a
// faster hash: following every entry parameter to a contraction visits
// thousands of (instruction, element) states per module.
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use oomscope_layout::dataflow::{Dataflow, Reach};
use oomscope_layout::{parse_shape, Shape};
use oomscope_report::program::{
    HeapEvent, HeapEventKind, HeapProgram, ParameterReads, ProgramAllocation, ProgramBuffer,
};
use oomscope_report::{BufferCategory, MemoryColor};

use crate::analysis::{
    buffer_name, category_of, display_name, is_indefinite, logical_bytes, Value,
};
use crate::buffer_assignment::BufferAssignment;
use crate::hlo::{HloComputation, HloInstruction, HloModule};

/// Visits at most this many (instruction, tuple element) states per
/// parameter when following it to a contraction: bounded whatever the text.
const MAX_VISITS: usize = 20_000;

/// The program of one module in memory space 0 (HBM). `sequence` is the
/// live ranges' instruction sequence and `values` their values.
pub(crate) fn program(
    name: &str,
    sequence: &[&str],
    values: &[Value<'_>],
    ba: &BufferAssignment<'_>,
    hlo: Option<&HloModule<'_>>,
) -> HeapProgram {
    let mut program = HeapProgram {
        module: name.to_string(),
        memory_space: MemoryColor::Device,
        ..HeapProgram::default()
    };
    // Each instruction's opcode (a remedy reads which op defines a buffer).
    let opcodes: HashMap<&str, &str> = hlo
        .map(|m| {
            m.computations
                .iter()
                .flat_map(|c| c.instructions.iter())
                .map(|i| (i.name, i.opcode))
                .collect()
        })
        .unwrap_or_default();
    let opcode = |instruction: &str| opcodes.get(instruction).copied().unwrap_or("").to_string();
    let mut slot_of: HashMap<u64, usize> = HashMap::new();
    for a in ba.allocations.iter().filter(|a| a.color == 0) {
        slot_of.insert(a.index, program.allocations.len());
        program.allocations.push(ProgramAllocation {
            index: i64::try_from(a.index).unwrap_or(i64::MAX),
            size_bytes: a.size,
            category: category_of(a),
            indefinite: is_indefinite(a),
            parameter_number: a.kinds.parameter.and_then(|p| i64::try_from(p).ok()),
            parameter_shape_index: parameter_shape_index(a.description),
            maybe_live_out: a.kinds.maybe_live_out,
            representative: None,
            output_index: None,
            defined_at: None,
        });
    }
    // Every value the assignment puts in an allocation counted at every
    // point is a buffer of it (the largest stands for it, as in an
    // HloProto), whether or not the live ranges list it.
    for a in ba
        .allocations
        .iter()
        .filter(|a| a.color == 0 && is_indefinite(a))
    {
        let Some(&allocation) = slot_of.get(&a.index) else {
            continue;
        };
        for v in &a.values {
            program.buffers.push(ProgramBuffer {
                id: v.id,
                name: buffer_name(v.instruction, v.index),
                shape: v.shape.to_string(),
                size_bytes: v.size,
                unpadded_bytes: parse_shape(v.shape).map_or(0, |s| logical_bytes(&s)),
                allocation,
                opcode: opcode(v.instruction),
                ..without_dataflow()
            });
            let b = program.buffers.len() - 1;
            if let Some(a) = program.allocations.get_mut(allocation) {
                let best = a.representative.and_then(|r| program.buffers.get(r));
                if best.is_none_or(|r| v.size > r.size_bytes) {
                    a.representative = Some(b);
                }
            }
        }
    }
    // Temporaries are the liveness report's groups: one buffer per slot
    // and touching lifetimes.
    let mut groups: Vec<(&Value<'_>, u64, u64)> = Vec::new(); // representative, start, end
    let mut temporaries: Vec<&Value<'_>> = values
        .iter()
        .filter(|v| v.color == 0 && v.category != BufferCategory::ThreadLocal)
        .filter(|v| !v.indefinite && !v.shape.starts_with('('))
        .collect();
    temporaries.sort_by_key(|v| (v.slot, v.start, v.end));
    for v in temporaries {
        if let Some(previous) = groups.last_mut() {
            if v.slot.is_some() && previous.0.slot == v.slot && v.start <= previous.2 {
                previous.2 = previous.2.max(v.end);
                if v.padded > previous.0.padded {
                    previous.0 = v;
                }
                continue;
            }
        }
        groups.push((v, v.start, v.end));
    }
    // A temporary without an allocation (the assignment does not list it)
    // still has a buffer; it belongs to no allocation of the program.
    let unassigned = program.allocations.len();
    let n = sequence.len();
    let mut allocs: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut frees: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(v, start, end) in &groups {
        let (start, end) = (start as usize, (end as usize).min(n.saturating_sub(1)));
        if start > end || start >= n {
            continue;
        }
        let allocation = v
            .slot
            .and_then(|(a, _)| slot_of.get(&a).copied())
            .unwrap_or(unassigned);
        let b = push_buffer(&mut program, v, allocation, opcode(v.instruction));
        allocs[start].push(b);
        frees[end].push(b);
    }
    // Schedule index reached by each event (non-decreasing).
    let mut reached: Vec<usize> = Vec::new();
    for t in 0..n {
        let events = allocs[t]
            .iter()
            .map(|&b| (HeapEventKind::Alloc, b))
            .chain(frees[t].iter().map(|&b| (HeapEventKind::Free, b)));
        for (kind, b) in events {
            program.events.push(HeapEvent {
                kind,
                buffer: Some(b),
            });
            program.instructions.push(sequence[t].to_string());
            reached.push(t);
        }
    }
    program.instructions.push(String::new());
    // Replay point i is the heap before event i; it is drawn at the
    // instruction that event belongs to, the last point at the last one.
    program.positions = reached
        .iter()
        .map(|&t| t as u64)
        .chain(std::iter::once(n.saturating_sub(1) as u64))
        .collect();
    if let Some(module) = hlo {
        let order: HashMap<&str, usize> =
            sequence.iter().enumerate().map(|(i, s)| (*s, i)).collect();
        // One more entry for the end, as an HloProto's program counts its
        // positions (an instruction after every event is after the end).
        let mut reached = reached;
        reached.extend(reached.last().copied());
        let position = |instruction: &str| -> Option<usize> {
            let t = *order.get(instruction)?;
            Some(reached.partition_point(|&r| r < t))
        };
        entry_facts(module, &mut program, &position);
    }
    program
}

/// A buffer's fields dump text cannot give: it names no readers by
/// position, no dying operands and no dimension classes, so the remat
/// what-if finds no block inputs to keep, bf16 no operand to reuse, and
/// batch matches sizes only.
fn without_dataflow() -> ProgramBuffer {
    ProgramBuffer::default()
}

fn push_buffer(
    program: &mut HeapProgram,
    v: &Value<'_>,
    allocation: usize,
    opcode: String,
) -> usize {
    program.buffers.push(ProgramBuffer {
        id: v.id,
        name: display_name(v),
        shape: v.shape.to_string(),
        size_bytes: v.padded,
        unpadded_bytes: v.logical,
        allocation,
        opcode,
        ..without_dataflow()
    });
    program.buffers.len() - 1
}

/// `parameter 3, shape |f32[8]| at ShapeIndex {1,0}, ...` → `[1, 0]`.
fn parameter_shape_index(description: &str) -> Vec<i64> {
    description
        .split_once("at ShapeIndex {")
        .and_then(|(_, rest)| rest.split_once('}'))
        .map(|(inside, _)| {
            inside
                .split(',')
                .filter_map(|e| e.trim().parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Entry parameters (one per array leaf, with their allocation, whether
/// they reach a contraction, and their first and last reader), and the
/// output index and definition of each maybe-live-out allocation.
fn entry_facts(
    module: &HloModule<'_>,
    program: &mut HeapProgram,
    position: &dyn Fn(&str) -> Option<usize>,
) {
    let Some(entry) = module.entry_computation() else {
        return;
    };
    let graph = Graph::new(module);
    if let Some(root) = entry.instructions.iter().find(|i| i.is_root) {
        let leaves: Vec<(Vec<i64>, &str)> = if root.opcode == "tuple" {
            root.operand_names()
                .enumerate()
                .map(|(i, name)| (vec![i as i64], name))
                .collect()
        } else {
            vec![(Vec::new(), root.name)]
        };
        let by_instruction: HashMap<&str, Vec<usize>> =
            program
                .buffers
                .iter()
                .enumerate()
                .fold(HashMap::new(), |mut m, (i, b)| {
                    let instruction = b.name.split('{').next().unwrap_or(&b.name);
                    m.entry(instruction).or_insert_with(Vec::new).push(i);
                    m
                });
        let mut outputs: Vec<(usize, Vec<i64>, Option<usize>)> = Vec::new();
        for (index, name) in leaves {
            for &b in by_instruction.get(name).map_or(&[][..], Vec::as_slice) {
                if let Some(a) = program.buffers.get(b).map(|b| b.allocation) {
                    outputs.push((a, index.clone(), position(name)));
                }
            }
        }
        for (a, index, at) in outputs {
            if let Some(a) = program.allocations.get_mut(a) {
                if a.maybe_live_out && a.output_index.is_none() {
                    a.output_index = Some(index);
                    a.defined_at = at;
                }
            }
        }
    }
    let held = program.parameter_allocations();
    for instruction in &entry.instructions {
        if instruction.opcode != "parameter" {
            continue;
        }
        let Ok(number) = instruction.operands.trim().parse::<i64>() else {
            continue;
        };
        let Ok(shape) = parse_shape(instruction.shape) else {
            continue;
        };
        let feeds = graph.reaches_contraction_via(instruction.name, None);
        // Readers in the entry computation (through get-tuple-element and
        // bitcast), each with the value it reads.
        let mut readers: Vec<(&str, &str)> = Vec::new();
        let mut frontier = vec![instruction.name];
        let mut seen = HashSet::new();
        while let Some(name) = frontier.pop() {
            if !seen.insert(name) || seen.len() > MAX_VISITS {
                continue;
            }
            for &u in graph.users.get(name).map_or(&[][..], Vec::as_slice) {
                match graph.instructions.get(u).map(|i| i.opcode) {
                    Some("get-tuple-element" | "bitcast") => frontier.push(u),
                    Some(_) => readers.push((name, u)),
                    None => {}
                }
            }
        }
        let uses: Vec<usize> = readers.iter().filter_map(|&(_, r)| position(r)).collect();
        let mut contraction_in_loop = false;
        let contraction_uses: Vec<usize> = if feeds {
            readers
                .iter()
                .filter(|&&(value, reader)| graph.reaches_contraction_via(value, Some(reader)))
                .filter_map(|&(_, reader)| {
                    if graph
                        .instructions
                        .get(reader)
                        .is_some_and(|i| i.opcode == "while")
                    {
                        contraction_in_loop = true;
                    }
                    position(reader)
                })
                .collect()
        } else {
            Vec::new()
        };
        let reads = ParameterReads::new(feeds, &uses, &contraction_uses, contraction_in_loop);
        for (index, leaf) in leaves(&shape) {
            program.push_parameter((number, index), leaf.to_string(), &reads, &held);
        }
    }
    program
        .parameters
        .sort_by(|a, b| (a.number, &a.shape_index).cmp(&(b.number, &b.shape_index)));
}

/// The array leaves of a shape with their indices (at most 100,000).
fn leaves(shape: &Shape) -> Vec<(Vec<i64>, &Shape)> {
    let mut out = Vec::new();
    let mut stack: Vec<(Vec<i64>, &Shape)> = vec![(Vec::new(), shape)];
    while let Some((index, s)) = stack.pop() {
        match s {
            Shape::Tuple(elements) if out.len() + stack.len() < 100_000 => {
                for (i, e) in elements.iter().enumerate().rev() {
                    let mut next = index.clone();
                    next.push(i as i64);
                    stack.push((next, e));
                }
            }
            Shape::Array(_) => out.push((index, s)),
            _ => {}
        }
    }
    out
}

/// The instructions of every computation by name, their users, and the
/// computations each instruction calls (by name among its attributes:
/// `calls=`, `body=`, `condition=`, `to_apply=`, `branch_computations=`).
/// What a walk asks at every step (the computations an instruction calls,
/// a computation's parameter `k`) is found once here: a module's entry
/// parameters are followed one by one, through the same instructions.
struct Graph<'m, 'a> {
    instructions: HashMap<&'a str, &'m HloInstruction<'a>>,
    users: HashMap<&'a str, Vec<&'a str>>,
    /// The computations each instruction of `instructions` calls (only
    /// those that call one).
    calls: HashMap<&'a str, Vec<&'m HloComputation<'a>>>,
    /// Parameter `k` of a computation, by (computation name, `k`): the
    /// first instruction of that number in the computation the name gives.
    parameters: HashMap<(&'a str, i64), &'a str>,
    /// The `get-tuple-element` users of each (instruction, element).
    element_users: HashMap<(&'a str, i64), Vec<&'a str>>,
    /// The other users of each instruction.
    value_users: HashMap<&'a str, Vec<&'a str>>,
    /// Whether each value followed reaches a contraction.
    reach: Reach<&'a str>,
}

impl<'m, 'a> Graph<'m, 'a> {
    fn new(module: &'m HloModule<'a>) -> Self {
        let mut instructions = HashMap::new();
        let mut users: HashMap<&'a str, Vec<&'a str>> = HashMap::new();
        for c in &module.computations {
            for i in &c.instructions {
                instructions.insert(i.name, i);
                for o in i.operand_names() {
                    users.entry(o).or_default().push(i.name);
                }
            }
        }
        let computations: HashMap<&'a str, &'m HloComputation<'a>> =
            module.computations.iter().map(|c| (c.name, c)).collect();
        let calls = instructions
            .iter()
            .filter_map(|(&name, i)| {
                let called = Self::called(&computations, i);
                (!called.is_empty()).then_some((name, called))
            })
            .collect();
        let mut parameters = HashMap::new();
        for c in computations.values() {
            for i in c.instructions.iter().filter(|i| i.opcode == "parameter") {
                if let Ok(k) = i.operands.trim().parse::<i64>() {
                    parameters.entry((c.name, k)).or_insert(i.name);
                }
            }
        }
        // Each user as the table above names it (the last instruction of
        // a repeated name).
        let mut element_users: HashMap<(&'a str, i64), Vec<&'a str>> = HashMap::new();
        let mut value_users: HashMap<&'a str, Vec<&'a str>> = HashMap::new();
        for (&o, list) in &users {
            for &u in list {
                match instructions.get(u) {
                    Some(i) if i.opcode == "get-tuple-element" => {
                        if let Some(k) = tuple_index(i) {
                            element_users.entry((o, k)).or_default().push(u);
                        }
                    }
                    _ => value_users.entry(o).or_default().push(u),
                }
            }
        }
        Graph {
            instructions,
            users,
            calls,
            parameters,
            element_users,
            value_users,
            reach: Reach::default(),
        }
    }

    fn called(
        computations: &HashMap<&'a str, &'m HloComputation<'a>>,
        i: &HloInstruction<'a>,
    ) -> Vec<&'m HloComputation<'a>> {
        i.attributes
            .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
            .filter_map(|token| computations.get(token).copied())
            .collect()
    }

    /// Whether the value of `start` reaches a dot or a convolution
    /// ([`oomscope_layout::dataflow`], the walk of `oomscope_xla`'s HloProto
    /// program). `only`: through this reader of `start` alone.
    fn reaches_contraction_via(&self, start: &'a str, only: Option<&'a str>) -> bool {
        self.reach.reaches(self, start, only)
    }
}

impl<'a> Dataflow for Graph<'_, 'a> {
    type Id = &'a str;

    fn users(&self, id: &'a str) -> &[&'a str] {
        self.users.get(id).map_or(&[][..], Vec::as_slice)
    }

    fn element_users(&self, id: &'a str, element: i64) -> &[&'a str] {
        self.element_users
            .get(&(id, element))
            .map_or(&[][..], Vec::as_slice)
    }

    fn value_users(&self, id: &'a str) -> &[&'a str] {
        self.value_users.get(id).map_or(&[][..], Vec::as_slice)
    }

    fn opcode(&self, id: &'a str) -> Option<&str> {
        self.instructions.get(id).map(|i| i.opcode)
    }

    fn tuple_index(&self, id: &'a str) -> Option<i64> {
        tuple_index(self.instructions.get(id)?)
    }

    fn calls(&self, user: &'a str) -> bool {
        self.calls.contains_key(user)
    }

    fn operand_positions(&self, user: &'a str, operand: &'a str, out: &mut Vec<usize>) {
        if let Some(u) = self.instructions.get(user) {
            out.extend(
                u.operand_names()
                    .enumerate()
                    .filter(|&(_, o)| o == operand)
                    .map(|(k, _)| k),
            );
        }
    }

    fn called_parameters(&self, user: &'a str, k: i64, out: &mut Vec<&'a str>) {
        for c in self.calls.get(user).map_or(&[][..], Vec::as_slice) {
            if let Some(&p) = self.parameters.get(&(c.name, k)) {
                out.push(p);
            }
        }
    }
}

/// A `get-tuple-element`'s index.
fn tuple_index(i: &HloInstruction<'_>) -> Option<i64> {
    i.attribute("index").and_then(|i| i.parse::<i64>().ok())
}
