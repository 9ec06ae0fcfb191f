//! A streaming unpickler for plain data (protocols 2 to 5).
//!
//! It implements the opcodes that build `None`, booleans, integers of any
//! size, floats, strings, bytes, lists, tuples, dicts and sets, with the memo
//! and framing (see CPython's `Lib/pickletools.py` for each opcode). Every
//! opcode that names a class, calls something or builds an object (GLOBAL,
//! STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4,
//! PERSID, BINPERSID, NEXT_BUFFER, READONLY_BUFFER) is refused with its byte
//! offset: nothing from the input is ever executed.
//!
//! The machine is a loop over opcodes with an explicit stack, so the input's
//! nesting never recurses in Rust; nesting depth is capped at [`MAX_DEPTH`]
//! and every length is checked against the input before any allocation.

use std::io::Read;
use std::rc::Rc;

use crate::error::{PickleError, Problem};
use crate::input::Input;
use crate::memo::Memo;
use crate::value::{Container, Strings, Value};

/// Deepest container nesting accepted. Snapshots nest about 8 levels
/// (snapshot → segments → segment → blocks → block → history → entry → frames).
pub const MAX_DEPTH: usize = 64;

/// What decoding may hold at once, in 16-byte value slots: twice the input's
/// size plus 64 MiB. A snapshot needs far less (its trace is compacted as it
/// is read); a pickle built to multiply itself in memory hits this instead.
fn slot_budget(total: u64) -> u64 {
    total / 8 + (4 << 20)
}

/// What the snapshot layer does with values as they are nested.
pub trait Sink {
    fn strings(&mut self) -> &mut Strings;
    /// Called with each value as it goes into a container; returns the value
    /// to store instead (a compact id for trace entries, frames and stacks).
    fn nest(&mut self, value: Value) -> Result<Value, Problem>;
    /// A fast path for a dict the sink knows the shape of, decoded straight
    /// from the read-ahead bytes `buf` (which start at its EMPTY_DICT;
    /// `remaining` bytes of input are left from there). Called only where
    /// the dict is an item of a list being filled (a device's trace). On
    /// success it has written the memo slots those bytes write and returns
    /// what the general path would have nested; `None` (anything it does
    /// not decode exactly as the general path would) leaves the memo as it
    /// was, and the general path decodes the same bytes.
    fn shaped(&mut self, buf: &[u8], remaining: u64, memo: &mut Memo) -> Option<Shaped> {
        let _ = (buf, remaining, memo);
        None
    }
}

/// What [`Sink::shaped`] decoded.
pub struct Shaped {
    /// Bytes consumed.
    pub used: usize,
    /// Opcodes consumed (for the budget check's count).
    pub ops: u64,
    pub value: Value,
}

/// Read-ahead wanted before trying [`Sink::shaped`]: far more than a trace
/// entry (a few hundred bytes); one that does not fit is decoded generally.
const SHAPED_LOOKAHEAD: usize = 64 * 1024;

/// Decodes one pickle from `reader` (`total` bytes long) into its top value.
pub fn unpickle<R: Read>(reader: R, total: u64, sink: &mut dyn Sink) -> Result<Value, PickleError> {
    let budget = slot_budget(total);
    let base = crate::value::live_slots();
    Machine {
        input: Input::new(reader, total),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Memo::default(),
        sink,
        budget,
        base,
    }
    .run()
}

struct Machine<'s, R: Read> {
    input: Input<R>,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: Memo,
    sink: &'s mut dyn Sink,
    /// Most value slots (stack, marks, memo, live containers) held at once.
    budget: u64,
    /// Live container slots on this thread before decoding began.
    base: u64,
}

fn refuse(name: &'static str) -> Problem {
    Problem::NotPlainData(name)
}

impl<R: Read> Machine<'_, R> {
    fn run(mut self) -> Result<Value, PickleError> {
        let first = self.input.byte().map_err(|e| PickleError {
            problem: Problem::NotAPickle,
            ..e
        })?;
        if first != 0x80 {
            return Err(PickleError {
                offset: 0,
                problem: Problem::NotAPickle,
            });
        }
        let proto = self.input.byte()?;
        if !(2..=5).contains(&proto) {
            return Err(PickleError {
                offset: 1,
                problem: Problem::UnsupportedProtocol(proto),
            });
        }
        let mut ops = 0u64;
        let mut next_check = 1024u64;
        loop {
            self.memo_get_run(&mut ops, next_check);
            if self.try_shaped(&mut ops)? {
                continue;
            }
            let at = self.input.offset();
            ops += 1;
            // One opcode adds at most a container or a few slots (a shaped
            // dict: its compact form), so checking every 1024 opcodes
            // bounds the overshoot.
            if ops >= next_check {
                next_check = ops + 1024;
                let held = crate::value::live_slots().saturating_sub(self.base)
                    + self.stack.len() as u64
                    + self.marks.len() as u64
                    + self.memo.len() as u64;
                if held > self.budget {
                    return Err(PickleError {
                        offset: at,
                        problem: Problem::TooLarge {
                            budget_bytes: self.budget * 16,
                        },
                    });
                }
            }
            let op = self.input.byte()?;
            match self.step(op) {
                Ok(true) => {}
                Ok(false) => {
                    return match (self.stack.pop(), self.stack.is_empty()) {
                        (Some(v), true) => Ok(v),
                        _ => Err(PickleError {
                            offset: at,
                            problem: Problem::Malformed(
                                "STOP with a stack that does not hold exactly one value",
                            ),
                        }),
                    }
                }
                Err(StepError::Pickle(e)) => return Err(e),
                Err(StepError::Problem(problem)) => {
                    return Err(PickleError {
                        offset: at,
                        problem,
                    })
                }
            }
        }
    }

    fn pop(&mut self) -> Result<Value, StepError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(Problem::Malformed("pop from an empty stack").into());
        }
        Ok(self.stack.pop().unwrap_or(Value::None))
    }

    fn top(&self) -> Result<&Value, StepError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(Problem::Malformed("empty stack").into());
        }
        self.stack
            .last()
            .ok_or_else(|| Problem::Malformed("empty stack").into())
    }

    /// The values pushed since the last MARK, which is removed.
    fn pop_mark(&mut self) -> Result<Vec<Value>, StepError> {
        let mark = self
            .marks
            .pop()
            .ok_or(Problem::Malformed("no MARK on the stack"))?;
        Ok(self.stack.split_off(mark))
    }

    fn read_str(&mut self, len: u64) -> Result<(), StepError> {
        let mut result = Ok(());
        let input = &mut self.input;
        let sink = &mut *self.sink;
        let stack = &mut self.stack;
        input.with_bytes(len, |b| match std::str::from_utf8(b) {
            Ok(text) => stack.push(Value::Str(sink.strings().intern(text))),
            Err(_) => result = Err(Problem::Malformed("string is not valid UTF-8")),
        })?;
        result.map_err(StepError::from)
    }

    fn read_bytes(&mut self, len: u64) -> Result<(), StepError> {
        self.input.skip(len)?;
        self.stack.push(Value::Bytes(len));
        Ok(())
    }

    fn long(&mut self, len: u64) -> Result<(), StepError> {
        let v = self.input.with_bytes(len, little_endian_signed)?;
        self.stack.push(v);
        Ok(())
    }

    /// Whether the top of the stack is inside a MARK above a list: the items
    /// of an APPENDS, where a device's trace entries are.
    fn in_list_batch(&self) -> bool {
        match self.marks.last() {
            Some(&m) if m > 0 => matches!(self.stack.get(m - 1), Some(Value::List(_))),
            _ => false,
        }
    }

    /// [`Sink::shaped`] on a dict about to be read; true when it was.
    fn try_shaped(&mut self, ops: &mut u64) -> Result<bool, PickleError> {
        if self.input.buffered().first() != Some(&b'}') || !self.in_list_batch() {
            return Ok(false);
        }
        if self.input.buffered().len() < SHAPED_LOOKAHEAD {
            self.input.ensure(SHAPED_LOOKAHEAD)?;
        }
        let remaining = self.input.remaining();
        let Some(done) = self
            .sink
            .shaped(self.input.buffered(), remaining, &mut self.memo)
        else {
            return Ok(false);
        };
        self.input.advance(done.used);
        *ops += done.ops;
        self.stack.push(done.value);
        Ok(true)
    }

    /// Nests `child` into a container: freezes it, checks depth, lets the
    /// sink compact it, and points its memo slot at the compact form.
    fn nest(&mut self, child: Value, parent_depth: &mut u16) -> Result<Value, StepError> {
        if let Some(c) = child.container() {
            let mut d = c.data.borrow_mut();
            d.frozen = true;
            if d.depth as usize + 1 > MAX_DEPTH {
                return Err(Problem::TooDeep(MAX_DEPTH).into());
            }
            *parent_depth = (*parent_depth).max(d.depth + 1);
        }
        let slot = child.container().and_then(|c| c.data.borrow().memo_slot);
        let compact = self.sink.nest(child)?;
        if let Some(slot) = slot {
            if compact.container().is_none() && (slot as usize) < self.memo.len() {
                self.memo.set(slot as usize, compact.clone());
            }
        }
        Ok(compact)
    }

    /// Moves `stack[start..]` into the container at `stack[start - 1]`
    /// (APPEND(S), SETITEM(S), ADDITEMS), nesting each item.
    fn extend_at(&mut self, start: usize, want: &'static str) -> Result<(), StepError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if start == 0 || start - 1 < floor || start > self.stack.len() {
            return Err(Problem::Malformed("items added with no container below them").into());
        }
        let target = match &self.stack[start - 1] {
            Value::List(c) if want == "list" => c.clone(),
            Value::Dict(c) if want == "dict" => c.clone(),
            Value::Set(c) if want == "set" => c.clone(),
            _ => {
                return Err(Problem::Malformed(
                    "items added to something that is not a container of that kind",
                )
                .into())
            }
        };
        if target.data.borrow().frozen {
            return Err(Problem::Malformed(
                "a container is changed after being nested (not plain data)",
            )
            .into());
        }
        let mut depth = target.data.borrow().depth;
        for i in start..self.stack.len() {
            // Scalars and compact ids (most items: the frames of a stack)
            // need neither freezing nor compaction.
            let Some(c) = self.stack[i].container() else {
                continue;
            };
            if Rc::ptr_eq(c, &target) {
                return Err(Problem::Malformed("a container nested into itself").into());
            }
            let item = std::mem::replace(&mut self.stack[i], Value::None);
            self.stack[i] = self.nest(item, &mut depth)?;
        }
        let mut data = target.data.borrow_mut();
        crate::value::note_items(self.stack.len() - start);
        let added = &self.stack[start..];
        if want == "list"
            && data.items.is_empty()
            && added.iter().all(|v| matches!(v, Value::Event(_)))
        {
            // A device's trace: ids kept in 4 bytes each.
            data.events
                .extend(self.stack.drain(start..).map(|v| match v {
                    Value::Event(id) => id,
                    _ => 0,
                }));
            data.depth = depth;
            return Ok(());
        }
        data.spill_events();
        if data.items.is_empty() {
            // The usual case (one APPENDS/SETITEMS per container): a memcpy.
            data.items = self.stack.split_off(start);
        } else {
            data.items.extend(self.stack.drain(start..));
        }
        data.depth = depth;
        Ok(())
    }

    /// The start of the items above the last MARK, which is removed.
    fn pop_mark_start(&mut self) -> Result<usize, StepError> {
        let mark = self
            .marks
            .pop()
            .ok_or(Problem::Malformed("no MARK on the stack"))?;
        Ok(mark.min(self.stack.len()))
    }

    fn new_container(&mut self, items: Vec<Value>) -> Result<Rc<Container>, StepError> {
        let mut depth = 1u16;
        let mut nested = Vec::with_capacity(items.len());
        for item in items {
            nested.push(self.nest(item, &mut depth)?);
        }
        let c = Container::new(Vec::new());
        {
            let mut d = c.data.borrow_mut();
            crate::value::note_items(nested.len());
            d.items = nested;
            d.depth = depth;
        }
        Ok(c)
    }

    fn tuple(&mut self, items: Vec<Value>) -> Result<(), StepError> {
        let c = self.new_container(items)?;
        c.data.borrow_mut().frozen = true;
        self.stack.push(Value::Tuple(c));
        Ok(())
    }

    fn memo_put(&mut self, index: u64) -> Result<(), StepError> {
        // Memo indices are dense in practice; a sparse index is bounded by the
        // input size (each PUT costs bytes), so it cannot force a huge table.
        let index =
            usize::try_from(index).map_err(|_| Problem::Malformed("memo index too large"))?;
        if index > self.memo.len() + (self.input.remaining() as usize) + 1 {
            return Err(
                Problem::Malformed("memo index far beyond anything the input can fill").into(),
            );
        }
        // Past the slots the memo can address (a file of some 50 GB).
        if index >= crate::memo::MAX_SLOTS {
            return Err(Problem::TooLarge {
                budget_bytes: self.budget * 16,
            }
            .into());
        }
        let value = self.top()?.clone();
        if let Some(c) = value.container() {
            c.data.borrow_mut().memo_slot = u32::try_from(index).ok();
        }
        self.memo.set(index, value);
        Ok(())
    }

    fn memo_get(&mut self, index: u64) -> Result<(), StepError> {
        // Cloned from `&Value`, not `Option<Value>::clone`: the latter copies
        // the payload bytewise through a temporary that stalls
        // store-forwarding (a quarter of the decoding time on big files).
        match usize::try_from(index).ok().and_then(|i| self.memo.get(i)) {
            Some(v) => self.stack.push(v),
            None => return Err(Problem::MemoMissing(index).into()),
        }
        Ok(())
    }

    /// A fast path for runs of BINGET/LONG_BINGET (most opcodes of a
    /// snapshot: the keys of every trace entry and the frames of every
    /// stack), decoded straight from the read-ahead buffer. It stops before
    /// anything it cannot do exactly as [`Machine::step`] would (an opcode
    /// cut by the buffer's end, a missing memo entry: the general path then
    /// reports it with its offset) and before the opcode count reaches a
    /// multiple of 1024, so the budget check in `run` sees the same counts.
    fn memo_get_run(&mut self, ops: &mut u64, next_check: u64) {
        let buf = self.input.buffered();
        let mut used = 0;
        loop {
            if *ops + 1 >= next_check {
                break;
            }
            let (index, len) = match buf.get(used..) {
                Some([b'h', i, ..]) => (*i as usize, 2),
                Some([b'j', a, b, c, d, ..]) => (u32::from_le_bytes([*a, *b, *c, *d]) as usize, 5),
                _ => break,
            };
            let Some(v) = self.memo.get(index) else {
                break;
            };
            self.stack.push(v);
            used += len;
            *ops += 1;
        }
        self.input.advance(used);
    }

    /// Executes one opcode; false on STOP.
    fn step(&mut self, op: u8) -> Result<bool, StepError> {
        match op {
            b'.' => return Ok(false),
            0x80 => return Err(Problem::Malformed("PROTO after the start").into()),
            // FRAME: a length hint for buffered readers; we stream anyway.
            0x95 => {
                let n = u64::from_le_bytes(self.input.array()?);
                self.input.check_len(n)?;
            }
            b'(' => self.marks.push(self.stack.len()),
            b'0' => {
                self.pop()?;
            }
            b'1' => {
                self.pop_mark()?;
            }
            b'2' => {
                let v = self.top()?.clone();
                self.stack.push(v);
            }
            b'N' => self.stack.push(Value::None),
            0x88 => self.stack.push(Value::Bool(true)),
            0x89 => self.stack.push(Value::Bool(false)),
            b'J' => self
                .stack
                .push(Value::Int(i32::from_le_bytes(self.input.array()?) as i64)),
            b'K' => self.stack.push(Value::Int(self.input.byte()? as i64)),
            b'M' => self
                .stack
                .push(Value::Int(u16::from_le_bytes(self.input.array()?) as i64)),
            0x8a => {
                let n = self.input.byte()? as u64;
                self.long(n)?;
            }
            0x8b => {
                let n = i32::from_le_bytes(self.input.array()?);
                let n =
                    u64::try_from(n).map_err(|_| Problem::Malformed("negative LONG4 length"))?;
                self.long(n)?;
            }
            b'I' => {
                let line = self.input.line()?;
                let v = match line.as_str() {
                    "00" => Value::Bool(false),
                    "01" => Value::Bool(true),
                    t => Value::Int(t.parse().map_err(|_| Problem::BadText("INT"))?),
                };
                self.stack.push(v);
            }
            b'L' => {
                let line = self.input.line()?;
                let t = line.strip_suffix('L').unwrap_or(&line);
                let v = match t.parse::<i64>() {
                    Ok(i) => Value::Int(i),
                    Err(_) => match t.parse::<u64>() {
                        Ok(u) => Value::BigUint(u),
                        Err(_)
                            if t.bytes().all(|b| b.is_ascii_digit() || b == b'-')
                                && !t.is_empty() =>
                        {
                            Value::Oversized
                        }
                        Err(_) => return Err(Problem::BadText("LONG").into()),
                    },
                };
                self.stack.push(v);
            }
            b'G' => self
                .stack
                .push(Value::Float(f64::from_be_bytes(self.input.array()?))),
            b'F' => {
                let line = self.input.line()?;
                self.stack.push(Value::Float(
                    line.trim().parse().map_err(|_| Problem::BadText("FLOAT"))?,
                ));
            }
            0x8c => {
                let n = self.input.byte()? as u64;
                self.read_str(n)?;
            }
            b'X' => {
                let n = u32::from_le_bytes(self.input.array()?) as u64;
                self.read_str(n)?;
            }
            0x8d => {
                let n = u64::from_le_bytes(self.input.array()?);
                self.read_str(n)?;
            }
            // Python 2 `str` (SHORT_BINSTRING, BINSTRING): bytes decoded as text.
            b'U' => {
                let n = self.input.byte()? as u64;
                self.read_str(n)?;
            }
            b'T' => {
                let n = i32::from_le_bytes(self.input.array()?);
                let n = u64::try_from(n)
                    .map_err(|_| Problem::Malformed("negative BINSTRING length"))?;
                self.read_str(n)?;
            }
            b'C' => {
                let n = self.input.byte()? as u64;
                self.read_bytes(n)?;
            }
            b'B' => {
                let n = u32::from_le_bytes(self.input.array()?) as u64;
                self.read_bytes(n)?;
            }
            0x8e | 0x96 => {
                let n = u64::from_le_bytes(self.input.array()?);
                self.read_bytes(n)?;
            }
            b'S' | b'V' => return Err(Problem::BadText(
                "protocol-0 quoted strings (STRING, UNICODE) are not written by protocols 2 to 5",
            )
            .into()),
            b']' => {
                let c = Container::new(Vec::new());
                self.stack.push(Value::List(c));
            }
            b'}' => {
                let c = Container::new(Vec::new());
                self.stack.push(Value::Dict(c));
            }
            0x8f => {
                let c = Container::new(Vec::new());
                self.stack.push(Value::Set(c));
            }
            b')' => self.tuple(Vec::new())?,
            0x85 => {
                let a = self.pop()?;
                self.tuple(vec![a])?;
            }
            0x86 => {
                let b = self.pop()?;
                let a = self.pop()?;
                self.tuple(vec![a, b])?;
            }
            0x87 => {
                let c = self.pop()?;
                let b = self.pop()?;
                let a = self.pop()?;
                self.tuple(vec![a, b, c])?;
            }
            b't' => {
                let items = self.pop_mark()?;
                self.tuple(items)?;
            }
            b'l' => {
                let items = self.pop_mark()?;
                let c = self.new_container(items)?;
                self.stack.push(Value::List(c));
            }
            b'd' => {
                let items = self.pop_mark()?;
                if items.len() % 2 != 0 {
                    return Err(Problem::Malformed("DICT with an odd number of items").into());
                }
                let c = self.new_container(items)?;
                self.stack.push(Value::Dict(c));
            }
            0x91 => {
                let items = self.pop_mark()?;
                let c = self.new_container(items)?;
                c.data.borrow_mut().frozen = true;
                self.stack.push(Value::Set(c));
            }
            b'a' => self.extend_at(self.stack.len().wrapping_sub(1), "list")?,
            b'e' => {
                let start = self.pop_mark_start()?;
                self.extend_at(start, "list")?;
            }
            b's' => self.extend_at(self.stack.len().wrapping_sub(2), "dict")?,
            b'u' => {
                let start = self.pop_mark_start()?;
                if !(self.stack.len() - start).is_multiple_of(2) {
                    return Err(Problem::Malformed("SETITEMS with an odd number of items").into());
                }
                self.extend_at(start, "dict")?;
            }
            0x90 => {
                let start = self.pop_mark_start()?;
                self.extend_at(start, "set")?;
            }
            b'p' => {
                let line = self.input.line()?;
                self.memo_put(line.parse().map_err(|_| Problem::BadText("PUT"))?)?;
            }
            b'q' => {
                let i = self.input.byte()? as u64;
                self.memo_put(i)?;
            }
            b'r' => {
                let i = u32::from_le_bytes(self.input.array()?) as u64;
                self.memo_put(i)?;
            }
            0x94 => {
                let i = self.memo.len() as u64;
                self.memo_put(i)?;
            }
            b'g' => {
                let line = self.input.line()?;
                self.memo_get(line.parse().map_err(|_| Problem::BadText("GET"))?)?;
            }
            b'h' => {
                let i = self.input.byte()? as u64;
                self.memo_get(i)?;
            }
            b'j' => {
                let i = u32::from_le_bytes(self.input.array()?) as u64;
                self.memo_get(i)?;
            }
            b'c' => return Err(refuse("GLOBAL").into()),
            0x93 => return Err(refuse("STACK_GLOBAL").into()),
            b'R' => return Err(refuse("REDUCE").into()),
            b'b' => return Err(refuse("BUILD").into()),
            b'i' => return Err(refuse("INST").into()),
            b'o' => return Err(refuse("OBJ").into()),
            0x81 => return Err(refuse("NEWOBJ").into()),
            0x92 => return Err(refuse("NEWOBJ_EX").into()),
            0x82 => return Err(refuse("EXT1").into()),
            0x83 => return Err(refuse("EXT2").into()),
            0x84 => return Err(refuse("EXT4").into()),
            b'P' => return Err(refuse("PERSID").into()),
            b'Q' => return Err(refuse("BINPERSID").into()),
            0x97 => return Err(refuse("NEXT_BUFFER").into()),
            0x98 => return Err(refuse("READONLY_BUFFER").into()),
            other => return Err(Problem::UnknownOpcode(other).into()),
        }
        Ok(true)
    }
}

/// LONG1/LONG4 payload: little-endian two's complement of any length.
pub(crate) fn little_endian_signed(bytes: &[u8]) -> Value {
    if bytes.is_empty() {
        return Value::Int(0);
    }
    let negative = bytes[bytes.len() - 1] & 0x80 != 0;
    // Strip sign-extension bytes so that 9-byte encodings of 64-bit values fit.
    let fill = if negative { 0xff } else { 0x00 };
    let mut len = bytes.len();
    while len > 1 && bytes[len - 1] == fill && (bytes[len - 2] & 0x80 != 0) == negative {
        len -= 1;
    }
    if len > 8 && !(len == 9 && !negative && bytes[8] == 0) {
        return Value::Oversized;
    }
    let mut raw = [fill; 8];
    raw[..len.min(8)].copy_from_slice(&bytes[..len.min(8)]);
    let u = u64::from_le_bytes(raw);
    if negative || u <= i64::MAX as u64 {
        Value::Int(u as i64)
    } else {
        Value::BigUint(u)
    }
}

enum StepError {
    Pickle(PickleError),
    Problem(Problem),
}

impl From<Problem> for StepError {
    fn from(p: Problem) -> Self {
        StepError::Problem(p)
    }
}

impl From<PickleError> for StepError {
    fn from(e: PickleError) -> Self {
        StepError::Pickle(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_payloads_decode_as_python_does() {
        assert!(matches!(little_endian_signed(&[0xff]), Value::Int(-1)));
        assert!(matches!(
            little_endian_signed(&[0x00, 0x80, 0x00]),
            Value::Int(32768)
        ));
        assert!(matches!(
            little_endian_signed(&[0x00, 0x80]),
            Value::Int(-32768)
        ));
        // 2^63 needs 9 bytes in pickle (sign byte 0).
        assert!(
            matches!(little_endian_signed(&[0, 0, 0, 0, 0, 0, 0, 0x80, 0]), Value::BigUint(u) if u == 1 << 63)
        );
        assert!(matches!(little_endian_signed(&[1; 20]), Value::Oversized));
        assert!(matches!(little_endian_signed(&[0xff; 20]), Value::Int(-1)));
    }
}
