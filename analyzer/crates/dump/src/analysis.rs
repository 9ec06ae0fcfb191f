//! The module analysis from dump text alone: heap over program order, the
//! peak, the buffers live at the peak, categories and totals.
//!
//! Two reports are made per module when the dump has the compiler's live ranges
//! (`*-live-range.txt`, or the `HloLiveRange` section older compilers append to
//! `-buffer-assignment.txt`), because the compiler's two notions of a peak differ:
//!
//! 1. `peak_kind = "buffer_liveness"` (first): memory space 0 as XProf's Memory
//!    Viewer counts it: every parameter, constant and maybe-live-out allocation
//!    at its (padded) allocation size at every point, in both series (XProf does
//!    the same), plus the temporary values at their padded buffer-assignment
//!    size while live. Values of one allocation at one offset whose lifetimes
//!    touch are one buffer (in-place reuse, as the heap simulator's
//!    SHARE_WITH). A tuple's index table is not counted: XLA gives
//!    tuple-shaped buffers allocations the heap simulator never sees, so
//!    XProf never counts them either. The peak is the first maximum. With the
//!    compiler's live ranges it equals XProf's heap-simulator peak, padded and
//!    unpadded, on every fixture (`tests/dumps.rs`, `agreement_with_xprof`).
//! 2. `peak_kind = "live_range"`: the compiler's own `Live ranges at N (peak)`
//!    reproduced: every value of every memory space, live at `t` when
//!    `start <= t <= end`, at its logical size (`ShapeUtil::ByteSizeOf`,
//!    unpadded; values sharing an allocation slot, e.g. a while loop's tuple
//!    aliases, each count); `peak_position` is the compiler's peak moment, found as
//!    `HloLiveRange::ComputePeakMemoryMoment` does (with the size of the
//!    defining instruction's whole shape, so a tuple-producing fusion counts 16
//!    bytes there); `peak_unpadded_bytes` is the sum it lists. It can be far
//!    from the real maximum; `compiler_peak_bytes` holds the figure the file states.
//!    The padded view (`heap_bytes`, `peak_bytes`) counts each allocation slot
//!    once while any of its values is live, so aliases are not counted twice.
//!
//! Without live ranges (some older or partial dumps), lifetimes are estimated
//! from the entry computation's schedule and the uses of each value
//! (`peak_kind = "buffer_liveness_estimated"`).

use std::borrow::Cow;
// Seeded per process like std's maps (names come from the input), but a
// faster hash: the maps keyed by instruction names are most of a module's
// analysis time after parsing.
use foldhash::{HashMap, HashMapExt};

use oomscope_layout::{parse_shape, Shape};
use oomscope_report::program::HeapProgram;
use oomscope_report::{
    AllocationFlags, BufferCategory, BufferLifetime, InputError, MemoryColor, ModuleReport,
    PeakBuffer, PeakKind, SourceKind,
};

use crate::buffer_assignment::{self, Allocation, AssignedValue, BufferAssignment};
use crate::group::{DumpFileKind, DumpModule};
use crate::hlo::{HloInstruction, HloModule};
use crate::live_range::{self, LiveRanges};
use crate::memory_report;
use crate::total_bytes;

/// A value's allocation and its entry there, when the buffer assignment has it.
type Assigned<'b, 'a> = Option<(&'b Allocation<'a>, &'b AssignedValue<'a>)>;

/// One value with everything the reports need.
#[derive(Debug, Clone)]
pub(crate) struct Value<'a> {
    pub(crate) id: i64,
    pub(crate) instruction: &'a str,
    pub(crate) index: Cow<'a, str>,
    pub(crate) shape: Cow<'a, str>,
    /// Buffer-assignment size, else the layout's padded size.
    pub(crate) padded: u64,
    /// `ShapeUtil::ByteSizeOf(shape, 8)`: array bytes unpadded, 8 per tuple element.
    pub(crate) logical: u64,
    pub(crate) color: i64,
    pub(crate) category: BufferCategory,
    /// `(allocation index, offset)` when assigned.
    pub(crate) slot: Option<(u64, u64)>,
    pub(crate) indefinite: bool,
    /// Its allocation is maybe-live-out (a program output).
    live_out: bool,
    pub(crate) start: u64,
    pub(crate) end: u64,
}

/// Analyse one module's files; problems with its files come back as errors.
pub fn analyze_module(module: &DumpModule<'_>) -> (Vec<ModuleReport>, Vec<InputError>) {
    let (reports, errors, _) = analyze_module_keeping_program(module);
    (reports, errors)
}

/// [`analyze_module`], also giving the module's program for the what-if
/// replay ([`crate::program`]), or why there is none, in one line.
pub fn analyze_module_keeping_program(
    module: &DumpModule<'_>,
) -> (
    Vec<ModuleReport>,
    Vec<InputError>,
    Result<HeapProgram, String>,
) {
    let mut errors = Vec::new();
    let mut used_files = Vec::new();

    // HLO text: the optimized module is the one the buffer assignment belongs to.
    let hlo_choice = [
        DumpFileKind::HloAfterOptimizations,
        DumpFileKind::HloAfterBufferAssignment,
        DumpFileKind::HloOomIntermediate,
        DumpFileKind::HloBeforeOptimizations,
    ]
    .iter()
    .find_map(|&kind| module.file(kind));
    let hlo = hlo_choice.map(|(path, text)| {
        let parse = HloModule::parse(text);
        report_problems(
            &mut errors,
            path,
            parse.problems.iter().map(|p| (p.line, p.message.as_str())),
        );
        used_files.push(path);
        parse.module
    });

    let values_file = module
        .file(DumpFileKind::BufferAssignmentValues)
        .map(|(path, text)| {
            let parsed = buffer_assignment::parse(text);
            report_problems(
                &mut errors,
                path,
                parsed.problems.iter().map(|(l, m)| (*l, m.as_str())),
            );
            parsed
        });
    let assignment = module.file(DumpFileKind::BufferAssignment).map(|(path, text)| {
        let parsed = buffer_assignment::parse(text);
        report_problems(&mut errors, path, parsed.problems.iter().map(|(l, m)| (*l, m.as_str())));
        // `Total bytes used` is in the buffer assignment (older) or the values file (newer).
        let stated = parsed.total_bytes_used.or_else(|| values_file.as_ref().and_then(|v| v.total_bytes_used));
        if parsed.allocations.is_empty() {
            errors.push(InputError {
                input: path.into(),
                message: "no `allocation N: size ...` lines: not a buffer assignment".into(),
            });
        } else if let Some(stated) = stated.filter(|&s| s != parsed.allocation_bytes()) {
            errors.push(InputError {
                input: path.into(),
                message: format!(
                    "allocations sum to {} bytes but the dump states `Total bytes used: {stated}`: the file is truncated or altered",
                    parsed.allocation_bytes()
                ),
            });
        }
        used_files.push(path);
        (text, parsed)
    });

    // The compiler's live ranges: their own file, else inside the buffer assignment.
    let live = match module.file(DumpFileKind::LiveRange) {
        Some((path, text)) => match live_range::parse(text) {
            Some(parsed) => {
                report_problems(
                    &mut errors,
                    path,
                    parsed.problems.iter().map(|(l, m)| (*l, m.as_str())),
                );
                used_files.push(path);
                Some(parsed)
            }
            None => {
                errors.push(InputError {
                    input: path.into(),
                    message: "no `HloLiveRange (max N):` section".into(),
                });
                None
            }
        },
        None => assignment
            .as_ref()
            .and_then(|(text, _)| live_range::parse(text)),
    };

    if let Some((path, text)) = module.file(DumpFileKind::MemoryUsageReport) {
        let parsed = memory_report::parse(text);
        report_problems(
            &mut errors,
            path,
            parsed.problems.iter().map(|(l, m)| (*l, m.as_str())),
        );
    }

    let name = hlo
        .as_ref()
        .map(|m| m.name)
        .filter(|n| !n.is_empty())
        .unwrap_or(module.file_name);
    let input = used_files.join(", ");
    let empty_ba = BufferAssignment::default();
    let ba = assignment.as_ref().map_or(&empty_ba, |(_, parsed)| parsed);
    let hlo_index = hlo.as_ref().map(instruction_index).unwrap_or_default();
    let source_of = |instruction: &str| -> (String, String, String) {
        match (hlo.as_ref(), hlo_index.get(instruction)) {
            (Some(module), Some(inst)) => (
                inst.metadata.op_name.to_string(),
                module.source_of(&inst.metadata),
                inst.opcode.to_string(),
            ),
            _ => Default::default(),
        }
    };

    let (sequence, values, estimated) = match &live {
        Some(live) if !live.buffers.is_empty() => {
            let values = values_from_live_ranges(live, ba, &hlo_index);
            (live.instructions.clone(), values, false)
        }
        _ => {
            let Some(module_hlo) = hlo.as_ref() else {
                if errors.is_empty() {
                    errors.push(InputError {
                        input: module.prefix.into(),
                        message: "neither HLO text nor live ranges: no analysis possible from these files".into(),
                    });
                }
                return (Vec::new(), errors, Err(NO_LIVE_RANGES.into()));
            };
            let uses = values_file
                .as_ref()
                .filter(|v| !v.used_values.is_empty())
                .unwrap_or(ba);
            estimate_values(module_hlo, ba, uses, &hlo_index)
        }
    };
    if sequence.is_empty() {
        return (Vec::new(), errors, Err(NO_LIVE_RANGES.into()));
    }

    let base = ModuleReport {
        name: name.to_string(),
        memory_space: MemoryColor::Device,
        source_kind: SourceKind::XlaDumpText,
        input,
        instructions: sequence.iter().map(|s| s.to_string()).collect(),
        // The header names replicas and partitions beyond 1; a module
        // without a header line says nothing (replica_count stays 0).
        chips: hlo
            .as_ref()
            .filter(|m| m.replica_count > 0)
            .map(|m| m.replica_count.saturating_mul(m.num_partitions.max(1))),
        ..Default::default()
    };
    let totals = Totals::of(&ba.allocations);
    let mut reports = vec![liveness_report(
        &base, &values, &totals, estimated, &source_of,
    )];
    if let Some(live) = live.as_ref().filter(|l| !l.buffers.is_empty()) {
        reports.push(live_range_report(
            &base, &values, &totals, live, &hlo_index, &source_of,
        ));
    }
    let program = if estimated {
        Err(NO_LIVE_RANGES.into())
    } else if ba.allocations.is_empty() {
        Err("the dump has no buffer assignment (`*-buffer-assignment.txt`): no allocations to replay".into())
    } else {
        Ok(crate::program::program(
            name,
            &sequence,
            &values,
            ba,
            hlo.as_ref(),
        ))
    };
    (reports, errors, program)
}

/// Why a dump module without the compiler's live ranges has no program.
pub const NO_LIVE_RANGES: &str = "the dump has no live ranges (`*-live-range.txt`, or the section older compilers append to the buffer assignment): its lifetimes are estimated from the schedule, and a what-if would replay an estimate";

/// One error per file: its first problems (truncation first: it explains the rest).
fn report_problems<'p>(
    errors: &mut Vec<InputError>,
    path: &str,
    problems: impl Iterator<Item = (u32, &'p str)>,
) {
    let mut problems: Vec<(u32, &str)> = problems.collect();
    if problems.is_empty() {
        return;
    }
    problems.sort_by_key(|(_, message)| !message.contains("truncated"));
    let shown: Vec<String> = problems
        .iter()
        .take(3)
        .map(|&(line, message)| {
            if line == 0 {
                message.to_string()
            } else {
                format!("line {line}: {message}")
            }
        })
        .collect();
    let more = match problems.len() {
        n if n > 3 => format!(" (and {} more)", n - 3),
        _ => String::new(),
    };
    errors.push(InputError {
        input: path.into(),
        message: format!("{}{more}", shown.join("; ")),
    });
}

fn instruction_index<'m, 'a>(
    module: &'m HloModule<'a>,
) -> HashMap<&'a str, &'m HloInstruction<'a>> {
    module
        .computations
        .iter()
        .flat_map(|c| c.instructions.iter())
        .map(|i| (i.name, i))
        .collect()
}

/// `ShapeUtil::ByteSizeOf(shape, 8)`: the buffer's own bytes, unpadded.
pub(crate) fn logical_bytes(shape: &Shape) -> u64 {
    match shape {
        Shape::Array(array) => array.unpadded_bytes(),
        Shape::Tuple(elements) => 8 * elements.len() as u64,
        Shape::Token => 0,
        Shape::Opaque => 8,
    }
}

/// The subshape at a printed shape index (`{}`, `{1}`, `{0,2}`).
fn subshape<'s>(shape: &'s Shape, index: &str) -> Option<&'s Shape> {
    let inner = index.trim_start_matches('{').trim_end_matches('}');
    let mut current = shape;
    for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let i: usize = part.parse().ok()?;
        current = match current {
            Shape::Tuple(elements) => elements.get(i)?,
            _ => return None,
        };
    }
    Some(current)
}

pub(crate) fn category_of(allocation: &Allocation<'_>) -> BufferCategory {
    let kinds = &allocation.kinds;
    BufferCategory::from_flags(AllocationFlags {
        parameter: kinds.parameter.is_some(),
        maybe_live_out: kinds.maybe_live_out,
        thread_local: kinds.thread_local,
        constant: kinds.constant,
    })
}

/// XProf's "indefinite" allocations: live for the whole program.
pub(crate) fn is_indefinite(allocation: &Allocation<'_>) -> bool {
    let kinds = &allocation.kinds;
    kinds.parameter.is_some() || kinds.constant || kinds.maybe_live_out
}

/// Buffer-assignment values by `(instruction, index)`.
fn assigned_values<'b, 'a>(
    ba: &'b BufferAssignment<'a>,
) -> HashMap<(&'a str, &'a str), (&'b Allocation<'a>, &'b AssignedValue<'a>)> {
    ba.allocations
        .iter()
        .flat_map(|a| {
            a.values
                .iter()
                .map(move |v| ((v.instruction, v.index), (a, v)))
        })
        .collect()
}

/// Build a value from what is known about it: its assignment, else its HLO instruction.
fn make_value<'a>(
    instruction: &'a str,
    index: Cow<'a, str>,
    assigned: Assigned<'_, 'a>,
    hlo: &HashMap<&'a str, &HloInstruction<'a>>,
) -> Value<'a> {
    let defining = hlo.get(instruction);
    let (shape_text, shape): (Cow<'a, str>, Option<Shape>) = match assigned {
        Some((_, v)) => (Cow::Borrowed(v.shape), parse_shape(v.shape).ok()),
        None => match defining.and_then(|i| parse_shape(i.shape).ok()) {
            Some(full) => match subshape(&full, &index) {
                Some(sub) => (Cow::Owned(sub.to_string()), Some(sub.clone())),
                None => (Cow::Borrowed(""), None),
            },
            None => (Cow::Borrowed(""), None),
        },
    };
    let logical = shape.as_ref().map_or(0, logical_bytes);
    let padded = match assigned {
        Some((_, v)) => v.size,
        None => shape.as_ref().map_or(0, Shape::own_padded_bytes),
    };
    let (category, color, slot, indefinite, id) = match assigned {
        Some((a, v)) => (
            category_of(a),
            v.color,
            Some((a.index, v.offset)),
            is_indefinite(a),
            v.id,
        ),
        None => {
            let opcode = defining.map_or("", |i| i.opcode);
            let category = match opcode {
                "parameter" => BufferCategory::Parameter,
                "constant" => BufferCategory::Constant,
                _ if defining.is_some_and(|i| i.is_root) => BufferCategory::Output,
                _ => BufferCategory::Temporary,
            };
            let color = shape
                .as_ref()
                .and_then(Shape::as_array)
                .map_or(0, |a| a.memory_space());
            (category, color, None, false, -1)
        }
    };
    Value {
        id,
        instruction,
        index,
        shape: shape_text,
        padded,
        logical,
        color,
        category,
        slot,
        indefinite,
        live_out: match assigned {
            Some((a, _)) => a.kinds.maybe_live_out,
            None => category == BufferCategory::Output,
        },
        start: 0,
        end: 0,
    }
}

fn values_from_live_ranges<'a>(
    live: &LiveRanges<'a>,
    ba: &BufferAssignment<'a>,
    hlo: &HashMap<&'a str, &HloInstruction<'a>>,
) -> Vec<Value<'a>> {
    let assigned = assigned_values(ba);
    live.buffers
        .iter()
        .map(|range| {
            let mut value = make_value(
                range.instruction,
                Cow::Borrowed(range.index),
                assigned.get(&(range.instruction, range.index)).copied(),
                hlo,
            );
            value.start = range.start;
            value.end = range.end;
            value
        })
        .collect()
}

/// Lifetimes from the entry schedule when the dump has no live ranges:
/// a value lives from its defining instruction (parameters from 0) to its
/// last use (entry outputs and maybe-live-out values to the end), a use
/// through a get-tuple-element, bitcast, tuple or asynchronous start counting
/// where the forwarded buffer is used.
fn estimate_values<'a>(
    module: &HloModule<'a>,
    ba: &BufferAssignment<'a>,
    uses_from: &BufferAssignment<'a>,
    hlo: &HashMap<&'a str, &HloInstruction<'a>>,
) -> (Vec<&'a str>, Vec<Value<'a>>, bool) {
    let Some(entry) = module.entry_computation() else {
        return (Vec::new(), Vec::new(), true);
    };
    let sequence: Vec<&'a str> = entry.instructions.iter().map(|i| i.name).collect();
    let position: HashMap<&str, u64> = sequence
        .iter()
        .enumerate()
        .map(|(i, n)| (*n, i as u64))
        .collect();
    let last = sequence.len().saturating_sub(1) as u64;
    // Users of each instruction, through the aliasing ops that forward a buffer.
    let mut users: HashMap<&str, Vec<&str>> = HashMap::new();
    for inst in &entry.instructions {
        for operand in inst.operand_names() {
            users.entry(operand).or_default().push(inst.name);
        }
    }
    // The last use of the buffer at `index` of `name`: direct users, and users
    // of the get-tuple-element (of that element), bitcast and tuple
    // instructions that forward it.
    let last_use = |name: &str, index: &str| -> Option<u64> {
        let element = index
            .trim_start_matches('{')
            .split([',', '}'])
            .next()
            .unwrap_or("");
        // The value of an asynchronous start that its done returns (copy-done
        // returns copy-start's {0}, the other dones their start's {1}) lives
        // on through the done's result.
        let done_returns_it = hlo.get(name).is_some_and(|i| match i.opcode {
            "copy-start" => element == "0",
            "all-gather-start" | "collective-permute-start" | "async-start" => element == "1",
            _ => false,
        });
        // (instruction, reached as an asynchronous start's operand): an
        // operand lives until the start's done, not through the done's result.
        let mut stack = vec![(name, false)];
        let mut seen = 0usize;
        let mut latest = None;
        while let Some((current, as_operand)) = stack.pop() {
            seen += 1;
            if seen > sequence.len() + 1 {
                break; // bound the walk on cyclic (malformed) input
            }
            for &user in users.get(current).map(Vec::as_slice).unwrap_or(&[]) {
                let Some(user_instruction) = hlo.get(user) else {
                    continue;
                };
                let other_element = current == name
                    && user_instruction.opcode == "get-tuple-element"
                    && !element.is_empty()
                    && user_instruction.attribute("index") != Some(element);
                if other_element {
                    continue;
                }
                latest = latest.max(position.get(user).copied());
                match user_instruction.opcode {
                    "get-tuple-element" | "bitcast" | "tuple" if !as_operand => {
                        stack.push((user, false));
                    }
                    // An asynchronous start's output tuple holds its operand
                    // (XLA's dataflow aliases it: copy-start's {1}, the
                    // others' {0}): the operand is used until the done.
                    "copy-start"
                    | "all-gather-start"
                    | "collective-permute-start"
                    | "async-start" => stack.push((user, true)),
                    "async-update" if as_operand => stack.push((user, true)),
                    "copy-done" | "all-gather-done" | "collective-permute-done" | "async-done"
                        if current == name && done_returns_it =>
                    {
                        stack.push((user, false));
                    }
                    _ => {}
                }
            }
        }
        latest
    };
    let recorded_uses: HashMap<(&str, &str), u64> = uses_from
        .used_values
        .iter()
        .filter_map(|v| {
            let end = v
                .uses
                .iter()
                .filter_map(|u| {
                    position
                        .get(u.split(',').next().unwrap_or(u).trim())
                        .copied()
                })
                .max()?;
            Some(((v.instruction, v.index), end))
        })
        .collect();

    let mut values = Vec::new();
    let candidates: Vec<(&'a str, Cow<'a, str>, Assigned<'_, 'a>)> = if ba.allocations.is_empty() {
        // HLO alone: one value per buffer an instruction defines (the array
        // leaves of a tuple-shaped fusion, call, while, ...), not for the
        // instructions that only forward or wrap their operands' buffers.
        entry
            .instructions
            .iter()
            .filter(|i| !matches!(i.opcode, "get-tuple-element" | "bitcast" | "tuple"))
            .flat_map(|i| {
                let indices = match parse_shape(i.shape) {
                    Ok(shape @ Shape::Tuple(_)) => leaf_indices(&shape),
                    _ => vec![Cow::Borrowed("{}")],
                };
                indices.into_iter().map(move |index| (i.name, index, None))
            })
            .collect()
    } else {
        ba.allocations
            .iter()
            .flat_map(|a| {
                a.values
                    .iter()
                    .map(move |v| (v.instruction, Cow::Borrowed(v.index), Some((a, v))))
            })
            .collect()
    };
    let nested = nested_positions(module, &position);
    for (instruction, index, assigned) in candidates {
        let Some(&defined) = position.get(instruction) else {
            // Defined inside a computation an entry instruction calls (a while
            // body, a called computation): live while that instruction runs.
            if let Some(&caller) = nested.get(instruction) {
                let mut value = make_value(instruction, index, assigned, hlo);
                (value.start, value.end) = (caller, caller);
                values.push(value);
            }
            continue;
        };
        let recorded_end = recorded_uses.get(&(instruction, &*index)).copied();
        let mut value = make_value(instruction, index, assigned, hlo);
        let is_parameter = hlo
            .get(instruction)
            .is_some_and(|i| i.opcode == "parameter");
        value.start = if is_parameter { 0 } else { defined };
        value.end = if is_parameter
            || value.indefinite
            || hlo.get(instruction).is_some_and(|i| i.is_root)
        {
            last
        } else {
            recorded_end
                .or_else(|| last_use(instruction, &value.index))
                .unwrap_or(defined)
        }
        .max(value.start);
        values.push(value);
    }
    (sequence, values, true)
}

/// The entries of a printed shape index (`{1,10}` → [1, 10]); an entry that
/// is not a number sorts as -1.
fn shape_index_numbers(index: &str) -> Vec<i64> {
    index
        .trim_start_matches('{')
        .trim_end_matches('}')
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| e.parse().unwrap_or(-1))
        .collect()
}

/// Printed shape indices (`{0}`, `{1,2}`) of the array leaves of a tuple shape.
fn leaf_indices(shape: &Shape) -> Vec<Cow<'static, str>> {
    fn walk(shape: &Shape, path: &mut Vec<usize>, out: &mut Vec<Cow<'static, str>>) {
        match shape {
            Shape::Tuple(elements) => {
                for (i, element) in elements.iter().enumerate() {
                    path.push(i);
                    walk(element, path, out);
                    path.pop();
                }
            }
            Shape::Array(_) => {
                let joined: Vec<String> = path.iter().map(usize::to_string).collect();
                out.push(Cow::Owned(format!("{{{}}}", joined.join(","))));
            }
            Shape::Token | Shape::Opaque => {}
        }
    }
    let mut out = Vec::new();
    walk(shape, &mut Vec::new(), &mut out);
    out
}

/// Entry position of the instruction that (transitively) calls the computation
/// each non-entry instruction belongs to. Called computations are found by
/// name among the caller's attributes (`body=`, `condition=`, `calls=`,
/// `to_apply=`, `branch_computations={...}`, with or without `%`).
fn nested_positions<'a>(
    module: &HloModule<'a>,
    entry_position: &HashMap<&str, u64>,
) -> HashMap<&'a str, u64> {
    let computations: HashMap<&str, &crate::hlo::HloComputation<'a>> =
        module.computations.iter().map(|c| (c.name, c)).collect();
    let mut computation_position: HashMap<&str, u64> = HashMap::new();
    let mut stack: Vec<(&HloInstruction<'a>, u64)> = module
        .entry_computation()
        .map(|entry| {
            entry
                .instructions
                .iter()
                .filter_map(|i| Some((i, *entry_position.get(i.name)?)))
                .collect()
        })
        .unwrap_or_default();
    while let Some((caller, at)) = stack.pop() {
        let called = caller
            .attributes
            .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
            .filter_map(|token| computations.get(token));
        for computation in called {
            if computation.is_entry || computation_position.contains_key(computation.name) {
                continue;
            }
            computation_position.insert(computation.name, at);
            stack.extend(computation.instructions.iter().map(|i| (i, at)));
        }
    }
    module
        .computations
        .iter()
        .filter_map(|c| Some((c, *computation_position.get(c.name)?)))
        .flat_map(|(c, at)| c.instructions.iter().map(move |i| (i.name, at)))
        .collect()
}

struct Totals {
    parameters: u64,
    maybe_live_out: u64,
    total: u64,
    indefinite: u64,
}

impl Totals {
    /// Memory-space-0 totals, as XProf states them (thread-local allocations,
    /// which live in a kernel's scope, are left out of every figure).
    fn of(allocations: &[Allocation<'_>]) -> Totals {
        let hbm = || {
            allocations
                .iter()
                .filter(|a| a.color == 0 && !a.kinds.thread_local)
        };
        Totals {
            parameters: total_bytes(
                hbm()
                    .filter(|a| a.kinds.parameter.is_some())
                    .map(|a| a.size),
            ),
            maybe_live_out: total_bytes(hbm().filter(|a| a.kinds.maybe_live_out).map(|a| a.size)),
            total: total_bytes(hbm().map(|a| a.size)),
            indefinite: total_bytes(hbm().filter(|a| is_indefinite(a)).map(|a| a.size)),
        }
    }
}

/// Sum of `size` over `[start, end]` intervals at each of `n` positions.
/// `(start, end, size)` of one buffer in program order.
type Interval = (u64, u64, u64);

/// `(start, end, padded size)` per buffer: values that share an allocation
/// slot and whose lifetimes overlap or touch are one interval at the largest
/// of their sizes; values without a slot stay as they are.
fn distinct_slots(values: &[Value<'_>]) -> Vec<Interval> {
    // Keyed by (colour, allocation index, offset).
    let mut by_slot: HashMap<(i64, u64, u64), Vec<Interval>> = HashMap::new();
    let mut out = Vec::new();
    for v in values {
        match v.slot {
            Some((allocation, offset)) => by_slot
                .entry((v.color, allocation, offset))
                .or_default()
                .push((v.start, v.end, v.padded)),
            None => out.push((v.start, v.end, v.padded)),
        }
    }
    for mut intervals in by_slot.into_values() {
        intervals.sort_unstable();
        let mut current: Option<Interval> = None;
        for (start, end, size) in intervals {
            current = match current {
                Some((s, e, z)) if start <= e.saturating_add(1) => {
                    Some((s, e.max(end), z.max(size)))
                }
                Some(done) => {
                    out.push(done);
                    Some((start, end, size))
                }
                None => Some((start, end, size)),
            };
        }
        out.extend(current);
    }
    out
}

fn series(n: usize, intervals: impl Iterator<Item = (u64, u64, u64)>) -> Vec<u64> {
    let mut delta = vec![0i128; n + 1];
    for (start, end, size) in intervals {
        let start = (start as usize).min(n);
        let end = (end as usize).min(n.saturating_sub(1));
        if start > end || start >= n {
            continue;
        }
        delta[start] += i128::from(size);
        delta[end + 1] -= i128::from(size);
    }
    let mut running = 0i128;
    delta[..n]
        .iter()
        .map(|d| {
            running += d;
            u64::try_from(running).unwrap_or(0)
        })
        .collect()
}

fn lifetime(
    value: &Value<'_>,
    last: u64,
    source_of: &dyn Fn(&str) -> (String, String, String),
) -> BufferLifetime {
    let (op_name, source, opcode) = source_of(value.instruction);
    BufferLifetime {
        id: value.id,
        name: display_name(value),
        shape: value.shape.to_string(),
        size_bytes: value.padded,
        unpadded_bytes: value.logical,
        start: value.start.min(last),
        end: value.end.min(last),
        category: value.category,
        op_name,
        source,
        opcode,
        offset_bytes: value.slot.map_or(0, |(_, offset)| offset),
    }
}

pub(crate) fn display_name(value: &Value<'_>) -> String {
    buffer_name(value.instruction, &value.index)
}

/// `instruction{i,j}` as XProf names a buffer; the whole output (`{}`) by
/// its instruction alone.
pub(crate) fn buffer_name(instruction: &str, index: &str) -> String {
    if index == "{}" {
        instruction.to_string()
    } else {
        format!("{instruction}{index}")
    }
}

fn peak_buffer(
    value: &Value<'_>,
    size: u64,
    unpadded: u64,
    source_of: &dyn Fn(&str) -> (String, String, String),
) -> PeakBuffer {
    let (op_name, source, opcode) = source_of(value.instruction);
    PeakBuffer {
        name: display_name(value),
        shape: value.shape.to_string(),
        size_bytes: size,
        unpadded_bytes: unpadded,
        op_name,
        source,
        category: value.category,
        logical_buffer_id: (value.id >= 0).then_some(value.id),
        opcode,
        maybe_live_out: value.live_out,
    }
}

/// Report 1: memory space 0, padded, indefinite allocations always live.
fn liveness_report(
    base: &ModuleReport,
    values: &[Value<'_>],
    totals: &Totals,
    estimated: bool,
    source_of: &dyn Fn(&str) -> (String, String, String),
) -> ModuleReport {
    let n = base.instructions.len();
    let last = n.saturating_sub(1) as u64;
    let hbm: Vec<&Value<'_>> = values
        .iter()
        .filter(|v| v.color == 0 && v.category != BufferCategory::ThreadLocal)
        .collect();
    // Indefinite allocations count whole, once each (XProf: padded in both series).
    let indefinite_bytes = if totals.total > 0 {
        totals.indefinite
    } else {
        // No buffer assignment: parameters, constants and outputs by their shapes.
        total_bytes(
            hbm.iter()
                .filter(|v| v.category != BufferCategory::Temporary)
                .map(|v| v.padded),
        )
    };
    let is_indefinite = |v: &Value<'_>| {
        v.indefinite || (totals.total == 0 && v.category != BufferCategory::Temporary)
    };
    // Temporaries; values sharing an allocation slot with touching lifetimes are one buffer.
    // A tuple's index table is left out: XLA gives each tuple-shaped buffer an
    // allocation of its own that the heap simulator never sees (tuple
    // allocations are not reusable), then `CombineTempAllocations` appends it
    // to the temp block. No heap-simulator trace lists one (2,750 tuple-table
    // temporaries of colour 0 in the fixtures' HloProtos, none traced; every
    // traced temporary is an array), so XProf's heap never counts them.
    let mut temps: Vec<(&Value<'_>, u64, u64, u64, u64)> = Vec::new(); // value, start, end, padded, logical
    let mut by_slot: Vec<&Value<'_>> = hbm
        .iter()
        .copied()
        .filter(|v| !is_indefinite(v) && !v.shape.starts_with('('))
        .collect();
    by_slot.sort_by_key(|v| (v.slot, v.start, v.end));
    for value in by_slot {
        if let Some(previous) = temps.last_mut() {
            if value.slot.is_some() && previous.0.slot == value.slot && value.start <= previous.2 {
                previous.2 = previous.2.max(value.end);
                if value.padded > previous.3 {
                    previous.0 = value;
                }
                previous.3 = previous.3.max(value.padded);
                previous.4 = previous.4.max(value.logical);
                continue;
            }
        }
        temps.push((value, value.start, value.end, value.padded, value.logical));
    }
    let mut heap = series(n, temps.iter().map(|t| (t.1, t.2, t.3)));
    let mut unpadded = series(n, temps.iter().map(|t| (t.1, t.2, t.4)));
    for point in heap.iter_mut().chain(unpadded.iter_mut()) {
        *point = point.saturating_add(indefinite_bytes);
    }
    let peak_position = heap
        .iter()
        .enumerate()
        .fold(0, |best, (i, &h)| if h > heap[best] { i } else { best });
    let at = peak_position as u64;
    let mut peak_buffers: Vec<PeakBuffer> = hbm
        .iter()
        .filter(|v| is_indefinite(v))
        .map(|v| peak_buffer(v, v.padded, v.logical, source_of))
        .collect();
    let mut live_temps: Vec<&(&Value<'_>, u64, u64, u64, u64)> =
        temps.iter().filter(|t| t.1 <= at && at <= t.2).collect();
    live_temps.sort_by(|a, b| {
        b.3.cmp(&a.3)
            .then_with(|| display_name(a.0).cmp(&display_name(b.0)))
    });
    peak_buffers.extend(
        live_temps
            .iter()
            .map(|t| peak_buffer(t.0, t.3, t.4, source_of)),
    );
    ModuleReport {
        peak_kind: if estimated {
            PeakKind::BufferLivenessEstimated
        } else {
            PeakKind::BufferLiveness
        },
        peak_bytes: heap.get(peak_position).copied().unwrap_or(0),
        peak_unpadded_bytes: unpadded.get(peak_position).copied().unwrap_or(0),
        peak_position: at,
        heap_bytes: heap,
        unpadded_heap_bytes: unpadded,
        peak_buffers,
        parameters_bytes: totals.parameters,
        maybe_live_out_bytes: totals.maybe_live_out,
        total_allocation_bytes: totals.total,
        indefinite_bytes,
        buffers: hbm.iter().map(|v| lifetime(v, last, source_of)).collect(),
        ..base.clone()
    }
}

/// `HloLiveRange::ComputePeakMemoryMoment`: sizes are those of the defining
/// instruction's whole shape; starts sort before ends at the same time; the
/// first time the running sum reaches its maximum wins.
pub(crate) fn compiler_peak_moment(ranges: &[(u64, u64, u64)]) -> u64 {
    let mut events: Vec<(u64, bool, u64)> = Vec::with_capacity(ranges.len() * 2);
    for &(start, end, size) in ranges {
        events.push((start, false, size));
        events.push((end.saturating_add(1), true, size));
    }
    events.sort_unstable();
    let (mut usage, mut peak, mut moment) = (0i128, 0i128, 0u64);
    for (time, is_end, size) in events {
        if is_end {
            usage -= i128::from(size);
        } else {
            usage += i128::from(size);
        }
        if peak < usage {
            peak = usage;
            moment = time;
        }
    }
    moment
}

/// Report 2: the compiler's live-range view, reproduced.
fn live_range_report(
    base: &ModuleReport,
    values: &[Value<'_>],
    totals: &Totals,
    live: &LiveRanges<'_>,
    hlo: &HashMap<&str, &HloInstruction<'_>>,
    source_of: &dyn Fn(&str) -> (String, String, String),
) -> ModuleReport {
    let n = base.instructions.len();
    let last = n.saturating_sub(1) as u64;
    let instruction_bytes = |v: &Value<'_>| -> u64 {
        hlo.get(v.instruction)
            .and_then(|i| parse_shape(i.shape).ok())
            .map_or(v.logical, |s| logical_bytes(&s))
    };
    let moment = compiler_peak_moment(
        &values
            .iter()
            .map(|v| (v.start, v.end, instruction_bytes(v)))
            .collect::<Vec<_>>(),
    );
    // The padded view counts each allocation slot once while any of its
    // values is live: a while loop's tuple elements alias its operand, body
    // parameter and body root (one slot), which the compiler's own sum (the
    // unpadded view, `peak_unpadded_bytes`, `compiler_peak_bytes`) counts
    // once per alias.
    let heap = series(n, distinct_slots(values).into_iter());
    let unpadded = series(n, values.iter().map(|v| (v.start, v.end, v.logical)));
    let position = moment.min(last);
    let mut live_at: Vec<&Value<'_>> = values
        .iter()
        .filter(|v| v.start <= moment && moment <= v.end)
        .collect();
    // The compiler's order: size descending, then name and shape index (as
    // `ShapeIndex` compares: entry by entry as numbers, so {2} before {10}).
    live_at.sort_by(|a, b| {
        b.logical.cmp(&a.logical).then_with(|| {
            (a.instruction, shape_index_numbers(&a.index))
                .cmp(&(b.instruction, shape_index_numbers(&b.index)))
        })
    });
    ModuleReport {
        peak_kind: PeakKind::LiveRange,
        peak_bytes: heap.get(position as usize).copied().unwrap_or(0),
        peak_unpadded_bytes: total_bytes(live_at.iter().map(|v| v.logical)),
        peak_position: position,
        heap_bytes: heap,
        unpadded_heap_bytes: unpadded,
        peak_buffers: live_at
            .iter()
            .map(|v| peak_buffer(v, v.padded, v.logical, source_of))
            .collect(),
        parameters_bytes: totals.parameters,
        maybe_live_out_bytes: totals.maybe_live_out,
        total_allocation_bytes: totals.total,
        indefinite_bytes: totals.indefinite,
        compiler_peak_bytes: live.peak.as_ref().map(|p| p.total_bytes()),
        buffers: values
            .iter()
            .map(|v| lifetime(v, last, source_of))
            .collect(),
        ..base.clone()
    }
}
