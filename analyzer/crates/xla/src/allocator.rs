//! Allocator profiles from an xplane: XProf's `memory_profile` tool, ported.
//!
//! Source: openxla/xprof `xprof/convert/xplane_to_memory_profile.cc` (the
//! algorithm of PyPI `xprof==2.24.2`). The `MemoryAllocation` and
//! `MemoryDeallocation` events of the `/host:CPU` plane carry the allocator's
//! state after each (de)allocation as stats. Per allocator (`allocator_name`,
//! or `device_ordinal`/`index_on_host`, the last stat given wins, as upstream):
//! 1. every event becomes a snapshot; the peak is the last event, in file
//!    order, at which `bytes_reserved + bytes_allocated` (stack + heap) is at
//!    least the running peak;
//! 2. snapshots are sorted by time (stable here; upstream's sort is unstable,
//!    which only matters for events at the same picosecond), events without a
//!    `group_id` get the previous step id + 1, and deallocations take the op,
//!    region, type and shape of the allocation at the same address;
//! 3. the timeline keeps at most 1000 snapshots: a max box filter over heap +
//!    stack, so the peak survives;
//! 4. the allocations active at the peak are those made in the peak's step up
//!    to the peak time and not freed; heap bytes not explained by them become
//!    "unused preallocated device memory", reserved stack bytes become "stack";
//!    identical rows are merged with a count, sorted by size.
//!
//! XProf runs its step grouping (`GroupTfEvents`) before this; here the
//! `group_id` stats present in the file are used as they are.
//! Integer stats are read from `int64_value` only and strings from `str_value`
//! or a `ref_value` naming a stat metadata, exactly as XProf's visitor does.

use crate::xspace::{read_plane, HOST_CPU_PLANE};
use oomscope_proto::tensorflow::profiler::{x_event, x_stat, XPlane, XStat};
use oomscope_report::{ActiveAllocation, AllocatorPoint, AllocatorProfile};
use std::collections::HashMap;

/// XProf's `max_num_snapshots` default for the timeline.
pub const MAX_TIMELINE_SNAPSHOTS: usize = 1000;

/// Allocator profiles of a serialized `XSpace` (plain or gzipped); empty when
/// it has no host plane or no allocator events. Only the `/host:CPU` plane is
/// decoded (the lazy plane reader of `xspace` skips the others).
pub fn allocator_profiles(
    input_name: &str,
    xplane_bytes: &[u8],
) -> Result<Vec<AllocatorProfile>, String> {
    let plane = read_plane(input_name, &xplane_bytes, HOST_CPU_PLANE).map_err(|e| e.to_string())?;
    Ok(plane
        .map(|plane| allocator_profiles_from_plane(input_name, &plane))
        .unwrap_or_default())
}

/// Allocator profiles from the `/host:CPU` plane, sorted by allocator name.
pub fn allocator_profiles_from_plane(input_name: &str, plane: &XPlane) -> Vec<AllocatorProfile> {
    let mut allocators: HashMap<String, Allocator> = HashMap::new();
    let stat_names: HashMap<i64, &str> = plane
        .stat_metadata
        .iter()
        .map(|(id, m)| (*id, m.name.as_str()))
        .collect();
    for line in &plane.lines {
        for event in &line.events {
            let activity = match plane
                .event_metadata
                .get(&event.metadata_id)
                .map(|m| m.name.as_str())
            {
                Some("MemoryAllocation") => Activity::Allocation,
                Some("MemoryDeallocation") => Activity::Deallocation,
                _ => continue,
            };
            let time_ps = match event.data {
                Some(x_event::Data::OffsetPs(t)) => t,
                _ => 0,
            };
            let mut snap = Snapshot {
                time_ps,
                activity,
                step_id: INVALID_STEP,
                ..Default::default()
            };
            let mut memory_id = String::new();
            for stat in &event.stats {
                let Some(name) = stat_names.get(&stat.metadata_id) else {
                    continue;
                };
                match *name {
                    "index_on_host" | "device_ordinal" => memory_id = int_value(stat).to_string(),
                    "allocator_name" => memory_id = str_or_ref(stat, &stat_names).to_string(),
                    "bytes_reserved" => snap.stack = int_value(stat),
                    "bytes_allocated" => snap.heap = int_value(stat),
                    "bytes_available" => snap.free = int_value(stat),
                    "fragmentation" => snap.fragmentation = double_value(stat),
                    "peak_bytes_in_use" => snap.peak_in_use = int_value(stat),
                    "requested_bytes" => snap.requested = int_value(stat),
                    "allocation_bytes" => snap.allocation = int_value(stat),
                    "addr" => snap.address = int_value(stat) as u64,
                    "tf_op" => snap.op = str_or_ref(stat, &stat_names).to_string(),
                    "group_id" => snap.step_id = int_value(stat),
                    "region_type" => snap.region = str_or_ref(stat, &stat_names).to_string(),
                    "data_type" => snap.data_type = data_type_string(int_value(stat)),
                    "shape" => snap.shape = str_or_ref(stat, &stat_names).to_string(),
                    _ => {}
                }
            }
            let a = allocators.entry(memory_id).or_default();
            a.update_summary(&snap);
            a.snapshots.push(snap);
        }
    }
    let mut names: Vec<String> = allocators.keys().cloned().collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|name| {
            let a = allocators.remove(&name)?;
            Some(a.into_profile(name, input_name))
        })
        .collect()
}

const INVALID_STEP: i64 = -1;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Activity {
    #[default]
    Allocation,
    Deallocation,
}

/// One allocator event with the state after it (XProf's MemoryProfileSnapshot).
#[derive(Debug, Clone, Default)]
struct Snapshot {
    time_ps: i64,
    activity: Activity,
    stack: i64,
    heap: i64,
    free: i64,
    fragmentation: f64,
    peak_in_use: i64,
    requested: i64,
    allocation: i64,
    address: u64,
    op: String,
    step_id: i64,
    region: String,
    data_type: String,
    shape: String,
}

impl Snapshot {
    fn in_use(&self) -> i64 {
        self.stack.saturating_add(self.heap)
    }
}

/// XProf's MemoryProfileSummary.
#[derive(Debug, Clone, Default)]
struct Summary {
    peak_stack: i64,
    peak_heap: i64,
    peak_in_use: i64,
    peak_fragmentation: f64,
    peak_time_ps: i64,
    capacity: i64,
}

#[derive(Debug, Default)]
struct Allocator {
    snapshots: Vec<Snapshot>,
    summary: Summary,
}

/// One row of the active-allocations table before merging.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    allocation: i64,
    requested: i64,
    op: String,
    region: String,
    data_type: String,
    shape: String,
}

impl Allocator {
    /// UpdateProfileSummary: reaching or staying at the peak moves it.
    fn update_summary(&mut self, s: &Snapshot) {
        if s.in_use() >= self.summary.peak_in_use {
            self.summary = Summary {
                peak_stack: s.stack,
                peak_heap: s.heap,
                peak_in_use: s.in_use(),
                peak_fragmentation: s.fragmentation,
                peak_time_ps: s.time_ps,
                capacity: s.in_use().saturating_add(s.free),
            };
        }
    }

    fn into_profile(mut self, name: String, input: &str) -> AllocatorProfile {
        self.snapshots.sort_by_key(|s| s.time_ps);
        self.update_step_ids();
        self.update_deallocations();
        let timeline = sample_timeline(&self.snapshots, MAX_TIMELINE_SNAPSHOTS);
        let active_at_peak = self.active_allocations();
        let sum = &self.summary;
        AllocatorProfile {
            allocator: name,
            input: input.to_string(),
            // The XSpace's, set by whoever reads the whole space.
            host: String::new(),
            peak_heap_bytes: non_negative(sum.peak_heap),
            peak_stack_bytes: non_negative(sum.peak_stack),
            peak_time_ps: non_negative(sum.peak_time_ps),
            capacity_bytes: non_negative(sum.capacity),
            // JSON has no NaN (BFC reports it with nothing in use): 0 then.
            fragmentation_at_peak: if sum.peak_fragmentation.is_finite() {
                sum.peak_fragmentation
            } else {
                0.0
            },
            timeline,
            active_at_peak,
        }
    }

    /// UpdateStepId: events without a step get the last valid step id + 1.
    fn update_step_ids(&mut self) {
        let mut last_valid = INVALID_STEP;
        for s in &mut self.snapshots {
            if s.step_id == INVALID_STEP {
                s.step_id = last_valid.saturating_add(1);
            } else {
                last_valid = s.step_id;
            }
        }
    }

    /// UpdateDeallocation: a deallocation takes the description of the
    /// allocation at its address (the first one not yet freed).
    fn update_deallocations(&mut self) {
        let mut live: HashMap<u64, usize> = HashMap::new();
        for i in 0..self.snapshots.len() {
            let (address, activity) = (self.snapshots[i].address, self.snapshots[i].activity);
            match activity {
                Activity::Deallocation => {
                    if let Some(j) = live.remove(&address) {
                        let alloc = self.snapshots[j].clone();
                        let d = &mut self.snapshots[i];
                        d.op = alloc.op;
                        d.region = alloc.region;
                        d.data_type = alloc.data_type;
                        d.shape = alloc.shape;
                    }
                }
                Activity::Allocation => {
                    live.entry(address).or_insert(i);
                }
            }
        }
    }

    /// ProcessActiveAllocations: the breakdown of the peak.
    fn active_allocations(&self) -> Vec<ActiveAllocation> {
        let peak_step = self
            .snapshots
            .iter()
            .rev()
            .find(|s| s.in_use() == self.summary.peak_in_use)
            .map_or(0, |s| s.step_id);
        let mut unmapped = self.summary.peak_heap;
        let mut unmapped_dealloc: i64 = 0;
        let mut active: HashMap<u64, usize> = HashMap::new();
        for (i, s) in self.snapshots.iter().enumerate() {
            if s.time_ps > self.summary.peak_time_ps {
                break;
            }
            if s.step_id != peak_step {
                continue;
            }
            match s.activity {
                Activity::Allocation => {
                    active.insert(s.address, i);
                    unmapped = unmapped.saturating_sub(s.allocation);
                }
                Activity::Deallocation => {
                    if active.remove(&s.address).is_none() {
                        unmapped_dealloc = unmapped_dealloc.saturating_add(s.allocation);
                    }
                    unmapped = unmapped.saturating_add(s.allocation);
                }
            }
        }
        unmapped = unmapped.saturating_sub(unmapped_dealloc);

        let mut rows: Vec<Row> = active
            .values()
            .filter_map(|&i| self.snapshots.get(i))
            .map(|s| Row {
                allocation: s.allocation,
                requested: s.requested,
                op: s.op.clone(),
                region: s.region.clone(),
                data_type: s.data_type.clone(),
                shape: s.shape.clone(),
            })
            .collect();
        let special = |bytes: i64, op: &str, region: &str| Row {
            allocation: bytes,
            requested: bytes,
            op: op.to_string(),
            region: region.to_string(),
            data_type: data_type_string(0),
            shape: "unknown".to_string(),
        };
        if unmapped > 0 {
            rows.push(special(
                unmapped,
                "unused preallocated device memory",
                "persist/dynamic",
            ));
        }
        if self.summary.peak_stack > 0 {
            rows.push(special(self.summary.peak_stack, "stack", "stack"));
        }
        rows.sort_by(|a, b| {
            (
                b.allocation,
                b.requested,
                &a.op,
                &a.region,
                &a.data_type,
                &a.shape,
            )
                .cmp(&(
                    a.allocation,
                    a.requested,
                    &b.op,
                    &b.region,
                    &b.data_type,
                    &b.shape,
                ))
        });
        let mut out: Vec<(Row, u64)> = Vec::new();
        for row in rows {
            match out.last_mut() {
                Some((last, count)) if *last == row => *count += 1,
                _ => out.push((row, 1)),
            }
        }
        out.into_iter()
            .map(|(r, occurrences)| ActiveAllocation {
                allocation_bytes: non_negative(r.allocation),
                requested_bytes: non_negative(r.requested),
                op_name: r.op,
                shape: r.shape,
                data_type: r.data_type,
                occurrences,
            })
            .collect()
    }
}

/// SampleMemoryProfileTimeline: all snapshots when few, else a max box filter
/// (`count1` boxes of width `w`, then `count2` of width `w + 1`).
fn sample_timeline(snapshots: &[Snapshot], max: usize) -> Vec<AllocatorPoint> {
    let point = |s: &Snapshot| AllocatorPoint {
        time_ps: non_negative(s.time_ps),
        heap_bytes: non_negative(s.heap),
        stack_bytes: non_negative(s.stack),
        free_bytes: non_negative(s.free),
    };
    let n = snapshots.len();
    if n <= max || max == 0 {
        return snapshots.iter().map(point).collect();
    }
    let width = n / max;
    let count1 = max * (width + 1) - n;
    let count2 = max - count1;
    let mut out = Vec::with_capacity(max);
    let boxes = |w: usize, count: usize, start: usize, out: &mut Vec<AllocatorPoint>| {
        for i in 0..count {
            let lo = start + w * i;
            let Some(chunk) = snapshots.get(lo..lo + w) else {
                return;
            };
            // First maximum wins, as upstream (strictly greater replaces).
            let mut best = &chunk[0];
            for s in &chunk[1..] {
                if s.in_use() > best.in_use() {
                    best = s;
                }
            }
            out.push(point(best));
        }
    };
    boxes(width, count1, 0, &mut out);
    boxes(width + 1, count2, width * count1, &mut out);
    out
}

fn non_negative(v: i64) -> u64 {
    v.max(0) as u64
}

/// XStatVisitor::IntValue: the `int64_value`, 0 for any other type.
fn int_value(stat: &XStat) -> i64 {
    match stat.value {
        Some(x_stat::Value::Int64Value(v)) => v,
        _ => 0,
    }
}

/// XStatVisitor::DoubleValue: the `double_value`, 0 for any other type.
fn double_value(stat: &XStat) -> f64 {
    match stat.value {
        Some(x_stat::Value::DoubleValue(v)) => v,
        _ => 0.0,
    }
}

/// XStatVisitor::StrOrRefValue.
fn str_or_ref<'a>(stat: &'a XStat, stat_names: &HashMap<i64, &'a str>) -> &'a str {
    match &stat.value {
        Some(x_stat::Value::StrValue(s)) => s,
        Some(x_stat::Value::RefValue(id)) => i64::try_from(*id)
            .ok()
            .and_then(|id| stat_names.get(&id).copied())
            .unwrap_or(""),
        _ => "",
    }
}

/// TensorFlow's `DataTypeString` (types.proto enum; `_ref` for ref types).
fn data_type_string(dtype: i64) -> String {
    let (base, is_ref) = if dtype > 100 {
        (dtype - 100, true)
    } else {
        (dtype, false)
    };
    let name = match base {
        0 => "INVALID",
        1 => "float",
        2 => "double",
        3 => "int32",
        4 => "uint8",
        5 => "int16",
        6 => "int8",
        7 => "string",
        8 => "complex64",
        9 => "int64",
        10 => "bool",
        11 => "qint8",
        12 => "quint8",
        13 => "qint32",
        14 => "bfloat16",
        15 => "qint16",
        16 => "quint16",
        17 => "uint16",
        18 => "complex128",
        19 => "half",
        20 => "resource",
        21 => "variant",
        22 => "uint32",
        23 => "uint64",
        24 => "float8_e5m2",
        25 => "float8_e4m3fn",
        29 => "int4",
        30 => "uint4",
        _ => return format!("unknown dtype enum ({dtype})"),
    };
    if is_ref {
        format!("{name}_ref")
    } else {
        name.to_string()
    }
}
