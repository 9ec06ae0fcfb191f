//! The timeline's precomputed index of one module: every buffer as a band
//! (program-order interval × byte interval), sorted by start so that a frame
//! finds the visible ones by binary search, plus the flags, colours and
//! lookups the view needs. Built once per module; pure data, no DOM.
//!
//! Vertical placement: the compiler's own offsets (`BufferLifetime::offset_bytes`,
//! the address inside the temporary allocation, as XProf's buffer chart
//! draws them) when they are consistent, i.e. no two buffers overlap in
//! both time and address; otherwise (e.g. dumps without buffer assignment)
//! a first-fit packing in program order. Bytes that are live for the whole
//! program but have no buffer of their own (the heap simulator's
//! indefinite allocations) form a base band under everything, so that the
//! bands sit under the heap envelope as in XProf's Memory Viewer.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use oomscope_report::{BufferCategory, ModuleReport};

/// A buffer's band: positions `[start, end)` and bytes `[y0, y1)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    pub start: u64,
    pub end: u64,
    pub y0: u64,
    pub y1: u64,
    /// Index into `ModuleReport::buffers`.
    pub buffer: u32,
    pub category: u8,
    /// Index into [`TimelineIndex::ops`].
    pub op: u16,
}

/// How the bands were placed vertically.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The compiler's offsets.
    Compiler,
    /// First-fit packing in program order (the input gave no usable offsets).
    Packed,
}

/// Why a buffer is worth a look for memory held too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// A program output, or live until the program ends: its memory is
    /// never reused inside the step.
    HeldToEnd,
    /// A gradient-like buffer live for more than half the program across
    /// the peak.
    LongLived,
}

impl Flag {
    pub fn label(self) -> &'static str {
        match self {
            Flag::HeldToEnd => "held to the end",
            Flag::LongLived => "long-lived",
        }
    }
}

pub const CATEGORIES: [BufferCategory; 6] = [
    BufferCategory::Parameter,
    BufferCategory::Output,
    BufferCategory::Temporary,
    BufferCategory::Constant,
    BufferCategory::ThreadLocal,
    BufferCategory::Small,
];

pub fn category_index(category: BufferCategory) -> u8 {
    CATEGORIES.iter().position(|c| *c == category).unwrap_or(2) as u8
}

pub fn category_name(category: BufferCategory) -> &'static str {
    match category {
        BufferCategory::Parameter => "parameter",
        BufferCategory::Output => "output",
        BufferCategory::ThreadLocal => "thread-local",
        BufferCategory::Constant => "constant",
        BufferCategory::Temporary => "temporary",
        BufferCategory::Small => "small (merged)",
    }
}

/// The short op label a buffer is coloured by: the last segment of its
/// framework op name (`jit(f)/jvp()/dot_general` → `dot_general`), else the
/// HLO opcode.
pub fn op_label(op_name: &str, opcode: &str) -> String {
    let last = op_name.rsplit('/').next().unwrap_or("").trim();
    if !last.is_empty() {
        last.to_string()
    } else if !opcode.is_empty() {
        opcode.to_string()
    } else {
        "(unknown op)".to_string()
    }
}

pub struct TimelineIndex {
    /// Sorted by `start`.
    pub bands: Vec<Band>,
    /// Indices into `bands` of the long ones (longer than `long_span`),
    /// which the short-band binary search does not find.
    pub long_bands: Vec<u32>,
    pub long_span: u64,
    /// Position count: the x axis runs over `[0, positions)`.
    pub positions: u64,
    pub placement: Placement,
    /// Bytes live for the whole program without a band of their own.
    pub base_bytes: u64,
    /// Highest band top or heap value (bytes).
    pub top_bytes: u64,
    /// Op labels, by total bytes, largest first.
    pub ops: Vec<String>,
    /// Per buffer (indexed like `ModuleReport::buffers`): its band, if drawn.
    pub band_of: Vec<Option<u32>>,
    pub flags: Vec<Option<Flag>>,
    /// Buffers live at the peak position, largest first.
    pub peak_live: Vec<u32>,
}

impl TimelineIndex {
    pub fn new(module: &ModuleReport) -> Self {
        let buffers = &module.buffers;
        let heap_len = if module.heap_positions.is_empty() {
            module.heap_bytes.len() as u64
        } else {
            module.heap_positions.last().map_or(0, |p| p + 1)
        };
        let last_end = buffers
            .iter()
            .map(|b| b.end.max(b.start) + 1)
            .max()
            .unwrap_or(0);
        let positions = heap_len.max(last_end).max(1);

        // `[start, end]` is inclusive; bands are half-open `[start, end + 1)`.
        let spans: Vec<(u64, u64)> = buffers
            .iter()
            .map(|b| {
                (
                    b.start.min(positions - 1),
                    (b.end.max(b.start) + 1).min(positions),
                )
            })
            .collect();
        let whole_program_bytes: u64 = buffers
            .iter()
            .filter(|b| {
                matches!(
                    b.category,
                    BufferCategory::Parameter | BufferCategory::Constant
                )
            })
            .map(|b| b.size_bytes)
            .fold(0u64, u64::saturating_add);
        let base_bytes = module.indefinite_bytes.saturating_sub(whole_program_bytes);

        let (offsets, placement) = if offsets_consistent(buffers, &spans) {
            (
                buffers.iter().map(|b| b.offset_bytes).collect(),
                Placement::Compiler,
            )
        } else {
            (first_fit(buffers, &spans), Placement::Packed)
        };

        let mut op_bytes: BTreeMap<String, u64> = BTreeMap::new();
        let labels: Vec<String> = buffers
            .iter()
            .map(|b| op_label(&b.op_name, &b.opcode))
            .collect();
        for (label, b) in labels.iter().zip(buffers) {
            let entry = op_bytes.entry(label.clone()).or_default();
            *entry = entry.saturating_add(b.size_bytes);
        }
        let mut ops: Vec<(String, u64)> = op_bytes.into_iter().collect();
        ops.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let op_rank: BTreeMap<&str, u16> = ops
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (name.as_str(), i.min(u16::MAX as usize) as u16))
            .collect();

        let mut bands: Vec<Band> = buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.size_bytes > 0)
            .map(|(i, b)| {
                let y0 = base_bytes.saturating_add(offsets[i]);
                Band {
                    start: spans[i].0,
                    end: spans[i].1,
                    y0,
                    y1: y0.saturating_add(b.size_bytes),
                    buffer: i as u32,
                    category: category_index(b.category),
                    op: op_rank.get(labels[i].as_str()).copied().unwrap_or(0),
                }
            })
            .collect();
        bands.sort_by_key(|b| (b.start, Reverse(b.y1 - b.y0)));

        let long_span = (positions / 64).max(1);
        let long_bands = bands
            .iter()
            .enumerate()
            .filter(|(_, b)| b.end - b.start > long_span)
            .map(|(i, _)| i as u32)
            .collect();
        let mut band_of = vec![None; buffers.len()];
        for (i, band) in bands.iter().enumerate() {
            band_of[band.buffer as usize] = Some(i as u32);
        }
        let heap_top = module.heap_bytes.iter().copied().max().unwrap_or(0);
        let top_bytes = bands
            .iter()
            .map(|b| b.y1)
            .max()
            .unwrap_or(0)
            .max(heap_top)
            .max(base_bytes);

        let peak = module.peak_position;
        let mut peak_live: Vec<u32> = (0..buffers.len() as u32)
            .filter(|&i| {
                let (s, e) = spans[i as usize];
                s <= peak && peak < e
            })
            .collect();
        peak_live.sort_by(|a, b| {
            buffers[*b as usize]
                .size_bytes
                .cmp(&buffers[*a as usize].size_bytes)
        });

        let flags = flags(module, &spans, positions);
        TimelineIndex {
            bands,
            long_bands,
            long_span,
            positions,
            placement,
            base_bytes,
            top_bytes,
            ops: ops.into_iter().map(|(name, _)| name).collect(),
            band_of,
            flags,
            peak_live,
        }
    }

    /// Calls `visit` with every band that overlaps positions `[x0, x1)`.
    pub fn for_each_visible(&self, x0: f64, x1: f64, mut visit: impl FnMut(&Band)) {
        let from = (x0 - self.long_span as f64).floor().max(0.0) as u64;
        let first = self.bands.partition_point(|b| b.start < from);
        for band in &self.bands[first..] {
            if band.start as f64 >= x1 {
                break;
            }
            if band.end - band.start <= self.long_span && band.end as f64 > x0 {
                visit(band);
            }
        }
        for &i in &self.long_bands {
            let band = &self.bands[i as usize];
            if (band.start as f64) < x1 && band.end as f64 > x0 {
                visit(band);
            }
        }
    }

    /// The band under `(position, bytes)`; when none contains it, the
    /// nearest one within `slack_x` positions and `slack_y` bytes (thin
    /// bands are hard to hit exactly).
    pub fn hit(&self, position: f64, bytes: f64, slack_x: f64, slack_y: f64) -> Option<Band> {
        let mut best: Option<(f64, Band)> = None;
        self.for_each_visible(
            position - slack_x,
            position + slack_x + f64::MIN_POSITIVE,
            |band| {
                let dx = distance(position, band.start as f64, band.end as f64);
                let dy = distance(bytes, band.y0 as f64, band.y1 as f64);
                if dx > slack_x || dy > slack_y {
                    return;
                }
                // Containment first, then the nearest, then the smallest.
                let score =
                    dx / slack_x.max(f64::MIN_POSITIVE) + dy / slack_y.max(f64::MIN_POSITIVE);
                let better = match &best {
                    None => true,
                    Some((s, b)) => score < *s || (score == *s && band.y1 - band.y0 < b.y1 - b.y0),
                };
                if better {
                    best = Some((score, *band));
                }
            },
        );
        best.map(|(_, band)| band)
    }
}

fn distance(v: f64, lo: f64, hi: f64) -> f64 {
    if v < lo {
        lo - v
    } else if v >= hi {
        v - hi
    } else {
        0.0
    }
}

/// True when the buffers carry offsets (not all zero) and no two overlap in
/// both program order and address.
fn offsets_consistent(buffers: &[oomscope_report::BufferLifetime], spans: &[(u64, u64)]) -> bool {
    if buffers.iter().all(|b| b.offset_bytes == 0) && buffers.len() > 1 {
        return false;
    }
    let mut order: Vec<usize> = (0..buffers.len())
        .filter(|&i| buffers[i].size_bytes > 0)
        .collect();
    order.sort_by_key(|&i| spans[i].0);
    // Live buffers by address: offset → end of address range.
    let mut live: BTreeMap<u64, u64> = BTreeMap::new();
    let mut expiry: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new(); // (end position, offset)
    for i in order {
        let (start, end) = spans[i];
        while let Some(Reverse((e, offset))) = expiry.peek().copied() {
            if e > start {
                break;
            }
            expiry.pop();
            live.remove(&offset);
        }
        let lo = buffers[i].offset_bytes;
        let hi = lo.saturating_add(buffers[i].size_bytes);
        if live
            .range(..=lo)
            .next_back()
            .is_some_and(|(_, &prev_hi)| prev_hi > lo)
        {
            return false;
        }
        if live
            .range(lo..)
            .next()
            .is_some_and(|(&next_lo, _)| next_lo < hi)
        {
            return false;
        }
        live.insert(lo, hi);
        expiry.push(Reverse((end, lo)));
    }
    true
}

/// First-fit packing: in program order (larger first at equal starts), each
/// buffer takes the lowest address free for its whole lifetime among the
/// buffers live when it starts.
fn first_fit(buffers: &[oomscope_report::BufferLifetime], spans: &[(u64, u64)]) -> Vec<u64> {
    let mut offsets = vec![0u64; buffers.len()];
    let mut order: Vec<usize> = (0..buffers.len()).collect();
    order.sort_by_key(|&i| (spans[i].0, Reverse(buffers[i].size_bytes)));
    let mut live: BTreeMap<(u64, usize), u64> = BTreeMap::new(); // (offset, buffer) → end address
    let mut expiry: BinaryHeap<Reverse<(u64, u64, usize)>> = BinaryHeap::new();
    for i in order {
        let (start, end) = spans[i];
        while let Some(Reverse((e, offset, j))) = expiry.peek().copied() {
            if e > start {
                break;
            }
            expiry.pop();
            live.remove(&(offset, j));
        }
        let size = buffers[i].size_bytes;
        let mut cursor = 0u64;
        for (&(lo, _), &hi) in &live {
            if lo >= cursor && lo - cursor >= size {
                break;
            }
            cursor = cursor.max(hi);
        }
        offsets[i] = cursor;
        live.insert((cursor, i), cursor.saturating_add(size));
        expiry.push(Reverse((end, cursor, i)));
    }
    offsets
}

/// Flags buffers that hold memory for long: outputs and buffers live to the
/// program's end (the in-place-gradient signature: their memory is never
/// reused after their last use), and gradient-like buffers live for more
/// than half the program across the peak. Parameters and constants are live
/// throughout by nature, and activations kept for the backward pass are
/// expected, so neither is flagged; nor are buffers under 1% of the peak.
fn flags(module: &ModuleReport, spans: &[(u64, u64)], positions: u64) -> Vec<Option<Flag>> {
    let threshold = module.peak_bytes / 100;
    let peak = module.peak_position;
    module
        .buffers
        .iter()
        .zip(spans)
        .map(|(b, &(start, end))| {
            if matches!(
                b.category,
                BufferCategory::Parameter | BufferCategory::Constant
            ) || b.size_bytes < threshold.max(1)
            {
                return None;
            }
            let held_to_end =
                b.category == BufferCategory::Output || (end >= positions && start > 0);
            let across_peak = start <= peak && peak < end;
            if held_to_end && start <= peak {
                Some(Flag::HeldToEnd)
            } else if across_peak
                && (end - start) * 2 > positions
                && looks_like_gradient(&b.op_name, &b.name)
            {
                Some(Flag::LongLived)
            } else {
                None
            }
        })
        .collect()
}

/// Whether a buffer looks like a gradient (by its framework op name).
pub fn looks_like_gradient(op_name: &str, name: &str) -> bool {
    let op = op_name.to_ascii_lowercase();
    op.contains("transpose(jvp")
        || op.contains("grad")
        || op.contains("backward")
        || name.to_ascii_lowercase().contains("grad")
}

/// Case-insensitive match of every whitespace-separated term of `query`
/// against a buffer's name, shape, op name and opcode.
pub fn matches(buffer: &oomscope_report::BufferLifetime, query: &str) -> bool {
    let haystack = format!(
        "{} {} {} {}",
        buffer.name, buffer.shape, buffer.op_name, buffer.opcode
    )
    .to_lowercase();
    query
        .split_whitespace()
        .all(|term| haystack.contains(&term.to_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomscope_report::BufferLifetime;

    fn buffer(name: &str, start: u64, end: u64, size: u64, offset: u64) -> BufferLifetime {
        BufferLifetime {
            name: name.into(),
            start,
            end,
            size_bytes: size,
            unpadded_bytes: size,
            offset_bytes: offset,
            ..Default::default()
        }
    }

    fn module(buffers: Vec<BufferLifetime>, positions: usize) -> ModuleReport {
        ModuleReport {
            heap_bytes: vec![0; positions],
            buffers,
            ..Default::default()
        }
    }

    #[test]
    fn compiler_offsets_are_kept_when_consistent() {
        let m = module(
            vec![
                buffer("a", 0, 5, 10, 0),
                buffer("b", 2, 8, 10, 10),
                buffer("c", 6, 9, 10, 0),
            ],
            10,
        );
        let index = TimelineIndex::new(&m);
        assert_eq!(index.placement, Placement::Compiler);
        let c = index.bands[index.band_of[2].unwrap() as usize];
        assert_eq!((c.y0, c.y1), (0, 10));
    }

    #[test]
    fn overlapping_offsets_fall_back_to_first_fit() {
        let m = module(
            vec![
                buffer("a", 0, 5, 10, 4),
                buffer("b", 2, 8, 10, 8),
                buffer("c", 6, 9, 5, 0),
            ],
            10,
        );
        let index = TimelineIndex::new(&m);
        assert_eq!(index.placement, Placement::Packed);
        let y = |i: usize| index.bands[index.band_of[i].unwrap() as usize].y0;
        // a at 0, b above it, c reuses a's space once a ended.
        assert_eq!((y(0), y(1), y(2)), (0, 10, 0));
    }

    #[test]
    fn visible_bands_and_hits_include_long_and_short_ones() {
        let mut buffers: Vec<BufferLifetime> = (0..1000)
            .map(|i| buffer("t", i, i + 2, 1, 1 + (i % 3)))
            .collect();
        buffers.push(buffer("long", 0, 1000, 100, 10));
        let m = module(buffers, 1001);
        let index = TimelineIndex::new(&m);
        let mut seen = Vec::new();
        index.for_each_visible(500.0, 501.0, |b| seen.push(b.buffer));
        seen.sort_unstable();
        assert_eq!(seen, vec![498, 499, 500, 1000]);
        assert_eq!(
            index.hit(700.5, 50.0, 0.5, 1.0).map(|b| b.buffer),
            Some(1000)
        );
        assert_eq!(
            index
                .hit(700.5, 2.5, 0.0, 0.0)
                .map(|b| m.buffers[b.buffer as usize].start),
            Some(700)
        );
        assert_eq!(index.hit(700.5, 5000.0, 1.0, 1.0), None);
    }

    #[test]
    fn outputs_held_to_the_end_are_flagged() {
        let mut out = buffer("grad", 3, 9, 50, 0);
        out.category = BufferCategory::Output;
        let mut m = module(
            vec![
                out,
                buffer("tmp", 1, 2, 50, 50),
                buffer("param", 0, 9, 50, 100),
            ],
            10,
        );
        m.buffers[2].category = BufferCategory::Parameter;
        m.peak_bytes = 100;
        m.peak_position = 4;
        let index = TimelineIndex::new(&m);
        assert_eq!(index.flags, vec![Some(Flag::HeldToEnd), None, None]);
        assert_eq!(index.peak_live, vec![0, 2]);
    }

    #[test]
    fn search_matches_every_term_anywhere() {
        let mut b = buffer("fusion.578", 0, 1, 1, 0);
        b.shape = "f32[8,1024,32000]".into();
        b.op_name = "jit(step)/dot_general".into();
        assert!(matches(&b, "fusion 32000"));
        assert!(matches(&b, "DOT_general"));
        assert!(!matches(&b, "fusion copy"));
    }
}
