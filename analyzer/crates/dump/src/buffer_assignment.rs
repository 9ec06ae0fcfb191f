//! Parser for `*-buffer-assignment.txt` and `*-buffer-assignment-values.txt`
//! (`BufferAssignment::ToString`, `BufferAssignment::ToVerboseString`).
//!
//! ```text
//! allocation 20: size 11799659008, page 0, preallocated-temp:
//!  value: <47 fusion.5{0} @0> (size=3933208576,offset=3933208576): f32[32768,30001]{0,1:T(8,128)}
//! Total bytes used: 12115791876 (11.28GiB)
//! Used values:
//! <47 fusion.5{0} @0>
//!  positions:
//!   fusion.5 {0}
//!  uses:
//!   reduce_sum.30, operand 0
//!  from instruction: %fusion.5 = ...
//! ```
//! Older compilers (libtpu 0.0.8) put the values and an `HloLiveRange`
//! section into the same `-buffer-assignment.txt`; the live-range part is
//! read by [`crate::live_range`].

use crate::hlo::clip;

/// What an allocation holds, from the kinds listed on its header line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocationKinds {
    /// `parameter N`: an entry computation parameter.
    pub parameter: Option<u64>,
    pub maybe_live_out: bool,
    pub thread_local: bool,
    pub constant: bool,
    pub preallocated_temp: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Allocation<'a> {
    pub index: u64,
    pub size: u64,
    /// Memory space colour (0 unless `color N` is printed).
    pub color: i64,
    pub kinds: AllocationKinds,
    /// The header text after the size, as printed (kinds, parameter shape).
    pub description: &'a str,
    pub values: Vec<AssignedValue<'a>>,
}

/// A value assigned to an allocation: `<id name{index} @color> (size=,offset=): shape`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AssignedValue<'a> {
    pub id: i64,
    /// The defining instruction's name.
    pub instruction: &'a str,
    /// The shape index as printed, `{}` when the value is the whole (non-tuple) output.
    pub index: &'a str,
    pub color: i64,
    pub size: u64,
    pub offset: u64,
    /// The value's shape with its layout, as printed.
    pub shape: &'a str,
}

/// One entry of the `Used values:` section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsedValue<'a> {
    pub id: i64,
    pub instruction: &'a str,
    pub index: &'a str,
    /// `instruction {index}` positions as printed.
    pub positions: Vec<&'a str>,
    /// `instruction, operand N` uses as printed.
    pub uses: Vec<&'a str>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct BufferAssignment<'a> {
    pub allocations: Vec<Allocation<'a>>,
    /// `Total bytes used: N`: the sum of all allocation sizes, every colour.
    pub total_bytes_used: Option<u64>,
    pub used_values: Vec<UsedValue<'a>>,
    /// Lines that could not be read (1-based line, message).
    pub problems: Vec<(u32, String)>,
}

impl BufferAssignment<'_> {
    /// Sum of the sizes of all allocations (what `Total bytes used` states).
    pub fn allocation_bytes(&self) -> u64 {
        crate::total_bytes(self.allocations.iter().map(|a| a.size))
    }
}

/// Parse the allocation list, the totals and the used values (each optional).
pub fn parse(text: &str) -> BufferAssignment<'_> {
    let mut out = BufferAssignment::default();
    let mut in_values = false;
    let mut lines = text.lines().enumerate().peekable();
    while let Some((i, raw)) = lines.next() {
        let line_no = (i + 1) as u32;
        let line = raw.trim_end();
        if let Some(rest) = line.strip_prefix("allocation ") {
            in_values = false;
            match parse_allocation_header(rest) {
                Some(allocation) => out.allocations.push(allocation),
                None => problem(&mut out, line_no, line),
            }
        } else if let Some(rest) = line.strip_prefix(" value: ") {
            match (parse_assigned_value(rest), out.allocations.last_mut()) {
                (Some(value), Some(allocation)) => allocation.values.push(value),
                _ => problem(&mut out, line_no, line),
            }
        } else if let Some(rest) = line.strip_prefix("Total bytes used: ") {
            out.total_bytes_used = rest.split(' ').next().and_then(|n| n.parse().ok());
        } else if line == "Used values:" {
            in_values = true;
        } else if in_values && line.starts_with('<') {
            let Some((id, instruction, index, _)) = parse_value_tag(line) else {
                problem(&mut out, line_no, line);
                continue;
            };
            let mut value = UsedValue {
                id,
                instruction,
                index,
                ..Default::default()
            };
            let mut section = "";
            while let Some((_, next)) = lines.peek() {
                if !next.starts_with(' ') {
                    break;
                }
                let next = next.trim();
                match next {
                    "positions:" | "uses:" => section = next,
                    _ if next.starts_with("from instruction:") => section = "",
                    "(none)" => {}
                    _ if section == "positions:" => value.positions.push(next),
                    _ if section == "uses:" => value.uses.push(next),
                    _ => {}
                }
                lines.next();
            }
            out.used_values.push(value);
        } else if line.starts_with("HloLiveRange") {
            in_values = false;
        }
    }
    out
}

fn problem(out: &mut BufferAssignment<'_>, line: u32, text: &str) {
    if out.problems.len() < 100 {
        out.problems
            .push((line, format!("unreadable line `{}`", clip(text))));
    }
}

/// `20: size 11799659008, color 1, page 0, preallocated-temp:`
fn parse_allocation_header(rest: &str) -> Option<Allocation<'_>> {
    let (index, rest) = rest.split_once(": size ")?;
    let index = index.parse().ok()?;
    let rest = rest.strip_suffix(':').unwrap_or(rest);
    let (size, description) = rest.split_once(',').unwrap_or((rest, ""));
    let size = size.trim().parse().ok()?;
    let description = description.trim();
    let mut allocation = Allocation {
        index,
        size,
        description,
        ..Default::default()
    };
    // Kinds are comma-separated; a parameter's shape (`shape |(a, b)|`) may hold commas,
    // so only the text outside `|...|` is searched.
    let mut outside = String::new();
    for (i, piece) in description.split('|').enumerate() {
        if i % 2 == 0 {
            outside.push_str(piece);
        }
    }
    for kind in outside.split(',').map(str::trim) {
        if let Some(color) = kind.strip_prefix("color ") {
            allocation.color = color.parse().ok()?;
        } else if let Some(number) = kind.strip_prefix("parameter ") {
            allocation.kinds.parameter = number.split(' ').next().and_then(|n| n.parse().ok());
        } else {
            match kind {
                "maybe-live-out" => allocation.kinds.maybe_live_out = true,
                "thread-local" => allocation.kinds.thread_local = true,
                "constant" => allocation.kinds.constant = true,
                "preallocated-temp" => allocation.kinds.preallocated_temp = true,
                _ => {}
            }
        }
    }
    Some(allocation)
}

/// `<47 fusion.5{0} @0> (size=3933208576,offset=3933208576): f32[...]{...}`
fn parse_assigned_value(rest: &str) -> Option<AssignedValue<'_>> {
    let (id, instruction, index, tail) = parse_value_tag(rest)?;
    let (color, tail) = tail;
    let tail = tail.trim_start().strip_prefix("(size=")?;
    let (size, tail) = tail.split_once(",offset=")?;
    let (offset, shape) = tail.split_once("):")?;
    Some(AssignedValue {
        id,
        instruction,
        index,
        color,
        size: size.parse().ok()?,
        offset: offset.parse().ok()?,
        shape: shape.trim(),
    })
}

type ValueTag<'a> = (i64, &'a str, &'a str, (i64, &'a str));

/// `<47 fusion.5{0} @0>` (also `<12 while{} (phi) @0>`, and no `@` in old dumps):
/// id, instruction name, index (`{}` when none is printed), colour, the rest.
fn parse_value_tag(text: &str) -> Option<ValueTag<'_>> {
    let inner = text.strip_prefix('<')?;
    let close = inner.find('>')?;
    let (tag, rest) = (&inner[..close], &inner[close + 1..]);
    let (id, tag) = tag.split_once(' ')?;
    let mut parts = tag.split(' ');
    let name_index = parts.next()?;
    let color = parts
        .find_map(|p| p.strip_prefix('@'))
        .map_or(Some(0), |c| c.parse().ok())?;
    let (instruction, index) = split_index(name_index);
    Some((id.parse().ok()?, instruction, index, (color, rest)))
}

/// `fusion.5{0}` → (`fusion.5`, `{0}`); `x.1` → (`x.1`, `{}`).
pub(crate) fn split_index(name_index: &str) -> (&str, &str) {
    match name_index.find('{') {
        Some(i) => (&name_index[..i], &name_index[i..]),
        None => (name_index, "{}"),
    }
}
