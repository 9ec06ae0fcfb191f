//! The timeline's precomputed index of one module: every buffer as a band
//! (program-order interval × byte interval), sorted by start so that a frame
//! finds the visible ones by binary search, plus the flags, colours and
//! lookups the view needs. Built once per module; pure data, no DOM.
//!
//! Vertical placement: the compiler's own offsets (`BufferLifetime::offset_bytes`,
//! the address inside the temporary allocation, as XProf's buffer chart
//! draws them) when they are consistent, i.e. no two buffers overlap in
//! both time and address; otherwise (e.g. dumps without buffer assignment)
//! a first-fit packing in program order. The buffers live for the whole
//! program (the heap simulator's indefinite allocations: parameters,
//! outputs, constants), which have no lifetime in `buffers`, are added by
//! [`add_whole_program`] from the module's peak buffers and stacked under
//! everything, grouped (parameters, outputs, constants) and largest first,
//! so that the bands sit under the heap envelope as in XProf's Memory
//! Viewer and a parameter and an output of the same shape line up (pairs).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use oomscope_report::{BufferCategory, BufferLifetime, ModuleReport};

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

/// What [`add_whole_program`] added to a module's buffers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WholeProgram {
    /// Buffers from this index on are live for the whole program.
    pub first: usize,
    /// Per buffer: its allocation is also a program output (a parameter
    /// whose memory the output reuses: donated).
    pub live_out: Vec<bool>,
}

/// Whether a buffer of this category is held for the whole program (an
/// entry parameter or a constant: indefinite in the heap simulator).
fn is_whole_program(category: BufferCategory) -> bool {
    matches!(
        category,
        BufferCategory::Parameter | BufferCategory::Constant
    )
}

/// The whole-program group a category is stacked in, bottom up.
fn whole_group(category: BufferCategory) -> u8 {
    match category {
        BufferCategory::Parameter => 0,
        BufferCategory::Output => 1,
        BufferCategory::Constant => 2,
        _ => 3,
    }
}

/// The positions the x axis runs over: the heap curve's and every lifetime's.
fn position_count(module: &ModuleReport) -> u64 {
    let heap_len = if module.heap_positions.is_empty() {
        module.heap_bytes.len() as u64
    } else {
        module.heap_positions.last().map_or(0, |p| p + 1)
    };
    let last_end = module
        .buffers
        .iter()
        .map(|b| b.end.max(b.start) + 1)
        .max()
        .unwrap_or(0);
    heap_len.max(last_end).max(1)
}

/// Bytes the heap counts at every position without a lifetime in
/// `buffers`: the indefinite allocations less the parameters and constants
/// that have one (a dump's live ranges give them one).
fn base_bytes_of(indefinite_bytes: u64, own: &[BufferLifetime]) -> u64 {
    let with_lifetime: u64 = own
        .iter()
        .filter(|b| {
            matches!(
                b.category,
                BufferCategory::Parameter | BufferCategory::Constant
            )
        })
        .map(|b| b.size_bytes)
        .fold(0u64, u64::saturating_add);
    indefinite_bytes.saturating_sub(with_lifetime)
}

/// Adds to `module.buffers` one buffer per peak buffer live for the whole
/// program (a parameter, output or constant the report lists at the peak
/// without a lifetime: an indefinite allocation, its largest buffer), then
/// the whole-program bytes no listed buffer holds (buffers under 16 KiB,
/// an allocation's bytes beyond its largest buffer), each over every
/// position, stacked from 0 in `offset_bytes`: parameters, outputs,
/// constants, each largest first, an output of a parameter's shape at the
/// parameter's rank in its group. Returns where they start.
pub fn add_whole_program(module: &mut ModuleReport) -> WholeProgram {
    let positions = position_count(module);
    let last = positions - 1;
    // The peak buffers without a lifetime (an HloProto's indefinite
    // allocations), taken before a dump's held buffers leave `buffers`.
    let mut whole: Vec<(BufferLifetime, bool)> = module
        .peak_buffers
        .iter()
        .zip(module.peak_buffer_lifetimes())
        .filter(|(b, lifetime)| {
            lifetime.is_none()
                && matches!(
                    b.category,
                    BufferCategory::Parameter | BufferCategory::Output | BufferCategory::Constant
                )
        })
        .map(|(b, _)| {
            (
                BufferLifetime {
                    id: b.logical_buffer_id.unwrap_or(-1),
                    name: b.name.clone(),
                    shape: b.shape.clone(),
                    size_bytes: b.size_bytes,
                    unpadded_bytes: b.unpadded_bytes,
                    start: 0,
                    end: last,
                    category: b.category,
                    op_name: b.op_name.clone(),
                    source: b.source.clone(),
                    opcode: b.opcode.clone(),
                    offset_bytes: 0,
                },
                b.maybe_live_out,
            )
        })
        .collect();
    // A donated parameter with a lifetime (a dump's): its flag comes from
    // its peak buffer.
    let donated: std::collections::BTreeSet<(i64, String)> = module
        .peak_buffers
        .iter()
        .zip(module.peak_buffer_lifetimes())
        .filter(|(b, _)| b.maybe_live_out)
        .filter_map(|(_, l)| l.map(|l| (l.id, l.name.clone())))
        .collect();
    let is_donated = |b: &BufferLifetime| donated.contains(&(b.id, b.name.clone()));
    // A dump's live ranges give entry parameters, constants and the values
    // the program returns a lifetime, yet the heap holds their memory for
    // the whole program (the heap simulator's indefinite allocations): they
    // join the whole-program group as an HloProto's do, grouped, largest
    // first and paired with outputs, instead of being packed among the
    // temporaries. A returned value is an output still live at the end.
    let held = |b: &BufferLifetime| {
        is_whole_program(b.category) || (b.category == BufferCategory::Output && b.end >= last)
    };
    let (held_buffers, own): (Vec<BufferLifetime>, Vec<BufferLifetime>) =
        std::mem::take(&mut module.buffers)
            .into_iter()
            .partition(held);
    module.buffers = own;
    whole.extend(held_buffers.into_iter().map(|b| {
        let out = is_donated(&b);
        (
            BufferLifetime {
                start: 0,
                end: last,
                offset_bytes: 0,
                ..b
            },
            out,
        )
    }));
    let base = base_bytes_of(module.indefinite_bytes, &module.buffers);
    let first = module.buffers.len();
    // Stable: equal sizes keep the report's (allocation) order.
    crate::sort::sort_by_key(&mut whole, |(b, _)| {
        (whole_group(b.category), Reverse(b.size_bytes))
    });
    // Outputs of a parameter's shape take their parameter's rank.
    let partners = pair_by_shape(&whole.iter().map(|(b, o)| (b, *o)).collect::<Vec<_>>());
    let outputs: Vec<usize> = (0..whole.len())
        .filter(|&i| whole[i].0.category == BufferCategory::Output)
        .collect();
    if let Some(&first_output) = outputs.first() {
        let mut ordered: Vec<usize> = (0..whole.len())
            .filter(|&i| whole[i].0.category == BufferCategory::Parameter)
            .filter_map(|p| partners[p])
            .collect();
        ordered.extend(outputs.iter().copied().filter(|o| partners[*o].is_none()));
        let mut reordered: Vec<(BufferLifetime, bool)> = Vec::with_capacity(whole.len());
        reordered.extend(whole[..first_output].iter().cloned());
        reordered.extend(ordered.iter().map(|&i| whole[i].clone()));
        reordered.extend(whole[first_output + outputs.len()..].iter().cloned());
        whole = reordered;
    }
    let mut offset = 0u64;
    for (b, _) in &mut whole {
        b.offset_bytes = offset;
        offset = offset.saturating_add(b.size_bytes);
    }
    let mut live_out: Vec<bool> = module.buffers.iter().map(is_donated).collect();
    for (b, out) in whole {
        module.buffers.push(b);
        live_out.push(out);
    }
    if base > offset {
        module.buffers.push(BufferLifetime {
            id: -1,
            name: "other whole-program bytes".into(),
            shape: String::new(),
            size_bytes: base - offset,
            unpadded_bytes: base - offset,
            start: 0,
            end: positions - 1,
            category: BufferCategory::Small,
            op_name: String::new(),
            source: "buffers under 16 KiB, and allocations' bytes beyond their largest buffer"
                .into(),
            opcode: String::new(),
            offset_bytes: offset,
        });
        live_out.push(false);
    }
    WholeProgram { first, live_out }
}

/// Pairs each parameter that is not also an output with an output of the
/// same shape and size (greedily, in order): an output that could reuse
/// the parameter's memory if it were donated. Per buffer, its partner.
pub fn pair_by_shape(buffers: &[(&BufferLifetime, bool)]) -> Vec<Option<usize>> {
    let mut partner = vec![None; buffers.len()];
    let mut free: BTreeMap<(&str, u64), Vec<usize>> = BTreeMap::new();
    for (i, (b, _)) in buffers.iter().enumerate().rev() {
        if b.category == BufferCategory::Output && !b.shape.is_empty() {
            free.entry((b.shape.as_str(), b.size_bytes))
                .or_default()
                .push(i);
        }
    }
    for (i, (b, live_out)) in buffers.iter().enumerate() {
        if b.category != BufferCategory::Parameter || *live_out {
            continue;
        }
        if let Some(o) = free
            .get_mut(&(b.shape.as_str(), b.size_bytes))
            .and_then(Vec::pop)
        {
            partner[i] = Some(o);
            partner[o] = Some(i);
        }
    }
    partner
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
    /// Highest band top or heap value (bytes).
    pub top_bytes: u64,
    /// Op labels, by total bytes, largest first.
    pub ops: Vec<String>,
    /// Per buffer (indexed like `ModuleReport::buffers`): its band, if drawn.
    pub band_of: Vec<Option<u32>>,
    pub flags: Vec<Option<Flag>>,
    /// Buffers live at the peak position, largest first.
    pub peak_live: Vec<u32>,
    /// What is live for the whole program (see [`add_whole_program`]).
    pub whole: WholeProgram,
    /// Per buffer: the output of its shape beside a parameter, or the
    /// parameter beside an output, both live at the peak (the donation case).
    pub partner: Vec<Option<u32>>,
    /// Per buffer: its pair's number (1, 2, …), in stacking order.
    pub pair_number: Vec<Option<u32>>,
}

impl TimelineIndex {
    /// The index of a module's own buffers.
    #[cfg(test)]
    pub fn new(module: &ModuleReport) -> Self {
        Self::with_whole_program(
            module,
            WholeProgram {
                first: module.buffers.len(),
                live_out: vec![false; module.buffers.len()],
            },
        )
    }

    /// The index of a module whose buffers from `whole.first` on were
    /// added by [`add_whole_program`] (placed at their own offsets, from 0).
    pub fn with_whole_program(module: &ModuleReport, whole: WholeProgram) -> Self {
        let buffers = &module.buffers;
        let first_whole = whole.first.min(buffers.len());
        let positions = position_count(module);

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
        let own = &buffers[..first_whole];
        let own_spans = &spans[..first_whole];
        let stacked: u64 = buffers[first_whole..]
            .iter()
            .map(|b| b.offset_bytes.saturating_add(b.size_bytes))
            .max()
            .unwrap_or(0);
        // Temporaries sit on what the heap counts at every position.
        let base_bytes = base_bytes_of(module.indefinite_bytes, own).max(stacked);

        let (mut offsets, placement): (Vec<u64>, _) = if offsets_consistent(own, own_spans) {
            (
                own.iter().map(|b| b.offset_bytes).collect(),
                Placement::Compiler,
            )
        } else {
            (first_fit(own, own_spans), Placement::Packed)
        };
        offsets.extend(buffers[first_whole..].iter().map(|b| b.offset_bytes));

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
        crate::sort::sort_by(&mut ops, |a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
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
                let y0 = if i < first_whole {
                    base_bytes.saturating_add(offsets[i])
                } else {
                    offsets[i]
                };
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
        crate::sort::sort_by_key(&mut bands, |b| (b.start, Reverse(b.y1 - b.y0)));

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
        crate::sort::sort_by(&mut peak_live, |a, b| {
            buffers[*b as usize]
                .size_bytes
                .cmp(&buffers[*a as usize].size_bytes)
        });

        let mut flags = flags(module, &spans, positions);
        // Whole-program buffers are what they are (the table pairs them).
        for f in flags.iter_mut().skip(first_whole) {
            *f = None;
        }
        let live_out = |i: usize| whole.live_out.get(i).copied().unwrap_or(false);
        let live: Vec<(&BufferLifetime, bool)> = peak_live
            .iter()
            .map(|&i| (&buffers[i as usize], live_out(i as usize)))
            .collect();
        let mut partner = vec![None; buffers.len()];
        for (k, p) in pair_by_shape(&live).into_iter().enumerate() {
            if let Some(p) = p {
                partner[peak_live[k] as usize] = Some(peak_live[p]);
            }
        }
        // Pairs are numbered bottom up, by where their parameter is drawn.
        let mut pair_number = vec![None; buffers.len()];
        let mut params: Vec<u32> = (0..buffers.len() as u32)
            .filter(|&i| {
                buffers[i as usize].category == BufferCategory::Parameter
                    && partner[i as usize].is_some()
            })
            .collect();
        crate::sort::sort_by_key(&mut params, |&i| (offsets[i as usize], i));
        for (n, &p) in params.iter().enumerate() {
            let n = Some(n as u32 + 1);
            pair_number[p as usize] = n;
            if let Some(o) = partner[p as usize] {
                pair_number[o as usize] = n;
            }
        }
        TimelineIndex {
            bands,
            long_bands,
            long_span,
            positions,
            placement,
            top_bytes,
            ops: ops.into_iter().map(|(name, _)| name).collect(),
            band_of,
            flags,
            peak_live,
            whole,
            partner,
            pair_number,
        }
    }

    /// Whether buffer `i` is live for the whole program.
    pub fn is_whole_program(&self, i: u32) -> bool {
        i as usize >= self.whole.first
    }

    /// Whether buffer `i` is a parameter whose memory an output reuses.
    pub fn donated(&self, i: u32) -> bool {
        self.whole
            .live_out
            .get(i as usize)
            .copied()
            .unwrap_or(false)
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
    crate::sort::sort_by_key(&mut order, |&i| spans[i].0);
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
    crate::sort::sort_by_key(&mut order, |&i| {
        (spans[i].0, Reverse(buffers[i].size_bytes))
    });
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

    fn peak(
        name: &str,
        shape: &str,
        size: u64,
        category: BufferCategory,
    ) -> oomscope_report::PeakBuffer {
        oomscope_report::PeakBuffer {
            name: name.into(),
            shape: shape.into(),
            size_bytes: size,
            unpadded_bytes: size,
            category,
            logical_buffer_id: Some(size as i64 + name.len() as i64),
            ..Default::default()
        }
    }

    #[test]
    fn whole_program_buffers_are_stacked_grouped_and_paired() {
        use BufferCategory::*;
        // A train step as the heap simulator reports it: the temporaries
        // have lifetimes, the parameters and outputs do not.
        let mut m = module(vec![buffer("tmp", 2, 5, 10, 0)], 10);
        m.peak_position = 3;
        m.peak_buffers = vec![
            peak("w0", "f32[4,4]", 64, Parameter),
            peak("x", "f32[2,4]", 100, Parameter),
            peak("w1", "f32[4,4]", 64, Parameter),
            peak("donated", "f32[8]", 32, Parameter),
            peak("out1", "f32[4,4]", 64, Output),
            peak("out0", "f32[4,4]", 64, Output),
            peak("loss", "f32[]", 20, Output),
            peak("tmp", "f32[2]", 10, Temporary),
        ];
        m.peak_buffers[3].maybe_live_out = true;
        m.peak_buffers[7].logical_buffer_id = Some(0);
        m.indefinite_bytes = 64 * 4 + 100 + 32 + 20 + 8;
        let whole = add_whole_program(&mut m);
        assert_eq!(whole.first, 1);
        let names: Vec<&str> = m.buffers[1..].iter().map(|b| b.name.as_str()).collect();
        // Parameters largest first, then outputs in their parameters' order,
        // then the whole-program bytes no buffer lists (8 bytes).
        assert_eq!(
            names,
            [
                "x",
                "w0",
                "w1",
                "donated",
                "out1",
                "out0",
                "loss",
                "other whole-program bytes"
            ]
        );
        let offsets: Vec<u64> = m.buffers[1..].iter().map(|b| b.offset_bytes).collect();
        assert_eq!(offsets, [0, 100, 164, 228, 260, 324, 388, 408]);
        assert!(m.buffers[1..].iter().all(|b| b.start == 0 && b.end == 9));
        let index = TimelineIndex::with_whole_program(&m, whole);
        // Temporaries sit on the whole-program bytes, as the heap counts them.
        let tmp = index.bands[index.band_of[0].unwrap() as usize];
        assert_eq!(tmp.y0, m.indefinite_bytes);
        // Every buffer is live at the peak, and each pair names the other.
        assert_eq!(index.peak_live.len(), 9);
        let at = |name: &str| m.buffers.iter().position(|b| b.name == name).unwrap() as u32;
        assert_eq!(index.partner[at("w0") as usize], Some(at("out1")));
        assert_eq!(index.partner[at("out0") as usize], Some(at("w1")));
        assert_eq!(index.pair_number[at("w0") as usize], Some(1));
        assert_eq!(index.pair_number[at("out0") as usize], Some(2));
        assert_eq!(index.partner[at("donated") as usize], None);
        assert!(index.donated(at("donated")));
        assert!(index.is_whole_program(at("loss")) && !index.is_whole_program(0));
        assert!(index.flags.iter().all(Option::is_none));
    }

    #[test]
    fn a_dumps_parameters_with_lifetimes_join_the_whole_program_group() {
        use BufferCategory::*;
        // Dump text: live ranges give the parameters lifetimes too.
        let lifetime = |name: &str, id: i64, start, end, size, category| BufferLifetime {
            id,
            category,
            ..buffer(name, start, end, size, 0)
        };
        let mut m = module(
            vec![
                lifetime("w0", 1, 0, 9, 64, Parameter),
                lifetime("tmp", 2, 2, 5, 10, Temporary),
                lifetime("x", 3, 0, 9, 100, Parameter),
                // The updated weight the program returns (live at its end),
                // and an earlier value of the same output allocation.
                lifetime("new_w0", 4, 6, 9, 64, Output),
                lifetime("early", 5, 1, 3, 8, Output),
            ],
            10,
        );
        m.buffers[3].shape = "f32[4,4]".into();
        let mut w0 = peak("w0", "f32[4,4]", 64, Parameter);
        w0.logical_buffer_id = Some(1);
        let mut x = peak("x", "f32[2,4]", 100, Parameter);
        x.logical_buffer_id = Some(3);
        let mut tmp = peak("tmp", "f32[2]", 10, Temporary);
        tmp.logical_buffer_id = Some(2);
        m.peak_buffers = vec![w0, tmp, x];
        m.indefinite_bytes = 228;
        let whole = add_whole_program(&mut m);
        // The temporary and the earlier output value keep their lifetimes;
        // the parameters are stacked from 0, largest first, then the
        // returned weight, over every position.
        assert_eq!(whole.first, 2);
        let names: Vec<&str> = m.buffers.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["tmp", "early", "x", "w0", "new_w0"]);
        let offsets: Vec<u64> = m.buffers[2..].iter().map(|b| b.offset_bytes).collect();
        assert_eq!(offsets, [0, 100, 164]);
        assert!(m.buffers[2..].iter().all(|b| b.start == 0 && b.end == 9));
        let index = TimelineIndex::with_whole_program(&m, whole);
        assert!((2..5).all(|i| index.is_whole_program(i)) && !index.is_whole_program(1));
        // The buffers with lifetimes sit on the whole-program bytes.
        let lowest = (0..2)
            .map(|i| index.bands[index.band_of[i].unwrap() as usize].y0)
            .min();
        assert_eq!(lowest, Some(228));
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
