//! A JAX device memory profile → [`DeviceMemoryProfile`]: totals per device
//! and kind, the largest stacks, the top source lines, and the balance
//! across devices.
//!
//! Samples are aggregated by their location ids first (cheap, bounded by the
//! input), and only the stacks that are reported get their frames built.

use crate::error::RuntimeError;
use crate::gzip::{maybe_gunzip, MAX_DECOMPRESSED_BYTES};
use crate::pprof::{check, decode, CheckedProfile, SampleKind};
use oomscope_report::{
    DeviceBalance, DeviceMemory, DeviceMemoryProfile, EvenStack, Frame, FrameKind, SourceLineBytes,
    StackSample, UnevenStack,
};
use std::collections::{BTreeMap, HashMap};

/// Stacks kept in the report, largest first.
pub const TOP_STACKS: usize = 50;
/// Source lines kept in the report.
pub const TOP_LINES: usize = 20;
/// Uneven stacks kept in the balance.
pub const TOP_UNEVEN_STACKS: usize = 10;
/// Above this many devices the per-device spread of stacks is not listed.
pub const MAX_DEVICES_FOR_SPREAD: usize = 256;
/// Buffer stacks kept for comparing profiles of a series.
pub const MAX_SERIES_STACKS: usize = 2000;
/// Frames kept per stack (innermost first); deeper frames are cut.
pub const MAX_FRAMES_PER_STACK: usize = 256;

/// A decoded profile: the report entry, and its buffer stacks (all devices
/// together, largest first, up to [`MAX_SERIES_STACKS`]) for series analysis.
#[derive(Debug, Clone, Default)]
pub struct DecodedDeviceProfile {
    pub profile: DeviceMemoryProfile,
    pub buffer_stacks: Vec<StackSample>,
}

/// Read one `save_device_memory_profile()` file, gzipped (as written) or not.
pub fn read_device_memory_profile(
    input: &str,
    data: &[u8],
) -> Result<DecodedDeviceProfile, RuntimeError> {
    let bytes = maybe_gunzip(input, data, MAX_DECOMPRESSED_BYTES)?;
    let profile = decode(input, &bytes)?;
    let checked = check(input, &profile)?;
    Ok(summarize(input, &checked))
}

/// Totals of one stack.
#[derive(Default, Clone, Copy)]
struct Totals {
    bytes: u64,
    count: u64,
}

impl Totals {
    fn add(&mut self, bytes: u64, count: u64) {
        self.bytes = self.bytes.saturating_add(bytes);
        self.count = self.count.saturating_add(count);
    }
}

fn summarize(input: &str, p: &CheckedProfile) -> DecodedDeviceProfile {
    let mut out = DeviceMemoryProfile {
        input: input.to_string(),
        ..Default::default()
    };
    let mut devices: Vec<DeviceMemory> = p
        .devices
        .iter()
        .map(|d| DeviceMemory {
            device: d.clone(),
            ..Default::default()
        })
        .collect();

    // Stacks interned by their location ids.
    let mut stack_ids: HashMap<&[u32], usize> = HashMap::new();
    let mut stack_locs: Vec<&[u32]> = Vec::new();
    let mut all_stacks: HashMap<usize, Totals> = HashMap::new();
    let mut buffer_stacks: HashMap<usize, Totals> = HashMap::new();
    let mut by_stack_device: HashMap<(usize, u32), u64> = HashMap::new();
    let mut count_by_stack_device: HashMap<(usize, u32), u64> = HashMap::new();
    for s in &p.samples {
        let next = stack_locs.len();
        let id = *stack_ids.entry(&s.locations).or_insert_with(|| {
            stack_locs.push(&s.locations);
            next
        });
        all_stacks.entry(id).or_default().add(s.bytes, s.count);
        let device = s.device.and_then(|d| devices.get_mut(d as usize));
        match s.kind {
            SampleKind::Buffer => {
                out.buffer_bytes = out.buffer_bytes.saturating_add(s.bytes);
                out.buffer_count = out.buffer_count.saturating_add(s.count);
                buffer_stacks.entry(id).or_default().add(s.bytes, s.count);
                if let Some(d) = device {
                    d.buffer_bytes = d.buffer_bytes.saturating_add(s.bytes);
                    d.buffer_count = d.buffer_count.saturating_add(s.count);
                }
                if let Some(d) = s.device {
                    let e = by_stack_device.entry((id, d)).or_default();
                    *e = e.saturating_add(s.bytes);
                    let c = count_by_stack_device.entry((id, d)).or_default();
                    *c = c.saturating_add(s.count);
                }
            }
            SampleKind::Executable => {
                out.executable_bytes = out.executable_bytes.saturating_add(s.bytes);
                out.executable_count = out.executable_count.saturating_add(s.count);
                if s.size_unknown {
                    out.executable_size_unknown_count =
                        out.executable_size_unknown_count.saturating_add(s.count);
                }
                if let Some(d) = device {
                    d.executable_bytes = d.executable_bytes.saturating_add(s.bytes);
                    d.executable_count = d.executable_count.saturating_add(s.count);
                }
            }
        }
    }

    let frames_of = |id: usize| -> Vec<Frame> {
        stack_locs
            .get(id)
            .into_iter()
            .flat_map(|locs| locs.iter())
            .flat_map(|&l| p.locations.get(l as usize).into_iter().flatten())
            .take(MAX_FRAMES_PER_STACK)
            .cloned()
            .collect()
    };

    out.top_stacks = largest(&all_stacks, TOP_STACKS)
        .into_iter()
        .map(|(id, t)| StackSample {
            frames: frames_of(id),
            bytes: t.bytes,
            count: t.count,
        })
        .collect();
    let buffer_stacks_out: Vec<StackSample> = largest(&buffer_stacks, MAX_SERIES_STACKS)
        .into_iter()
        .map(|(id, t)| StackSample {
            frames: frames_of(id),
            bytes: t.bytes,
            count: t.count,
        })
        .collect();

    // Source lines: each stack charged to the frame where the user's code made it.
    let mut lines: HashMap<(u32, usize), Totals> = HashMap::new();
    for (&id, t) in &all_stacks {
        if let Some(key) = stack_locs.get(id).and_then(|locs| attribution(p, locs)) {
            lines.entry(key).or_default().add(t.bytes, t.count);
        }
    }
    // One row per source line: several locations (one per call path or
    // address) can name the same line, and a line that holds no bytes
    // (executables, empty arrays) is not where memory comes from.
    let mut by_line: HashMap<(String, u32, String), (Frame, Totals)> = HashMap::new();
    for (key, t) in lines {
        if let Some(frame) = frame_at(p, key) {
            let entry = by_line
                .entry((frame.file.clone(), frame.line, frame.function.clone()))
                .or_insert_with(|| (frame.clone(), Totals::default()));
            entry.1.add(t.bytes, t.count);
        }
    }
    let mut lines: Vec<(Frame, Totals)> = by_line.into_values().filter(|(_, t)| t.bytes > 0).collect();
    lines.sort_by(|a, b| {
        b.1.bytes
            .cmp(&a.1.bytes)
            .then_with(|| (&a.0.file, a.0.line, &a.0.function).cmp(&(&b.0.file, b.0.line, &b.0.function)))
    });
    out.top_lines = lines
        .into_iter()
        .take(TOP_LINES)
        .map(|(frame, t)| SourceLineBytes {
            frame,
            bytes: t.bytes,
            count: t.count,
        })
        .collect();

    out.balance = balance(
        p,
        &devices,
        &buffer_stacks,
        (&by_stack_device, &count_by_stack_device),
        &stack_locs,
    );
    out.devices = devices;
    DecodedDeviceProfile {
        profile: out,
        buffer_stacks: buffer_stacks_out,
    }
}

/// Up to `n` entries of `map`, largest bytes first (ties by id, so the order
/// does not depend on the hash map's).
fn largest(map: &HashMap<usize, Totals>, n: usize) -> Vec<(usize, Totals)> {
    let mut v: Vec<(usize, Totals)> = map.iter().map(|(&k, &t)| (k, t)).collect();
    v.sort_by(|a, b| b.1.bytes.cmp(&a.1.bytes).then(a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

/// (location, line within it) of the innermost user frame of a stack, or of
/// its innermost frame when the user's code is nowhere in it.
fn attribution(p: &CheckedProfile, locs: &[u32]) -> Option<(u32, usize)> {
    let mut first = None;
    for &l in locs {
        for (i, frame) in p
            .locations
            .get(l as usize)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if first.is_none() {
                first = Some((l, i));
            }
            if frame.kind == FrameKind::Python {
                return Some((l, i));
            }
        }
    }
    first
}

fn frame_at(p: &CheckedProfile, (loc, line): (u32, usize)) -> Option<&Frame> {
    p.locations
        .get(loc as usize)
        .and_then(|frames| frames.get(line))
}

fn attributed_frame(p: &CheckedProfile, locs: &[u32]) -> Frame {
    attribution(p, locs)
        .and_then(|key| frame_at(p, key))
        .cloned()
        .unwrap_or_else(|| Frame {
            function: "(no traceback)".into(),
            ..Default::default()
        })
}

fn balance(
    p: &CheckedProfile,
    devices: &[DeviceMemory],
    buffer_stacks: &HashMap<usize, Totals>,
    (by_stack_device, count_by_stack_device): (
        &HashMap<(usize, u32), u64>,
        &HashMap<(usize, u32), u64>,
    ),
    stack_locs: &[&[u32]],
) -> Option<DeviceBalance> {
    let holding: Vec<&DeviceMemory> = devices.iter().filter(|d| d.buffer_count > 0).collect();
    if holding.len() < 2 {
        return None;
    }
    let heaviest = holding.iter().max_by(|a, b| {
        a.buffer_bytes
            .cmp(&b.buffer_bytes)
            .then(b.device.cmp(&a.device))
    })?;
    let lightest = holding.iter().min_by(|a, b| {
        a.buffer_bytes
            .cmp(&b.buffer_bytes)
            .then(a.device.cmp(&b.device))
    })?;
    let total: u128 = holding.iter().map(|d| d.buffer_bytes as u128).sum();
    let mut out = DeviceBalance {
        devices: holding.len() as u32,
        min_bytes: lightest.buffer_bytes,
        max_bytes: heaviest.buffer_bytes,
        mean_bytes: (total / holding.len() as u128) as u64,
        heaviest_device: heaviest.device.clone(),
        lightest_device: lightest.device.clone(),
        ..Default::default()
    };
    let device_ids: Vec<u32> = (0..devices.len() as u32)
        .filter(|&d| devices[d as usize].buffer_count > 0)
        .collect();
    let mut uneven: Vec<(u64, usize, u64, u64)> = Vec::new();
    let mut even: Vec<(u64, usize)> = Vec::new();
    let mut ids: Vec<usize> = buffer_stacks.keys().copied().collect();
    ids.sort_unstable();
    for id in ids {
        let per_device = device_ids
            .iter()
            .map(|&d| by_stack_device.get(&(id, d)).copied().unwrap_or(0));
        let (min, max) = per_device.fold((u64::MAX, 0), |(lo, hi), b| (lo.min(b), hi.max(b)));
        if min == max && max > 0 {
            out.even_bytes = out
                .even_bytes
                .saturating_add(max.saturating_mul(device_ids.len() as u64));
            even.push((max, id));
        } else if max > min {
            uneven.push((max - min, id, min, max));
        }
    }
    even.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    out.even_stacks = even
        .into_iter()
        .take(TOP_UNEVEN_STACKS)
        .map(|(bytes, id)| EvenStack {
            frame: attributed_frame(p, stack_locs.get(id).copied().unwrap_or_default()),
            bytes_per_device: bytes,
            // The same on every device when the sizes are; the first
            // device's count otherwise.
            count_per_device: device_ids
                .first()
                .and_then(|&d| count_by_stack_device.get(&(id, d)).copied())
                .unwrap_or(0),
        })
        .collect();
    if devices.len() <= MAX_DEVICES_FOR_SPREAD {
        uneven.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        out.uneven_stacks = uneven
            .into_iter()
            .take(TOP_UNEVEN_STACKS)
            .map(|(_, id, min, max)| UnevenStack {
                frame: attributed_frame(p, stack_locs.get(id).copied().unwrap_or_default()),
                bytes_by_device: device_ids
                    .iter()
                    .map(|&d| {
                        (
                            devices[d as usize].device.clone(),
                            by_stack_device.get(&(id, d)).copied().unwrap_or(0),
                        )
                    })
                    .collect::<BTreeMap<_, _>>(),
                max_bytes: max,
                min_bytes: min,
            })
            .collect();
    }
    Some(out)
}
