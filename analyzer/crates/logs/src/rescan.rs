//! The second reading of a log whose wraps were seen around single messages
//! (`normalize::Local`): only the lines around each wrap are joined and
//! scanned again; every occurrence the first scan read elsewhere is reused.
//!
//! The result equals scanning the whole joined text (the reference,
//! `parse_oom_log_rescanning_all`, tested on every real input and its
//! variants) because a window of lines is cut only where both readings are
//! at rest: no parse of the first scan reads across either end, the window's
//! own parses end before its last lines, and [`PAD`] unchanged lines on each
//! side of a wrap cover what a parser looks at beyond what it consumes (the
//! line before a keyword, the few lines after a message). When a window
//! cannot be made so, or the windows would cover much of the text, the
//! caller reads the whole joined text as before.

use crate::event::{Merger, Raw};
use crate::lines::{line_end, lines_before};
use crate::normalize::{Local, Touched};
use crate::{scan, Kept, Reading, Span};
use oomscope_report::OomEvent;

/// Unchanged lines kept on each side of a wrap's lines.
const PAD: usize = 64;
/// Widening steps of a window whose last parse reads to its end.
const MAX_WIDENINGS: usize = 8;

/// The lines `[a, b)` of the input read again: `a` and `b` are line starts
/// (or the text's end), `a_line` the 0-based line at `a`.
struct Window {
    a: usize,
    a_line: usize,
    b: usize,
}

/// The events of `text` with the wraps of `local` joined, from the first
/// scan's occurrences (`kept`) and a scan of the lines around each wrap;
/// `None` when that cannot be done exactly (see the module's comment).
pub(crate) fn joined(
    input_name: &str,
    text: &str,
    kept: Kept,
    local: &Local,
) -> Option<Vec<OomEvent>> {
    let rest = Spans::new(&kept.spans);
    let touched = local.touched();
    let mut windows: Vec<(Window, Vec<Raw>)> = Vec::new();
    let mut read_bytes = 0usize;
    let mut t = 0usize;
    while t < touched.len() {
        let mut pad = PAD;
        let mut w = rest.settle(text, open(text, &touched[t], pad));
        let mut next = t + 1;
        let mut widenings = 0usize;
        let raws = loop {
            // Wraps whose window would meet this one are read with it.
            while let Some(more) = touched.get(next) {
                let o = open(text, more, pad);
                if o.a > w.b {
                    break;
                }
                w.b = w.b.max(o.b);
                w = rest.settle(text, w);
                next += 1;
            }
            let (raws, at_rest) = read_window(text, &w, local)?;
            if at_rest {
                break raws;
            }
            widenings += 1;
            if widenings > MAX_WIDENINGS {
                return None;
            }
            pad *= 2;
            w.b = lines_after(text, w.b, pad);
            w = rest.settle(text, w);
        };
        read_bytes += w.b - w.a;
        // Reading most of the text again in windows gains nothing.
        if read_bytes > text.len() / 2 + (1 << 16) {
            return None;
        }
        t = next;
        windows.push((w, raws));
    }
    // Occurrences outside every window as first read, the windows' in their
    // place, in input order.
    let mut merger = Merger::default();
    let mut windows = windows.into_iter().peekable();
    for (raw, start) in kept.raws {
        while let Some((w, _)) = windows.peek() {
            if w.b > start {
                break;
            }
            let (_, raws) = windows.next()?;
            raws.into_iter().for_each(|r| merger.add(r));
        }
        if windows.peek().is_some_and(|(w, _)| w.a <= start) {
            continue;
        }
        merger.add(raw);
    }
    for (_, raws) in windows {
        raws.into_iter().for_each(|r| merger.add(r));
    }
    Some(merger.finish(input_name))
}

/// The window of a wrap before it is settled: [`PAD`] lines before its
/// first line to `pad` lines after its last.
fn open(text: &str, t: &Touched, pad: usize) -> Window {
    let (a, back) = lines_before(text, t.first.1, pad);
    let last_end = if t.last.1 == usize::MAX {
        // A join: its line and the next.
        line_end(text, (line_end(text, t.first.1) + 1).min(text.len()))
    } else {
        t.last.1
    };
    Window {
        a,
        a_line: t.first.0 - back,
        b: lines_after(text, next_line_start(text, last_end), pad),
    }
}

/// The start of the line `n` lines after the line starting at `at` (the
/// text's end at most).
fn lines_after(text: &str, at: usize, n: usize) -> usize {
    let bytes = text.as_bytes();
    let mut at = at.min(text.len());
    for _ in 0..n {
        if at >= text.len() {
            break;
        }
        at = memchr::memchr(b'\n', &bytes[at..]).map_or(text.len(), |i| at + i + 1);
    }
    at
}

/// The first line start at or after `pos`.
fn next_line_start(text: &str, pos: usize) -> usize {
    let pos = pos.min(text.len());
    if pos == 0 || text.as_bytes()[pos - 1] == b'\n' {
        return pos;
    }
    (line_end(text, pos) + 1).min(text.len())
}

/// The first scan's spans, with the furthest end reached so far at each.
struct Spans<'k> {
    spans: &'k [Span],
    reach: Vec<usize>,
}

impl<'k> Spans<'k> {
    fn new(spans: &'k [Span]) -> Self {
        let mut furthest = 0usize;
        let reach = spans
            .iter()
            .map(|s| {
                furthest = furthest.max(s.end);
                furthest
            })
            .collect();
        Spans { spans, reach }
    }

    /// The first span that starts before `p` and ends after it.
    fn across(&self, p: usize) -> Option<&Span> {
        let before = self.spans.partition_point(|s| s.start < p);
        if before == 0 || self.reach[before - 1] <= p {
            return None;
        }
        let first = self.reach[..before].partition_point(|&r| r <= p);
        self.spans.get(first)
    }

    /// `w` widened until no span of the first scan crosses either end.
    fn settle(&self, text: &str, mut w: Window) -> Window {
        while let Some(s) = self.across(w.a) {
            w.a = s.start;
            w.a_line = s.line;
        }
        while let Some(s) = self.across(w.b) {
            w.b = next_line_start(text, s.end);
        }
        w
    }
}

/// The occurrences in window `w` with its wraps joined, on the input's
/// lines, and whether every parse there ended before the window's last
/// [`PAD`]` / 2` lines (else the window must grow). `None` when the window
/// holds more occurrences than a reading keeps.
fn read_window(text: &str, w: &Window, local: &Local) -> Option<(Vec<Raw>, bool)> {
    let slice = &text[w.a..w.b];
    let end_line = w.a_line
        + memchr::memchr_iter(b'\n', slice.as_bytes()).count()
        + usize::from(!slice.ends_with('\n'));
    let unwrapped = local.join_lines(slice, w.a_line, end_line);
    let mut reading = Reading::keeping();
    scan(&unwrapped.text, None, &mut reading, &mut Vec::new());
    let kept = reading.kept?;
    // The last lines are the input's own (no wrap is joined there): their
    // start in the joined text is as far from its end as in the input.
    let tail = w.b - lines_before(text, w.b, PAD / 2).0;
    let safe = unwrapped.text.len().saturating_sub(tail);
    let at_rest = w.b >= text.len() || kept.spans.iter().all(|s| s.end <= safe);
    let raws = kept
        .raws
        .into_iter()
        .map(|(mut raw, _)| {
            // On the input's lines: the joined window's line, then the
            // window's place.
            let on_input = |line: u32| {
                let i = line.saturating_sub(1) as usize;
                let line = unwrapped.line_of.get(i).copied().unwrap_or(line);
                u32::try_from(w.a_line)
                    .unwrap_or(u32::MAX)
                    .saturating_add(line)
            };
            raw.line = on_input(raw.line);
            for t in &mut raw.rank_times {
                t.line = on_input(t.line);
            }
            raw
        })
        .collect();
    Some((raws, at_rest))
}
