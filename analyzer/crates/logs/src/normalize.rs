//! What terminals, CI viewers and copy-paste do to a log before we see it,
//! undone before the scan: a UTF-8 byte-order mark, ANSI colour codes, and
//! hard wraps at a fixed column (a terminal or viewer cutting every long line
//! at the same width, even mid-word or mid-number, with no prefix on the
//! continuation lines).

use crate::lines::{payload, strip_frame};
use std::borrow::Cow;

/// Removes a leading BOM and ANSI escape sequences (`ESC [ ... final`), and
/// the bare `[31m` remnants a copy leaves when the ESC byte was lost. Line
/// structure is unchanged.
pub fn clean(text: &str) -> Cow<'_, str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if memchr::memchr(0x1b, text.as_bytes()).is_none() && !has_bare_colour(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['\u{1b}', '[']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let skip = if let Some(after_esc) = tail.strip_prefix('\u{1b}') {
            csi_len(after_esc).map_or(1, |n| n + 1)
        } else {
            bare_colour_len(tail).unwrap_or(0)
        };
        if skip == 0 {
            out.push('[');
            rest = &tail[1..];
        } else {
            rest = &tail[skip..];
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Length of a CSI sequence body after ESC: `[`, parameters, one final byte.
fn csi_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.first() != Some(&b'[') {
        return None;
    }
    let end = b[1..]
        .iter()
        .take(32)
        .position(|c| (0x40..=0x7e).contains(c))?;
    Some(end + 2)
}

/// `[31m`, `[0;1m`, `[39m` without their ESC.
fn bare_colour_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let digits = b[1..]
        .iter()
        .take(9)
        .take_while(|c| c.is_ascii_digit() || **c == b';')
        .count();
    (digits > 0 && b.get(1 + digits) == Some(&b'm')).then_some(digits + 2)
}

fn has_bare_colour(text: &str) -> bool {
    memchr::memmem::find_iter(text.as_bytes(), b"[")
        .take(100_000)
        .any(|i| bare_colour_len(&text[i..]).is_some())
}

/// A text whose hard wraps were joined, and for each of its lines the
/// 1-based line of the input where it starts.
pub struct Unwrapped {
    pub text: String,
    pub line_of: Vec<u32>,
    /// Distinct lines of the wrap width seen (capped): three or more leave
    /// no doubt that a terminal wrapped the text.
    pub full_lines: usize,
}

/// Shortest width taken for a terminal or viewer wrap.
const MIN_WIDTH: usize = 40;

/// Joins hard-wrapped lines, when the text shows a wrap: its longest lines
/// all have the same width W (nothing is longer, as a terminal wraps every
/// line), at least two distinct ones. A line of width W is then joined with
/// the next unless that one starts a line of its own (blank, a logger header,
/// a rank tag, a traceback). When the text as a whole shows no wrap (one
/// unrelated long line anywhere hides it), the lines around each message are
/// looked at alone ([`local_unwrap`]). `None` when no wrap is seen.
pub fn unwrap(text: &str, hits: &[crate::Hit]) -> Option<Unwrapped> {
    match find_wraps(text, hits)? {
        Wraps::Whole(u) => Some(u),
        Wraps::Local(local) => Some(local.join_all(text)),
    }
}

/// The wraps [`unwrap`] joins: the whole text's (already joined), or those
/// around single messages, kept as line ranges so that only their lines
/// are joined and read again (`crate::rescan`).
pub enum Wraps {
    Whole(Unwrapped),
    Local(Local),
}

pub fn find_wraps(text: &str, hits: &[crate::Hit]) -> Option<Wraps> {
    let Some((width, full_lines)) = wrap_width(text) else {
        return local_unwrap(text, hits).map(Wraps::Local);
    };
    let region = Region {
        start: 0,
        end: usize::MAX,
        from: (0, 0),
        to_end: usize::MAX,
        width,
        framed: every_line_framed(text, width),
        // In a text that is not a quote, `>` after a cut line is the rest of
        // it (an einsum's `->` cut after the `-`), not a quote mark.
        quoted: every_line_quoted(text, width),
    };
    Some(Wraps::Whole(join(text, &[region], &[], full_lines)))
}

/// Wraps seen around single messages: regions of lines cut at a width, and
/// single line breaks that cut a keyword.
pub struct Local {
    regions: Vec<Region>,
    /// 0-based line, whether a space goes between, byte offset of the line.
    joins: Vec<(usize, bool, usize)>,
    pub full_lines: usize,
}

/// Lines a local wrap joins: the first (0-based, with its byte offset) and
/// the last (0-based, with the byte offset of its end).
#[derive(Clone, Copy, Debug)]
pub struct Touched {
    pub first: (usize, usize),
    pub last: (usize, usize),
}

impl Local {
    /// The whole text with every local wrap joined.
    pub fn join_all(&self, text: &str) -> Unwrapped {
        let joins: Vec<(usize, bool)> = self.joins.iter().map(|j| (j.0, j.1)).collect();
        join(text, &self.regions, &joins, self.full_lines)
    }

    /// The lines each wrap joins, sorted by their first line. A join takes
    /// its line and the next (whose end is not known here: `usize::MAX`
    /// stands for "the end of the line after").
    pub fn touched(&self) -> Vec<Touched> {
        let mut out: Vec<Touched> = self
            .regions
            .iter()
            .map(|g| Touched {
                first: g.from,
                last: (g.end, g.to_end),
            })
            .chain(self.joins.iter().map(|j| Touched {
                first: (j.0, j.2),
                last: (j.0 + 1, usize::MAX),
            }))
            .collect();
        out.sort_by_key(|t| t.first.0);
        out
    }

    /// `slice`, the text's lines `first_line..` up to some line, with the
    /// wraps that fall in it joined; its `line_of` counts from the slice's
    /// first line (1-based).
    pub fn join_lines(&self, slice: &str, first_line: usize, end_line: usize) -> Unwrapped {
        let inside = |l: usize| first_line <= l && l < end_line;
        let regions: Vec<Region> = self
            .regions
            .iter()
            .filter(|g| inside(g.start))
            .map(|g| Region {
                start: g.start - first_line,
                end: g.end - first_line,
                ..*g
            })
            .collect();
        let joins: Vec<(usize, bool)> = self
            .joins
            .iter()
            .filter(|j| inside(j.0))
            .map(|j| (j.0 - first_line, j.1))
            .collect();
        join(slice, &regions, &joins, self.full_lines)
    }
}

/// Lines `start..=end` (0-based) cut by a terminal at `width` columns.
#[derive(Clone, Copy)]
struct Region {
    start: usize,
    end: usize,
    /// The first line the region was found with (0-based, byte offset): at
    /// or before `start`, which an earlier region may have moved.
    from: (usize, usize),
    /// Byte offset of the end of line `end`.
    to_end: usize,
    width: usize,
    /// Whether a logger frames every line of the region.
    framed: bool,
    /// Whether the region is a markdown quote.
    quoted: bool,
}

/// Joins the lines of `text` that `regions` say were cut (a line of the
/// region's width with the next), and each line of `joins` (sorted 0-based
/// line numbers, with whether a space goes between) with the next.
fn join(text: &str, regions: &[Region], joins: &[(usize, bool)], full_lines: usize) -> Unwrapped {
    let mut out = String::with_capacity(text.len());
    let mut line_of = Vec::new();
    let mut joining = false;
    // The previous line's break cuts a keyword: joined whatever this starts with.
    let mut forced_join = false;
    let mut join_with_space = false;
    // A cut line that holds only a logger header: what follows is its text.
    let mut header_only = false;
    let mut r = 0usize;
    let mut s = 0usize;
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        while r < regions.len() && regions[r].end < i {
            r += 1;
        }
        let region = regions.get(r).filter(|g| g.start <= i);
        if joining && !header_only && !forced_join {
            // When the logger frames every line it writes, the frame alone
            // tells a line from the rest of a cut one, whatever its text.
            let own = match region {
                Some(g) if g.framed => line.trim().is_empty() || has_frame(line),
                Some(g) if !g.quoted && line.starts_with('>') => false,
                _ => starts_own_line(line),
            };
            if own {
                joining = false;
            }
        }
        if joining {
            if join_with_space && !out.ends_with(char::is_whitespace) {
                out.push(' ');
            }
            out.push_str(strip_frame(line));
        } else {
            if i > 0 {
                out.push('\n');
            }
            line_of.push(u32::try_from(i + 1).unwrap_or(u32::MAX));
            out.push_str(line);
        }
        while s < joins.len() && joins[s].0 < i {
            s += 1;
        }
        let forced = joins.get(s).filter(|j| j.0 == i);
        join_with_space = forced.is_some_and(|j| j.1);
        forced_join = forced.is_some();
        joining = forced.is_some() || region.is_some_and(|g| line.chars().count() == g.width);
        header_only = joining && payload(line).is_empty();
    }
    Unwrapped {
        text: out,
        line_of,
        full_lines,
    }
}

/// Lines looked at before a message's first keyword, and after it.
const LOCAL_BEFORE: usize = 16;
const LOCAL_AFTER: usize = 4096;
/// Lines after a keyword whose widths are the candidate wrap widths.
const CANDIDATE_LINES: usize = 64;
/// Candidate widths tried per message, widest first.
const MAX_CANDIDATES: usize = 8;
/// Distinct lines of the wrap width a message's lines must hold (as the
/// whole text's rule).
const MIN_LOCAL_FULL_LINES: usize = 2;
/// Bytes of each side of a line break looked at for a cut keyword.
const SPLIT_WINDOW: usize = 48;

/// The wrap of each message on its own: a text holding one unrelated line
/// longer than the wrap (a URL, a command line) shows no wrap as a whole,
/// yet the message's lines do. Around each keyword the wrap width W is the
/// widest width that at least two distinct lines of the run of lines no
/// wider than W around it have; a line break that cuts a keyword is joined
/// too (its run at the cut line's width), after a space when the keyword
/// needs one (`Resource exhausted: Out` / `of memory while trying to
/// allocate`: a logger or a viewer that wrapped at words).
fn local_unwrap(text: &str, hits: &[crate::Hit]) -> Option<Local> {
    let (hard_splits, mut joins) = split_keywords(text);
    let mut regions: Vec<Region> = Vec::new();
    let mut full_lines = 0usize;
    // Bytes of windows looked at, over all messages: a hostile text cannot
    // make this quadratic.
    let mut budget = text.len().saturating_mul(4).saturating_add(1 << 20);
    for &(i, at) in &hard_splits {
        if regions.last().is_some_and(|g| g.end >= i) {
            continue;
        }
        let w = Window::around(text, at, i);
        budget = budget.saturating_sub(w.bytes());
        let width = w.width(w.seed);
        if width == 0 {
            // Too short for a terminal's cut: this one break alone.
            joins.push((i, false, at));
            continue;
        }
        let (start, end) = w.run(w.seed, width);
        regions.push(w.region(start, end, width));
        full_lines = full_lines.max(1);
    }
    for &(k, line_start) in hits {
        if budget == 0 {
            break;
        }
        if regions
            .iter()
            .rev()
            .take(4)
            .any(|g| g.start <= k && k <= g.end)
        {
            continue;
        }
        let w = Window::around(text, line_start, k);
        budget = budget.saturating_sub(w.bytes());
        if let Some((start, end, width, full)) = w.message_wrap() {
            full_lines = full_lines.max(full);
            regions.push(w.region(start, end, width));
        }
    }
    if regions.is_empty() && joins.is_empty() {
        return None;
    }
    regions.sort_by_key(|g| g.start);
    // Overlapping regions: the earlier one keeps its lines.
    let mut kept: Vec<Region> = Vec::with_capacity(regions.len());
    for mut g in regions {
        if let Some(last) = kept.last() {
            if g.end <= last.end {
                continue;
            }
            g.start = g.start.max(last.end + 1);
        }
        kept.push(g);
    }
    joins.sort_unstable();
    Some(Local {
        regions: kept,
        joins,
        full_lines,
    })
}

/// A break a terminal made inside a keyword: (line before it, that line's
/// start offset).
type HardCut = (usize, usize);
/// A break inside a keyword that needs a space when joined: (line before
/// it, whether a space goes between, that line's start offset).
type SpacedCut = (usize, bool, usize);

/// The line breaks that cut a keyword, by the 0-based line before the
/// break: those whose join as they are makes it appear (a terminal's cut,
/// with the line's start offset) and those that need a space between.
fn split_keywords(text: &str) -> (Vec<HardCut>, Vec<SpacedCut>) {
    let (mut hard, mut space) = (Vec::new(), Vec::new());
    let mut buf = String::with_capacity(2 * SPLIT_WINDOW + 1);
    let spans = |buf: &str, cut: usize, after: usize| {
        crate::keywords::keywords()
            .find_iter(buf)
            .any(|m| m.start() < cut && m.end() > after)
    };
    // The line before the current break: (0-based number, start, text).
    let mut before: Option<(usize, usize, &str)> = None;
    let bytes = text.as_bytes();
    let mut start = 0usize;
    let mut i = 0usize;
    while start <= text.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(text.len(), |n| start + n);
        let raw = &text[start..end];
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let at = start;
        start = end + 1;
        i += 1;
        let Some((before_no, before_at, before_line)) = before.replace((i - 1, at, line)) else {
            continue;
        };
        let before = before_line;
        if !crate::keywords::may_end_in_keyword(before) {
            continue;
        }
        let next = strip_frame(line);
        if before.trim().is_empty() || next.trim().is_empty() {
            continue;
        }
        let cut = crate::lines::ceil_boundary(before, before.len().saturating_sub(SPLIT_WINDOW));
        let tail = &before[cut..];
        let head = &next[..crate::lines::floor_boundary(next, SPLIT_WINDOW)];
        buf.clear();
        buf.push_str(tail);
        buf.push_str(head);
        if spans(&buf, tail.len(), tail.len()) {
            hard.push((before_no, before_at));
            continue;
        }
        if tail.ends_with(char::is_whitespace) {
            continue;
        }
        buf.clear();
        buf.push_str(tail);
        buf.push(' ');
        buf.push_str(head.trim_start());
        if spans(&buf, tail.len(), tail.len() + 1) {
            space.push((before_no, true, before_at));
        }
    }
    (hard, space)
}

/// The lines around one message: up to [`LOCAL_BEFORE`] before its seed
/// line and [`LOCAL_AFTER`] after, each as its span in the text (before
/// `\r\n`) and its width in characters (0 for a line too short to be cut).
struct Window<'t> {
    text: &'t str,
    /// 0-based line number of the first line of the window.
    first: usize,
    /// Index of the seed line in `lines`.
    seed: usize,
    lines: Vec<(usize, usize, usize)>,
}

impl<'t> Window<'t> {
    /// The window around the line starting at byte `at`, line `line_no`
    /// (0-based).
    fn around(text: &'t str, at: usize, line_no: usize) -> Self {
        let bytes = text.as_bytes();
        let (from, before) = crate::lines::lines_before(text, at, LOCAL_BEFORE);
        let mut lines = Vec::new();
        let mut start = from;
        while start <= text.len() && lines.len() < before + LOCAL_AFTER + CANDIDATE_LINES {
            let end = memchr::memchr(b'\n', &bytes[start..]).map_or(text.len(), |i| start + i);
            let line = &text[start..end];
            let line = line.strip_suffix('\r').unwrap_or(line);
            let width = if line.len() < MIN_WIDTH {
                0
            } else {
                line.chars().count()
            };
            lines.push((start, start + line.len(), width));
            start = end + 1;
        }
        Window {
            text,
            first: line_no - before,
            seed: before,
            lines,
        }
    }

    fn bytes(&self) -> usize {
        match (self.lines.first(), self.lines.last()) {
            (Some(a), Some(b)) => b.1 - a.0,
            _ => 0,
        }
    }

    fn width(&self, i: usize) -> usize {
        self.lines.get(i).map_or(0, |l| l.2)
    }

    fn line(&self, i: usize) -> &'t str {
        self.lines.get(i).map_or("", |l| &self.text[l.0..l.1])
    }

    /// The run of lines no wider than `width` around line `i` (window
    /// indices).
    fn run(&self, i: usize, width: usize) -> (usize, usize) {
        let mut start = i;
        while start > 0 && self.width(start - 1) <= width {
            start -= 1;
        }
        let mut end = i;
        while end + 1 < self.lines.len() && self.width(end + 1) <= width {
            end += 1;
        }
        (start, end)
    }

    /// The wrap of the message whose keyword is on the seed line: the
    /// widest candidate width (of the lines just after it) that at least
    /// [`MIN_LOCAL_FULL_LINES`] distinct lines of its run have; its run, width and how many distinct
    /// lines have it (at most 4).
    fn message_wrap(&self) -> Option<(usize, usize, usize, usize)> {
        let own = self.width(self.seed);
        let to = (self.seed + CANDIDATE_LINES).min(self.lines.len());
        let mut candidates: Vec<usize> = (self.seed.saturating_sub(2)..to)
            .map(|i| self.width(i))
            .filter(|w| *w >= MIN_WIDTH && *w >= own)
            .collect();
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        candidates.dedup();
        for width in candidates.into_iter().take(MAX_CANDIDATES) {
            let (start, end) = self.run(self.seed, width);
            let mut full: Vec<&str> = Vec::new();
            for i in start..=end {
                let line = self.line(i);
                if full.len() < 4 && self.width(i) == width && !full.contains(&line) {
                    full.push(line);
                }
            }
            if full.len() >= MIN_LOCAL_FULL_LINES {
                return Some((start, end, width, full.len()));
            }
        }
        None
    }

    /// The region of window lines `start..=end` cut at `width`.
    fn region(&self, start: usize, end: usize, width: usize) -> Region {
        let slice = match (self.lines.get(start), self.lines.get(end)) {
            (Some(a), Some(b)) => &self.text[a.0..b.1],
            _ => "",
        };
        let at = |i: usize| self.lines.get(i).map_or((0, 0), |l| (l.0, l.1));
        Region {
            start: self.first + start,
            end: self.first + end,
            from: (self.first + start, at(start).0),
            to_end: at(end).1,
            width,
            framed: every_line_framed(slice, width),
            quoted: every_line_quoted(slice, width),
        }
    }
}

/// Lines seen when deciding whether a logger framed every line.
const FRAME_SAMPLE: usize = 10_000;

/// Whether every line a logger wrote carries its frame (a Ray `(pid=N) `,
/// a rank tag, a glog header on each line): at least three lines that are
/// not the rest of a cut line (they follow a line shorter than `width`),
/// all but a tenth of them framed.
fn every_line_framed(text: &str, width: usize) -> bool {
    let (mut starts, mut framed) = (0usize, 0usize);
    let mut after_full = false;
    for raw in text.split('\n').take(FRAME_SAMPLE) {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if !after_full && !line.trim().is_empty() {
            starts += 1;
            framed += usize::from(has_frame(line));
        }
        after_full = line.len() >= width && line.chars().count() == width;
    }
    starts >= 3 && framed * 10 >= starts * 9
}

/// Whether the text is a markdown quote: most lines that start a line
/// (not the rest of a cut one) start with `>`.
fn every_line_quoted(text: &str, width: usize) -> bool {
    let (mut starts, mut quoted) = (0usize, 0usize);
    let mut after_full = false;
    for raw in text.split('\n').take(FRAME_SAMPLE) {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if !after_full && !line.trim().is_empty() {
            starts += 1;
            quoted += usize::from(line.trim_start().starts_with('>'));
        }
        after_full = line.len() >= width && line.chars().count() == width;
    }
    quoted * 2 > starts
}

/// A line behind a logger's frame (header, tag or quote).
fn has_frame(line: &str) -> bool {
    strip_frame(line).len() != line.len()
}

/// The wrap width W, if the text was wrapped, and how many distinct lines
/// have it. One line suffices when joining it with the next makes a keyword
/// appear that neither holds (the wrap cut the keyword).
fn wrap_width(text: &str) -> Option<(usize, usize)> {
    let mut max = 0usize;
    let mut at_max: Vec<(usize, &str)> = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        // Byte length bounds the char count: skip counting short lines.
        if line.len() < MIN_WIDTH || line.len() < max {
            continue;
        }
        let n = line.chars().count();
        if n > max {
            max = n;
            at_max.clear();
        }
        if n == max && at_max.len() < 4 && !at_max.iter().any(|(_, l)| *l == line) {
            at_max.push((i, line));
        }
    }
    if max < MIN_WIDTH || at_max.is_empty() {
        return None;
    }
    if at_max.len() >= 2 {
        return Some((max, at_max.len()));
    }
    let (i, line) = at_max[0];
    let next = text.split('\n').nth(i + 1)?;
    let next = next.strip_suffix('\r').unwrap_or(next);
    let joined = format!("{line}{}", strip_frame(next));
    let count = |t: &str| crate::keywords::keyword_count(t);
    (count(&joined) > count(line) + count(next)).then_some((max, 1))
}

/// How the lines of the reports that follow an OOM message start (TPU
/// listing entries and report blocks, BFC dumps, BufferAssignment reports):
/// a line of exactly the wrap width followed by one of these was not cut.
const REPORT_LINE_STARTS: [&str; 28] = [
    "Size:",
    "Shape:",
    "Operator:",
    "Unpadded size:",
    "Extra memory due to padding:",
    "XLA label:",
    "XLA Label:",
    "Allocation type:",
    "Entry Parameter Subshape:",
    "Tag:",
    "=====",
    "Total bytes",
    "Program ",
    "Output size",
    "Largest program",
    "Memory usage report",
    "Memory Space:",
    "cumulative_size;",
    "Stats:",
    "Limit:",
    "InUse:",
    "Bin (",
    "Buffer ",
    "Peak buffers:",
    "BufferAssignment",
    "Traceback",
    "File \"",
    "HLO temp",
];

/// A line that is not the continuation of a wrapped one: blank, behind a
/// logger header or tag, a report line's start (`N. Size:` included), or a
/// memory usage report row (`12.00G(  9%); ...`).
pub fn starts_own_line(line: &str) -> bool {
    let p = payload(line);
    if p.is_empty() || has_frame(line) {
        return true;
    }
    // A BFC chunk's state (`Size: X | Requested Size: Y | in_use: ...`) is
    // the only printer line with ` | `: cut there, its rest starts `Size:`.
    if p.starts_with("Size:") && p.contains(" | ") {
        return false;
    }
    if REPORT_LINE_STARTS.iter().any(|s| p.starts_with(s)) || is_usage_headline(p) {
        return true;
    }
    let digits = p.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && (p[digits..].starts_with(". Size:") || p.contains("%);"))
}

/// `Total hbm usage >= X:` (any memory space); not `Total Chunks: ...`,
/// the rest of a BFC bin line.
fn is_usage_headline(p: &str) -> bool {
    p.strip_prefix("Total ")
        .and_then(|r| r.split_once(' '))
        .is_some_and(|(_, r)| r.starts_with("usage >="))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_bom_and_colours() {
        assert_eq!(clean("\u{feff}a\u{1b}[31mb\u{1b}[0m [c] [1;2m"), "ab [c] ");
        assert!(matches!(clean("plain [x]"), Cow::Borrowed(_)));
    }

    #[test]
    fn joins_hard_wraps_only() {
        let text = "0123456789012345678901234567890123456789AB\ncdefghijklmnopqrstuvwxyz0123456789012345xy\nend\n\nnext";
        let u = unwrap(text, &[]).expect("wrapped");
        assert_eq!(
            u.text,
            "0123456789012345678901234567890123456789ABcdefghijklmnopqrstuvwxyz0123456789012345xyend\n\nnext"
        );
        assert_eq!(u.line_of, [1, 4, 5]);
        assert!(unwrap("short\nlines\n", &[]).is_none());
    }

    #[test]
    fn a_framed_log_joins_whatever_the_cut_line_starts_with() {
        // Ray frames every line; the rest of a cut line starts like a
        // report line ("Size:") and is still joined.
        let text = "(pid=1) chunk: Size: 2.79GiB | Requested Size: 0B | Requested \nSize: 3.72GiB\n(pid=1) Stats: \n(pid=1) Limit: 1\n(pid=1) InUse: 1\n(pid=1) 012345678901234567890123456789012345678901234567890123\nxyz\n";
        let u = unwrap(text, &[]).expect("wrapped");
        assert!(u.text.contains("Requested Size: 3.72GiB"), "{}", u.text);
        assert!(u.text.contains("890123xyz"), "{}", u.text);
        // Unframed, "Size:" starts a line of its own.
        let plain = text.replace("(pid=1) ", "");
        let u = unwrap(&plain, &[]);
        assert!(u.is_none_or(|u| !u.text.contains("Requested Size: 3.72GiB")));
    }
}
