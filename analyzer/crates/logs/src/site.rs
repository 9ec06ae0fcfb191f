//! Where a keyword was found, what a parser makes of it, and the small regex
//! helpers the parsers share.

use crate::event::{parse_size, Raw, Size};
use crate::lines::{floor_boundary, payload, payload_and_origin, strip_frame, Cursor};
use regex::{Captures, Regex};

/// A size as the tools print it: `25.64G`, `36.00 MiB`, `0B`, `0 bytes`.
pub const SIZE: &str = r"(\d+(?:\.\d+)?\s?(?:[KMGTPE]i?B|[KMGTPE]|B|bytes))\b";

/// Compiles a pattern in which `SIZE` stands for [`SIZE`]. Patterns are
/// constants of this crate (tests compile every one of them).
pub fn rx(pattern: &str) -> Regex {
    Regex::new(&pattern.replace("SIZE", SIZE)).expect("constant pattern")
}

/// Declares a lazily compiled regex.
macro_rules! lazy_regex {
    ($name:ident, $pattern:expr) => {
        fn $name() -> &'static regex::Regex {
            static CELL: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
            CELL.get_or_init(|| crate::site::rx($pattern))
        }
    };
}
pub(crate) use lazy_regex;

/// Capture group `i` parsed as a size (a unit is required).
pub fn cap_size(c: &Captures, i: usize) -> Option<Size> {
    c.get(i).and_then(|m| parse_size(m.as_str(), false))
}

/// Capture group `i` parsed as a plain byte count.
pub fn cap_bytes(c: &Captures, i: usize) -> Option<Size> {
    c.get(i).and_then(|m| parse_size(m.as_str(), true))
}

/// First capture of `re` in `text`, as a size.
pub fn find_size(re: &Regex, text: &str) -> Option<Size> {
    re.captures(text).and_then(|c| cap_size(&c, 1))
}

/// A line at least this long may have been cut by a terminal.
pub(crate) const MIN_CUT_LINE: usize = 40;
/// Cut pieces skipped after one line.
pub(crate) const MAX_CONTINUATIONS: usize = 8;

/// The piece of a cut line: not a line of its own, and no new message.
pub(crate) fn is_continuation(line: &str) -> bool {
    !crate::normalize::starts_own_line(line) && !crate::keywords::has_message_start(line)
}

/// Bytes of context kept before and after a keyword for the headline.
const BEFORE: usize = 2048;
const AFTER: usize = 8192;

/// A keyword occurrence.
pub struct Site<'a> {
    pub text: &'a str,
    pub line_start: usize,
    pub line_end: usize,
    pub anchor: usize,
}

impl<'a> Site<'a> {
    /// The anchor's line around the keyword, without log prefixes (bounded).
    pub fn head(&self) -> &'a str {
        self.head_and_origin().0
    }

    /// [`Site::head`] and whether the line carried a logger header.
    pub fn head_and_origin(&self) -> (&'a str, bool) {
        let from = floor_boundary(
            self.text,
            self.anchor.saturating_sub(BEFORE).max(self.line_start),
        );
        let to = floor_boundary(self.text, (self.anchor + AFTER).min(self.line_end));
        payload_and_origin(&self.text[from..to.max(from)])
    }

    /// The head from the keyword on.
    pub fn after_anchor(&self) -> &'a str {
        let to = floor_boundary(self.text, (self.anchor + AFTER).min(self.line_end));
        &self.text[self.anchor..to.max(self.anchor)]
    }

    /// Offset of the line after the anchor's line.
    pub fn next_line(&self) -> usize {
        (self.line_end + 1).min(self.text.len())
    }

    /// The head joined with up to `max_lines` following lines, as `glue`
    /// says: [`Glue::HardWrap`] appends each line as it is (less the frame a
    /// logger or a quote puts in front of it), [`Glue::Space`] appends its
    /// payload after a space. Skips blank lines; stops at a line holding
    /// another keyword or a traceback line.
    pub fn joined(&self, max_lines: usize, glue: Glue) -> String {
        self.joined_to(max_lines, glue).0
    }

    /// [`Site::joined`], and the offset after the last line joined.
    pub fn joined_to(&self, max_lines: usize, glue: Glue) -> (String, usize) {
        self.joined_from(self.head().to_string(), max_lines, glue, false)
    }

    /// [`Site::joined_to`] starting from `head`. With `wrapped_keywords`, a
    /// line holding a keyword is still joined as the rest of a hard-wrapped
    /// line when it cannot start a line of its own (no logger frame, no
    /// report line) and the line before it was long enough to have been cut:
    /// a wrap can fall just before or inside a keyword the message itself
    /// holds (`TensorCore Hbm usage: X, Sparse` / `Core Hbm usage Y, ...`).
    /// Callers keep such a join only if it completes their message.
    fn joined_from(
        &self,
        head: String,
        max_lines: usize,
        glue: Glue,
        wrapped_keywords: bool,
    ) -> (String, usize) {
        let first = self.first_line();
        let rule = Continues {
            wrapped_keywords,
            ..Continues::default()
        };
        let lines = self.continuation(self.next_line(), first, max_lines, glue, &rule);
        // Mixed: a line as wide as the widest was cut by a terminal (joined
        // as it is), a shorter one was wrapped at a word (joined with a space).
        let width = |l: &str| l[..floor_boundary(l, AFTER)].chars().count();
        let widest = lines
            .iter()
            .map(|l| width(l.line))
            .chain([width(first)])
            .max()
            .unwrap_or(0);
        let cut_at = |l: &str| widest >= MIN_CUT_LINE && width(l) == widest;
        let mut out = head;
        let mut prev = first;
        let mut end = self.next_line();
        for l in lines {
            let hard = match glue {
                Glue::HardWrap => true,
                Glue::Space => false,
                Glue::Mixed => cut_at(prev),
            };
            glue_piece(&mut out, prev, &l, hard);
            prev = l.line;
            end = l.after;
        }
        (out, end)
    }

    /// The anchor's whole line (without its line break).
    fn first_line(&self) -> &'a str {
        let first = &self.text[self.line_start..self.line_end];
        first.strip_suffix('\r').unwrap_or(first)
    }

    /// The lines from offset `from` on (at most `max_lines`) that continue a
    /// message whose last line so far is `before`, as `rule` says, and as a
    /// join with `glue` would take them. Stops at a line holding another
    /// message's keyword or a traceback line.
    pub(crate) fn continuation(
        &self,
        from: usize,
        before: &str,
        max_lines: usize,
        glue: Glue,
        rule: &Continues<'_>,
    ) -> Vec<Piece<'a>> {
        let mut lines = Vec::new();
        let mut prev_cut = may_be_cut(before);
        let mut cur = Cursor::new(self.text, from);
        for _ in 0..max_lines {
            let Some(line) = cur.next_line() else { break };
            let bounded = &line[..floor_boundary(line, AFTER)];
            let p = payload(bounded);
            // (Even when the keyword starts it: the caller accepts the join
            // only if it completes the message.)
            let rest_of_cut_line = rule.wrapped_keywords
                && glue == Glue::HardWrap
                && prev_cut
                && !crate::normalize::starts_own_line(bounded);
            let own_keyword = rule.into.iter().any(|k| bounded.contains(k));
            if (crate::keywords::has_message_start(bounded) && !rest_of_cut_line && !own_keyword)
                || p.starts_with("File \"")
                || p.starts_with("Traceback")
            {
                break;
            }
            if p.is_empty() {
                if rule.blank_ends {
                    break;
                }
                continue;
            }
            prev_cut = may_be_cut(line);
            lines.push(Piece {
                line,
                bounded,
                after: cur.pos(),
            });
        }
        lines
    }

    /// The headline of a one-line message, read by `matches`: the anchor's
    /// line alone, else joined with up to two following lines cut by a hard
    /// wrap, else by a soft one. Returns the text and the offset where the
    /// lines after it start.
    pub fn headline(&self, matches: impl Fn(&str) -> bool) -> Option<(String, usize)> {
        let head = self.head();
        if matches(head) {
            return Some((head.to_string(), self.next_line()));
        }
        for n in 1..=2 {
            for glue in [Glue::HardWrap, Glue::Space] {
                let (text, end) = self.joined_from(head.to_string(), n, glue, true);
                if matches(&text) {
                    return Some((text, end));
                }
            }
        }
        // The rest of a cut line that looks like a logger's tag (`[4096] and
        // type float` after `tensor of shape `): joined as it is, kept only if
        // it completes the message.
        let first = self.first_line();
        if may_be_cut(first) {
            let mut cur = Cursor::new(self.text, self.next_line());
            let numeric_tag = |l: &str| {
                l.strip_prefix('[')
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            };
            if let Some(next) = cur
                .next_line()
                .filter(|l| numeric_tag(l) && !crate::keywords::has_message_start(l))
            {
                let next = &next[..floor_boundary(next, AFTER)];
                let text = format!(
                    "{head}{}{}",
                    &first[first.trim_end().len()..],
                    next.trim_end()
                );
                if matches(&text) {
                    return Some((text, cur.pos()));
                }
            }
        }
        // The wrap fell before the keyword: the message starts on the line
        // before (`Allocator (GPU_1_bf` / `c) ran out of memory ...`).
        let before = self.cut_line_before()?;
        for n in 0..=2 {
            let (text, end) = self.joined_from(before.clone(), n, Glue::HardWrap, true);
            if matches(&text) {
                return Some((text, end.max(self.next_line())));
            }
        }
        None
    }

    /// The text around the message for telling who printed it (markers such
    /// as `Bad StatusOr access`): the head, or the head joined to the cut
    /// line before it when a wrap fell before the keyword.
    pub fn context(&self) -> String {
        self.cut_line_before()
            .unwrap_or_else(|| self.head().to_string())
    }

    /// The previous line's payload joined with this line as a terminal cut
    /// them, when this line can be the rest of that one: the previous line
    /// is long enough to have been cut, and this one starts with no logger
    /// frame or report line (the caller keeps the join only if it completes
    /// the message).
    fn cut_line_before(&self) -> Option<String> {
        if self.line_start == 0 {
            return None;
        }
        let line = &self.text[self.line_start..self.line_end];
        let line = line.strip_suffix('\r').unwrap_or(line);
        let prev_end = self.line_start - 1;
        // A terminal's line is short: a longer previous line is no wrap.
        let window = prev_end.saturating_sub(BEFORE);
        let prev_start = match memchr::memrchr(b'\n', &self.text.as_bytes()[window..prev_end]) {
            Some(i) => window + i + 1,
            None if window == 0 => 0,
            None => return None,
        };
        let prev = &self.text[prev_start..prev_end];
        let prev = prev.strip_suffix('\r').unwrap_or(prev);
        if !may_be_cut(prev) || crate::normalize::starts_own_line(line) {
            return None;
        }
        // Keep a space the wrap left at the end of the previous line.
        let kept = prev.trim_start();
        let p = payload(kept);
        let tail = &kept[kept.trim_end().len()..];
        let to = floor_boundary(self.text, (self.anchor + AFTER).min(self.line_end));
        Some(format!(
            "{p}{tail}{}",
            strip_frame(&self.text[self.line_start..to.max(self.line_start)])
        ))
    }
}

/// Whether a line is long enough for a terminal to have cut it (counted
/// over a bounded prefix: only the threshold matters).
pub fn may_be_cut(line: &str) -> bool {
    let head = &line[..floor_boundary(line, 4 * MIN_CUT_LINE)];
    head.chars().count() >= MIN_CUT_LINE
}

/// Which lines after its first one a message continues into.
#[derive(Clone, Copy, Default)]
pub(crate) struct Continues<'k> {
    /// Keywords the message itself prints on a later line: a line holding
    /// one continues the message although it holds a keyword (E1001's
    /// numbers line holds `Scoped allocation`, which is also a message of
    /// its own when quoted alone).
    pub into: &'k [&'k str],
    /// A blank line ends the message (else it is skipped).
    pub blank_ends: bool,
    /// See [`Site::joined_from`].
    pub wrapped_keywords: bool,
}

/// A line a message continues into: the physical line, its bounded text,
/// and the offset after it.
pub(crate) struct Piece<'a> {
    pub line: &'a str,
    pub bounded: &'a str,
    pub after: usize,
}

/// Appends `piece` (the line after `prev`) to a joined message: as a
/// terminal cut it (`hard`: as it is, less the frame a logger or a quote
/// puts in front of it, with a space the wrap left at the end of `prev`),
/// else as wrapped at a word (its payload after a space).
pub(crate) fn glue_piece(out: &mut String, prev: &str, piece: &Piece<'_>, hard: bool) {
    if hard {
        out.push_str(&prev[prev.trim_end().len()..]);
        out.push_str(strip_frame(piece.bounded).trim_end());
    } else {
        out.push(' ');
        out.push_str(payload(piece.bounded));
    }
}

/// How the lines of a wrapped message are joined.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Glue {
    /// Cut by a terminal at a column: the pieces join as they are.
    HardWrap,
    /// Wrapped at words (by a user, an editor): the pieces join with a space.
    Space,
    /// Both: lines as wide as the widest were cut by a terminal, shorter
    /// ones were wrapped at words (a message its author wrapped, then
    /// printed through a narrower terminal).
    Mixed,
}

/// What a parser made of a keyword occurrence.
pub enum Outcome {
    /// An error; the scan resumes at the offset given.
    Event(Box<Raw>, usize),
    /// A recognised message that is not a failure (e.g. BFC "not a failure").
    Ignore(usize),
    /// Not one of the messages this parser knows.
    NoMatch,
}
