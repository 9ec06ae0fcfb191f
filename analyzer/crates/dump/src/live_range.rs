//! Parser for `HloLiveRange::ToString` output: the `*-live-range.txt` dump,
//! and the same section that older compilers append to `-buffer-assignment.txt`.
//!
//! ```text
//! HloLiveRange (max 21):
//!   InstructionSequence:
//!     0:w2.1
//!   BufferLiveRange:
//!     fusion.5{0}:6-17
//!   Live ranges at 14 (peak):
//!     fusion.5{0}: 3932291072 bytes (cumulative: 3932291072 bytes)   (newer)
//!     fusion.5: 16 bytes                                               (older)
//!   Stack trace breakdown for peak usage: ...
//! ```
//! What the compiler computes there (xla/hlo/utils/hlo_live_range.cc): a value
//! is live at time `t` when `start <= t <= end`; the listed bytes are
//! `ShapeUtil::ByteSizeOf(shape, 8)`, the logical (unpadded) size, summed over
//! every memory space. The peak moment itself is found with the size of the
//! defining instruction's whole shape (8 bytes per element of a tuple), which is
//! why it can differ from the moment with the largest sum of listed sizes.

use crate::buffer_assignment::split_index;
use crate::hlo::clip;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveRanges<'a> {
    /// `max N`: the schedule's end time (= number of instructions).
    pub max_time: u64,
    /// Flattened instruction sequence; index = logical time.
    pub instructions: Vec<&'a str>,
    pub buffers: Vec<BufferRange<'a>>,
    /// The `Live ranges at N (peak)` section, when present.
    pub peak: Option<LivePeak<'a>>,
    pub problems: Vec<(u32, String)>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferRange<'a> {
    pub instruction: &'a str,
    /// The shape index, `{}` for the whole output.
    pub index: &'a str,
    pub start: u64,
    pub end: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LivePeak<'a> {
    pub time: u64,
    pub contributors: Vec<PeakContributor<'a>>,
    /// True when the entries carry `(cumulative: N bytes)` and a shape index (newer XLA).
    pub has_cumulative: bool,
}

impl LivePeak<'_> {
    /// The compiler's total at the peak: the last cumulative figure, else the sum.
    pub fn total_bytes(&self) -> u64 {
        match self.contributors.last().and_then(|c| c.cumulative) {
            Some(total) => total,
            None => crate::total_bytes(self.contributors.iter().map(|c| c.bytes)),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeakContributor<'a> {
    pub instruction: &'a str,
    /// The shape index; older XLA prints none (then `{}`).
    pub index: &'a str,
    pub bytes: u64,
    pub cumulative: Option<u64>,
}

/// Parse the first `HloLiveRange` section of a text; `None` when there is none.
pub fn parse(text: &str) -> Option<LiveRanges<'_>> {
    let start = text.find("HloLiveRange (max ")?;
    let first_line = text[..start].matches('\n').count() as u32 + 1;
    let mut out = LiveRanges::default();
    let mut section = "";
    for (i, raw) in text[start..].lines().enumerate() {
        let line_no = first_line + i as u32;
        if let Some(rest) = raw.strip_prefix("HloLiveRange (max ") {
            if i > 0 {
                break; // a second section belongs to another computation
            }
            out.max_time = rest.trim_end_matches("):").parse().unwrap_or(0);
            continue;
        }
        if !raw.starts_with(' ') {
            break; // end of the section
        }
        let line = raw.trim();
        match line {
            "InstructionSequence:" | "BufferLiveRange:" => {
                section = line;
                continue;
            }
            _ => {}
        }
        if let Some(rest) = line.strip_prefix("Live ranges at ") {
            let time = rest.split(' ').next().and_then(|t| t.parse().ok());
            match time {
                Some(time) => {
                    out.peak = Some(LivePeak {
                        time,
                        ..Default::default()
                    })
                }
                None => problem(&mut out, line_no, line),
            }
            section = "peak";
            continue;
        }
        if line.starts_with("Stack trace breakdown") {
            section = "stack";
            continue;
        }
        let ok = match section {
            "InstructionSequence:" => line
                .split_once(':')
                .map(|(_, name)| out.instructions.push(name))
                .is_some(),
            "BufferLiveRange:" => parse_range(line)
                .map(|range| out.buffers.push(range))
                .is_some(),
            "peak" => match (parse_contributor(line), out.peak.as_mut()) {
                (Some(contributor), Some(peak)) => {
                    peak.has_cumulative |= contributor.cumulative.is_some();
                    peak.contributors.push(contributor);
                    true
                }
                _ => false,
            },
            _ => true,
        };
        if !ok {
            problem(&mut out, line_no, line);
        }
    }
    Some(out)
}

fn problem(out: &mut LiveRanges<'_>, line: u32, text: &str) {
    if out.problems.len() < 100 {
        out.problems
            .push((line, format!("unreadable live-range line `{}`", clip(text))));
    }
}

/// `fusion.5{0}:6-17`
fn parse_range(line: &str) -> Option<BufferRange<'_>> {
    let (name_index, range) = line.rsplit_once(':')?;
    let (start, end) = range.split_once('-')?;
    let (instruction, index) = split_index(name_index);
    Some(BufferRange {
        instruction,
        index,
        start: start.parse().ok()?,
        end: end.parse().ok()?,
    })
}

/// `fusion.5{0}: 3932291072 bytes (cumulative: 3932291072 bytes)` or `fusion.5: 16 bytes`
fn parse_contributor(line: &str) -> Option<PeakContributor<'_>> {
    let (name_index, rest) = line.split_once(": ")?;
    let (bytes, rest) = rest.split_once(" bytes")?;
    let cumulative = match rest.trim().strip_prefix("(cumulative: ") {
        Some(c) => Some(c.split(' ').next()?.parse().ok()?),
        None => None,
    };
    let (instruction, index) = split_index(name_index);
    Some(PeakContributor {
        instruction,
        index,
        bytes: bytes.parse().ok()?,
        cumulative,
    })
}
