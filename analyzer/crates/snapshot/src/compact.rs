//! Turns trace entries, frames and stacks into compact ids while the pickle
//! is being decoded, so the trace never exists as a tree of values.
//!
//! A frame is a dict `{'filename', 'line', 'name'}`; a stack is a non-empty
//! list of frames; a trace entry is a dict with an `action` key. Each is
//! recognised when it is nested into its parent, which in a pickle happens
//! only once it is complete.

use crate::error::Problem;
use crate::model::{Action, Events, Frame, Stacks, TraceEvent};
use crate::unpickle::Sink;
use crate::value::{Container, FrameId, FxHashMap, StackId, StrId, Strings, Value};

/// Keys and action names interned first, so they have fixed ids.
pub mod key {
    use crate::value::StrId;
    pub const NAMES: [&str; 9] = [
        "action",
        "addr",
        "size",
        "stream",
        "time_us",
        "frames",
        "device_free",
        "compile_context",
        "user_metadata",
    ];
    pub const ACTION: StrId = 0;
    pub const ADDR: StrId = 1;
    pub const SIZE: StrId = 2;
    pub const STREAM: StrId = 3;
    pub const TIME_US: StrId = 4;
    pub const FRAMES: StrId = 5;
    pub const DEVICE_FREE: StrId = 6;
    pub const COMPILE_CONTEXT: StrId = 7;
    pub const USER_METADATA: StrId = 8;
    pub const FRAME_NAMES: [&str; 3] = ["filename", "line", "name"];
    pub const FILENAME: StrId = 9;
    pub const LINE: StrId = 10;
    pub const NAME: StrId = 11;
    /// Ids 12.. are the action names, in `Action::NAMES` order.
    pub const FIRST_ACTION: StrId = 12;
}

pub struct Compactor {
    pub strings: Strings,
    pub frames: Vec<Frame>,
    frame_ids: FxHashMap<Frame, FrameId>,
    pub stacks: Stacks,
    stack_ids: FxHashMap<Box<[FrameId]>, StackId>,
    pub events: Events,
    /// Reused buffer for the frame ids of a list being compacted.
    pub(crate) scratch: Vec<FrameId>,
}

impl Default for Compactor {
    fn default() -> Self {
        Self::new()
    }
}

impl Compactor {
    pub fn new() -> Self {
        let mut strings = Strings::default();
        for k in key::NAMES.iter().chain(key::FRAME_NAMES.iter()) {
            strings.intern(k);
        }
        for (name, _) in Action::NAMES {
            strings.intern(name);
        }
        let mut stacks = Stacks::default();
        stacks.starts.push(0);
        stacks.starts.push(0); // stack 0: empty
        let mut stack_ids = FxHashMap::default();
        stack_ids.insert(Box::<[FrameId]>::from([]), 0);
        Compactor {
            strings,
            frames: Vec::new(),
            frame_ids: FxHashMap::default(),
            stacks,
            stack_ids,
            events: Events::default(),
            scratch: Vec::new(),
        }
    }

    pub(crate) fn action(id: StrId) -> Action {
        match id.checked_sub(key::FIRST_ACTION) {
            Some(i) if (i as usize) < Action::NAMES.len() => Action::NAMES[i as usize].1,
            _ => Action::Other,
        }
    }

    pub(crate) fn intern_frame(&mut self, f: Frame) -> FrameId {
        *self.frame_ids.entry(f).or_insert_with(|| {
            self.frames.push(f);
            (self.frames.len() - 1) as FrameId
        })
    }

    pub(crate) fn intern_stack(&mut self, frames: &[FrameId]) -> StackId {
        if let Some(&id) = self.stack_ids.get(frames) {
            return id;
        }
        let id = self.stacks.len() as StackId;
        self.stacks.frames.extend_from_slice(frames);
        self.stacks.starts.push(self.stacks.frames.len() as u32);
        self.stack_ids.insert(frames.into(), id);
        id
    }

    /// `{'filename': str, 'line': int, 'name': str}` → a frame.
    pub(crate) fn as_frame(items: &[Value]) -> Option<Frame> {
        if items.len() != 6 {
            return None;
        }
        let (mut filename, mut line, mut name) = (None, None, None);
        for kv in items.chunks_exact(2) {
            match (kv[0].as_str_id()?, &kv[1]) {
                (key::FILENAME, Value::Str(s)) => filename = Some(*s),
                (key::LINE, v) => {
                    line = Some(v.as_i64().unwrap_or(0).clamp(0, u32::MAX as i64) as u32)
                }
                (key::NAME, Value::Str(s)) => name = Some(*s),
                _ => return None,
            }
        }
        Some(Frame {
            filename: filename?,
            line: line?,
            name: name?,
        })
    }

    pub(crate) fn as_event(&self, items: &[Value]) -> Result<Option<TraceEvent>, Problem> {
        let mut action = None;
        let mut e = TraceEvent::new(Action::Other);
        let (mut addr, mut device_free) = (0, 0);
        let num = |v: &Value, what: &str| -> Result<u64, Problem> {
            v.as_u64().ok_or_else(|| {
                Problem::BadField(format!(
                    "a trace entry's '{what}' is {} instead of a non-negative integer",
                    v.type_name()
                ))
            })
        };
        for kv in items.chunks_exact(2) {
            let Some(k) = kv[0].as_str_id() else { continue };
            let v = &kv[1];
            match k {
                key::ACTION => action = v.as_str_id(),
                key::ADDR => addr = num(v, "addr")?,
                key::SIZE => e.size = num(v, "size")?,
                key::TIME_US => e.set_time_us(v.as_i64()),
                key::DEVICE_FREE => device_free = num(v, "device_free")?,
                key::FRAMES => {
                    e.stack = match v {
                        Value::Stack(s) => *s,
                        _ => 0,
                    }
                }
                _ => {}
            }
        }
        let Some(action) = action else {
            return Ok(None);
        };
        e.finish(Self::action(action), addr, device_free);
        Ok(Some(e))
    }
}

impl Compactor {
    /// Stores a trace entry; its id.
    pub(crate) fn push_event(&mut self, e: TraceEvent) -> Result<u32, Problem> {
        let id = u32::try_from(self.events.len())
            .map_err(|_| Problem::BadField("more than 4 billion trace entries".into()))?;
        self.events.push(e);
        Ok(id)
    }
}

impl Sink for Compactor {
    fn shaped(
        &mut self,
        buf: &[u8],
        remaining: u64,
        memo: &mut crate::memo::Memo,
    ) -> Option<crate::unpickle::Shaped> {
        crate::shape::trace_entry(self, buf, remaining, memo)
    }

    fn strings(&mut self) -> &mut Strings {
        &mut self.strings
    }

    fn nest(&mut self, value: Value) -> Result<Value, Problem> {
        match &value {
            Value::Dict(c) => {
                let data = c.data.borrow();
                if let Some(f) = Self::as_frame(&data.items) {
                    drop(data);
                    return Ok(Value::Frame(self.intern_frame(f)));
                }
                let has_action = data
                    .items
                    .chunks_exact(2)
                    .any(|kv| matches!(kv[0], Value::Str(key::ACTION)));
                if has_action {
                    if let Some(e) = self.as_event(&data.items)? {
                        drop(data);
                        return Ok(Value::Event(self.push_event(e)?));
                    }
                }
                Ok(value.clone())
            }
            Value::List(c) => {
                let data = c.data.borrow();
                if !data.items.is_empty() {
                    // Frame ids gathered in a reused buffer (no allocation per stack).
                    let mut ids = std::mem::take(&mut self.scratch);
                    ids.clear();
                    for v in &data.items {
                        match v {
                            Value::Frame(f) => ids.push(*f),
                            _ => break,
                        }
                    }
                    let all_frames = ids.len() == data.items.len();
                    drop(data);
                    let out = all_frames.then(|| self.intern_stack(&ids));
                    self.scratch = ids;
                    if let Some(id) = out {
                        return Ok(Value::Stack(id));
                    }
                }
                Ok(value.clone())
            }
            _ => Ok(value),
        }
    }
}

/// Reads the items of a dict as `(key id, value)` pairs, skipping non-string keys.
pub fn dict_items(c: &Container) -> Vec<(StrId, Value)> {
    c.data
        .borrow()
        .items
        .chunks_exact(2)
        .filter_map(|kv| kv[0].as_str_id().map(|k| (k, kv[1].clone())))
        .collect()
}
