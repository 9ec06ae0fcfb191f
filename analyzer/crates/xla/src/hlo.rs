//! A lazy, borrowed view of a serialized `xla.HloProto`: one hand-written
//! pass over the wire format that keeps what the Memory Viewer and the
//! what-if program read, as numbers and slices of the input, and skips the
//! rest.
//!
//! Why not prost: decoding every instruction into owned values (its name,
//! opcode, shape tree, layout, metadata strings) spent about half the
//! analysis in the system allocator, for instructions the analysis never
//! looks at (a 2.9 MB module has 17,000 instructions and 5,400 logical
//! buffers). Here an instruction is a few integers and slices; its shape is
//! decoded when a buffer it defines is shown ([`ShapeView`]), its metadata
//! when that buffer's op name or source is ([`OpMetadataView`]).
//!
//! What is checked, as prost checks it: every field's framing (a length
//! never reaches past its message: errors give the byte offset), the wire
//! type of every field the schema (`proto/protos/xla/`) names, UTF-8 of the
//! strings kept, every shape in full (wire types, packed numbers) and
//! nesting at most [`MAX_DEPTH`] messages deep (prost's recursion limit).
//! What is not: the inside of fields the analysis never reads (a module's
//! program shapes, an instruction's metadata until it is shown; metadata
//! that does not decode then shows as none).

use std::fmt;

/// prost's recursion limit: a message nested deeper is refused.
pub const MAX_DEPTH: usize = 100;

/// Why the bytes are not an HloProto, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset in the HloProto where the problem is.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

fn error(offset: usize, message: impl Into<String>) -> DecodeError {
    DecodeError {
        offset,
        message: message.into(),
    }
}

type Result<T> = std::result::Result<T, DecodeError>;

// ---------------------------------------------------------------------------
// Wire format

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// A message's bytes: `buf[pos..end]`, offsets counted in the whole input.
#[derive(Clone, Copy)]
pub(crate) struct Wire<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
}

/// One field: its number, where its tag starts, and its value.
pub(crate) struct Field<'a> {
    pub number: u32,
    at: usize,
    wire: u8,
    varint: u64,
    payload: Wire<'a>,
}

impl<'a> Wire<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Wire {
            buf,
            pos: 0,
            end: buf.len(),
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.buf.get(self.pos..self.end).unwrap_or(&[])
    }

    fn is_empty(&self) -> bool {
        self.pos >= self.end
    }

    #[inline]
    fn varint(&mut self) -> Result<u64> {
        // One byte: field tags, small lengths and most numbers.
        if let Some(&b) = self.buf.get(self.pos).filter(|_| self.pos < self.end) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
            // Two: ids and lengths up to 16383 (instruction and buffer ids
            // of most modules, the length of most messages).
            if let Some(&c) = self
                .buf
                .get(self.pos + 1)
                .filter(|_| self.pos + 1 < self.end)
            {
                if c < 0x80 {
                    self.pos += 2;
                    return Ok(u64::from(b & 0x7f) | u64::from(c) << 7);
                }
            }
        }
        self.varint_slow()
    }

    #[cold]
    fn varint_slow(&mut self) -> Result<u64> {
        let start = self.pos;
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos).filter(|_| self.pos < self.end) else {
                return Err(error(start, "the data ends inside a varint"));
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                if i == 9 && b > 1 {
                    return Err(error(start, "a varint overflows 64 bits"));
                }
                return Ok(value);
            }
        }
        Err(error(start, "a varint is longer than 10 bytes"))
    }

    /// The next field, or `None` at the end of the message. Inlined into
    /// each message's loop (its errors are made out of line): returned
    /// through memory, the field cost a fifth of the decoding.
    #[inline(always)]
    pub(crate) fn next(&mut self) -> Result<Option<Field<'a>>> {
        if self.pos >= self.end {
            return Ok(None);
        }
        let at = self.pos;
        let tag = self.varint()?;
        let number = tag >> 3;
        if number == 0 || number >= 1 << 29 {
            return Err(invalid_field_number(at, number));
        }
        let number = number as u32;
        let wire = (tag & 7) as u8;
        let mut varint = 0;
        let width = match wire {
            VARINT => {
                varint = self.varint()?;
                0
            }
            FIXED64 => 8,
            FIXED32 => 4,
            LEN => {
                let len = self.varint()?;
                let remaining = self.end - self.pos;
                match usize::try_from(len).ok().filter(|&l| l <= remaining) {
                    Some(l) => l,
                    None => return Err(overrun(at, number, len, remaining)),
                }
            }
            other => return Err(unused_wire_type(at, number, other)),
        };
        if self.end - self.pos < width {
            return Err(ends_inside(at, number));
        }
        let payload = Wire {
            buf: self.buf,
            pos: self.pos,
            end: self.pos + width,
        };
        self.pos += width;
        Ok(Some(Field {
            number,
            at,
            wire,
            varint,
            payload,
        }))
    }
}

#[cold]
#[inline(never)]
fn invalid_field_number(at: usize, number: u64) -> DecodeError {
    error(at, format!("invalid field number {number}"))
}

#[cold]
#[inline(never)]
fn overrun(at: usize, number: u32, len: u64, remaining: usize) -> DecodeError {
    error(
        at,
        format!("field {number} declares {len} bytes but only {remaining} remain"),
    )
}

#[cold]
#[inline(never)]
fn unused_wire_type(at: usize, number: u32, wire: u8) -> DecodeError {
    error(
        at,
        format!("field {number} has wire type {wire}, which HloProtos do not use"),
    )
}

#[cold]
#[inline(never)]
fn ends_inside(at: usize, number: u32) -> DecodeError {
    error(at, format!("the data ends inside field {number}"))
}

impl<'a> Field<'a> {
    #[cold]
    #[inline(never)]
    fn wrong_type(&self, expected: &str) -> DecodeError {
        error(
            self.at,
            format!(
                "field {} has wire type {}, not {expected}",
                self.number, self.wire
            ),
        )
    }

    /// A varint field (int32/int64/bool/enum; the caller narrows as prost does).
    #[inline]
    pub(crate) fn uint(&self) -> Result<u64> {
        if self.wire == VARINT {
            Ok(self.varint)
        } else {
            Err(self.wrong_type("a varint"))
        }
    }

    #[inline]
    pub(crate) fn int(&self) -> Result<i64> {
        self.uint().map(|v| v as i64)
    }

    pub(crate) fn int32(&self) -> Result<i32> {
        self.uint().map(|v| v as i32)
    }

    pub(crate) fn boolean(&self) -> Result<bool> {
        self.uint().map(|v| v != 0)
    }

    /// An embedded message, one level deeper than `depth`.
    #[inline]
    pub(crate) fn message(&self, depth: usize) -> Result<Wire<'a>> {
        if self.wire != LEN {
            return Err(self.wrong_type("a length-delimited message"));
        }
        if depth >= MAX_DEPTH {
            return Err(error(
                self.at,
                format!("recursion limit reached: messages nested more than {MAX_DEPTH} deep"),
            ));
        }
        Ok(self.payload)
    }

    #[inline]
    pub(crate) fn string(&self) -> Result<&'a str> {
        if self.wire != LEN {
            return Err(self.wrong_type("a length-delimited string"));
        }
        std::str::from_utf8(self.payload.bytes()).map_err(|_| self.not_utf8())
    }

    #[cold]
    #[inline(never)]
    fn not_utf8(&self) -> DecodeError {
        error(self.at, format!("field {} is not valid UTF-8", self.number))
    }

    /// Checks a string field the analysis does not keep, as prost checks
    /// it (UTF-8). Most are short ASCII names, checked inline; the rest go
    /// through `from_utf8` (which cost a tenth of the decoding when called
    /// for every one).
    #[inline]
    pub(crate) fn check_string(&self) -> Result<()> {
        if self.wire != LEN {
            return Err(self.wrong_type("a length-delimited string"));
        }
        let bytes = self.payload.bytes();
        if bytes.is_ascii() || std::str::from_utf8(bytes).is_ok() {
            Ok(())
        } else {
            Err(self.not_utf8())
        }
    }

    /// A repeated integer field, packed or not, appended to `out`.
    pub(crate) fn ints_into(&self, out: &mut Vec<i64>) -> Result<()> {
        match self.wire {
            VARINT => out.push(self.varint as i64),
            LEN => {
                let mut packed = self.payload;
                while !packed.is_empty() {
                    out.push(packed.varint()? as i64);
                }
            }
            _ => return Err(self.wrong_type("a varint or packed varints")),
        }
        Ok(())
    }

    /// Checks a repeated varint field without keeping it.
    fn check_ints(&self) -> Result<()> {
        match self.wire {
            VARINT => Ok(()),
            LEN => {
                let mut packed = self.payload;
                while !packed.is_empty() {
                    packed.varint()?;
                }
                Ok(())
            }
            _ => Err(self.wrong_type("a varint or packed varints")),
        }
    }
}

/// Positions `start..end` in [`Hlo::ints`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    start: usize,
    end: usize,
}

impl Span {
    fn of(out: &[i64], start: usize) -> Self {
        Span {
            start,
            end: out.len(),
        }
    }
}

/// A repeated integer field being read into [`Hlo::ints`]: its pieces
/// (packed runs, or single values) are decoded straight to the end of the
/// list while nothing else was added after them, which is how every writer
/// lays them out; a piece that comes after another list's moves the field
/// to a list of its own, copied to the end once the message is read (so
/// interleaved pieces cost linear time and memory).
#[derive(Default)]
enum IntsField {
    #[default]
    Absent,
    InPlace(Span),
    Apart(Vec<i64>),
}

impl IntsField {
    fn add(&mut self, f: &Field<'_>, ints: &mut Vec<i64>) -> Result<()> {
        match self {
            IntsField::Absent => {
                let start = ints.len();
                f.ints_into(ints)?;
                *self = IntsField::InPlace(Span::of(ints, start));
            }
            IntsField::InPlace(span) if span.end == ints.len() => {
                f.ints_into(ints)?;
                span.end = ints.len();
            }
            IntsField::InPlace(span) => {
                let mut apart = ints.get(span.start..span.end).unwrap_or(&[]).to_vec();
                f.ints_into(&mut apart)?;
                *self = IntsField::Apart(apart);
            }
            IntsField::Apart(apart) => f.ints_into(apart)?,
        }
        Ok(())
    }

    fn finish(self, ints: &mut Vec<i64>) -> Span {
        match self {
            IntsField::Absent => Span {
                start: ints.len(),
                end: ints.len(),
            },
            IntsField::InPlace(span) => span,
            IntsField::Apart(apart) => {
                let start = ints.len();
                ints.extend_from_slice(&apart);
                Span::of(ints, start)
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The view

/// A decoded HloProto: its module and buffer assignment, as far as the
/// analysis reads them.
pub struct Hlo<'a> {
    pub module: Option<HloModule<'a>>,
    pub assignment: Option<BufferAssignment<'a>>,
    /// Every repeated integer field, end to end ([`Span`]s index it).
    ints: Vec<i64>,
    /// The bytes of each `hlo_module` field, in file order (protobuf merges
    /// repeats): what the what-if program's dataflow facts decode with prost
    /// ([`Hlo::decode_module`]).
    module_bytes: Vec<&'a [u8]>,
}

impl Hlo<'_> {
    /// The integers of a repeated field.
    pub fn ints(&self, span: Span) -> &[i64] {
        self.ints.get(span.start..span.end).unwrap_or(&[])
    }

    /// The whole `HloModuleProto`, decoded with prost (the what-if
    /// `peak` example reads it; a program decodes only the fields its facts
    /// read, [`Hlo::decode_module`]). `None` when prost rejects what the
    /// view accepted.
    pub fn module_proto(&self) -> Option<oomscope_proto::xla::HloModuleProto> {
        self.decode_module()
    }

    /// The module's bytes decoded with prost as `M`: a message with some of
    /// `HloModuleProto`'s fields (the what-if program's dataflow facts read
    /// only those), the others skipped. `None` when prost rejects them.
    pub fn decode_module<M: prost::Message + Default>(&self) -> Option<M> {
        let mut module = M::default();
        for bytes in &self.module_bytes {
            module.merge(*bytes).ok()?;
        }
        Some(module)
    }
}

#[derive(Default)]
pub struct HloModule<'a> {
    pub name: &'a str,
    pub entry_computation_name: &'a str,
    pub entry_computation_id: i64,
    pub computations: Vec<Computation<'a>>,
    /// Every computation's instructions, in order ([`Computation::instructions`]).
    pub instructions: Vec<Instruction<'a>>,
    /// Schedule: (computation id, instruction ids), in file order.
    pub schedule: Vec<(i64, Span)>,
    pub aliases: Vec<AliasEntry>,
    pub device_assignment: Option<DeviceAssignment>,
    pub stack_frame_index: Option<StackFrameIndex<'a>>,
}

impl<'a> HloModule<'a> {
    /// The instructions of a computation.
    pub fn instructions_of(&self, computation: &Computation<'a>) -> &[Instruction<'a>] {
        self.instructions
            .get(computation.instructions.clone())
            .unwrap_or(&[])
    }

    /// The scheduled instruction ids of a computation (the last sequence
    /// listed for it, as a protobuf map keeps the last entry).
    pub fn sequence(&self, computation_id: i64) -> Option<Span> {
        self.schedule
            .iter()
            .rev()
            .find(|(id, _)| *id == computation_id)
            .map(|&(_, s)| s)
    }
}

pub struct Computation<'a> {
    pub name: &'a str,
    pub id: i64,
    pub root_id: i64,
    pub instructions: std::ops::Range<usize>,
}

pub struct Instruction<'a> {
    pub name: &'a str,
    pub opcode: &'a str,
    pub id: i64,
    pub parameter_number: i64,
    pub tuple_index: i64,
    pub operand_ids: Span,
    pub called_computation_ids: Span,
    pub shape: Option<ShapeView<'a>>,
    pub metadata: Option<OpMetadataView<'a>>,
}

#[derive(Debug, Clone, Copy)]
pub struct DeviceAssignment {
    pub replica_count: i32,
    pub computation_count: i32,
}

pub struct AliasEntry {
    pub output_shape_index: Vec<i64>,
    pub parameter_number: i64,
    pub parameter_shape_index: Vec<i64>,
}

/// Ids are 1-based positions in the flat lists; 0 = unset.
#[derive(Default)]
pub struct StackFrameIndex<'a> {
    pub file_names: Vec<&'a str>,
    /// (file_name_id, line) of each `FileLocation`.
    pub file_locations: Vec<(i32, i32)>,
    /// `file_location_id` of each `StackFrame`.
    pub stack_frames: Vec<i32>,
}

#[derive(Default)]
pub struct BufferAssignment<'a> {
    pub logical_buffers: Vec<LogicalBuffer>,
    pub buffer_allocations: Vec<BufferAllocation>,
    pub heap_simulator_traces: Vec<HeapSimulatorTrace>,
    /// Every allocation's `assigned` entries ([`BufferAllocation::assigned`]).
    pub assigned: Vec<Assigned>,
    /// Every trace's events ([`HeapSimulatorTrace::events`]).
    pub events: Vec<Event<'a>>,
}

impl<'a> BufferAssignment<'a> {
    pub fn assigned_of(&self, allocation: &BufferAllocation) -> &[Assigned] {
        self.assigned
            .get(allocation.assigned.clone())
            .unwrap_or(&[])
    }

    pub fn events_of(&self, trace: &HeapSimulatorTrace) -> &[Event<'a>] {
        self.events.get(trace.events.clone()).unwrap_or(&[])
    }
}

#[derive(Default)]
pub struct LogicalBuffer {
    pub id: i64,
    pub size: i64,
    pub color: i64,
    /// `defined_at`: (instruction id, shape index), when given.
    pub defined_at: Option<(i64, Span)>,
}

#[derive(Default)]
pub struct BufferAllocation {
    pub index: i64,
    pub size: i64,
    pub is_thread_local: bool,
    pub is_entry_computation_parameter: bool,
    pub is_constant: bool,
    pub parameter_number: i64,
    pub parameter_shape_index: Span,
    pub maybe_live_out: bool,
    pub color: i64,
    pub assigned: std::ops::Range<usize>,
}

#[derive(Default, Clone, Copy)]
pub struct Assigned {
    pub logical_buffer_id: i64,
    pub offset: i64,
}

pub struct HeapSimulatorTrace {
    pub events: std::ops::Range<usize>,
}

/// `HeapSimulatorTrace.Event.Kind`.
pub const ALLOC: i32 = 0;
pub const FREE: i32 = 1;
pub const SHARE_WITH: i32 = 2;

pub struct Event<'a> {
    pub kind: i32,
    pub buffer_id: i64,
    pub instruction_name: &'a str,
    pub share_with_canonical_id: i64,
}

/// Decodes the view (see the module docs for what is checked).
pub fn decode(bytes: &[u8]) -> Result<Hlo<'_>> {
    let mut hlo = Hlo {
        module: None,
        assignment: None,
        ints: Vec::new(),
        module_bytes: Vec::new(),
    };
    let mut top = Wire::new(bytes);
    while let Some(f) = top.next()? {
        match f.number {
            1 => {
                let wire = f.message(0)?;
                hlo.module_bytes.push(wire.bytes());
                let module = hlo.module.get_or_insert_with(HloModule::default);
                decode_module(wire, module, &mut hlo.ints)?;
            }
            3 => {
                let wire = f.message(0)?;
                let assignment = hlo.assignment.get_or_insert_with(BufferAssignment::default);
                decode_assignment(wire, assignment, &mut hlo.ints)?;
            }
            _ => {}
        }
    }
    Ok(hlo)
}

/// `HloModuleProto` (depth 1).
fn decode_module<'a>(
    mut w: Wire<'a>,
    module: &mut HloModule<'a>,
    ints: &mut Vec<i64>,
) -> Result<()> {
    while let Some(f) = w.next()? {
        match f.number {
            1 => module.name = f.string()?,
            2 => module.entry_computation_name = f.string()?,
            6 => module.entry_computation_id = f.int()?,
            3 => decode_computation(f.message(1)?, module, ints)?,
            4 => check_program_shape(f.message(1)?, 2)?,
            5 => {
                f.int()?;
            }
            7 => {
                let mut s = f.message(1)?;
                while let Some(entry) = s.next()? {
                    if entry.number != 1 {
                        continue;
                    }
                    // map<int64, InstructionSequence>: key 1, value 2.
                    let mut e = entry.message(2)?;
                    let (mut key, mut span) = (0, None);
                    while let Some(g) = e.next()? {
                        match g.number {
                            1 => key = g.int()?,
                            2 => {
                                let mut seq = g.message(3)?;
                                let mut ids = IntsField::Absent;
                                while let Some(h) = seq.next()? {
                                    if h.number == 1 {
                                        ids.add(&h, ints)?;
                                    }
                                }
                                span = Some(ids.finish(ints));
                            }
                            _ => {}
                        }
                    }
                    module.schedule.push((key, span.unwrap_or_default()));
                }
            }
            8 => {
                let mut a = f.message(1)?;
                while let Some(g) = a.next()? {
                    if g.number != 1 {
                        continue;
                    }
                    let mut e = g.message(2)?;
                    let mut entry = AliasEntry {
                        output_shape_index: Vec::new(),
                        parameter_number: 0,
                        parameter_shape_index: Vec::new(),
                    };
                    while let Some(h) = e.next()? {
                        match h.number {
                            1 => h.ints_into(&mut entry.output_shape_index)?,
                            2 => entry.parameter_number = h.int()?,
                            3 => h.ints_into(&mut entry.parameter_shape_index)?,
                            4 => {
                                h.int32()?;
                            }
                            _ => {}
                        }
                    }
                    module.aliases.push(entry);
                }
            }
            15 => {
                let mut d = f.message(1)?;
                let assignment = module.device_assignment.get_or_insert(DeviceAssignment {
                    replica_count: 0,
                    computation_count: 0,
                });
                while let Some(g) = d.next()? {
                    match g.number {
                        1 => assignment.replica_count = g.int32()?,
                        2 => assignment.computation_count = g.int32()?,
                        3 => {
                            g.message(2)?;
                        }
                        _ => {}
                    }
                }
            }
            17 => {
                let index = module
                    .stack_frame_index
                    .get_or_insert_with(StackFrameIndex::default);
                decode_stack_frames(f.message(1)?, index)?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn decode_stack_frames<'a>(mut w: Wire<'a>, index: &mut StackFrameIndex<'a>) -> Result<()> {
    while let Some(f) = w.next()? {
        match f.number {
            1 => index.file_names.push(f.string()?),
            2 => {
                f.check_string()?;
            }
            3 => {
                let mut l = f.message(2)?;
                let (mut file, mut line) = (0, 0);
                while let Some(g) = l.next()? {
                    match g.number {
                        1 => file = g.int32()?,
                        3 => line = g.int32()?,
                        2 | 4 => {
                            g.int32()?;
                        }
                        _ => {}
                    }
                }
                index.file_locations.push((file, line));
            }
            4 => {
                let mut s = f.message(2)?;
                let mut location = 0;
                while let Some(g) = s.next()? {
                    match g.number {
                        1 => location = g.int32()?,
                        2 => {
                            g.int32()?;
                        }
                        _ => {}
                    }
                }
                index.stack_frames.push(location);
            }
            _ => {}
        }
    }
    Ok(())
}

/// `HloComputationProto` (depth 2): its instructions join the module's list.
fn decode_computation<'a>(
    mut w: Wire<'a>,
    module: &mut HloModule<'a>,
    ints: &mut Vec<i64>,
) -> Result<()> {
    let start = module.instructions.len();
    let mut computation = Computation {
        name: "",
        id: 0,
        root_id: 0,
        instructions: start..start,
    };
    while let Some(f) = w.next()? {
        match f.number {
            1 => computation.name = f.string()?,
            2 => {
                let instruction = decode_instruction(f.message(2)?, ints)?;
                module.instructions.push(instruction);
            }
            4 => check_program_shape(f.message(2)?, 3)?,
            5 => computation.id = f.int()?,
            6 => computation.root_id = f.int()?,
            7 => {
                f.boolean()?;
            }
            8 => {
                f.check_string()?;
            }
            _ => {}
        }
    }
    computation.instructions = start..module.instructions.len();
    module.computations.push(computation);
    Ok(())
}

/// `HloInstructionProto` (depth 3).
fn decode_instruction<'a>(mut w: Wire<'a>, ints: &mut Vec<i64>) -> Result<Instruction<'a>> {
    let mut i = Instruction {
        name: "",
        opcode: "",
        id: 0,
        parameter_number: 0,
        tuple_index: 0,
        operand_ids: Span::default(),
        called_computation_ids: Span::default(),
        shape: None,
        metadata: None,
    };
    let mut operands = IntsField::Absent;
    let mut called = IntsField::Absent;
    while let Some(f) = w.next()? {
        match f.number {
            1 => i.name = f.string()?,
            2 => i.opcode = f.string()?,
            3 => {
                let shape = f.message(3)?;
                check_shape(shape, 4)?;
                i.shape = Some(ShapeView(shape));
            }
            7 => {
                f.message(3)?;
                i.metadata = Some(OpMetadataView(f.payload));
            }
            9 => i.parameter_number = f.int()?,
            13 => i.tuple_index = f.int()?,
            35 => i.id = f.int()?,
            36 => operands.add(&f, ints)?,
            38 => called.add(&f, ints)?,
            37 => f.check_ints()?,
            11 | 28 | 79 => {
                f.check_string()?;
            }
            _ => {}
        }
    }
    i.operand_ids = operands.finish(ints);
    i.called_computation_ids = called.finish(ints);
    Ok(i)
}

/// `ProgramShapeProto` at `depth`: skipped, its shapes checked as prost would.
fn check_program_shape(mut w: Wire<'_>, depth: usize) -> Result<()> {
    while let Some(f) = w.next()? {
        match f.number {
            1 | 2 => check_shape(f.message(depth)?, depth + 1)?,
            3 => {
                f.check_string()?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks that a `ShapeProto` whose own depth is `depth` nests no deeper
/// than prost allows, and that its element and layout fields are framed.
/// Each level of nesting costs at least two bytes (a tag and a length), so a
/// shape shorter than twice the levels left cannot be too deep and is not
/// walked: most shapes are a few dozen bytes. The rest of a shape is
/// checked when it is read ([`ShapeView`]).
fn check_shape(w: Wire<'_>, depth: usize) -> Result<()> {
    if w.end - w.pos < 2 * (MAX_DEPTH.saturating_sub(depth) + 1) {
        return Ok(());
    }
    check_shape_walk(w, depth)
}

fn check_shape_walk(mut w: Wire<'_>, depth: usize) -> Result<()> {
    while let Some(f) = w.next()? {
        match f.number {
            4 => check_shape(f.message(depth)?, depth + 1)?,
            5 => {
                let mut layout = f.message(depth)?;
                while let Some(g) = layout.next()? {
                    match g.number {
                        10 => check_shape(g.message(depth + 1)?, depth + 2)?,
                        6 | 17 => {
                            g.message(depth + 1)?;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// `BufferAssignmentProto` (depth 1).
fn decode_assignment<'a>(
    mut w: Wire<'a>,
    assignment: &mut BufferAssignment<'a>,
    ints: &mut Vec<i64>,
) -> Result<()> {
    while let Some(f) = w.next()? {
        match f.number {
            1 => {
                let mut b = f.message(1)?;
                let mut buffer = LogicalBuffer::default();
                while let Some(g) = b.next()? {
                    match g.number {
                        1 => buffer.id = g.int()?,
                        2 => buffer.size = g.int()?,
                        4 => buffer.color = g.int()?,
                        3 => buffer.defined_at = Some(decode_location(g.message(2)?, ints)?),
                        _ => {}
                    }
                }
                assignment.logical_buffers.push(buffer);
            }
            2 => {
                let mut a = f.message(1)?;
                while let Some(g) = a.next()? {
                    match g.number {
                        1 => {
                            g.int()?;
                        }
                        2 => {
                            decode_location(g.message(2)?, ints)?;
                        }
                        _ => {}
                    }
                }
            }
            3 => {
                let allocation = decode_allocation(f.message(1)?, assignment, ints)?;
                assignment.buffer_allocations.push(allocation);
            }
            4 => {
                let mut t = f.message(1)?;
                let start = assignment.events.len();
                while let Some(g) = t.next()? {
                    match g.number {
                        1 => {
                            let event = decode_event(g.message(2)?)?;
                            assignment.events.push(event);
                        }
                        2 => {
                            g.boolean()?;
                        }
                        3 => {
                            g.int()?;
                        }
                        _ => {}
                    }
                }
                assignment.heap_simulator_traces.push(HeapSimulatorTrace {
                    events: start..assignment.events.len(),
                });
            }
            _ => {}
        }
    }
    Ok(())
}

/// `LogicalBufferProto.Location`: (instruction id, shape index).
fn decode_location(mut w: Wire<'_>, ints: &mut Vec<i64>) -> Result<(i64, Span)> {
    let mut instruction = 0;
    let mut index = IntsField::Absent;
    while let Some(f) = w.next()? {
        match f.number {
            4 => instruction = f.int()?,
            3 => index.add(&f, ints)?,
            2 => {
                f.check_string()?;
            }
            _ => {}
        }
    }
    Ok((instruction, index.finish(ints)))
}

fn decode_allocation(
    mut w: Wire<'_>,
    assignment: &mut BufferAssignment<'_>,
    ints: &mut Vec<i64>,
) -> Result<BufferAllocation> {
    let start = assignment.assigned.len();
    let mut a = BufferAllocation::default();
    let mut parameter_shape_index = IntsField::Absent;
    while let Some(f) = w.next()? {
        match f.number {
            1 => a.index = f.int()?,
            2 => a.size = f.int()?,
            3 => a.is_thread_local = f.boolean()?,
            11 => {
                f.boolean()?;
            }
            5 => a.is_entry_computation_parameter = f.boolean()?,
            12 => a.is_constant = f.boolean()?,
            6 => a.parameter_number = f.int()?,
            10 => parameter_shape_index.add(&f, ints)?,
            7 => a.maybe_live_out = f.boolean()?,
            8 => a.color = f.int()?,
            9 => {
                let mut g = f.message(2)?;
                let mut assigned = Assigned::default();
                while let Some(h) = g.next()? {
                    match h.number {
                        1 => assigned.logical_buffer_id = h.int()?,
                        2 => assigned.offset = h.int()?,
                        3 => {
                            h.int()?;
                        }
                        _ => {}
                    }
                }
                assignment.assigned.push(assigned);
            }
            _ => {}
        }
    }
    a.assigned = start..assignment.assigned.len();
    a.parameter_shape_index = parameter_shape_index.finish(ints);
    Ok(a)
}

fn decode_event(mut w: Wire<'_>) -> Result<Event<'_>> {
    let mut event = Event {
        kind: ALLOC,
        buffer_id: 0,
        instruction_name: "",
        share_with_canonical_id: 0,
    };
    while let Some(f) = w.next()? {
        match f.number {
            1 => event.kind = f.int32()?,
            2 => event.buffer_id = f.int()?,
            3 => {
                f.check_string()?;
            }
            4 => event.instruction_name = f.string()?,
            5 => event.share_with_canonical_id = f.int()?,
            _ => {}
        }
    }
    Ok(event)
}

// ---------------------------------------------------------------------------
// Shapes and metadata, decoded when shown

/// An `xla.ShapeProto`, checked when the view was made ([`decode`]), read
/// on demand.
#[derive(Clone, Copy)]
pub struct ShapeView<'a>(Wire<'a>);

impl<'a> ShapeView<'a> {
    /// Fields of the shape; the shape was checked, so a read error (none
    /// happens) ends the walk.
    fn fields(self) -> impl Iterator<Item = Field<'a>> {
        let mut w = self.0;
        std::iter::from_fn(move || w.next().ok().flatten())
    }

    /// `element_type` (the last one given, 0 when none).
    pub fn element_type(self) -> i32 {
        self.fields()
            .filter(|f| f.number == 2)
            .last()
            .and_then(|f| f.int32().ok())
            .unwrap_or(0)
    }

    /// The tuple elements, in order.
    pub fn tuple_shapes(self) -> impl Iterator<Item = ShapeView<'a>> {
        self.fields()
            .filter(|f| f.number == 4)
            .map(|f| ShapeView(f.payload))
    }

    /// The shape's bytes (equal bytes are equal shapes).
    pub(crate) fn bytes(self) -> &'a [u8] {
        self.0.bytes()
    }

    /// Whether the two views are the same bytes of the same input.
    pub fn same(self, other: ShapeView<'_>) -> bool {
        std::ptr::eq(self.0.buf, other.0.buf)
            && self.0.pos == other.0.pos
            && self.0.end == other.0.end
    }

    /// What an unpadded size reads of a shape, in one walk and without
    /// allocating: the element type, the product of the dimensions
    /// (saturating; a negative one counts as 0), the number of tuple
    /// elements and the layout, each as [`ShapeView::element_type`],
    /// [`ShapeView::dimensions`], [`ShapeView::tuple_shapes`] and
    /// [`ShapeView::layout`] read them.
    pub(crate) fn size_facts(self) -> SizeFacts<'a> {
        let mut facts = SizeFacts {
            element_type: 0,
            elements: 1,
            tuple_elements: 0,
            layout: None,
        };
        for f in self.fields() {
            match f.number {
                2 => facts.element_type = f.int32().unwrap_or(0),
                3 => {
                    let mut product = |d: i64| {
                        facts.elements =
                            facts.elements.saturating_mul(u64::try_from(d).unwrap_or(0));
                    };
                    // As `ints_into`: a packed run counts up to a bad varint.
                    match f.wire {
                        VARINT => product(f.varint as i64),
                        LEN => {
                            let mut packed = f.payload;
                            while !packed.is_empty() {
                                match packed.varint() {
                                    Ok(v) => product(v as i64),
                                    Err(_) => break,
                                }
                            }
                        }
                        _ => {}
                    }
                }
                4 => facts.tuple_elements += 1,
                5 => facts.layout = Some(LayoutView(f.payload)),
                _ => {}
            }
        }
        facts
    }

    pub fn tuple_shape(self, i: usize) -> Option<ShapeView<'a>> {
        self.tuple_shapes().nth(i)
    }

    /// Integers of a repeated field of this message (packed or not).
    fn ints(self, number: u32) -> Vec<i64> {
        let mut out = Vec::new();
        for f in self.fields().filter(|f| f.number == number) {
            let _ = f.ints_into(&mut out);
        }
        out
    }

    pub fn dimensions(self) -> Vec<i64> {
        self.ints(3)
    }

    pub fn is_dynamic_dimension(self) -> Vec<bool> {
        self.ints(6).into_iter().map(|v| v != 0).collect()
    }

    /// The layout (the last one given; prost merges repeated ones, which
    /// no writer produces).
    pub fn layout(self) -> Option<LayoutView<'a>> {
        self.fields()
            .filter(|f| f.number == 5)
            .last()
            .map(|f| LayoutView(f.payload))
    }
}

/// [`ShapeView::size_facts`].
pub(crate) struct SizeFacts<'a> {
    pub element_type: i32,
    pub elements: u64,
    pub tuple_elements: u64,
    pub layout: Option<LayoutView<'a>>,
}

/// An `xla.LayoutProto` inside a checked shape.
#[derive(Clone, Copy)]
pub struct LayoutView<'a>(Wire<'a>);

impl<'a> LayoutView<'a> {
    fn fields(self) -> impl Iterator<Item = Field<'a>> {
        ShapeView(self.0).fields()
    }

    pub fn minor_to_major(self) -> Vec<i64> {
        ShapeView(self.0).ints(1)
    }

    /// The last value of a scalar varint field (0 when absent).
    pub fn scalar(self, number: u32) -> i64 {
        self.fields()
            .filter(|f| f.number == number)
            .last()
            .and_then(|f| f.int().ok())
            .unwrap_or(0)
    }

    /// The scalar fields of a layout, read in one walk: `(number, value)`
    /// for fields 7, 8, 11, 12, 15 and 16, the last of each kept, 0 when
    /// absent (as [`LayoutView::scalar`] reads them one by one).
    pub fn scalars(self) -> [i64; 6] {
        const FIELDS: [u32; 6] = [7, 8, 11, 12, 15, 16];
        let mut out = [0i64; 6];
        for f in self.fields() {
            if let Some(k) = FIELDS.iter().position(|&n| n == f.number) {
                if let Ok(v) = f.int() {
                    out[k] = v;
                }
            }
        }
        out
    }

    /// Each tile's dimensions.
    pub fn tiles(self) -> Vec<Vec<i64>> {
        self.fields()
            .filter(|f| f.number == 6)
            .map(|f| ShapeView(f.payload).ints(1))
            .collect()
    }

    /// Each split config: (dimension, split indices).
    pub fn split_configs(self) -> Vec<(i64, Vec<i64>)> {
        self.fields()
            .filter(|f| f.number == 17)
            .map(|f| {
                let dimension = LayoutView(f.payload).scalar(1);
                (dimension, ShapeView(f.payload).ints(2))
            })
            .collect()
    }

    pub fn physical_shape(self) -> Option<ShapeView<'a>> {
        self.fields()
            .filter(|f| f.number == 10)
            .last()
            .map(|f| ShapeView(f.payload))
    }
}

/// An `xla.OpMetadata`, read when an instruction's buffer is shown.
#[derive(Clone, Copy)]
pub struct OpMetadataView<'a>(Wire<'a>);

/// What the views show of an instruction's metadata.
#[derive(Default)]
pub struct OpMetadata<'a> {
    pub op_name: &'a str,
    pub source_file: &'a str,
    pub source_line: i32,
    pub stack_frame_id: i32,
}

impl<'a> OpMetadataView<'a> {
    /// The fields shown; metadata that does not decode shows as none.
    pub fn read(self) -> OpMetadata<'a> {
        let mut w = self.0;
        let mut m = OpMetadata::default();
        let mut read = || -> Result<()> {
            while let Some(f) = w.next()? {
                match f.number {
                    2 => m.op_name = f.string()?,
                    3 => m.source_file = f.string()?,
                    4 => m.source_line = f.int32()?,
                    15 => m.stack_frame_id = f.int32()?,
                    _ => {}
                }
            }
            Ok(())
        };
        match read() {
            Ok(()) => m,
            Err(_) => OpMetadata::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut n: u64, out: &mut Vec<u8>) {
        while n >= 0x80 {
            out.push((n as u8) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }

    fn field_varint(field: u64, value: u64, out: &mut Vec<u8>) {
        varint(field << 3, out);
        varint(value, out);
    }

    fn field_bytes(field: u64, payload: &[u8], out: &mut Vec<u8>) {
        varint(field << 3 | 2, out);
        varint(payload.len() as u64, out);
        out.extend_from_slice(payload);
    }

    fn packed(values: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for &v in values {
            varint(v, &mut out);
        }
        out
    }

    /// An HloProto of one computation holding `instructions`.
    fn module_of(instructions: &[Vec<u8>]) -> Vec<u8> {
        let mut computation = Vec::new();
        for i in instructions {
            field_bytes(2, i, &mut computation);
        }
        let mut module = Vec::new();
        field_bytes(3, &computation, &mut module);
        let mut hlo = Vec::new();
        field_bytes(1, &module, &mut hlo);
        hlo
    }

    fn operands(hlo: &Hlo<'_>) -> Vec<(Vec<i64>, Vec<i64>)> {
        let module = hlo.module.as_ref().expect("a module");
        module
            .instructions
            .iter()
            .map(|i| {
                (
                    hlo.ints(i.operand_ids).to_vec(),
                    hlo.ints(i.called_computation_ids).to_vec(),
                )
            })
            .collect()
    }

    #[test]
    fn repeated_ids_packed_unpacked_or_interleaved_read_the_same() {
        let mut packed_form = Vec::new();
        field_varint(35, 7, &mut packed_form);
        field_bytes(36, &packed(&[1, 2, 300]), &mut packed_form);
        field_bytes(38, &packed(&[4]), &mut packed_form);
        // Every value its own field, the two lists interleaved, and a second
        // packed run of the first list after the other began.
        let mut mixed = Vec::new();
        field_varint(36, 1, &mut mixed);
        field_varint(38, 4, &mut mixed);
        field_varint(36, 2, &mut mixed);
        field_bytes(36, &packed(&[300]), &mut mixed);
        field_varint(35, 7, &mut mixed);
        let bytes = module_of(&[packed_form.clone(), mixed, packed_form]);
        let hlo = decode(&bytes).expect("decodes");
        let expected = (vec![1, 2, 300], vec![4]);
        assert_eq!(
            operands(&hlo),
            vec![expected.clone(), expected.clone(), expected]
        );
        assert!(hlo
            .module
            .as_ref()
            .unwrap()
            .instructions
            .iter()
            .all(|i| i.id == 7));
    }

    #[test]
    fn an_overrun_names_its_field_and_byte_offset() {
        let mut instruction = Vec::new();
        field_bytes(1, b"add.1", &mut instruction);
        let mut bytes = module_of(&[instruction]);
        // The name claims 100 bytes where 5 remain: the name's tag is at
        // byte 6 (3 wrapper tags and lengths before it).
        let at = bytes.len() - 7;
        assert_eq!(bytes[at], 1 << 3 | 2);
        bytes[at + 1] = 100;
        let e = decode(&bytes).err().expect("an error");
        assert_eq!(e.offset, at);
        assert!(
            e.message
                .contains("field 1 declares 100 bytes but only 5 remain"),
            "{e}"
        );
        assert!(e.to_string().ends_with(&format!("(at byte {at})")), "{e}");
    }

    #[test]
    fn a_string_not_kept_is_still_checked_for_utf8() {
        // `fusion_kind` (field 11) is not kept but prost refuses it when it
        // is not UTF-8: so does the view; ASCII and other UTF-8 pass.
        let with_kind = |kind: &[u8]| {
            let mut instruction = Vec::new();
            field_bytes(11, kind, &mut instruction);
            module_of(&[instruction])
        };
        assert!(decode(&with_kind(b"kLoop")).is_ok());
        assert!(decode(&with_kind("kLoop\u{e9}".as_bytes())).is_ok());
        let e = decode(&with_kind(&[b'k', 0xff])).err().expect("an error");
        assert!(e.message.contains("field 11 is not valid UTF-8"), "{e}");
    }

    #[test]
    fn a_known_field_with_the_wrong_wire_type_is_refused() {
        let mut instruction = Vec::new();
        field_varint(1, 3, &mut instruction); // name as a varint
        let e = decode(&module_of(&[instruction])).err().expect("an error");
        assert!(e.message.contains("field 1 has wire type 0"), "{e}");
    }

    #[test]
    fn metadata_is_read_only_when_shown() {
        // An instruction whose metadata is framed but not a valid OpMetadata
        // (its op_name is not UTF-8): the view decodes, the metadata reads
        // as none; valid metadata reads its fields.
        let mut bad = Vec::new();
        field_bytes(2, &[0xff, 0xfe], &mut bad);
        let mut good = Vec::new();
        field_bytes(2, b"jit(f)/dot", &mut good);
        field_bytes(3, b"model.py", &mut good);
        field_varint(4, 12, &mut good);
        let mut one = Vec::new();
        field_bytes(7, &bad, &mut one);
        let mut two = Vec::new();
        field_bytes(7, &good, &mut two);
        let bytes = module_of(&[one, two]);
        let hlo = decode(&bytes).expect("decodes");
        let module = hlo.module.as_ref().unwrap();
        let read: Vec<(String, String, i32)> = module
            .instructions
            .iter()
            .map(|i| {
                let m = i.metadata.map(|m| m.read()).unwrap_or_default();
                (
                    m.op_name.to_string(),
                    m.source_file.to_string(),
                    m.source_line,
                )
            })
            .collect();
        assert_eq!(
            read,
            vec![
                (String::new(), String::new(), 0),
                ("jit(f)/dot".into(), "model.py".into(), 12)
            ]
        );
    }

    #[test]
    fn a_tuple_elements_shape_is_found_by_index() {
        let element = |ty: u64, dims: &[u64]| {
            let mut s = Vec::new();
            field_varint(2, ty, &mut s);
            field_bytes(3, &packed(dims), &mut s);
            s
        };
        let mut tuple = Vec::new();
        field_varint(2, 13, &mut tuple);
        field_bytes(4, &element(11, &[8, 128]), &mut tuple);
        field_bytes(4, &element(16, &[4]), &mut tuple);
        let mut instruction = Vec::new();
        field_bytes(3, &tuple, &mut instruction);
        let bytes = module_of(&[instruction]);
        let hlo = decode(&bytes).expect("decodes");
        let shape = hlo.module.as_ref().unwrap().instructions[0].shape.unwrap();
        assert_eq!(shape.element_type(), 13);
        assert_eq!(shape.tuple_shapes().count(), 2);
        let second = shape.tuple_shape(1).unwrap();
        assert_eq!((second.element_type(), second.dimensions()), (16, vec![4]));
        assert!(shape.tuple_shape(2).is_none());
        assert!(second.same(shape.tuple_shape(1).unwrap()));
        assert!(!second.same(shape.tuple_shape(0).unwrap()));
    }
}
