//! The pickle memo in 4 bytes a slot, stored in fixed chunks.
//!
//! Python's pickler memoizes every string, list and dict it writes, so a
//! snapshot's memo has a slot for every trace entry and every frames list
//! (about two per entry, ten million in a 1 GB file), nearly all of them
//! never fetched again. A slot holding a `Value` took 16 bytes and, in a
//! `Vec` that doubles, up to 48 while it moved (wasm's allocator never
//! returns the old buffer). Here a slot is a `u32`: a 3-bit kind and a
//! 29-bit id for the values a snapshot memoizes most (strings, frames,
//! stacks, trace entries), or an index into a side table for anything else
//! (containers not yet compacted, ids too large to pack); side-table slots
//! freed when a container is compacted are reused.

use crate::value::Value;

const KIND_SHIFT: u32 = 29;
const ID_MASK: u32 = (1 << KIND_SHIFT) - 1;
const EMPTY: u32 = 0;
const STR: u32 = 1;
const FRAME: u32 = 2;
const STACK: u32 = 3;
const EVENT: u32 = 4;
const OTHER: u32 = 5;

/// Slots per chunk: 64 Ki (256 KiB).
const CHUNK: usize = 1 << 16;

/// What [`Memo::slot`] finds.
#[derive(Clone, Copy)]
pub enum Slot<'a> {
    Str(u32),
    Frame(u32),
    Stack(u32),
    Event(u32),
    Other(&'a Value),
}

/// Most slots a memo holds: side-table indices must fit in 29 bits. A
/// snapshot has about two a trace entry (a 50 GB file would reach this);
/// the unpickler refuses a PUT beyond it.
pub const MAX_SLOTS: usize = ID_MASK as usize;

#[derive(Default)]
pub struct Memo {
    chunks: Vec<Vec<u32>>,
    len: usize,
    others: Vec<Value>,
    /// Side-table slots free for reuse.
    free: Vec<u32>,
}

impl Memo {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn raw(&self, index: usize) -> Option<u32> {
        if index >= self.len {
            return None;
        }
        self.chunks
            .get(index / CHUNK)
            .and_then(|c| c.get(index % CHUNK))
            .copied()
    }

    /// The value in slot `index`; `None` when it was never written.
    #[inline]
    pub fn get(&self, index: usize) -> Option<Value> {
        Some(match self.slot(index)? {
            Slot::Str(id) => Value::Str(id),
            Slot::Frame(id) => Value::Frame(id),
            Slot::Stack(id) => Value::Stack(id),
            Slot::Event(id) => Value::Event(id),
            Slot::Other(v) => v.clone(),
        })
    }

    /// Slot `index` without cloning: the compact ids, or a reference to a
    /// side-table value.
    #[inline]
    pub fn slot(&self, index: usize) -> Option<Slot<'_>> {
        let raw = self.raw(index)?;
        let id = raw & ID_MASK;
        match raw >> KIND_SHIFT {
            STR => Some(Slot::Str(id)),
            FRAME => Some(Slot::Frame(id)),
            STACK => Some(Slot::Stack(id)),
            EVENT => Some(Slot::Event(id)),
            OTHER => self.others.get(id as usize).map(Slot::Other),
            _ => None,
        }
    }

    /// The frame id in slot `index`, if it holds a frame (the fast path's
    /// question for every frame of every stack).
    #[inline]
    pub fn frame(&self, index: usize) -> Option<u32> {
        let raw = self.raw(index)?;
        (raw >> KIND_SHIFT == FRAME).then_some(raw & ID_MASK)
    }

    fn pack(&mut self, value: Value) -> u32 {
        let packed = |kind: u32, id: u32| (id <= ID_MASK).then_some(kind << KIND_SHIFT | id);
        let fast = match value {
            Value::Str(id) => packed(STR, id),
            Value::Frame(id) => packed(FRAME, id),
            Value::Stack(id) => packed(STACK, id),
            Value::Event(id) => packed(EVENT, id),
            _ => None,
        };
        if let Some(raw) = fast {
            return raw;
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                self.others[slot as usize] = value;
                slot
            }
            None => {
                self.others.push(value);
                (self.others.len() - 1) as u32
            }
        };
        // Side-table indices fit: the table never outgrows the memo, whose
        // length is bounded by the input (the unpickler's budget).
        OTHER << KIND_SHIFT | (slot & ID_MASK)
    }

    fn release(&mut self, raw: u32) {
        if raw >> KIND_SHIFT == OTHER {
            let slot = raw & ID_MASK;
            if let Some(v) = self.others.get_mut(slot as usize) {
                *v = Value::None;
                self.free.push(slot);
            }
        }
    }

    fn slot_mut(&mut self, index: usize) -> &mut u32 {
        &mut self.chunks[index / CHUNK][index % CHUNK]
    }

    /// Grows to `len` slots, the new ones empty.
    fn grow(&mut self, len: usize) {
        while self.chunks.len() * CHUNK < len {
            // The first chunk grows as a `Vec` does (a small pickle keeps a
            // small memo); every further one is allocated whole, once.
            self.chunks.push(Vec::new());
        }
        for (i, chunk) in self.chunks.iter_mut().enumerate() {
            let want = len.saturating_sub(i * CHUNK).min(CHUNK);
            if chunk.len() < want {
                if chunk.capacity() < want && i > 0 {
                    chunk.reserve_exact(CHUNK - chunk.len());
                }
                chunk.resize(want, EMPTY);
            }
        }
        self.len = self.len.max(len);
    }

    /// Appends a slot (MEMOIZE, and the dense PUTs Python writes).
    pub fn push(&mut self, value: Value) {
        let raw = self.pack(value);
        let index = self.len;
        if let Some(chunk) = self.chunks.get_mut(index / CHUNK) {
            if chunk.len() == index % CHUNK {
                chunk.push(raw);
                self.len += 1;
                return;
            }
        }
        self.grow(index + 1);
        *self.slot_mut(index) = raw;
    }

    /// Appends a slot that reads as never written, for [`Memo::set`] to fill.
    pub fn push_pending(&mut self) {
        self.push(Value::Str(0));
        let index = self.len - 1;
        *self.slot_mut(index) = EMPTY;
    }

    /// Writes slot `index`, growing the memo when it lies beyond the end.
    pub fn set(&mut self, index: usize, value: Value) {
        if index >= self.len {
            if index == self.len {
                return self.push(value);
            }
            self.grow(index + 1);
        }
        let raw = self.pack(value);
        let old = std::mem::replace(self.slot_mut(index), raw);
        self.release(old);
    }

    /// Drops the slots from `len` on (a fast path that gave up).
    pub fn truncate(&mut self, len: usize) {
        while self.len > len {
            let index = self.len - 1;
            let raw = std::mem::replace(self.slot_mut(index), EMPTY);
            self.release(raw);
            if let Some(chunk) = self.chunks.get_mut(index / CHUNK) {
                chunk.truncate(index % CHUNK);
            }
            self.len -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(v: Option<Value>) -> Option<(&'static str, u64)> {
        v.map(|v| match v {
            Value::Str(i) => ("str", i as u64),
            Value::Frame(i) => ("frame", i as u64),
            Value::Event(i) => ("event", i as u64),
            Value::Stack(i) => ("stack", i as u64),
            Value::Int(i) => ("int", i as u64),
            other => (other.type_name(), 0),
        })
    }

    #[test]
    fn slots_keep_their_values_across_chunks_and_kinds() {
        let mut m = Memo::default();
        let n = CHUNK * 2 + 3;
        for i in 0..n {
            m.push(match i % 4 {
                0 => Value::Str(i as u32),
                1 => Value::Event(i as u32),
                2 => Value::Int(-(i as i64)),
                _ => Value::Frame(i as u32),
            });
        }
        assert_eq!(m.len(), n);
        for i in [0, 1, 2, 3, CHUNK - 1, CHUNK, CHUNK + 2, n - 1] {
            let want = match i % 4 {
                0 => ("str", i as u64),
                1 => ("event", i as u64),
                2 => ("int", (-(i as i64)) as u64),
                _ => ("frame", i as u64),
            };
            assert_eq!(id(m.get(i)), Some(want), "slot {i}");
        }
        assert_eq!(m.frame(3), Some(3));
        assert_eq!(m.frame(0), None);
        assert!(matches!(m.slot(0), Some(Slot::Str(0))));
        assert!(m.get(n).is_none());
    }

    #[test]
    fn ids_too_large_to_pack_and_sparse_slots() {
        let mut m = Memo::default();
        m.set(5, Value::Event(u32::MAX));
        assert_eq!(m.len(), 6);
        assert!(m.get(2).is_none());
        assert_eq!(id(m.get(5)), Some(("event", u32::MAX as u64)));
        m.set(CHUNK + 1, Value::Stack(7));
        assert_eq!(id(m.get(CHUNK + 1)), Some(("stack", 7)));
        assert!(m.get(CHUNK).is_none());
        // Overwriting a side-table slot frees it for the next one.
        m.set(5, Value::Str(1));
        m.push(Value::Int(9));
        assert_eq!(m.others.len(), 1);
        assert_eq!(id(m.get(CHUNK + 2)), Some(("int", 9)));
        m.truncate(3);
        assert_eq!(m.len(), 3);
        assert!(m.get(5).is_none());
        m.push(Value::Frame(4));
        assert_eq!(m.frame(3), Some(4));
    }
}
