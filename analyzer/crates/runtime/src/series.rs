//! Device memory profiles of one run taken at several steps
//! (`memory_20.prof`, `memory_40.prof`, `memory_60.prof`): stacks whose live
//! bytes grow from one profile to the next are a leak.
//!
//! Profiles belong to one series when their names are equal once every run of
//! digits is set aside (`step_20/memory.prof` and `step_40/memory.prof` too);
//! the digits, read as numbers, give the order.

use crate::device_profile::DecodedDeviceProfile;
use oomscope_report::{DeviceMemorySeries, Frame, FrameKind, GrowingStack};
use std::collections::{BTreeMap, HashMap};

/// Growing stacks kept per series.
pub const TOP_GROWING_STACKS: usize = 20;

/// `run_7/memory_40.prof` → (`run_#/memory_#.prof`, [7, 40]). A folder
/// named `rank<N>` (one process of a job, as `oomscope run` names it) is kept
/// whole: each rank's profiles are their own series.
fn series_key(name: &str) -> (String, Vec<u64>) {
    let mut key = String::with_capacity(name.len());
    let mut numbers = Vec::new();
    let mut components = name.split('/').peekable();
    while let Some(component) = components.next() {
        let is_folder = components.peek().is_some();
        if is_folder && is_rank_folder(component) {
            key.push_str(component);
        } else {
            set_digits_aside(component, &mut key, &mut numbers);
        }
        if is_folder {
            key.push('/');
        }
    }
    (key, numbers)
}

fn is_rank_folder(component: &str) -> bool {
    component
        .strip_prefix("rank")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `text` onto `key` with every run of digits replaced by `#` and pushed,
/// read as a number, onto `numbers`.
fn set_digits_aside(text: &str, key: &mut String, numbers: &mut Vec<u64>) {
    let mut digits = String::new();
    let mut flush = |digits: &mut String, key: &mut String| {
        if !digits.is_empty() {
            // Beyond u64, the order among such names does not matter.
            numbers.push(digits.parse::<u64>().unwrap_or(u64::MAX));
            key.push('#');
            digits.clear();
        }
    };
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, key);
            key.push(c);
        }
    }
    flush(&mut digits, key);
}

/// Every series among `profiles` (two or more profiles with the same name
/// but for their numbers), each with its growing stacks.
pub fn device_memory_series(profiles: &[DecodedDeviceProfile]) -> Vec<DeviceMemorySeries> {
    let mut groups: BTreeMap<String, Vec<(Vec<u64>, &DecodedDeviceProfile)>> = BTreeMap::new();
    for p in profiles {
        let (key, numbers) = series_key(&p.profile.input);
        if numbers.is_empty() {
            continue;
        }
        groups.entry(key).or_default().push((numbers, p));
    }
    let mut out = Vec::new();
    for (_, mut members) in groups {
        if members.len() < 2 {
            continue;
        }
        members.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| a.1.profile.input.cmp(&b.1.profile.input))
        });
        let ordered: Vec<&DecodedDeviceProfile> = members.into_iter().map(|(_, p)| p).collect();
        out.push(series_of(&ordered));
    }
    out
}

fn series_of(profiles: &[&DecodedDeviceProfile]) -> DeviceMemorySeries {
    let n = profiles.len();
    // Stack (by its frames) → bytes and counts per profile.
    let mut stacks: HashMap<&[Frame], (Vec<u64>, Vec<u64>)> = HashMap::new();
    for (i, p) in profiles.iter().enumerate() {
        for s in &p.buffer_stacks {
            let entry = stacks
                .entry(&s.frames)
                .or_insert_with(|| (vec![0; n], vec![0; n]));
            if let (Some(b), Some(c)) = (entry.0.get_mut(i), entry.1.get_mut(i)) {
                *b = b.saturating_add(s.bytes);
                *c = c.saturating_add(s.count);
            }
        }
    }
    let mut growing: Vec<GrowingStack> = stacks
        .into_iter()
        .filter(|(_, (bytes, _))| {
            let never_shrinks = bytes.windows(2).all(|w| w[1] >= w[0]);
            never_shrinks && bytes.last() > bytes.first()
        })
        .map(|(frames, (bytes, counts))| GrowingStack {
            frame: user_frame(frames),
            frames: frames.to_vec(),
            growth_bytes: bytes
                .last()
                .copied()
                .unwrap_or(0)
                .saturating_sub(bytes.first().copied().unwrap_or(0)),
            bytes_per_profile: bytes,
            count_per_profile: counts,
        })
        .collect();
    growing.sort_by(|a, b| {
        b.growth_bytes
            .cmp(&a.growth_bytes)
            .then_with(|| a.frames.len().cmp(&b.frames.len()))
    });
    growing.truncate(TOP_GROWING_STACKS);
    DeviceMemorySeries {
        inputs: profiles.iter().map(|p| p.profile.input.clone()).collect(),
        buffer_bytes: profiles.iter().map(|p| p.profile.buffer_bytes).collect(),
        growing_stacks: growing,
    }
}

/// The innermost user frame, or the innermost frame.
fn user_frame(frames: &[Frame]) -> Frame {
    frames
        .iter()
        .find(|f| f.kind == FrameKind::Python)
        .or_else(|| frames.first())
        .cloned()
        .unwrap_or_else(|| Frame {
            function: "(no traceback)".into(),
            ..Default::default()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_set_aside_and_read_as_numbers() {
        assert_eq!(
            series_key("run_7/memory_40.prof"),
            ("run_#/memory_#.prof".to_string(), vec![7, 40])
        );
        assert_eq!(
            series_key("memory.prof"),
            ("memory.prof".to_string(), vec![])
        );
    }

    #[test]
    fn each_rank_folder_is_its_own_series() {
        assert_eq!(
            series_key("run/rank1/memory_0003_step40.prof"),
            ("run/rank1/memory_#_step#.prof".to_string(), vec![3, 40])
        );
        assert_ne!(
            series_key("rank0/memory_0001_step9.prof").0,
            series_key("rank1/memory_0001_step9.prof").0
        );
        // A file named rank<N> is not a folder; `ranked7/` not a rank.
        assert_eq!(series_key("x/rank3").0, "x/rank#");
        assert_eq!(series_key("ranked7/m_1.prof").0, "ranked#/m_#.prof");
    }
}
