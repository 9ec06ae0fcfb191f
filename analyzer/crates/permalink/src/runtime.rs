//! The run-time sections (issues 16 and 17) in links: PyTorch memory
//! snapshots, JAX device memory profiles and series, PyTorch memory
//! timelines.
//!
//! Each section travels as a `RuntimeSection`: its stable JSON (the report
//! crate's field names) with its lists shortened, and its long series lifted
//! out into packed, delta-encoded columns and downsampled with
//! [`downsample_indices`] (first, last and the exact peak kept), like the
//! heap curves of modules. The reductions of [`crate::REDUCTION_STEPS`] that
//! name run-time sections edit these (stacks first, then lines, then curve
//! resolution).

use crate::bounds::{check_len, downsample_indices, truncate};
use crate::LinkError;
use oomscope_proto::oomscope::report as pb;
use oomscope_report::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Points of a run-time curve in a link before any reduction.
pub(crate) const CURVE_POINTS: usize = 200;
/// Stacks at the peak carried per section before any reduction.
const STACKS: usize = 5;
/// Frames kept per carried stack (innermost first, the allocating frame).
const STACK_FRAMES: usize = 12;
/// Source lines (top lines, live allocations...) carried per list.
const LINES: usize = 10;
/// Longest text of a frame or name in a run-time section.
const TEXT: usize = 200;
/// Largest JSON of one section a valid link holds.
const MAX_SECTION_JSON: usize = 256 * 1024;

/// Whether the link leaves out some run-time detail of `r` even before any
/// reduction (its curves are longer, or it has more stacks, frames or lines
/// than a link carries); [`crate::RUNTIME_DETAIL`] says so then.
pub(crate) fn trimmed(r: &Report) -> bool {
    let stacks_over =
        |v: &[StackSample]| v.len() > STACKS || v.iter().any(|s| s.frames.len() > STACK_FRAMES);
    r.memory_snapshots.iter().any(|m| {
        m.active_memory_curve.len() > CURVE_POINTS
            || m.what_if_curves
                .iter()
                .any(|c| c.heap_bytes.len() > CURVE_POINTS)
            || stacks_over(&m.stacks_at_peak)
            || m.top_lines_at_peak.len() > LINES
            || m.live_at_peak.len() > LINES
            || m.oom.as_ref().is_some_and(|o| o.largest_live.len() > LINES)
    }) || r
        .device_memory_profiles
        .iter()
        .any(|p| stacks_over(&p.top_stacks) || p.top_lines.len() > LINES)
        || r.device_memory_series
            .iter()
            .any(|s| s.growing_stacks.len() > STACKS)
        || r.memory_timelines.iter().any(|t| {
            t.points.len() > CURVE_POINTS || t.points.iter().any(|p| !p.by_category.is_empty())
        })
}

fn frame(f: &mut Frame) {
    f.function = truncate(&f.function, TEXT);
    f.file = truncate(&f.file, TEXT);
}

fn stacks(v: &mut Vec<StackSample>, n: usize) {
    v.truncate(n);
    for s in v {
        s.frames.truncate(STACK_FRAMES);
        s.frames.iter_mut().for_each(frame);
    }
}

fn lines(v: &mut Vec<SnapshotLine>, n: usize) {
    v.truncate(n);
    for l in v {
        l.frame = truncate(&l.frame, TEXT);
    }
}

fn live(v: &mut Vec<LiveAllocation>, n: usize) {
    v.truncate(n);
    for l in v {
        l.frame = truncate(&l.frame, TEXT);
    }
}

fn json<T: Serialize>(t: &T) -> String {
    serde_json::to_string(t).unwrap_or_default()
}

pub(crate) fn delta(xs: impl Iterator<Item = i64>) -> Vec<i64> {
    let mut prev = 0i64;
    xs.map(|x| {
        let d = x.wrapping_sub(prev);
        prev = x;
        d
    })
    .collect()
}

pub(crate) fn undelta(ds: &[i64]) -> Result<Vec<i64>, LinkError> {
    let mut prev = 0i64;
    ds.iter()
        .map(|&d| {
            prev = prev
                .checked_add(d)
                .ok_or_else(|| LinkError::Invalid("a run-time series overflows".into()))?;
            Ok(prev)
        })
        .collect()
}

/// Keep the points `keep` of every column.
fn pick<T: Copy>(v: &[T], keep: &[usize]) -> Vec<T> {
    keep.iter().filter_map(|&i| v.get(i).copied()).collect()
}

/// Downsample a section's columns to at most `max_points` on its `y` (bytes).
pub(crate) fn downsample(s: &mut pb::RuntimeSection, max_points: usize) {
    // `downsample_indices` may keep one point more than asked (the peak).
    let keep = downsample_indices(&s.y, max_points.saturating_sub(1));
    if keep.len() == s.y.len() {
        return;
    }
    if let Ok(x) = undelta(&s.x) {
        s.x = delta(pick(&x, &keep).into_iter());
    }
    if !s.z.is_empty() {
        s.z = pick(&s.z, &keep);
    }
    s.y = pick(&s.y, &keep);
}

pub(crate) fn snapshot_to_shared(m: &MemorySnapshot) -> pb::RuntimeSection {
    let mut m = m.clone();
    let curve = std::mem::take(&mut m.active_memory_curve);
    // They travel beside the section (`replays`, set by `convert`).
    m.what_if_curves.clear();
    stacks(&mut m.stacks_at_peak, STACKS);
    lines(&mut m.top_lines_at_peak, LINES);
    live(&mut m.live_at_peak, LINES);
    if let Some(o) = &mut m.oom {
        live(&mut o.largest_live, LINES);
    }
    m.accumulations.truncate(LINES);
    // The diagnosis carries them (`diagnosis.what_if`).
    m.what_if.clear();
    for a in &mut m.accumulations {
        a.frame = truncate(&a.frame, TEXT);
        // JSON has no NaN or infinity (serde_json writes null, which would
        // not read back): a non-finite rate travels as 0.
        if !a.count_per_step.is_finite() {
            a.count_per_step = 0.0;
        }
    }
    if let Some(l) = &mut m.lingering_backward {
        lines(&mut l.lines, LINES);
    }
    if let Some(s) = &mut m.spike {
        s.frame = truncate(&s.frame, TEXT);
    }
    m.annotations.truncate(50);
    m.phases.truncate(50);
    let mut s = pb::RuntimeSection {
        json: json(&m),
        x: delta(curve.iter().map(|p| p.event_index as i64)),
        y: curve.iter().map(|p| p.allocated_bytes).collect(),
        z: curve.iter().map(|p| p.reserved_bytes).collect(),
        ..Default::default()
    };
    downsample(&mut s, CURVE_POINTS);
    s
}

pub(crate) fn profile_to_shared(p: &DeviceMemoryProfile) -> pb::RuntimeSection {
    let mut p = p.clone();
    stacks(&mut p.top_stacks, STACKS);
    p.top_lines.truncate(LINES);
    p.top_lines.iter_mut().for_each(|l| frame(&mut l.frame));
    if let Some(b) = &mut p.balance {
        b.uneven_stacks.truncate(STACKS);
        b.uneven_stacks.iter_mut().for_each(|u| frame(&mut u.frame));
    }
    pb::RuntimeSection {
        json: json(&p),
        ..Default::default()
    }
}

pub(crate) fn series_to_shared(s: &DeviceMemorySeries) -> pb::RuntimeSection {
    let mut s = s.clone();
    s.growing_stacks.truncate(STACKS);
    for g in &mut s.growing_stacks {
        g.frames.truncate(STACK_FRAMES);
        g.frames.iter_mut().for_each(frame);
        frame(&mut g.frame);
    }
    pb::RuntimeSection {
        json: json(&s),
        ..Default::default()
    }
}

pub(crate) fn compile_usage_to_shared(u: &CompileUsage) -> pb::RuntimeSection {
    let mut u = u.clone();
    u.input = truncate(&u.input, TEXT);
    u.module = truncate(&u.module, TEXT);
    pb::RuntimeSection {
        json: json(&u),
        ..Default::default()
    }
}

pub(crate) fn timeline_to_shared(t: &MemoryTimeline) -> pb::RuntimeSection {
    let mut t = t.clone();
    // Per-point categories stay behind: the peak's categories travel.
    let points = std::mem::take(&mut t.points);
    let mut s = pb::RuntimeSection {
        json: json(&t),
        x: delta(points.iter().map(|p| p.time)),
        y: points.iter().map(|p| p.bytes).collect(),
        ..Default::default()
    };
    downsample(&mut s, CURVE_POINTS);
    s
}

/// Edit the JSON of a section as its typed value.
fn edit<T: Serialize + DeserializeOwned>(s: &mut pb::RuntimeSection, f: impl FnOnce(&mut T)) {
    if let Ok(mut t) = serde_json::from_str::<T>(&s.json) {
        f(&mut t);
        s.json = json(&t);
    }
}

/// The first reduction: the curves of the lines the analyzer replayed
/// without (three of 200 points per snapshot would otherwise crowd out its
/// stacks and the diagnosis); a line the sender drew travels in the view.
pub(crate) fn drop_replays(r: &mut pb::SharedReport) {
    for s in &mut r.memory_snapshots {
        s.replays.clear();
    }
}

/// Reductions of the run-time sections; `what`: 0 drops stacks, 1 limits
/// lines to 3, 2.. downsamples curves to `points`.
pub(crate) fn reduce_stacks(r: &mut pb::SharedReport) {
    for s in &mut r.memory_snapshots {
        edit::<MemorySnapshot>(s, |m| m.stacks_at_peak.clear());
    }
    for s in &mut r.device_memory_profiles {
        edit::<DeviceMemoryProfile>(s, |p| {
            p.top_stacks.clear();
            if let Some(b) = &mut p.balance {
                b.uneven_stacks.truncate(1);
            }
        });
    }
    for s in &mut r.device_memory_series {
        edit::<DeviceMemorySeries>(s, |m| {
            m.growing_stacks.truncate(3);
            m.growing_stacks.iter_mut().for_each(|g| g.frames.clear());
        });
    }
}

pub(crate) fn reduce_lines(r: &mut pb::SharedReport) {
    for s in &mut r.memory_snapshots {
        edit::<MemorySnapshot>(s, |m| {
            m.top_lines_at_peak.truncate(3);
            m.live_at_peak.truncate(3);
            if let Some(o) = &mut m.oom {
                o.largest_live.truncate(3);
            }
            m.accumulations.truncate(3);
            if let Some(l) = &mut m.lingering_backward {
                l.lines.truncate(3);
            }
            m.phases.truncate(10);
            m.annotations.truncate(10);
        });
    }
    for s in &mut r.device_memory_profiles {
        edit::<DeviceMemoryProfile>(s, |p| p.top_lines.truncate(3));
    }
}

/// The last resort: one line of each list, no phases.
pub(crate) fn reduce_to_one_line(r: &mut pb::SharedReport) {
    for s in &mut r.memory_snapshots {
        edit::<MemorySnapshot>(s, |m| {
            m.top_lines_at_peak.truncate(1);
            m.live_at_peak.truncate(1);
            if let Some(o) = &mut m.oom {
                o.largest_live.truncate(1);
            }
            m.accumulations.truncate(1);
            if let Some(l) = &mut m.lingering_backward {
                l.lines.truncate(1);
            }
            m.phases.clear();
            m.annotations.clear();
        });
        s.replays.truncate(1);
    }
    for s in &mut r.device_memory_profiles {
        edit::<DeviceMemoryProfile>(s, |p| p.top_lines.truncate(1));
    }
}

pub(crate) fn reduce_curves(r: &mut pb::SharedReport, points: usize) {
    for s in r
        .memory_snapshots
        .iter_mut()
        .chain(r.memory_timelines.iter_mut())
        .chain(r.ranks.iter_mut())
    {
        downsample(s, points);
    }
    // The snapshot lines replayed without (by the analyzer, or by the
    // sender on the page) are run-time curves too.
    let analyzer = r
        .memory_snapshots
        .iter_mut()
        .flat_map(|s| s.replays.iter_mut());
    let page = r
        .view
        .iter_mut()
        .flat_map(|v| v.snapshot_without.iter_mut());
    for c in analyzer.chain(page) {
        let mut s = pb::RuntimeSection {
            x: std::mem::take(&mut c.x),
            y: std::mem::take(&mut c.y),
            ..Default::default()
        };
        downsample(&mut s, points);
        (c.x, c.y) = (s.x, s.y);
    }
}

// ---------------------------------------------------------------------------
// Decoding.

fn parse<T: DeserializeOwned>(what: &str, s: &pb::RuntimeSection) -> Result<T, LinkError> {
    if s.json.len() > MAX_SECTION_JSON {
        return Err(LinkError::Invalid(format!(
            "a {what} is {} bytes long",
            s.json.len()
        )));
    }
    serde_json::from_str(&s.json)
        .map_err(|e| LinkError::Invalid(format!("a {what} is not valid: {e}")))
}

fn columns(what: &str, s: &pb::RuntimeSection, with_z: bool) -> Result<Vec<i64>, LinkError> {
    check_len(what, &s.y)?;
    if s.x.len() != s.y.len() || (with_z && s.z.len() != s.y.len()) || (!with_z && !s.z.is_empty())
    {
        return Err(LinkError::Invalid(format!(
            "a {what} has columns of different lengths"
        )));
    }
    let x = undelta(&s.x)?;
    if x.windows(2).any(|w| w[0] > w[1]) {
        return Err(LinkError::Invalid(format!("a {what} goes back in time")));
    }
    Ok(x)
}

pub(crate) fn snapshot_from_shared(s: pb::RuntimeSection) -> Result<MemorySnapshot, LinkError> {
    let mut m: MemorySnapshot = parse("memory snapshot", &s)?;
    let x = columns("memory snapshot curve", &s, true)?;
    if x.first().is_some_and(|&v| v < 0) {
        return Err(LinkError::Invalid(
            "a memory snapshot curve has a negative event index".into(),
        ));
    }
    check_len("stacks at the peak", &m.stacks_at_peak)?;
    check_len("top lines", &m.top_lines_at_peak)?;
    check_len("live allocations", &m.live_at_peak)?;
    m.active_memory_curve = (0..s.y.len())
        .map(|i| CurvePoint {
            event_index: x[i] as u64,
            allocated_bytes: s.y[i],
            reserved_bytes: s.z[i],
        })
        .collect();
    Ok(m)
}

pub(crate) fn profile_from_shared(s: pb::RuntimeSection) -> Result<DeviceMemoryProfile, LinkError> {
    let p: DeviceMemoryProfile = parse("device memory profile", &s)?;
    check_len("device memory profile devices", &p.devices)?;
    check_len("device memory profile stacks", &p.top_stacks)?;
    Ok(p)
}

pub(crate) fn series_from_shared(s: pb::RuntimeSection) -> Result<DeviceMemorySeries, LinkError> {
    let m: DeviceMemorySeries = parse("device memory series", &s)?;
    if m.inputs.len() != m.buffer_bytes.len() {
        return Err(LinkError::Invalid(
            "a device memory series has columns of different lengths".into(),
        ));
    }
    check_len("device memory series", &m.inputs)?;
    Ok(m)
}

pub(crate) fn compile_usage_from_shared(s: pb::RuntimeSection) -> Result<CompileUsage, LinkError> {
    let u: CompileUsage = parse("compile usage", &s)?;
    if !s.y.is_empty() || !s.x.is_empty() || !s.z.is_empty() {
        return Err(LinkError::Invalid(
            "a compile usage carries no series".into(),
        ));
    }
    Ok(u)
}

pub(crate) fn timeline_from_shared(s: pb::RuntimeSection) -> Result<MemoryTimeline, LinkError> {
    let mut t: MemoryTimeline = parse("memory timeline", &s)?;
    let x = columns("memory timeline", &s, false)?;
    t.points = x
        .into_iter()
        .zip(&s.y)
        .map(|(time, &bytes)| TimelinePoint {
            time,
            bytes,
            by_category: Vec::new(),
        })
        .collect();
    Ok(t)
}
