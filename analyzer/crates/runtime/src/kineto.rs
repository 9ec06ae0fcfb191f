//! Kineto Chrome traces (`*.pt.trace.json(.gz)`, written by `torch.profiler`
//! with `profile_memory=True`): `[memory]` instant events whose `args` carry
//! `Bytes` (positive for an allocation, negative for a free), `Device Type`
//! (c10's `DeviceType` number) and `Device Id`; newer PyTorch adds `Addr`,
//! `Total Allocated` and `Total Reserved`.
//!
//! Per device, memory over time is `Total Allocated` where the trace has it
//! (the allocator's own count, which includes memory allocated before
//! profiling began), else the running sum of `Bytes` from zero. Events are
//! taken in file order, which is the order Kineto recorded them. The trace
//! is walked one event at a time; only `[memory]` events are deserialised.

use crate::curve::Curve;
use crate::error::{RuntimeError, RuntimeErrorKind};
use crate::gzip::{maybe_gunzip, MAX_DECOMPRESSED_BYTES};
use crate::json_scan::Scanner;
use oomscope_report::{MemoryTimeline, TimeUnit, TimelinePoint, TimelineSource};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Devices followed in one trace; more is a hostile trace.
pub const MAX_DEVICES: usize = 1024;

const MEMORY_EVENT: &[u8] = b"[memory]";

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    ts: Option<f64>,
    args: Option<MemoryArgs>,
}

#[derive(Deserialize)]
struct MemoryArgs {
    #[serde(rename = "Bytes")]
    bytes: Option<i64>,
    #[serde(rename = "Device Type")]
    device_type: Option<i64>,
    #[serde(rename = "Device Id")]
    device_id: Option<i64>,
    #[serde(rename = "Total Allocated")]
    total_allocated: Option<i64>,
}

/// c10 `DeviceType` number → PyTorch's device name (`torch.device` spelling).
fn device_name(device_type: i64, device_id: i64) -> String {
    let kind = match device_type {
        0 => "cpu",
        1 => "cuda",
        2 => "mkldnn",
        3 => "opengl",
        4 => "opencl",
        5 => "ideep",
        6 => "hip",
        7 => "fpga",
        8 => "maia",
        9 => "xla",
        10 => "vulkan",
        11 => "metal",
        12 => "xpu",
        13 => "mps",
        14 => "meta",
        15 => "hpu",
        16 => "ve",
        17 => "lazy",
        18 => "ipu",
        19 => "mtia",
        20 => "privateuseone",
        other => return format!("device_type_{other}:{device_id}"),
    };
    if device_id < 0 {
        kind.to_string()
    } else {
        format!("{kind}:{device_id}")
    }
}

struct Track {
    name: String,
    curve: Curve,
    running: i64,
    events: u64,
}

/// Is this (the head of) a Chrome trace: an object with `traceEvents`?
pub fn is_chrome_trace(head: &[u8]) -> bool {
    let start = head.iter().position(|b| !b.is_ascii_whitespace());
    start.and_then(|i| head.get(i)) == Some(&b'{')
        && head.windows(13).any(|w| w == b"\"traceEvents\"")
}

/// One [`MemoryTimeline`] per device with `[memory]` events; an error when
/// the trace has none (the profiler ran without `profile_memory=True`).
pub fn read_kineto_trace(input: &str, data: &[u8]) -> Result<Vec<MemoryTimeline>, RuntimeError> {
    let bytes = maybe_gunzip(input, data, MAX_DECOMPRESSED_BYTES)?;
    let mut s = Scanner::new(input, &bytes);
    let mut tracks: Vec<Track> = Vec::new();
    let mut index: BTreeMap<(i64, i64), usize> = BTreeMap::new();
    s.expect(b'{')?;
    let mut found_events = false;
    if !s.empty_container(b'}') {
        loop {
            let key = s.key()?;
            if key == "traceEvents" {
                found_events = true;
                read_events(input, &mut s, &mut tracks, &mut index)?;
            } else {
                s.value()?;
            }
            if !s.next_element(b'}')? {
                break;
            }
        }
    }
    if !found_events {
        return Err(RuntimeError::new(
            input,
            RuntimeErrorKind::Json,
            "not a Chrome trace: no traceEvents",
        ));
    }
    if tracks.is_empty() {
        return Err(RuntimeError::new(
            input,
            RuntimeErrorKind::Json,
            "the trace has no [memory] events (record it with torch.profiler.profile(profile_memory=True))",
        ));
    }
    Ok(tracks.into_iter().map(|t| timeline(input, t)).collect())
}

fn read_events(
    input: &str,
    s: &mut Scanner,
    tracks: &mut Vec<Track>,
    index: &mut BTreeMap<(i64, i64), usize>,
) -> Result<(), RuntimeError> {
    s.expect(b'[')?;
    if s.empty_container(b']') {
        return Ok(());
    }
    loop {
        let at = s.pos();
        let span = s.value()?;
        if span.windows(MEMORY_EVENT.len()).any(|w| w == MEMORY_EVENT) {
            let event: Event = serde_json::from_slice(span).map_err(|e| {
                RuntimeError::at(
                    input,
                    RuntimeErrorKind::Json,
                    at,
                    format!("unreadable trace event: {e}"),
                )
            })?;
            if let (Some("[memory]"), Some(args)) = (event.name.as_deref(), event.args) {
                let key = (args.device_type.unwrap_or(-1), args.device_id.unwrap_or(-1));
                let slot = match index.get(&key) {
                    Some(&i) => i,
                    None => {
                        if tracks.len() >= MAX_DEVICES {
                            return Err(RuntimeError::at(
                                input,
                                RuntimeErrorKind::TooLarge,
                                at,
                                format!("[memory] events of more than {MAX_DEVICES} devices"),
                            ));
                        }
                        tracks.push(Track {
                            name: device_name(key.0, key.1),
                            curve: Curve::new(),
                            running: 0,
                            events: 0,
                        });
                        index.insert(key, tracks.len() - 1);
                        tracks.len() - 1
                    }
                };
                if let Some(track) = tracks.get_mut(slot) {
                    track.running = match args.total_allocated {
                        Some(total) => total,
                        None => track.running.saturating_add(args.bytes.unwrap_or(0)),
                    };
                    track.events += 1;
                    let time = event.ts.map(|t| t as i64).unwrap_or(0);
                    track.curve.push(TimelinePoint {
                        time,
                        bytes: track.running.max(0) as u64,
                        by_category: vec![],
                    });
                }
            }
        }
        if !s.next_element(b']')? {
            return Ok(());
        }
    }
}

fn timeline(input: &str, t: Track) -> MemoryTimeline {
    let (peak, last, _, points) = t.curve.finish();
    let peak = peak.unwrap_or_default();
    MemoryTimeline {
        input: input.to_string(),
        source: TimelineSource::Kineto,
        device: t.name,
        peak_bytes: peak.bytes,
        peak_time: peak.time,
        peak_by_category: BTreeMap::new(),
        final_bytes: last.map(|p| p.bytes).unwrap_or(0),
        time_unit: TimeUnit::Microseconds,
        events: t.events,
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_events_are_summed_per_device() {
        let trace = br#"{"schemaVersion": 1, "traceEvents": [
            {"ph": "X", "name": "aten::add", "ts": 1, "dur": 3},
            {"ph": "i", "name": "[memory]", "ts": 10, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 512}},
            {"ph": "i", "name": "[memory]", "ts": 11, "args": {"Device Type": 0, "Device Id": -1, "Bytes": 64}},
            {"ph": "i", "name": "[memory]", "ts": 12, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 256}},
            {"ph": "i", "name": "[memory]", "ts": 13, "args": {"Device Type": 1, "Device Id": 0, "Bytes": -512}}
        ]}"#;
        let t = read_kineto_trace("t.pt.trace.json", trace).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            (
                t[0].device.as_str(),
                t[0].peak_bytes,
                t[0].peak_time,
                t[0].final_bytes
            ),
            ("cuda:0", 768, 12, 256)
        );
        assert_eq!((t[1].device.as_str(), t[1].peak_bytes), ("cpu", 64));
    }

    #[test]
    fn total_allocated_is_the_allocators_own_count() {
        let trace = br#"{"traceEvents": [
            {"ph": "i", "name": "[memory]", "ts": 1.5, "args": {"Device Type": 1, "Device Id": 2, "Bytes": 10, "Addr": 1, "Total Allocated": 1010, "Total Reserved": 2048}},
            {"ph": "i", "name": "[memory]", "ts": 2.5, "args": {"Device Type": 1, "Device Id": 2, "Bytes": -10, "Addr": 1, "Total Allocated": 1000, "Total Reserved": 2048}}
        ]}"#;
        let t = read_kineto_trace("t.pt.trace.json", trace).unwrap();
        assert_eq!(
            (t[0].device.as_str(), t[0].peak_bytes, t[0].final_bytes),
            ("cuda:2", 1010, 1000)
        );
    }

    #[test]
    fn a_trace_without_memory_events_says_how_to_record_them() {
        let e = read_kineto_trace("t.json", br#"{"traceEvents": [{"ph": "X", "name": "a"}]}"#)
            .unwrap_err();
        assert!(e.to_string().contains("profile_memory=True"), "{e}");
    }
}
