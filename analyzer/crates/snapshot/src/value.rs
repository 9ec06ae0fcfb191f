//! The plain values a snapshot pickle is made of.
//!
//! Containers are reference-counted because the pickle memo can refer to one
//! container from several places. Trace entries, frames and stacks never stay
//! containers: as soon as one is nested into its parent, the snapshot layer
//! ([`crate::compact`]) turns it into a compact id (`Frame`, `Stack`,
//! `Event`), so a trace of millions of entries is not a tree of values.

use std::cell::RefCell;
use std::rc::Rc;

/// Index into the interned strings.
pub type StrId = u32;
/// Index into the interned frames `(filename, line, name)`.
pub type FrameId = u32;
/// Index into the interned stacks (lists of frames).
pub type StackId = u32;
/// Index into the decoded trace entries.
pub type EventId = u32;

/// The ids of a list of trace entries (a device's trace), in order. Entries
/// are stored as their dicts end, so a device's trace is nearly always one
/// run of consecutive ids: kept as that run (8 bytes, whatever the length)
/// until an id breaks it, then as a list of 4 bytes per id. A 1 GB
/// snapshot's five million ids were 20 MB, and twice that while the list
/// grew.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventIds {
    /// `start..start + len` while `list` is empty.
    start: EventId,
    len: u32,
    /// Every id, once they are not one run.
    list: Vec<EventId>,
}

impl EventIds {
    pub fn len(&self) -> usize {
        if self.list.is_empty() {
            self.len as usize
        } else {
            self.list.len()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn push(&mut self, id: EventId) {
        if self.list.is_empty() {
            if self.len == 0 {
                self.start = id;
                self.len = 1;
                return;
            }
            if self.start.checked_add(self.len) == Some(id) && self.len < u32::MAX {
                self.len += 1;
                return;
            }
            let mut list = Vec::with_capacity(self.len as usize + 1);
            list.extend(self.start..self.start + self.len);
            self.list = list;
            self.len = 0;
        }
        self.list.push(id);
    }

    /// The `i`th id.
    pub fn get(&self, i: usize) -> Option<EventId> {
        if self.list.is_empty() {
            (i < self.len as usize).then(|| self.start + i as u32)
        } else {
            self.list.get(i).copied()
        }
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = EventId> + '_ {
        // One of the two is empty.
        let run = if self.list.is_empty() {
            self.start..self.start + self.len
        } else {
            0..0
        };
        run.chain(self.list.iter().copied())
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.list.capacity() * 4
    }
}

impl Extend<EventId> for EventIds {
    fn extend<I: IntoIterator<Item = EventId>>(&mut self, ids: I) {
        for id in ids {
            self.push(id);
        }
    }
}

/// `repr(C, u8)`: the tag, then every payload at offset 8, so moving and
/// cloning a value is two plain word copies (the default layout puts a
/// `bool` at offset 1 and a `u32` at 4, and moves then copy an odd 15-byte
/// payload through overlapping stores that stall store-forwarding: a fifth
/// of the decoding time). Still 16 bytes, and `Option<Value>` too.
#[derive(Debug, Clone)]
#[repr(C, u8)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An integer in `[2^63, 2^64)` (addresses can be that large).
    BigUint(u64),
    /// An integer beyond 64 bits; reading it as a number is an error.
    Oversized,
    Float(f64),
    Str(StrId),
    /// A bytes object; snapshots never need their content, only that they exist.
    Bytes(u64),
    List(Rc<Container>),
    Dict(Rc<Container>),
    Tuple(Rc<Container>),
    Set(Rc<Container>),
    Frame(FrameId),
    Stack(StackId),
    Event(EventId),
}

impl Value {
    /// An integer as u64 (negative and oversized integers are not).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Int(i) if i >= 0 => Some(i as u64),
            Value::BigUint(u) => Some(u),
            Value::Bool(b) => Some(b as u64),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int(i) => Some(i),
            Value::Bool(b) => Some(b as i64),
            _ => None,
        }
    }

    pub fn as_str_id(&self) -> Option<StrId> {
        match *self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn container(&self) -> Option<&Rc<Container>> {
        match self {
            Value::List(c) | Value::Dict(c) | Value::Tuple(c) | Value::Set(c) => Some(c),
            _ => None,
        }
    }

    /// Nesting depth: 0 for scalars and compact ids.
    pub fn depth(&self) -> u16 {
        self.container().map_or(0, |c| c.data.borrow().depth)
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigUint(_) | Value::Oversized => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::List(_) | Value::Stack(_) => "list",
            Value::Dict(_) | Value::Frame(_) | Value::Event(_) => "dict",
            Value::Tuple(_) => "tuple",
            Value::Set(_) => "set",
        }
    }
}

/// A list, dict (keys and values interleaved), tuple or set.
#[derive(Debug)]
pub struct Container {
    pub data: RefCell<ContainerData>,
}

#[derive(Debug, Default)]
pub struct ContainerData {
    pub items: Vec<Value>,
    /// Set once the container is nested into another: a pickle of plain data
    /// never changes a container after that, and refusing to keeps every
    /// structure a tree of known depth (no cycles, no unbounded recursion).
    pub frozen: bool,
    /// 1 + the depth of the deepest child.
    pub depth: u16,
    /// The memo slot holding this container, so compaction can update it.
    pub memo_slot: Option<u32>,
    /// A list of nothing but trace entries (a device's trace: millions of
    /// them) keeps their ids here, 4 bytes each instead of a 16-byte
    /// `Value::Event` in `items`; `items` is then empty. The first item of
    /// another kind moves them back into `items` ([`ContainerData::spill_events`]).
    pub events: EventIds,
}

impl ContainerData {
    /// Moves the ids of [`ContainerData::events`] into `items`.
    pub fn spill_events(&mut self) {
        if !self.events.is_empty() {
            let mut items: Vec<Value> = self.events.iter().map(Value::Event).collect();
            self.events = EventIds::default();
            items.append(&mut self.items);
            self.items = items;
        }
    }

    /// Takes the ids of [`ContainerData::events`] out of the container.
    pub fn take_events(&mut self) -> EventIds {
        let events = std::mem::take(&mut self.events);
        LIVE_SLOTS.with(|l| l.set(l.get().saturating_sub(events.len() as u64)));
        events
    }

    /// The items, with the ids of [`ContainerData::events`] as `Value::Event`s.
    pub fn all_items(&self) -> Vec<Value> {
        let mut all: Vec<Value> = self.events.iter().map(Value::Event).collect();
        all.extend(self.items.iter().cloned());
        all
    }
}

/// Slots a container costs besides its items (its allocation and bookkeeping).
const CONTAINER_SLOTS: u64 = 4;

thread_local! {
    /// Value slots (16 bytes each) held by live containers on this thread,
    /// so the unpickler can bound what a hostile pickle makes it hold.
    static LIVE_SLOTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Value slots held by live containers on this thread.
pub fn live_slots() -> u64 {
    LIVE_SLOTS.with(|l| l.get())
}

/// Records `n` more items stored in a live container.
pub fn note_items(n: usize) {
    LIVE_SLOTS.with(|l| l.set(l.get().saturating_add(n as u64)));
}

impl Container {
    pub fn new(items: Vec<Value>) -> Rc<Container> {
        let depth = 1 + items.iter().map(Value::depth).max().unwrap_or(0);
        note_items(items.len() + CONTAINER_SLOTS as usize);
        Rc::new(Container {
            data: RefCell::new(ContainerData {
                items,
                frozen: false,
                depth,
                memo_slot: None,
                events: EventIds::default(),
            }),
        })
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let data = self.data.get_mut();
        let slots = (data.items.len() + data.events.len()) as u64 + CONTAINER_SLOTS;
        LIVE_SLOTS.with(|l| l.set(l.get().saturating_sub(slots)));
    }
}

/// FxHash (rustc's hasher): interning hashes millions of short keys, where
/// SipHash's flood resistance is not needed (a hostile input can only slow
/// its own decoding, and every table is bounded by the input's size).
#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64);
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.hash = (self.hash.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        // The multiply leaves a key's trailing zero bits zero, and hashbrown
        // picks buckets from the low bits: addresses (multiples of 512) all
        // fell in one probe group. Rotating brings the well-mixed high bits
        // down (as rustc-hash 2 does).
        self.hash.rotate_left(26)
    }
}

pub type FxBuild = std::hash::BuildHasherDefault<FxHasher>;
pub type FxHashMap<K, V> = std::collections::HashMap<K, V, FxBuild>;

/// Strings interned once each: keys compare as integers, repeated file and
/// function names cost 4 bytes.
#[derive(Debug, Default)]
pub struct Strings {
    by_text: FxHashMap<Rc<str>, StrId>,
    texts: Vec<Rc<str>>,
}

impl Strings {
    pub fn intern(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.by_text.get(s) {
            return id;
        }
        let id = self.texts.len() as StrId;
        let rc: Rc<str> = Rc::from(s);
        self.texts.push(rc.clone());
        self.by_text.insert(rc, id);
        id
    }

    pub fn get(&self, id: StrId) -> &str {
        self.texts.get(id as usize).map_or("", |s| s)
    }

    /// The id of `s` if it occurs in the input.
    pub fn lookup(&self, s: &str) -> Option<StrId> {
        self.by_text.get(s).copied()
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Bytes held (text plus table overhead), for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.texts.iter().map(|t| t.len() + 16).sum::<usize>() + self.texts.len() * 40
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_ids_holds_no_list_and_a_break_keeps_every_id() {
        let mut ids = EventIds::default();
        ids.extend(7..1007);
        assert_eq!((ids.len(), ids.heap_bytes()), (1000, 0));
        assert_eq!(
            (ids.get(0), ids.get(999), ids.get(1000)),
            (Some(7), Some(1006), None)
        );
        // An id out of order (an entry the fast path left to the general
        // one), then the run again.
        ids.push(3);
        ids.extend(1007..1010);
        let all: Vec<EventId> = ids.iter().collect();
        let mut expected: Vec<EventId> = (7..1007).collect();
        expected.push(3);
        expected.extend(1007..1010);
        assert_eq!(all, expected);
        assert_eq!(ids.len(), 1004);
        assert_eq!(ids.get(1000), Some(3));
        assert_eq!(ids.iter().next_back(), Some(1009));
        assert!(ids.heap_bytes() >= 1004 * 4);
        assert!(EventIds::default().is_empty());
    }
}
