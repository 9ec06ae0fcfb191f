//! The snapshot's own shape, decoded straight into compact columns.
//!
//! Nearly all of a snapshot's bytes are its trace entries as
//! `torch.cuda.memory._dump_snapshot` pickles them (`pickle.dump` of plain
//! dicts, lists, strings and ints; CPython's pickler):
//!
//! ```text
//! }  MEMOIZE  (  key value  key value ...  'frames' ]  MEMOIZE  ( frame frame ... e  u
//! ```
//!
//! where every key is a BINGET of a memoized string (or the string itself,
//! the first time), values are ints, strings or None, and each frame is a
//! BINGET of a memoized frame dict (or, the first time, the dict itself:
//! `}  MEMOIZE  (  'filename' str 'line' int 'name' str  u`). Lists of more
//! than 1,000 items come in several `( ... e` batches, a list of one item
//! as `item a`; protocols 2 and 3 write BINPUT/LONG_BINPUT instead of
//! MEMOIZE; FRAME opcodes may come between any two objects.
//!
//! The general unpickler builds a container for every entry and every
//! frames list, then compacts it; this path reads the same bytes straight
//! into a [`TraceEvent`] and an interned stack, and writes the same memo
//! slots with their compact values. It applies the general path's rules
//! ([`Compactor::as_event`]'s field by field, [`Compactor::as_frame`]
//! itself), so what it accepts decodes identically (`tests/shape.rs` reads
//! every corpus snapshot both ways); anything else
//! (another opcode, a value that is a container, an entry cut by the end of
//! the read-ahead, a field the general path would refuse) makes it give up
//! with the memo restored, and the general path decodes those bytes.
//!
//! One difference is deliberate: the entry is compact as soon as its dict
//! ends, where the general path compacts it when its list takes it. Python's
//! pickler never changes a dict after its SETITEMS, and the path runs only
//! where the dict is an item of a list batch, so only a hand-made pickle
//! could tell (it then gets an error instead of a dict changed later).

use crate::compact::{key, Compactor};
use crate::memo::{Memo, Slot};
use crate::model::{Action, TraceEvent};
use crate::unpickle::{little_endian_signed, Shaped};
use crate::value::{Container, Value};

/// A trace entry's key or value, as much of it as [`Compactor::as_event`]
/// looks at. `Copy` and two words, so it moves in registers (a `Value`
/// moved through memory stalled on store-forwarding: a third of this
/// path's time).
#[derive(Clone, Copy, PartialEq)]
enum Small {
    None,
    Bool(bool),
    Int(i64),
    Big(u64),
    Str(u32),
    Stack(u32),
    /// A float, an integer beyond 64 bits, a frame or trace entry id: what
    /// no field of a trace entry takes (`as_event` reads it as missing or
    /// refuses it).
    Other,
}

impl Small {
    fn of(v: &Value) -> Option<Small> {
        Some(match *v {
            Value::None => Small::None,
            Value::Bool(b) => Small::Bool(b),
            Value::Int(i) => Small::Int(i),
            Value::BigUint(u) => Small::Big(u),
            Value::Str(s) => Small::Str(s),
            Value::Stack(s) => Small::Stack(s),
            Value::Oversized
            | Value::Float(_)
            | Value::Bytes(_)
            | Value::Frame(_)
            | Value::Event(_) => Small::Other,
            Value::List(_) | Value::Dict(_) | Value::Tuple(_) | Value::Set(_) => return None,
        })
    }

    /// `Value::as_u64`, for the fields `as_event` requires to be one.
    fn as_u64(self) -> Option<u64> {
        match self {
            Small::Int(i) if i >= 0 => Some(i as u64),
            Small::Big(u) => Some(u),
            Small::Bool(b) => Some(b as u64),
            _ => None,
        }
    }

    /// `Value::as_i64`.
    fn as_i64(self) -> Option<i64> {
        match self {
            Small::Int(i) => Some(i),
            Small::Bool(b) => Some(b as i64),
            _ => None,
        }
    }
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Input bytes left from `buf[0]` (a FRAME may not claim more).
    remaining: u64,
    ops: u64,
}

impl<'a> Cursor<'a> {
    #[inline]
    fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    #[inline]
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let out = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(out)
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N).and_then(|b| b.try_into().ok())
    }

    /// Skips FRAME opcodes (length hints; the general path checks their
    /// length against the input, so a FRAME that claims too much is left
    /// to it).
    #[inline]
    fn skip_frames(&mut self) -> Option<()> {
        while self.buf.get(self.pos) == Some(&0x95) {
            let n = u64::from_le_bytes(self.buf.get(self.pos + 1..self.pos + 9)?.try_into().ok()?);
            if n > self.remaining.saturating_sub(self.pos as u64 + 9) {
                return None;
            }
            self.pos += 9;
            self.ops += 1;
        }
        Some(())
    }

    /// The next opcode, without consuming it.
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.skip_frames()?;
        self.buf.get(self.pos).copied()
    }

    /// The next opcode, consumed.
    #[inline]
    fn op(&mut self) -> Option<u8> {
        self.skip_frames()?;
        self.ops += 1;
        self.byte()
    }

    /// A memo PUT after a value, if there is one: MEMOIZE, or a BINPUT or
    /// LONG_BINPUT of the next slot (the only ones Python writes). Returns
    /// the slot; a PUT elsewhere makes the path give up. `None` writes a
    /// slot that reads as never written until [`Memo::set`] fills it (a
    /// container's, while its items are read: a GET of it from inside
    /// itself makes the path give up, as the general path refuses it).
    #[inline]
    fn put(&mut self, memo: &mut Memo, value: Option<Value>) -> Result<Option<usize>, ()> {
        let index = match self.peek() {
            Some(0x94) => {
                self.pos += 1;
                memo.len()
            }
            Some(b'q') => {
                self.pos += 1;
                self.byte().ok_or(())? as usize
            }
            Some(b'r') => {
                self.pos += 1;
                u32::from_le_bytes(self.array().ok_or(())?) as usize
            }
            _ => return Ok(None),
        };
        if index != memo.len() || index >= crate::memo::MAX_SLOTS {
            return Err(());
        }
        self.ops += 1;
        match value {
            Some(v) => memo.push(v),
            None => memo.push_pending(),
        }
        Ok(Some(index))
    }

    /// A scalar value or a GET (ints, None, booleans, floats, strings with
    /// their PUT), as the general path would push it; `None` for anything
    /// else, or a GET of a container.
    fn scalar(&mut self, op: u8, memo: &mut Memo, c: &mut Compactor) -> Option<Value> {
        let v = match op {
            b'K' => Value::Int(self.byte()? as i64),
            b'M' => Value::Int(u16::from_le_bytes(self.array()?) as i64),
            b'J' => Value::Int(i32::from_le_bytes(self.array()?) as i64),
            0x8a => {
                let n = self.byte()? as usize;
                little_endian_signed(self.take(n)?)
            }
            b'N' => Value::None,
            0x88 => Value::Bool(true),
            0x89 => Value::Bool(false),
            b'G' => Value::Float(f64::from_be_bytes(self.array()?)),
            0x8c | b'X' => {
                let n = if op == 0x8c {
                    self.byte()? as usize
                } else {
                    u32::from_le_bytes(self.array()?) as usize
                };
                let text = std::str::from_utf8(self.take(n)?).ok()?;
                let v = Value::Str(c.strings.intern(text));
                self.put(memo, Some(v.clone())).ok()?;
                v
            }
            b'h' => memo.get(self.byte()? as usize)?,
            b'j' => memo.get(u32::from_le_bytes(self.array()?) as usize)?,
            _ => return None,
        };
        if v.container().is_some() {
            return None;
        }
        Some(v)
    }

    /// [`Cursor::scalar`] as a [`Small`], without building a `Value` on
    /// the way for the common opcodes.
    #[inline]
    fn small(&mut self, op: u8, memo: &mut Memo, c: &mut Compactor) -> Option<Small> {
        Some(match op {
            b'h' | b'j' => {
                let index = if op == b'h' {
                    self.byte()? as usize
                } else {
                    u32::from_le_bytes(self.array()?) as usize
                };
                match memo.slot(index)? {
                    Slot::Str(s) => Small::Str(s),
                    Slot::Stack(s) => Small::Stack(s),
                    Slot::Frame(_) | Slot::Event(_) => Small::Other,
                    Slot::Other(v) => Small::of(v)?,
                }
            }
            b'K' => Small::Int(self.byte()? as i64),
            b'M' => Small::Int(u16::from_le_bytes(self.array()?) as i64),
            b'J' => Small::Int(i32::from_le_bytes(self.array()?) as i64),
            b'N' => Small::None,
            0x8a => {
                let n = self.byte()? as usize;
                Small::of(&little_endian_signed(self.take(n)?))?
            }
            _ => Small::of(&self.scalar(op, memo, c)?)?,
        })
    }

    /// A trace entry's `}  PUT?  (  key value ...  u`, straight into a
    /// [`TraceEvent`] by `as_event`'s rules; `None` where `as_event` finds
    /// no action or refuses a field (the general path then says why).
    fn entry(&mut self, memo: &mut Memo, c: &mut Compactor) -> Option<(TraceEvent, Option<usize>)> {
        let slot = self.put(memo, None).ok()?;
        if self.op()? != b'(' {
            return None;
        }
        let mut e = TraceEvent::new(Action::Other);
        let mut action = None;
        let (mut addr, mut device_free) = (0, 0);
        loop {
            let op = self.op()?;
            if op == b'u' {
                break;
            }
            let k = self.small(op, memo, c)?;
            let op = self.op()?;
            let v = if op == b']' && k == Small::Str(key::FRAMES) {
                Small::of(&self.frames_list(memo, c)?)?
            } else {
                self.small(op, memo, c)?
            };
            let Small::Str(k) = k else { continue };
            match k {
                key::ACTION => {
                    action = match v {
                        Small::Str(s) => Some(s),
                        _ => None,
                    }
                }
                key::ADDR => addr = v.as_u64()?,
                key::SIZE => e.size = v.as_u64()?,
                key::TIME_US => e.set_time_us(v.as_i64()),
                key::DEVICE_FREE => device_free = v.as_u64()?,
                key::FRAMES => {
                    e.stack = match v {
                        Small::Stack(s) => s,
                        _ => 0,
                    }
                }
                _ => {}
            }
        }
        e.finish(Compactor::action(action?), addr, device_free);
        Some((e, slot))
    }

    /// A frame dict's `}  PUT?  (` and its `key value` pairs up to `u`,
    /// into `items`. Returns the dict's memo slot.
    fn dict(
        &mut self,
        memo: &mut Memo,
        c: &mut Compactor,
        items: &mut Vec<Value>,
    ) -> Option<Option<usize>> {
        let slot = self.put(memo, None).ok()?;
        if self.op()? != b'(' {
            return None;
        }
        loop {
            let op = self.op()?;
            if op == b'u' {
                return Some(slot);
            }
            let k = self.scalar(op, memo, c)?;
            let op = self.op()?;
            let v = self.scalar(op, memo, c)?;
            items.push(k);
            items.push(v);
        }
    }

    /// A frames list after its `]`: a stack of frames, or an empty list.
    fn frames_list(&mut self, memo: &mut Memo, c: &mut Compactor) -> Option<Value> {
        let slot = self.put(memo, None).ok()?;
        let mut ids = std::mem::take(&mut c.scratch);
        ids.clear();
        let ok = self.frame_items(memo, c, &mut ids);
        let value = ok.map(|()| {
            if ids.is_empty() {
                // What the general path leaves: an empty list, nested
                // (frozen), in its memo slot.
                let list = Container::new(Vec::new());
                list.data.borrow_mut().frozen = true;
                Value::List(list)
            } else {
                Value::Stack(c.intern_stack(&ids))
            }
        });
        c.scratch = ids;
        let value = value?;
        if let Some(slot) = slot {
            memo.set(slot, value.clone());
        }
        Some(value)
    }

    fn frame_items(
        &mut self,
        memo: &mut Memo,
        c: &mut Compactor,
        ids: &mut Vec<u32>,
    ) -> Option<()> {
        loop {
            match self.peek()? {
                b'(' => {
                    self.op()?;
                    loop {
                        // The run of GETs most of a snapshot is, read
                        // without the general opcode step.
                        loop {
                            let (index, len) = match self.buf.get(self.pos..) {
                                Some([b'h', i, ..]) => (*i as usize, 2),
                                Some([b'j', a, b, c, d, ..]) => {
                                    (u32::from_le_bytes([*a, *b, *c, *d]) as usize, 5)
                                }
                                _ => break,
                            };
                            ids.push(memo.frame(index)?);
                            self.pos += len;
                            self.ops += 1;
                        }
                        match self.op()? {
                            b'e' => break,
                            op => ids.push(self.frame(op, memo, c)?),
                        }
                    }
                }
                op @ (b'h' | b'j' | b'}') => {
                    // One item and APPEND, or (a GET of something that is
                    // not a frame) the next key of the entry: the list ended.
                    let at = (self.pos, self.ops);
                    self.op()?;
                    match self.frame(op, memo, c) {
                        Some(id) if self.op()? == b'a' => ids.push(id),
                        None if op != b'}' => {
                            (self.pos, self.ops) = at;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
                _ => return Some(()),
            }
        }
    }

    /// One frame: a GET of a memoized frame, or a frame dict (interned).
    #[inline]
    fn frame(&mut self, op: u8, memo: &mut Memo, c: &mut Compactor) -> Option<u32> {
        match op {
            b'h' => memo.frame(self.byte()? as usize),
            b'j' => memo.frame(u32::from_le_bytes(self.array()?) as usize),
            b'}' => {
                let mut items = Vec::with_capacity(6);
                let slot = self.dict(memo, c, &mut items)?;
                let id = c.intern_frame(Compactor::as_frame(&items)?);
                if let Some(slot) = slot {
                    memo.set(slot, Value::Frame(id));
                }
                Some(id)
            }
            _ => None,
        }
    }
}

/// [`crate::unpickle::Sink::shaped`] for a snapshot: one trace entry.
pub fn trace_entry(
    c: &mut Compactor,
    buf: &[u8],
    remaining: u64,
    memo: &mut Memo,
) -> Option<Shaped> {
    let before = memo.len();
    let mut cur = Cursor {
        buf,
        pos: 0,
        remaining,
        ops: 0,
    };
    let done = (|| {
        if cur.op()? != b'}' {
            return None;
        }
        let (event, slot) = cur.entry(memo, c)?;
        let id = c.push_event(event).ok()?;
        if let Some(slot) = slot {
            memo.set(slot, Value::Event(id));
        }
        Some(Shaped {
            used: cur.pos,
            ops: cur.ops,
            value: Value::Event(id),
        })
    })();
    if done.is_none() {
        memo.truncate(before);
    }
    done
}
