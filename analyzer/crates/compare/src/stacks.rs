//! PyTorch memory snapshots and JAX device memory profiles on both sides:
//! peaks, the call stacks whose live bytes changed most, and the allocation
//! sites that are new or gone.

use crate::module_diff::signed_difference;
use oomscope_report::compare::{ChangeKind, StackChange, StackProfileComparison, StackProfileKind};
use oomscope_report::{Frame, Report, StackSample};
use std::collections::HashMap;

/// Stacks listed per comparison (largest change first).
const MAX_LISTED_STACKS: usize = 30;

pub fn compare_stack_profiles(a: &Report, b: &Report) -> Vec<StackProfileComparison> {
    let mut out = Vec::new();
    // Snapshots pair by device index, in order.
    let mut used_b = vec![false; b.memory_snapshots.len()];
    for sa in &a.memory_snapshots {
        let Some(j) = (0..b.memory_snapshots.len())
            .find(|&j| !used_b[j] && b.memory_snapshots[j].device == sa.device)
        else {
            continue;
        };
        used_b[j] = true;
        let sb = &b.memory_snapshots[j];
        out.push(compare_stacks(
            StackProfileKind::MemorySnapshot,
            sa.device.to_string(),
            (&sa.input, sa.peak_allocated_bytes, &sa.stacks_at_peak),
            (&sb.input, sb.peak_allocated_bytes, &sb.stacks_at_peak),
        ));
    }
    // Device memory profiles are one per file: pair in order.
    for (pa, pb) in a
        .device_memory_profiles
        .iter()
        .zip(&b.device_memory_profiles)
    {
        let total = |p: &oomscope_report::DeviceMemoryProfile| {
            p.devices
                .iter()
                .fold(0u64, |acc, d| acc.saturating_add(d.buffer_bytes))
        };
        out.push(compare_stacks(
            StackProfileKind::DeviceMemoryProfile,
            String::new(),
            (&pa.input, total(pa), &pa.top_stacks),
            (&pb.input, total(pb), &pb.top_stacks),
        ));
    }
    out
}

type Side<'a> = (&'a str, u64, &'a [StackSample]);

/// A stack's identity: its frames (function, file, line) without their kinds.
type StackKey<'a> = Vec<(&'a str, &'a str, u32)>;

/// A stack's identity.
fn key(frames: &[Frame]) -> StackKey<'_> {
    frames
        .iter()
        .map(|f| (f.function.as_str(), f.file.as_str(), f.line))
        .collect()
}

pub fn compare_stacks(
    kind: StackProfileKind,
    device: String,
    a: Side<'_>,
    b: Side<'_>,
) -> StackProfileComparison {
    // Each stack's frames, bytes in A, bytes in B.
    let mut by_stack: HashMap<StackKey<'_>, (&[Frame], u64, u64)> = HashMap::new();
    for s in a.2 {
        let e = by_stack.entry(key(&s.frames)).or_insert((&s.frames, 0, 0));
        e.1 = e.1.saturating_add(s.bytes);
    }
    for s in b.2 {
        let e = by_stack.entry(key(&s.frames)).or_insert((&s.frames, 0, 0));
        e.2 = e.2.saturating_add(s.bytes);
    }
    let (mut new_sites, mut vanished_sites) = (0, 0);
    let mut stacks: Vec<StackChange> = Vec::new();
    for (frames, bytes_a, bytes_b) in by_stack.into_values() {
        let kind = match (bytes_a, bytes_b) {
            (0, _) => {
                new_sites += 1;
                ChangeKind::Appeared
            }
            (_, 0) => {
                vanished_sites += 1;
                ChangeKind::Disappeared
            }
            (x, y) if y > x => ChangeKind::Grew,
            _ => ChangeKind::Shrank,
        };
        if bytes_a == bytes_b {
            continue;
        }
        stacks.push(StackChange {
            frames: frames.to_vec(),
            bytes_a,
            bytes_b,
            difference_bytes: signed_difference(bytes_a, bytes_b),
            kind,
        });
    }
    stacks.sort_by(|x, y| {
        y.difference_bytes
            .unsigned_abs()
            .cmp(&x.difference_bytes.unsigned_abs())
            .then_with(|| key(&x.frames).cmp(&key(&y.frames)))
    });
    stacks.truncate(MAX_LISTED_STACKS);
    StackProfileComparison {
        kind,
        device,
        input_a: a.0.to_string(),
        input_b: b.0.to_string(),
        peak_bytes_a: a.1,
        peak_bytes_b: b.1,
        difference_bytes: signed_difference(a.1, b.1),
        stacks,
        new_sites,
        vanished_sites,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomscope_report::{DeviceMemory, DeviceMemoryProfile, FrameKind, MemorySnapshot};

    fn stack(function: &str, line: u32, bytes: u64) -> StackSample {
        StackSample {
            frames: vec![
                Frame {
                    function: function.into(),
                    file: "train.py".into(),
                    line,
                    kind: FrameKind::Python,
                },
                Frame {
                    function: "main".into(),
                    file: "train.py".into(),
                    line: 1,
                    kind: FrameKind::Python,
                },
            ],
            bytes,
            count: 1,
        }
    }

    #[test]
    fn snapshots_compare_stacks_at_the_peak() {
        let mut a = Report::new();
        a.memory_snapshots.push(MemorySnapshot {
            input: "a.pickle".into(),
            peak_allocated_bytes: 1000,
            stacks_at_peak: vec![stack("forward", 10, 600), stack("loss", 20, 400)],
            ..MemorySnapshot::default()
        });
        let mut b = Report::new();
        b.memory_snapshots.push(MemorySnapshot {
            input: "b.pickle".into(),
            peak_allocated_bytes: 700,
            stacks_at_peak: vec![
                stack("forward", 10, 300),
                stack("loss", 20, 400),
                stack("log", 30, 0),
                stack("cache", 40, 0),
            ],
            ..MemorySnapshot::default()
        });
        let c = compare_stack_profiles(&a, &b);
        assert_eq!(c.len(), 1);
        assert_eq!(
            (c[0].peak_bytes_a, c[0].peak_bytes_b, c[0].difference_bytes),
            (1000, 700, -300)
        );
        assert_eq!(c[0].stacks.len(), 1, "unchanged stacks are not listed");
        assert_eq!(
            (
                c[0].stacks[0].frames[0].function.as_str(),
                c[0].stacks[0].difference_bytes
            ),
            ("forward", -300)
        );
    }

    #[test]
    fn profiles_name_new_and_vanished_sites() {
        let profile = |stacks: Vec<StackSample>, bytes: u64| DeviceMemoryProfile {
            input: "p.prof".into(),
            devices: vec![DeviceMemory {
                device: "TPU_0".into(),
                buffer_bytes: bytes,
                buffer_count: 1,
                ..DeviceMemory::default()
            }],
            top_stacks: stacks,
            ..DeviceMemoryProfile::default()
        };
        let mut a = Report::new();
        a.device_memory_profiles.push(profile(
            vec![stack("old_site", 5, 100), stack("kept", 6, 50)],
            150,
        ));
        let mut b = Report::new();
        b.device_memory_profiles.push(profile(
            vec![stack("new_site", 7, 300), stack("kept", 6, 80)],
            380,
        ));
        let c = compare_stack_profiles(&a, &b);
        assert_eq!((c[0].new_sites, c[0].vanished_sites), (1, 1));
        let kinds: Vec<(ChangeKind, i64)> = c[0]
            .stacks
            .iter()
            .map(|s| (s.kind, s.difference_bytes))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (ChangeKind::Appeared, 300),
                (ChangeKind::Disappeared, -100),
                (ChangeKind::Grew, 30)
            ]
        );
        assert_eq!(c[0].difference_bytes, 230);
    }
}
