//! Find and parse every OOM error in a text log (TPU, XLA GPU, PyTorch CUDA,
//! PyTorch/XLA).
//!
//! The text can be anything a user has: a terminal capture, a multi-GB log, an
//! issue comment. One pass of a multi-keyword search (Aho-Corasick) finds the
//! few places where an OOM message can start; only there are regexes run and
//! the following lines read as the message's report (TPU compiler listing,
//! BFC allocator dump, XLA "Peak buffers"). Occurrences of the same error are
//! then merged as they are found (`event::Merger`).
//!
//! Time is linear in the input: every keyword is looked at once with bounded
//! context, a line is read by at most one block parser, and keywords inside a
//! consumed block are skipped.
//!
//! What the fields mean, beyond the names in [`OomEvent`]:
//! - TPU compile: `used`/`limit`/`exceeded` from "Used X of Y"; `reserved`,
//!   `program`, `arguments` from "Total hbm usage" (`extra.total_usage_bytes`);
//!   "Program hbm requirement" gives `program` and `extra` `program_reserved`,
//!   `global`, `scoped`, `overlays`; `hlo_temp*` and `fragmentation` from its
//!   "HLO temp" line. `top_allocations` is "Largest program allocations" (or,
//!   without one, the rows of the "Memory usage report" for the failing space);
//!   `top_arguments` is "Largest program arguments and outputs".
//!   `extra.memory_report_total_bytes` is the report's exact "Total bytes",
//!   which is close to but not the same quantity as "Used" (kept apart).
//!   "Requires X, has Y available" gives `used`/`limit`; "Allocation (size=N)
//!   would exceed memory (size=M)" gives `requested`/`limit`.
//!   A report with no headline (`Total hbm usage >= X:` first, as posted or
//!   dumped by PyTorch/XLA) is an event of its own, with
//!   `extra.total_usage_bytes` and no `used`/`limit`; the compiler's INFO
//!   report after a compile that fits (glog `I` header) is skipped. A report
//!   pasted from its middle (its `reserved`/`program`/`arguments` lines, or
//!   `Program hbm requirement X:` first) is an event too, with every number
//!   it still holds.
//! - TPU runtime: `requested`, `free`, `reserved`, `extra.reservable_bytes`;
//!   the short form (`Error loading program '<name>': ... That was not
//!   possible.`) has only `requested`. PyTorch/XLA's runtime breakdown gives
//!   `total_capacity` (HBM capacity), `allocated`, exact `requested`
//!   (program requirement), `exceeded` (minus "Available after request"),
//!   `extra.top_of_memory_reserved_bytes`, `extra.largest_free_chunk_bytes`,
//!   `arguments`, `output` and the program requirement block.
//! - XLA GPU: `requested`; BFC `Stats:` give `limit` (Limit), `used` (InUse),
//!   `reserved` and `extra` counters; chunk lines give `extra.in_use_chunks*`,
//!   `free_chunks*`, `largest_free_chunk_bytes`; buffer-assignment stats give
//!   `arguments`, `output`, `hlo_temp`, `fragmentation`; "Peak buffers" are
//!   `top_allocations`. TensorFlow's "OOM when allocating tensor with
//!   shape[..] and type T" (kind `xla_gpu`, same BFC allocator) gives
//!   `requested` = elements × element size, and the tensor as allocation.
//! - PyTorch: `requested`, `total_capacity`, `free`, `allocated`; `reserved`
//!   as printed (`cached` ≤ 1.3, `reserved in total` 1.4–2.0) or allocated +
//!   `reserved_unallocated` (≥ 2.1); `private_pools`; `limit` = the `allowed`
//!   fraction when set, else the total capacity (once the text reaches the
//!   place where `allowed` would be printed). Intel's extension prints the
//!   old form without a free clause (free is then not expected). MPS
//!   (`memory_space` `mps`): `reserved` = "MPS allocated" (the allocator's
//!   heaps), `extra.other_allocations_bytes`, `limit` = "max allowed" (the
//!   high watermark), `requested`.
//! - TPU compile failures of TF ≤ 2.2 that name only their memory space (`Ran
//!   out of memory in memory space vmem. Please file a bug against XLA.`) are
//!   events with no number and nothing missing (that form prints none).
//! - `missing`: numbers the message's form prints when complete but that the
//!   text lacks (cut inside the message); never filled by guessing.
//!
//! Before the scan the text is cleaned (BOM, ANSI colours) and, when a
//! terminal's hard wrap shows (several distinct lines of one maximal width,
//! or one whose join with the next line completes a keyword), wrapped lines
//! are joined (when a logger frames every line, an unframed line after a
//! full one is its rest, whatever it starts with); one-line messages are
//! also joined across a wrap locally, by their grammar: a message that is
//! not complete on its line takes the rest of a cut line even when that rest
//! holds a keyword of its own, or starts on the cut line before its keyword.
//! - `repeats`: how often the error occurs, counting one message form printed
//!   one way (glog line or plain exception text); a restatement in another form
//!   or an escaped copy merges without counting.

mod compile_usage;
mod event;
mod gpu;
mod keywords;
mod lines;
mod listing;
mod normalize;
mod rank;
mod rescan;
mod scoped;
mod site;
mod time;
mod torch;
mod tpu;

pub use compile_usage::parse_compile_usage;

use keywords::{has_keyword, keywords, Anchor, KEYWORDS};
use oomscope_report::OomEvent;
use site::{Outcome, Site};

/// Keyword occurrences on one line that failed to parse before the rest of
/// the line is skipped (keeps hostile single-line inputs linear).
const MAX_FAILS_PER_LINE: u32 = 64;
/// Longest escaped line that is unescaped and read again.
const MAX_ESCAPED_LINE: usize = 4 << 20;

/// Every distinct OOM in `text`, in order of first occurrence. `line` is the
/// 1-based line where each starts; `repeats` counts its occurrences.
pub fn parse_oom_log(input_name: &str, text: &str) -> Vec<OomEvent> {
    read_log(input_name, text, false)
}

/// [`parse_oom_log`] reading the whole text again whenever a wrap is seen,
/// as it did before the lines around a wrapped message were read alone:
/// the reference the windowed reading is tested against.
#[doc(hidden)]
pub fn parse_oom_log_rescanning_all(input_name: &str, text: &str) -> Vec<OomEvent> {
    read_log(input_name, text, true)
}

fn read_log(input_name: &str, text: &str, rescan_all: bool) -> Vec<OomEvent> {
    let text = normalize::clean(text);
    let mut hits = Vec::new();
    let mut first = Reading::keeping();
    scan(&text, None, &mut first, &mut hits);
    let Some(wraps) = normalize::find_wraps(&text, &hits) else {
        return first.merger.finish(input_name);
    };
    let (joined, full_lines) = match wraps {
        normalize::Wraps::Whole(unwrapped) => {
            (scan_unwrapped(input_name, &unwrapped), unwrapped.full_lines)
        }
        normalize::Wraps::Local(local) => {
            let windowed = match (rescan_all, first.kept.take()) {
                (false, Some(kept)) => rescan::joined(input_name, &text, kept, &local),
                _ => None,
            };
            let joined =
                windowed.unwrap_or_else(|| scan_unwrapped(input_name, &local.join_all(&text)));
            (joined, local.full_lines)
        }
    };
    let as_is = first.merger.finish(input_name);
    // Lines that only look wrapped (an editor's word wrap whose lines happen
    // to be as long) read worse joined: the reading with more numbers wins.
    if full_lines >= 3 || numbers_read(&joined) >= numbers_read(&as_is) {
        joined
    } else {
        as_is
    }
}

/// The events of a joined text, on the lines of the input.
fn scan_unwrapped(input_name: &str, unwrapped: &normalize::Unwrapped) -> Vec<OomEvent> {
    let mut reading = Reading::merging();
    scan(&unwrapped.text, None, &mut reading, &mut Vec::new());
    let mut joined = reading.merger.finish(input_name);
    let on_input = |line: u32| {
        let i = line.saturating_sub(1) as usize;
        unwrapped.line_of.get(i).copied().unwrap_or(line)
    };
    for e in &mut joined {
        e.line = on_input(e.line);
        for t in &mut e.rank_times {
            t.line = on_input(t.line);
        }
    }
    joined
}

/// How many numbers a reading of a log found.
fn numbers_read(events: &[OomEvent]) -> usize {
    events.iter().map(event::numbers_in).sum()
}

/// Cheap check on the first bytes of a file: does it hold an OOM message?
pub fn looks_like_oom_log(head: &str) -> bool {
    if !has_keyword(head) {
        return false;
    }
    let head = normalize::clean(head);
    let mut reading = Reading::merging();
    let mut hits = Vec::new();
    scan(&head, None, &mut reading, &mut hits);
    if let Some(unwrapped) = normalize::unwrap(&head, &hits) {
        scan(&unwrapped.text, None, &mut reading, &mut Vec::new());
    }
    !reading.merger.is_empty()
}

/// A keyword the scan looked at: its 0-based line and the line's start
/// offset (where a message may have been wrapped, see `normalize`).
pub(crate) type Hit = (usize, usize);

/// Hits kept for the wrap detection.
const MAX_HITS: usize = 100_000;

/// Occurrences kept by a [`Reading`] for a second reading around wraps;
/// past it (a log repeating one error without end) the whole text is read
/// again instead, in bounded memory.
const MAX_KEPT: usize = 20_000;

/// The lines one parse read: 0-based line of its start, the byte offset of
/// that line, and the offset where the scan resumed after it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    pub line: usize,
    pub start: usize,
    pub end: usize,
}

/// What a scan found: occurrences merged as they come, and, while few,
/// each kept with the lines it was read from, so that the lines around a
/// wrapped message can be read again alone (`rescan`) and the rest reused.
pub(crate) struct Reading {
    merger: event::Merger,
    kept: Option<Kept>,
}

#[derive(Default)]
pub(crate) struct Kept {
    /// Occurrences in input order, with the byte offset of their line.
    pub raws: Vec<(event::Raw, usize)>,
    /// What every parse consumed (events and reports skipped), in order.
    pub spans: Vec<Span>,
}

impl Reading {
    fn merging() -> Self {
        Reading {
            merger: event::Merger::default(),
            kept: None,
        }
    }

    fn keeping() -> Self {
        Reading {
            merger: event::Merger::default(),
            kept: Some(Kept::default()),
        }
    }

    fn add(&mut self, raw: event::Raw, line_start: usize) {
        if let Some(kept) = &mut self.kept {
            if kept.raws.len() < MAX_KEPT {
                kept.raws.push((raw.clone(), line_start));
            } else {
                self.kept = None;
            }
        }
        self.merger.add(raw);
    }

    fn consumed(&mut self, span: Span) {
        if let Some(kept) = &mut self.kept {
            if kept.spans.len() < 2 * MAX_KEPT {
                kept.spans.push(span);
            } else {
                self.kept = None;
            }
        }
    }
}

/// Scans `text`. `escaped` is set when `text` is an unescaped copy of a line
/// of the input (its 1-based number and its span there): its events get
/// that line and are marked escaped. The keywords looked at are added to
/// `hits`.
fn scan(text: &str, escaped: Option<(u32, Span)>, out: &mut Reading, hits: &mut Vec<Hit>) {
    let mut counter = lines::LineCounter::new(text);
    let mut consumed = 0usize;
    let mut line = (usize::MAX, 0usize);
    let mut fails = 0u32;
    for m in keywords().find_iter(text) {
        let at = m.start();
        if at < consumed {
            continue;
        }
        let (line_no, line_start) = counter.locate(at);
        if escaped.is_none() && hits.len() < MAX_HITS && line.0 != line_start {
            hits.push((line_no as usize - 1, line_start));
        }
        if line.0 != line_start {
            line = (line_start, lines::line_end(text, at));
            fails = 0;
        }
        if fails >= MAX_FAILS_PER_LINE {
            continue;
        }
        let site = Site {
            text,
            line_start,
            line_end: line.1,
            anchor: at,
        };
        if escaped.is_none() && is_escaped(&site) {
            let end = lines::floor_boundary(text, line.1.min(line_start + MAX_ESCAPED_LINE));
            let unescaped = unescape(&text[line_start..end]);
            let span = Span {
                line: line_no as usize - 1,
                start: line_start,
                end: line.1,
            };
            scan(&unescaped, Some((line_no, span)), out, &mut Vec::new());
            out.consumed(span);
            consumed = line.1;
            continue;
        }
        let anchor = KEYWORDS[m.pattern().as_usize()].1;
        // Where this parse starts in the input, for `Reading`.
        let span = |end: usize| match escaped {
            Some((_, outer)) => outer,
            None => Span {
                line: line_no as usize - 1,
                start: line_start,
                end,
            },
        };
        match parse_at(&site, anchor) {
            Outcome::Event(mut raw, end) => {
                raw.line = escaped.map_or(line_no, |e| e.0);
                raw.escaped = escaped.is_some();
                raw.logged = site.head_and_origin().1;
                let tagged = &text[line_start..line.1];
                raw.ranks.extend(rank::of_line(tagged));
                if let (Some(rank), Some(time)) = (rank::of_line(tagged), time::of_line(tagged)) {
                    raw.rank_times.push(oomscope_report::RankTime {
                        rank,
                        time: time.text(),
                        line: raw.line,
                    });
                }
                consumed = end.max(line.1);
                let span = span(consumed);
                out.add(*raw, span.start);
                if escaped.is_none() {
                    out.consumed(span);
                }
            }
            Outcome::Ignore(end) => {
                consumed = end.max(line.1);
                if escaped.is_none() {
                    out.consumed(span(consumed));
                }
            }
            Outcome::NoMatch => fails += 1,
        }
    }
}

fn parse_at(site: &Site, anchor: Anchor) -> Outcome {
    match anchor {
        Anchor::TpuRanOut => scoped::on_stack(site).unwrap_or_else(|| tpu::ran_out(site)),
        Anchor::TpuScoped => scoped::numbers_only(site),
        Anchor::TpuRequires => tpu::requires(site),
        Anchor::TpuWouldExceed => tpu::would_exceed(site),
        Anchor::SparseCore => tpu::sparsecore(site),
        Anchor::TpuReserve | Anchor::TpuAllocate => tpu::runtime(site),
        Anchor::BfcRanOut => gpu::bfc(site),
        Anchor::XlaGpuOom => gpu::xla_oom(site),
        Anchor::FailedRequest => gpu::failed_request(site),
        Anchor::CuMemAllocAsync => gpu::cu_mem_alloc_async(site),
        Anchor::TfTensor => gpu::tf_oom(site),
        Anchor::Torch | Anchor::TorchRest => torch::cuda_oom(site),
        Anchor::TorchMps => torch::mps_oom(site),
        Anchor::TpuUsageReport => tpu::usage_report(site),
        Anchor::TpuProgramRequirement | Anchor::TpuUsageItem => tpu::report_from_middle(site),
    }
}

/// A keyword inside an escaped copy of a message (a proto dump, a JSON
/// string): `\n` written as two characters right after it.
fn is_escaped(site: &Site) -> bool {
    let after = site.after_anchor();
    let window = &after[..lines::floor_boundary(after, 600)];
    memchr::memmem::find(window.as_bytes(), b"\\n").is_some()
}

/// Undoes `\n`, `\t`, `\uXXXX`, `\"`, `\'`, `\\`; drops `\xNN` byte escapes.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => {}
            Some('u') => {
                let rest = chars.as_str();
                let code = rest.get(..4).and_then(|h| u32::from_str_radix(h, 16).ok());
                if let Some(c) = code.and_then(char::from_u32) {
                    out.push(c);
                    chars = rest[4..].chars();
                }
            }
            Some('x') => {
                let rest = chars.as_str();
                if rest.len() >= 2 && rest.as_bytes()[..2].iter().all(u8::is_ascii_hexdigit) {
                    chars = rest[2..].chars();
                }
                out.push(' ');
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescapes() {
        assert_eq!(
            unescape(r"a\nb\tc\x08\x64Ran \'x\' \\"),
            "a\nb\tc  Ran 'x' \\"
        );
    }
}
