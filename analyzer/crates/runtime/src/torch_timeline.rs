//! PyTorch `MemoryProfileTimeline` exports (`torch/profiler/_memory_profiler.py`):
//!
//! - raw (`export_memory_timeline("x.raw.json.gz")`): a list of
//!   `[time_ns, action, bytes, category]`; time -1 for tensors that existed
//!   before profiling; action 1 pre-existing, 2 create, 3 increment version
//!   (written as two events: -bytes in the old version's category, +bytes in
//!   the new one's), 4 destroy (bytes negative); category an index into
//!   parameter, optimizer state, input, temporary, activation, gradient,
//!   autograd detail, unknown.
//! - JSON (`export_memory_timeline("x.json")`): `[times_us, sizes]`, each
//!   `sizes` row `[0, bytes of category 0, …, bytes of category 7]`.
//!
//! Both are reduced as PyTorch's `_coalesce_timeline` does: times become
//! microseconds (`int(t / 1000)`), events at the same microsecond are one
//! step, and the pre-existing step (-1) takes the smallest positive time. The
//! peak is the largest step total. Nothing is held per event.

use crate::curve::Curve;
use crate::error::{RuntimeError, RuntimeErrorKind};
use crate::gzip::{maybe_gunzip, MAX_DECOMPRESSED_BYTES};
use crate::json_scan::Scanner;
use oomscope_report::{MemoryTimeline, TimeUnit, TimelinePoint, TimelineSource};
use std::collections::BTreeMap;

/// PyTorch's categories, in `_CATEGORY_TO_INDEX` order.
pub const CATEGORIES: [&str; 8] = [
    "parameter",
    "optimizer_state",
    "input",
    "temporary",
    "activation",
    "gradient",
    "autograd_detail",
    "unknown",
];

/// Read either form, told apart by content (see [`form_of`]).
pub fn read_memory_timeline(input: &str, data: &[u8]) -> Result<MemoryTimeline, RuntimeError> {
    let bytes = maybe_gunzip(input, data, MAX_DECOMPRESSED_BYTES)?;
    match form_of(&bytes) {
        Some(TimelineSource::TorchMemoryTimelineJson) => read_json_form(input, &bytes),
        Some(_) => read_raw_form(input, &bytes),
        None => Err(RuntimeError::new(
            input,
            RuntimeErrorKind::Json,
            "not a PyTorch memory timeline: expected a JSON list of [time, action, bytes, category] or [times, sizes]",
        )),
    }
}

/// Which export a JSON document is: the JSON form is exactly two lists, the
/// second a list of lists; the raw form is a list of 4-number lists.
pub fn form_of(data: &[u8]) -> Option<TimelineSource> {
    let mut s = Scanner::new("", data);
    s.expect(b'[').ok()?;
    if s.empty_container(b']') {
        return Some(TimelineSource::TorchMemoryTimelineRaw);
    }
    if s.peek() != Some(b'[') {
        return None;
    }
    s.value().ok()?;
    if !s.next_element(b']').ok()? {
        return Some(TimelineSource::TorchMemoryTimelineRaw);
    }
    s.expect(b'[').ok()?;
    match s.peek() {
        Some(b'[') | Some(b']') => Some(TimelineSource::TorchMemoryTimelineJson),
        _ => Some(TimelineSource::TorchMemoryTimelineRaw),
    }
}

/// Steps of equal time, as `_coalesce_timeline` makes them.
struct Coalescer {
    curve: Curve,
    sizes: [i64; 8],
    step_time: Option<i64>,
    t_min: i64,
}

impl Coalescer {
    fn new() -> Self {
        Coalescer {
            curve: Curve::new(),
            sizes: [0; 8],
            step_time: None,
            t_min: -1,
        }
    }

    /// Start the step of `t` (µs) if it is not the current one.
    fn at(&mut self, t: i64) {
        if self.t_min == -1 || (t < self.t_min && t > 0) {
            self.t_min = t;
        }
        if self.step_time != Some(t) {
            self.end_step();
            self.step_time = Some(t);
        }
    }

    fn end_step(&mut self) {
        if let Some(time) = self.step_time.take() {
            let total: i128 = self.sizes.iter().map(|&b| b as i128).sum();
            let by_category = self.sizes.iter().map(|&b| b.max(0) as u64).collect();
            self.curve.push(TimelinePoint {
                time,
                bytes: total.clamp(0, u64::MAX as i128) as u64,
                by_category,
            });
        }
    }

    fn finish(mut self, input: &str, source: TimelineSource, events: u64) -> MemoryTimeline {
        self.end_step();
        let t_min = self.t_min;
        let fix = |mut p: TimelinePoint| {
            if p.time < 0 {
                p.time = t_min;
            }
            p
        };
        let (peak, last, _, points) = self.curve.finish();
        let peak = peak.map(fix).unwrap_or_default();
        let peak_by_category: BTreeMap<String, u64> = CATEGORIES
            .iter()
            .zip(&peak.by_category)
            .map(|(name, &b)| (name.to_string(), b))
            .collect();
        MemoryTimeline {
            input: input.to_string(),
            source,
            // Neither export records the device it was made for.
            device: String::new(),
            peak_bytes: peak.bytes,
            peak_time: peak.time,
            peak_by_category,
            final_bytes: last.map(|p| p.bytes).unwrap_or(0),
            time_unit: TimeUnit::Microseconds,
            events,
            points: points.into_iter().map(fix).collect(),
        }
    }
}

/// `int(t / 1000)` as Python computes it (a float division, then truncation).
fn ns_to_us(t: i64) -> i64 {
    if t == -1 {
        -1
    } else {
        (t as f64 / 1000.0) as i64
    }
}

fn read_raw_form(input: &str, data: &[u8]) -> Result<MemoryTimeline, RuntimeError> {
    let mut s = Scanner::new(input, data);
    let mut c = Coalescer::new();
    let mut events = 0u64;
    s.expect(b'[')?;
    if !s.empty_container(b']') {
        loop {
            let at = s.pos();
            let span = s.value()?;
            let (t, action, bytes, category): (i64, i64, i64, i64) = serde_json::from_slice(span)
                .map_err(|e| {
                RuntimeError::at(
                    input,
                    RuntimeErrorKind::Json,
                    at,
                    format!("event {events} is not [time, action, bytes, category]: {e}"),
                )
            })?;
            if !(1..=4).contains(&action) {
                return Err(RuntimeError::at(
                    input,
                    RuntimeErrorKind::Json,
                    at,
                    format!("event {events} has unknown action {action}"),
                ));
            }
            let slot = usize::try_from(category)
                .ok()
                .filter(|&i| i < CATEGORIES.len())
                .ok_or_else(|| {
                    RuntimeError::at(
                        input,
                        RuntimeErrorKind::Json,
                        at,
                        format!("event {events} has unknown category {category}"),
                    )
                })?;
            c.at(ns_to_us(t));
            if let Some(size) = c.sizes.get_mut(slot) {
                *size = size.saturating_add(bytes);
            }
            events += 1;
            if !s.next_element(b']')? {
                break;
            }
        }
    }
    Ok(c.finish(input, TimelineSource::TorchMemoryTimelineRaw, events))
}

fn read_json_form(input: &str, data: &[u8]) -> Result<MemoryTimeline, RuntimeError> {
    // Two cursors walk `times` and `sizes` side by side.
    let mut times = Scanner::new(input, data);
    times.expect(b'[')?;
    let mut skip = Scanner::at(input, data, times.pos());
    skip.value()?;
    skip.expect(b',')?;
    let mut sizes = Scanner::at(input, data, skip.pos());
    times.expect(b'[')?;
    sizes.expect(b'[')?;
    let mut c = Coalescer::new();
    let mut steps = 0u64;
    let (mut times_done, mut sizes_done) =
        (times.empty_container(b']'), sizes.empty_container(b']'));
    while !times_done && !sizes_done {
        let at = times.pos();
        let t: i64 = serde_json::from_slice(times.value()?).map_err(|e| {
            RuntimeError::at(
                input,
                RuntimeErrorKind::Json,
                at,
                format!("time {steps} is not an integer: {e}"),
            )
        })?;
        let at = sizes.pos();
        let row: Vec<i64> = serde_json::from_slice(sizes.value()?).map_err(|e| {
            RuntimeError::at(
                input,
                RuntimeErrorKind::Json,
                at,
                format!("sizes row {steps} is not a list of integers: {e}"),
            )
        })?;
        // `[0, c0, …, c7]` as PyTorch writes it; a row of exactly 8 is taken as c0…c7.
        let categories = match row.len() {
            9 => row.get(1..).unwrap_or_default(),
            8 => &row[..],
            n => {
                return Err(RuntimeError::at(
                    input,
                    RuntimeErrorKind::Json,
                    at,
                    format!("sizes row {steps} has {n} entries, expected 9"),
                ))
            }
        };
        c.at(t);
        for (slot, &b) in c.sizes.iter_mut().zip(categories) {
            *slot = b;
        }
        steps += 1;
        times_done = !times.next_element(b']')?;
        sizes_done = !sizes.next_element(b']')?;
    }
    if times_done != sizes_done {
        return Err(times.error("times and sizes have different lengths"));
    }
    Ok(c.finish(input, TimelineSource::TorchMemoryTimelineJson, steps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_told_apart_by_content() {
        assert_eq!(
            form_of(b"[[-1, 1, 512, 0], [5000, 2, 64, 4]]"),
            Some(TimelineSource::TorchMemoryTimelineRaw)
        );
        assert_eq!(
            form_of(b"[[-1, 1, 512, 0], [5, 4, -64, 4]]"),
            Some(TimelineSource::TorchMemoryTimelineRaw)
        );
        assert_eq!(
            form_of(b"[[1, 2], [[0,1,0,0,0,0,0,0,0], [0,2,0,0,0,0,0,0,0]]]"),
            Some(TimelineSource::TorchMemoryTimelineJson)
        );
        assert_eq!(form_of(b"{\"traceEvents\": []}"), None);
    }

    #[test]
    fn events_of_one_microsecond_are_one_step_as_pytorch_coalesces_them() {
        // +100 and -100 within the same microsecond never show as a peak of 100 more.
        let raw =
            b"[[-1, 1, 1000, 0], [5000100, 2, 100, 3], [5000900, 4, -100, 3], [6000000, 2, 50, 4]]";
        let t = read_memory_timeline("t.raw.json", raw).unwrap();
        assert_eq!(t.peak_bytes, 1050);
        assert_eq!(t.peak_time, 6000);
        assert_eq!(t.final_bytes, 1050);
        assert_eq!(t.peak_by_category["activation"], 50);
        // The pre-existing step takes the smallest positive time.
        assert_eq!(t.points.first().map(|p| p.time), Some(5000));
    }

    #[test]
    fn the_json_form_matches_the_raw_form_it_came_from() {
        let json =
            b"[[5000, 6000], [[0, 1000, 0, 0, 0, 0, 0, 0, 0], [0, 1000, 0, 0, 0, 50, 0, 0, 0]]]";
        let t = read_memory_timeline("t.json", json).unwrap();
        assert_eq!(
            (t.peak_bytes, t.peak_time, t.final_bytes),
            (1050, 6000, 1050)
        );
        assert_eq!(t.source, TimelineSource::TorchMemoryTimelineJson);
    }
}
