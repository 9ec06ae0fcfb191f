//! From the decoded top value to a [`Snapshot`]: recognises the three format
//! generations and reads segments, blocks, traces and annotations.

use crate::compact::{dict_items, Compactor};
use crate::error::Problem;
use crate::model::{Annotation, Block, BlockState, Generation, Segment, Snapshot};
use crate::value::{EventIds, FxHashMap, StrId, Strings, Value};

/// Keys of one dict by name (only the few segments and blocks need). Never
/// iterated in hash order (what is listed is sorted first), so the fast
/// hasher changes nothing but the time.
struct Fields {
    map: FxHashMap<StrId, Value>,
}

impl Fields {
    fn of(v: &Value) -> Option<Fields> {
        match v {
            Value::Dict(c) => Some(Fields {
                map: dict_items(c).into_iter().collect(),
            }),
            _ => None,
        }
    }

    fn get(&self, strings: &Strings, name: &str) -> Option<&Value> {
        strings.lookup(name).and_then(|id| self.map.get(&id))
    }

    fn u64(&self, strings: &Strings, name: &str, what: &str) -> Result<Option<u64>, Problem> {
        match self.get(strings, name) {
            None | Some(Value::None) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                Problem::BadField(format!(
                    "{what} '{name}' is {} instead of a non-negative integer",
                    v.type_name()
                ))
            }),
        }
    }

    fn str<'s>(&self, strings: &'s Strings, name: &str) -> Option<&'s str> {
        self.get(strings, name)
            .and_then(Value::as_str_id)
            .map(|id| strings.get(id))
    }
}

fn list_items(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::List(c) | Value::Tuple(c) => Some(c.data.borrow().all_items()),
        _ => None,
    }
}

/// Builds the snapshot from the pickle's top value.
pub fn build(top: Value, c: Compactor) -> Result<Snapshot, Problem> {
    let mut snap = Snapshot {
        strings: c.strings,
        frames: c.frames,
        stacks: c.stacks,
        events: c.events,
        ..Snapshot::default()
    };
    let segments_value = match &top {
        Value::Dict(_) => {
            let top_fields = Fields::of(&top).unwrap_or(Fields {
                map: FxHashMap::default(),
            });
            let has = |k: &str| top_fields.get(&snap.strings, k).is_some();
            if !has("segments") {
                let mut keys: Vec<&str> = top_fields
                    .map
                    .keys()
                    .map(|&k| snap.strings.get(k))
                    .collect();
                keys.sort_unstable();
                keys.truncate(8);
                return Err(Problem::NotASnapshot(format!(
                    "a dict with keys {keys:?} and no 'segments'"
                )));
            }
            if let Some(traces) = top_fields.get(&snap.strings, "device_traces") {
                let traces = list_items(traces)
                    .ok_or_else(|| Problem::BadField("'device_traces' is not a list".into()))?;
                for (device, t) in traces.iter().enumerate() {
                    // Borrowed, not cloned: a device's list holds millions of entries.
                    let (Value::List(list) | Value::Tuple(list)) = t else {
                        return Err(Problem::BadField(format!(
                            "device_traces[{device}] is not a list"
                        )));
                    };
                    let mut data = list.data.borrow_mut();
                    if data.items.is_empty() {
                        // The usual case: the ids as the unpickler kept
                        // them, moved (not copied) when nothing else holds
                        // the list.
                        let ids = if std::rc::Rc::strong_count(list) == 1 {
                            data.take_events()
                        } else {
                            data.events.clone()
                        };
                        snap.device_traces.push(ids);
                        continue;
                    }
                    data.spill_events();
                    let items = &data.items;
                    let mut ids = EventIds::default();
                    for (i, v) in items.iter().enumerate() {
                        match v {
                            Value::Event(id) => ids.push(*id),
                            other => {
                                return Err(Problem::BadField(format!(
                                    "device_traces[{device}][{i}] is a {} without an 'action'",
                                    other.type_name()
                                )))
                            }
                        }
                    }
                    snap.device_traces.push(ids);
                }
            }
            if let Some(settings) = top_fields
                .get(&snap.strings, "allocator_settings")
                .and_then(Fields::of)
            {
                let mut pairs: Vec<(String, String)> = settings
                    .map
                    .iter()
                    .map(|(k, v)| (snap.strings.get(*k).to_string(), describe(v, &snap.strings)))
                    .collect();
                pairs.sort();
                snap.allocator_settings = pairs;
            }
            if let Some(list) = top_fields
                .get(&snap.strings, "external_annotations")
                .and_then(list_items)
            {
                for a in list {
                    let Some(f) = Fields::of(&a) else { continue };
                    let id = |k: &str| f.get(&snap.strings, k).and_then(Value::as_str_id);
                    if let (Some(name), Some(stage)) = (id("name"), id("stage")) {
                        snap.annotations.push(Annotation {
                            device: f
                                .get(&snap.strings, "device")
                                .and_then(Value::as_u64)
                                .unwrap_or(0) as u32,
                            name,
                            stage,
                            time_us: f.get(&snap.strings, "time_us").and_then(Value::as_i64),
                        });
                    }
                }
            }
            top_fields
                .get(&snap.strings, "segments")
                .cloned()
                .unwrap_or(Value::None)
        }
        Value::List(_) => {
            snap.generation = Some(Generation::BareSegmentList);
            top.clone()
        }
        other => {
            return Err(Problem::NotASnapshot(format!(
                "the pickle holds a {}, not a dict or list",
                other.type_name()
            )))
        }
    };
    let segments = list_items(&segments_value)
        .ok_or_else(|| Problem::BadField("'segments' is not a list".into()))?;
    if snap.generation == Some(Generation::BareSegmentList) {
        let looks_like_segments = !segments.is_empty()
            && segments.iter().all(|s| {
                Fields::of(s).is_some_and(|f| {
                    f.get(&snap.strings, "blocks").is_some()
                        && f.get(&snap.strings, "total_size").is_some()
                })
            });
        if !looks_like_segments {
            return Err(Problem::NotASnapshot("a list that is not a list of allocator segments (dicts with 'total_size' and 'blocks')".into()));
        }
    }
    let mut history_blocks = false;
    for (i, seg) in segments.iter().enumerate() {
        let f = Fields::of(seg)
            .ok_or_else(|| Problem::BadField(format!("segments[{i}] is not a dict")))?;
        let s = &snap.strings;
        let what = format!("segments[{i}]");
        let address = f.u64(s, "address", &what)?.unwrap_or(0);
        let total_size = f
            .u64(s, "total_size", &what)?
            .ok_or_else(|| Problem::BadField(format!("{what} has no 'total_size'")))?;
        let pool = f
            .get(s, "segment_pool_id")
            .and_then(list_items)
            .map(|p| {
                (
                    p.first().and_then(Value::as_u64).unwrap_or(0),
                    p.get(1).and_then(Value::as_u64).unwrap_or(0),
                )
            })
            .unwrap_or((0, 0));
        let start = snap.blocks.len();
        let mut addr = address;
        let blocks = f.get(s, "blocks").and_then(list_items).unwrap_or_default();
        for (j, b) in blocks.iter().enumerate() {
            let bf = Fields::of(b)
                .ok_or_else(|| Problem::BadField(format!("{what}.blocks[{j}] is not a dict")))?;
            let bwhat = format!("{what}.blocks[{j}]");
            let size = bf.u64(s, "size", &bwhat)?.unwrap_or(0);
            let state = match bf.str(s, "state") {
                Some("active_allocated") => BlockState::ActiveAllocated,
                Some("active_pending_free") => BlockState::ActivePendingFree,
                Some("inactive") => BlockState::Inactive,
                _ => BlockState::Other,
            };
            // MemoryViz's annotate_snapshot: blocks without `frames` are the
            // legacy format, whose requested size and frames are in history[0].
            let (requested, stack) = if let Some(frames) = bf.get(s, "frames") {
                (
                    bf.u64(s, "requested_size", &bwhat)?.unwrap_or(size),
                    stack_of(frames),
                )
            } else if let Some(first) = bf
                .get(s, "history")
                .and_then(list_items)
                .and_then(|h| h.first().cloned())
            {
                history_blocks = true;
                let hf = Fields::of(&first).ok_or_else(|| {
                    Problem::BadField(format!("{bwhat}.history[0] is not a dict"))
                })?;
                let requested = match bf.u64(s, "requested_size", &bwhat)? {
                    Some(r) if r > 0 => r,
                    _ => hf.u64(s, "real_size", &bwhat)?.unwrap_or(size),
                };
                (requested, hf.get(s, "frames").map_or(0, stack_of))
            } else {
                (
                    bf.u64(s, "requested_size", &bwhat)?
                        .filter(|&r| r > 0)
                        .unwrap_or(size),
                    0,
                )
            };
            let baddr = bf.u64(s, "address", &bwhat)?.unwrap_or(addr);
            snap.blocks.push(Block {
                addr: baddr,
                size,
                requested_size: requested,
                state,
                stack,
            });
            addr = addr.saturating_add(size);
        }
        snap.segments.push(Segment {
            device: f.u64(s, "device", &what)?.unwrap_or(0).min(u32::MAX as u64) as u32,
            address,
            total_size,
            stream: f
                .get(s, "stream")
                .and_then(|v| v.as_u64().or_else(|| v.as_i64().map(|i| i as u64)))
                .unwrap_or(0),
            is_expandable: matches!(f.get(s, "is_expandable"), Some(Value::Bool(true))),
            pool,
            blocks: start..snap.blocks.len(),
        });
    }
    if snap.generation.is_none() {
        snap.generation = Some(if history_blocks {
            Generation::BlocksWithHistory
        } else {
            Generation::SegmentsAndTraces
        });
    }
    Ok(snap)
}

fn stack_of(v: &Value) -> u32 {
    match v {
        Value::Stack(s) => *s,
        _ => 0,
    }
}

/// A short text form of a setting's value.
fn describe(v: &Value, strings: &Strings) -> String {
    match v {
        Value::None => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::BigUint(u) => u.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Str(s) => strings.get(*s).to_string(),
        other => other.type_name().to_string(),
    }
}
