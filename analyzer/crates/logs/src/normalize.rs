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
/// a rank tag, a traceback). `None` when no wrap is seen.
pub fn unwrap(text: &str) -> Option<Unwrapped> {
    let (width, full_lines) = wrap_width(text)?;
    let framed = every_line_framed(text, width);
    // In a text that is not a quote, `>` after a cut line is the rest of it
    // (an einsum's `->` cut after the `-`), not a quote mark.
    let quoted = every_line_quoted(text, width);
    let mut out = String::with_capacity(text.len());
    let mut line_of = Vec::new();
    let mut joining = false;
    // A cut line that holds only a logger header: what follows is its text.
    let mut header_only = false;
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        // When the logger frames every line it writes, the frame alone
        // tells a line from the rest of a cut one, whatever its text.
        let own = if framed {
            line.trim().is_empty() || has_frame(line)
        } else if !quoted && line.starts_with('>') {
            false
        } else {
            starts_own_line(line)
        };
        if joining && !header_only && own {
            joining = false;
        }
        if joining {
            out.push_str(strip_frame(line));
        } else {
            if i > 0 {
                out.push('\n');
            }
            line_of.push(u32::try_from(i + 1).unwrap_or(u32::MAX));
            out.push_str(line);
        }
        joining = line.chars().count() == width;
        header_only = joining && payload(line).is_empty();
    }
    Some(Unwrapped {
        text: out,
        line_of,
        full_lines,
    })
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
    let count = |t: &str| crate::keyword_count(t);
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
        let u = unwrap(text).expect("wrapped");
        assert_eq!(
            u.text,
            "0123456789012345678901234567890123456789ABcdefghijklmnopqrstuvwxyz0123456789012345xyend\n\nnext"
        );
        assert_eq!(u.line_of, [1, 4, 5]);
        assert!(unwrap("short\nlines\n").is_none());
    }

    #[test]
    fn a_framed_log_joins_whatever_the_cut_line_starts_with() {
        // Ray frames every line; the rest of a cut line starts like a
        // report line ("Size:") and is still joined.
        let text = "(pid=1) chunk: Size: 2.79GiB | Requested Size: 0B | Requested \nSize: 3.72GiB\n(pid=1) Stats: \n(pid=1) Limit: 1\n(pid=1) InUse: 1\n(pid=1) 012345678901234567890123456789012345678901234567890123\nxyz\n";
        let u = unwrap(text).expect("wrapped");
        assert!(u.text.contains("Requested Size: 3.72GiB"), "{}", u.text);
        assert!(u.text.contains("890123xyz"), "{}", u.text);
        // Unframed, "Size:" starts a line of its own.
        let plain = text.replace("(pid=1) ", "");
        let u = unwrap(&plain);
        assert!(u.is_none_or(|u| !u.text.contains("Requested Size: 3.72GiB")));
    }
}
