//! The decoded snapshot, in compact columns: trace entries as fixed-size
//! records, frames and stacks interned once, strings interned once.

use crate::value::{EventIds, FrameId, StackId, StrId, Strings};

/// Which generation of `_dump_snapshot` wrote the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// `{'segments': [...], 'device_traces': [[...]], ...}` with per-block `frames`.
    SegmentsAndTraces,
    /// PyTorch 2.0: blocks carry `history[]` instead of `frames`/`requested_size`.
    BlocksWithHistory,
    /// `torch.cuda.memory_snapshot()`: a bare list of segments, no trace.
    BareSegmentList,
}

/// A trace entry's `action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Oom,
    Snapshot,
    /// An action this reader does not know (newer PyTorch); kept, not counted.
    Other,
}

impl Action {
    pub const NAMES: [(&'static str, Action); 9] = [
        ("alloc", Action::Alloc),
        ("free_requested", Action::FreeRequested),
        ("free_completed", Action::FreeCompleted),
        ("segment_alloc", Action::SegmentAlloc),
        ("segment_free", Action::SegmentFree),
        ("segment_map", Action::SegmentMap),
        ("segment_unmap", Action::SegmentUnmap),
        ("oom", Action::Oom),
        ("snapshot", Action::Snapshot),
    ];
}

/// One trace entry (32 bytes, whatever its stack depth: a 1 GB snapshot
/// holds five million of them, so every field counts). Not kept: the
/// entry's `stream`, `compile_context` and `user_metadata`, which no
/// finding or view reads; an `oom` entry's `device_free` is kept in the
/// place of `addr`, which such an entry does not have (PyTorch writes its
/// `TraceEntry::addr_` under that key for an `oom`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceEvent {
    /// The block's address; for `oom`, what CUDA reported free
    /// ([`TraceEvent::device_free`]).
    pub addr: u64,
    /// Requested bytes for `alloc`/`free_*`, segment bytes for `segment_*`,
    /// requested bytes for `oom`.
    pub size: u64,
    time: i64,
    pub stack: StackId,
    pub action: Action,
    /// Whether `time` was given (an `Option<i64>` would take 16 bytes).
    has_time: bool,
}

impl TraceEvent {
    /// An entry with only its action (every number 0, no time, no stack).
    pub fn new(action: Action) -> Self {
        TraceEvent {
            action,
            has_time: false,
            stack: 0,
            addr: 0,
            size: 0,
            time: 0,
        }
    }

    /// `time_us`, when the entry has one.
    pub fn time_us(&self) -> Option<i64> {
        self.has_time.then_some(self.time)
    }

    pub fn set_time_us(&mut self, time: Option<i64>) {
        self.has_time = time.is_some();
        self.time = time.unwrap_or(0);
    }

    /// `oom` only: what CUDA reported free (`device_free`); 0 for others.
    pub fn device_free(&self) -> u64 {
        if self.action == Action::Oom {
            self.addr
        } else {
            0
        }
    }

    /// Sets the action, given the entry's `addr` and `device_free` as read
    /// (in any order): an `oom` keeps `device_free` where others keep `addr`.
    pub fn finish(&mut self, action: Action, addr: u64, device_free: u64) {
        self.action = action;
        self.addr = if action == Action::Oom {
            device_free
        } else {
            addr
        };
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame {
    pub filename: StrId,
    pub line: u32,
    pub name: StrId,
}

/// Interned stacks: each is a run of frame ids (innermost first) in one flat array.
#[derive(Debug, Default)]
pub struct Stacks {
    pub frames: Vec<FrameId>,
    /// `frames[starts[i]..starts[i + 1]]` is stack i; stack 0 is empty.
    pub starts: Vec<u32>,
}

impl Stacks {
    pub fn get(&self, id: StackId) -> &[FrameId] {
        let i = id as usize;
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.frames[a as usize..b as usize],
            _ => &[],
        }
    }

    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockState {
    ActiveAllocated,
    ActivePendingFree,
    Inactive,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Block {
    pub addr: u64,
    pub size: u64,
    /// What the program asked for (`requested_size`, or the 2.0 history's
    /// `real_size`); `size` is after the allocator's rounding.
    pub requested_size: u64,
    pub state: BlockState,
    pub stack: StackId,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub device: u32,
    pub address: u64,
    pub total_size: u64,
    pub stream: u64,
    pub is_expandable: bool,
    /// `segment_pool_id`; `(0, 0)` is the default pool, anything else a
    /// private pool (CUDA graphs).
    pub pool: (u64, u64),
    /// Range into [`Snapshot::blocks`].
    pub blocks: std::ops::Range<usize>,
}

/// An `external_annotations` entry (e.g. `record_function` phases).
#[derive(Debug, Clone, PartialEq)]
pub struct Annotation {
    pub device: u32,
    pub name: StrId,
    /// `START` or `END`.
    pub stage: StrId,
    pub time_us: Option<i64>,
}

impl Default for TraceEvent {
    /// An entry of no known action, every number zero.
    fn default() -> Self {
        TraceEvent::new(Action::Other)
    }
}

/// Trace events stored in chunks of a fixed size, so that growing never
/// copies what is stored. A `Vec` doubles: while it moves, the old and the
/// new buffer are both held (natively `realloc` remaps big buffers in
/// place, in wasm it copies), and wasm's allocator never gives the old one
/// back to the system, so the browser's worker held the events about twice.
#[derive(Debug, Default)]
pub struct Events {
    chunks: Vec<Vec<TraceEvent>>,
    len: usize,
}

impl Events {
    /// Events per chunk: 64 Ki (about 5 MB).
    const CHUNK: usize = 1 << 16;

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, event: TraceEvent) {
        // The first chunk grows as a `Vec` does (a small snapshot stays
        // small); each further one is allocated whole, once.
        match self.chunks.last() {
            None => self.chunks.push(Vec::new()),
            Some(c) if c.len() == Self::CHUNK => self.chunks.push(Vec::with_capacity(Self::CHUNK)),
            Some(_) => {}
        }
        if let Some(chunk) = self.chunks.last_mut() {
            chunk.push(event);
            self.len += 1;
        }
    }

    pub fn get(&self, index: usize) -> Option<&TraceEvent> {
        self.chunks
            .get(index / Self::CHUNK)
            .and_then(|c| c.get(index % Self::CHUNK))
    }
}

#[derive(Debug, Default)]
pub struct Snapshot {
    pub generation: Option<Generation>,
    pub segments: Vec<Segment>,
    pub blocks: Vec<Block>,
    pub events: Events,
    /// Per device, the ids (into `events`) of its `device_traces` list, in order.
    pub device_traces: Vec<EventIds>,
    pub annotations: Vec<Annotation>,
    /// `allocator_settings` as `key=value` text.
    pub allocator_settings: Vec<(String, String)>,
    pub strings: Strings,
    pub frames: Vec<Frame>,
    pub stacks: Stacks,
}

impl Snapshot {
    /// Devices that have a trace or segments.
    pub fn device_count(&self) -> u32 {
        let from_segments = self
            .segments
            .iter()
            .map(|s| s.device + 1)
            .max()
            .unwrap_or(0);
        from_segments.max(self.device_traces.len() as u32)
    }

    pub fn trace(&self, device: u32) -> impl DoubleEndedIterator<Item = &TraceEvent> + '_ {
        self.device_traces
            .get(device as usize)
            .into_iter()
            .flat_map(EventIds::iter)
            .filter_map(|i| self.events.get(i as usize))
    }

    /// Entries in `device`'s trace.
    pub fn trace_len(&self, device: u32) -> usize {
        self.device_traces
            .get(device as usize)
            .map_or(0, EventIds::len)
    }

    /// The `i`th entry of `device`'s trace.
    pub fn trace_event(&self, device: u32, i: usize) -> Option<&TraceEvent> {
        let id = self.device_traces.get(device as usize)?.get(i)?;
        self.events.get(id as usize)
    }

    pub fn segment_blocks(&self, seg: &Segment) -> &[Block] {
        self.blocks.get(seg.blocks.clone()).unwrap_or(&[])
    }

    /// Approximate heap bytes of the decoded form, for the benchmark's
    /// "compact size" figure.
    pub fn heap_bytes(&self) -> usize {
        self.events.len() * std::mem::size_of::<TraceEvent>()
            + self
                .device_traces
                .iter()
                .map(EventIds::heap_bytes)
                .sum::<usize>()
            + self.blocks.len() * std::mem::size_of::<Block>()
            + self.segments.len() * std::mem::size_of::<Segment>()
            + self.frames.len() * std::mem::size_of::<Frame>()
            + (self.stacks.frames.len() + self.stacks.starts.len()) * 4
            + self.strings.heap_bytes()
    }
}

// Five million entries in a 1 GB snapshot: 8 bytes more each is 40 MB.
const _: () = assert!(std::mem::size_of::<TraceEvent>() == 32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oom_keeps_device_free_where_others_keep_addr() {
        // Read in either order, with or without an `addr` beside it.
        let mut oom = TraceEvent::default();
        oom.finish(Action::Oom, 4096, 1 << 30);
        assert_eq!(oom.device_free(), 1 << 30);
        let mut alloc = TraceEvent::default();
        alloc.finish(Action::Alloc, 4096, 1 << 30);
        assert_eq!((alloc.addr, alloc.device_free()), (4096, 0));
    }

    #[test]
    fn events_keep_their_order_across_chunks() {
        let mut events = Events::default();
        let n = Events::CHUNK * 2 + 7;
        for i in 0..n {
            events.push(TraceEvent {
                action: Action::Alloc,
                addr: i as u64,
                ..TraceEvent::default()
            });
        }
        assert_eq!(events.len(), n);
        for i in [
            0,
            1,
            Events::CHUNK - 1,
            Events::CHUNK,
            Events::CHUNK * 2 + 6,
        ] {
            assert_eq!(events.get(i).map(|e| e.addr), Some(i as u64));
        }
        assert!(events.get(n).is_none());
    }
}
