//! Step logs pasted through a terminal or a tool that cuts lines at a fixed
//! width (`step: 10  loss: 7.9  memory: 23.4` / `5GiB(24.67%)  tps: …`).
//! Such a cut leaves many lines of exactly the same length, the width; the
//! lines of that length are joined with the line after them. A line of
//! the width by chance (not cut) would be joined wrongly, so the caller
//! reads the text both ways and keeps the reading with the most points.
//! Widths are counted in characters, as terminals cut.

use std::collections::HashMap;

/// Shorter lines are never taken for cut ones (a short width would be
/// a table's or a prompt's).
const MIN_WIDTH: usize = 40;
/// Widths tried.
const MAX_WIDTHS: usize = 3;
/// Lines longer than a width that may still stand around a part cut at
/// it (unrelated long lines), plus one per 50 lines.
const MAX_LONGER_LINES: usize = 2;

/// A width at which a text may have been cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Width {
    pub chars: usize,
    /// Several lines have exactly this length (a cut repeated): a joined
    /// reading as good as the plain one is taken. A single line (the
    /// longest) is weaker evidence: its joined reading must read more.
    pub repeated: bool,
}

/// The widths at which `text` may have been cut, widest first: lengths of
/// at least two lines (each followed by more text), or of the longest such
/// line, that almost no line exceeds (a cut leaves none longer, but
/// unrelated long lines may stand around the cut part).
pub(super) fn widths(text: &str) -> Vec<Width> {
    let mut counts: HashMap<usize, usize> = HashMap::new();
    let mut lengths = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let n = line.chars().count();
        lengths.push(n);
        // The last line cannot have been cut before another.
        let Some(next) = lines.peek() else { break };
        if n >= MIN_WIDTH && !next.trim().is_empty() {
            *counts.entry(n).or_default() += 1;
        }
    }
    let allowed_longer = MAX_LONGER_LINES + lengths.len() / 50;
    let longest = counts.keys().copied().max();
    let mut widths: Vec<Width> = counts
        .into_iter()
        .filter(|(w, c)| {
            (*c >= 2 || Some(*w) == longest)
                && lengths.iter().filter(|n| **n > *w).count() <= allowed_longer
        })
        .map(|(chars, c)| Width {
            chars,
            repeated: c >= 2,
        })
        .collect();
    widths.sort_unstable_by(|a, b| b.chars.cmp(&a.chars));
    widths.truncate(MAX_WIDTHS);
    widths
}

/// `text` with every line of exactly `width` characters joined to the line
/// after it (a line cut twice is joined twice), unless that line starts the
/// way the log's lines start (a line of exactly the width by chance, then
/// the next record: `I0706 16:50:25…`, `Step 2 | …`).
pub(super) fn unwrap(text: &str, width: usize) -> String {
    let starts = line_starts(text, width);
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        out.push_str(line);
        let cut = line.chars().count() == width
            && lines
                .peek()
                .is_some_and(|n| !n.trim().is_empty() && !starts.contains(&shape(n)));
        if !cut {
            out.push('\n');
        }
    }
    out
}

/// The first characters of a line as classes (digit `9`, letter `a`,
/// others as they are): `I0706 16:50` is `a9999 99:99`.
fn shape(line: &str) -> String {
    line.chars()
        .take(START_CHARS)
        .map(|c| {
            if c.is_ascii_digit() {
                '9'
            } else if c.is_alphabetic() {
                'a'
            } else {
                c
            }
        })
        .collect()
}

/// Characters of a line's start compared.
const START_CHARS: usize = 8;

/// How the log's lines start: the shapes of lines that follow a line
/// shorter than the width (so certainly a line of their own), seen at
/// least twice.
fn line_starts(text: &str, width: usize) -> std::collections::HashSet<String> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut prev_short = true;
    for line in text.lines() {
        if prev_short && !line.trim().is_empty() {
            *counts.entry(shape(line)).or_default() += 1;
        }
        prev_short = line.chars().count() < width;
    }
    counts
        .into_iter()
        .filter(|(_, c)| *c >= 2)
        .map(|(s, _)| s)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_log_is_joined_at_its_width() {
        let line = "step: 10  loss:  7.9000  memory: 23.45GiB(24.67%)  tps: 1,234  mfu: 12.3%";
        let cut: String = [line, line]
            .iter()
            .flat_map(|l| {
                let c: Vec<char> = l.chars().collect();
                c.chunks(50).map(|p| p.iter().collect::<String>() + "\n").collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(widths(&cut), vec![Width { chars: 50, repeated: true }]);
        assert_eq!(unwrap(&cut, 50), format!("{line}\n{line}\n"));
        // Short lines give no width; a single long one is tried, and joined
        // only where the next line does not start the way lines start.
        assert!(widths("a\nb\nc\n").is_empty());
        assert_eq!(
            widths(&format!("{line}\nshort\n")),
            vec![Width { chars: line.len(), repeated: false }]
        );
        let records = format!("{line}\n{line}x\nstep: 11\nstep: 12\n");
        assert_eq!(unwrap(&records, line.len()), records);
    }
}
