//! Walking a log line by line and removing what loggers put in front of a
//! message: glog headers, Python/TF timestamps, rank and worker tags,
//! markdown quoting and indentation.

/// Iterates the physical lines of `text` from a byte offset.
#[derive(Clone)]
pub struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(text: &'a str, pos: usize) -> Self {
        Cursor {
            text,
            pos: pos.min(text.len()),
        }
    }

    /// Byte offset of the next line to be returned.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The next line, without its `\n` (and `\r`), and the offset just after it.
    pub fn next_line(&mut self) -> Option<&'a str> {
        if self.pos >= self.text.len() {
            return None;
        }
        let rest = &self.text[self.pos..];
        let (line, advance) = match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(i) => (&rest[..i], i + 1),
            None => (rest, rest.len()),
        };
        self.pos += advance;
        Some(line.strip_suffix('\r').unwrap_or(line))
    }
}

/// Counts lines incrementally as the scan moves forward through the text.
pub struct LineCounter<'a> {
    bytes: &'a [u8],
    pos: usize,
    line_no: u32,
    line_start: usize,
}

impl<'a> LineCounter<'a> {
    pub fn new(text: &'a str) -> Self {
        LineCounter {
            bytes: text.as_bytes(),
            pos: 0,
            line_no: 1,
            line_start: 0,
        }
    }

    /// Moves to `offset` (never backwards) and returns the 1-based line number
    /// and the start offset of the line holding `offset`.
    pub fn locate(&mut self, offset: usize) -> (u32, usize) {
        let offset = offset.min(self.bytes.len());
        if offset > self.pos {
            for nl in memchr::memchr_iter(b'\n', &self.bytes[self.pos..offset]) {
                self.line_no = self.line_no.saturating_add(1);
                self.line_start = self.pos + nl + 1;
            }
            self.pos = offset;
        }
        (self.line_no, self.line_start)
    }
}

/// The start of the line `n` lines before the line starting at `at`, and
/// how many lines back that is (fewer at the text's start).
pub fn lines_before(text: &str, at: usize, n: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let mut at = at.min(text.len());
    let mut back = 0usize;
    while at > 0 && back < n {
        at = memchr::memrchr(b'\n', &bytes[..at - 1]).map_or(0, |i| i + 1);
        back += 1;
    }
    (at, back)
}

/// End offset (exclusive, before `\n`) of the line containing `offset`.
pub fn line_end(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    match memchr::memchr(b'\n', &text.as_bytes()[offset..]) {
        Some(i) => offset + i,
        None => text.len(),
    }
}

/// The line that ends just before offset `at` (a line start), without its
/// `\r`; empty at the start of the text.
pub fn line_before(text: &str, at: usize) -> &str {
    let at = floor_boundary(text, at);
    if at == 0 {
        return "";
    }
    let end = at - usize::from(text.as_bytes()[at - 1] == b'\n');
    let start = memchr::memrchr(b'\n', &text.as_bytes()[..end]).map_or(0, |i| i + 1);
    let line = &text[start..end];
    line.strip_suffix('\r').unwrap_or(line)
}

/// Largest char boundary of `text` that is `<= at`.
pub fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Smallest char boundary of `text` that is `>= at`.
pub fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The message part of a log line: leading whitespace, markdown quote marks
/// and `# ` comment marks,
/// glog headers (`E1121 12:52:43.843812 6049 file.cc:3582] `), Python/TF
/// timestamps (`2025-01-05 09:48:28.754214: I file.cc:501] `,
/// `[2026-04-26 14:38:11] `), rank/worker tags (`[rank3]:`, `(worker pid=12)`,
/// `[1,0]<stderr>:`) removed, repeatedly, in any order.
pub fn payload(line: &str) -> &str {
    payload_and_origin(line).0
}

/// [`payload`], and whether a logger header (glog or timestamp) was removed:
/// the same error is typically printed once by the logger and once by the
/// exception that carries it.
pub fn payload_and_origin(line: &str) -> (&str, bool) {
    let mut s = line;
    let mut logged = false;
    for _ in 0..8 {
        let before = s.len();
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix('>').or_else(|| s.strip_prefix("# ")) {
            s = rest;
        } else if let Some(rest) = strip_glog(s).or_else(|| strip_timestamp(s)) {
            s = rest;
            logged = true;
        } else if let Some(rest) = strip_tag(s) {
            s = rest;
        }
        if s.len() == before {
            break;
        }
    }
    (s.trim(), logged)
}

/// What a logger or a quote puts in front of a line (`> `, glog and
/// timestamp headers, rank and worker tags), removed with the one space that
/// separates it from the text; unlike [`payload`], the text itself is kept
/// exactly (a hard-wrapped continuation may start with a space that belongs
/// to the message).
pub fn strip_frame(line: &str) -> &str {
    let mut s = line;
    for _ in 0..8 {
        let t = s.trim_start();
        let rest = t
            .strip_prefix('>')
            .or_else(|| strip_glog(t))
            .or_else(|| strip_timestamp(t))
            .or_else(|| strip_tag(t));
        match rest {
            Some(r) => s = r.strip_prefix(' ').unwrap_or(r),
            None => break,
        }
    }
    s
}

/// The severity letter (`I`, `W`, `E`, `F`) of the glog header in front of
/// a line, behind any quote, rank tag or timestamp; `None` without one. When
/// a logger re-logs another's lines (two headers), the inner one is the
/// message's own.
pub fn glog_severity(line: &str) -> Option<u8> {
    let mut s = line;
    let mut severity = None;
    for _ in 0..8 {
        let t = s.trim_start();
        if let Some(r) = strip_glog(t) {
            severity = t.as_bytes().first().copied();
            s = r;
        } else if let Some(r) = t.strip_prefix('>').or_else(|| strip_tag(t)) {
            s = r;
        } else if let Some(r) = strip_timestamp(t) {
            // `2025-01-05 09:48:28.754214: I file.cc:501] `: the level is inside.
            let level = t[..t.len() - r.len()].trim_end().as_bytes();
            if let Some(i) = level
                .iter()
                .position(|b| *b == b':')
                .filter(|_| level.ends_with(b"]"))
            {
                let after = level[i + 1..].trim_ascii_start();
                if after.len() > 2
                    && matches!(after[0], b'I' | b'W' | b'E' | b'F')
                    && after[1] == b' '
                {
                    severity = Some(after[0]);
                }
            }
            s = r;
        } else {
            break;
        }
    }
    severity
}

/// `I0706 16:50:25.683909 140110937163584 max_utils.py:783] ` and the
/// `E0000 00:00:1795266283.252114   17791 common_lib.cc:906] ` variant.
fn strip_glog(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    if b.len() < 8 || !matches!(b[0], b'I' | b'W' | b'E' | b'F') {
        return None;
    }
    // TensorFlow ≤ 1.2 logged without a date: `W tensorflow/core/x.cc:217] `.
    if b[1] == b' ' {
        let rest = after_source_location(s, 2)?;
        let location = &s[2..s.len() - rest.len()];
        return (!location.trim_end().contains(char::is_whitespace)).then_some(rest);
    }
    if !b[1..5].iter().all(u8::is_ascii_digit) || b[5] != b' ' {
        return None;
    }
    after_source_location(s, 6)
}

/// `2025-01-05 09:48:28.754214: I external/xla/...cc:501] ` (TF/absl) and
/// `[2026-04-26 14:38:11] ` (bracketed); `2024-01-01 10:00:00,123 ` loggers too.
fn strip_timestamp(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    if b.first() == Some(&b'[')
        && b.len() > 12
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b'-'
    {
        let close = memchr::memchr(b']', &b[..b.len().min(40)])?;
        return Some(&s[close + 1..]);
    }
    if b.len() < 20 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    // Date, then `[ T]HH:MM:SS[.,frac][Z][:]` and the spaces after it; a
    // message starting with digits or `T` (`1. Size:`, `Total`) is not eaten.
    let mut i = 10;
    if !matches!(b[i], b' ' | b'T') {
        return None;
    }
    i += 1;
    let time_start = i;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b':') && i - time_start < 8 {
        i += 1;
    }
    if i - time_start < 5 {
        return None;
    }
    if i < b.len() && matches!(b[i], b'.' | b',') {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < b.len() && b[i] == b'Z' {
        i += 1;
    }
    if i < b.len() && b[i] == b':' {
        i += 1;
    }
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    let rest = &s[i..];
    let rest_b = rest.as_bytes();
    if rest_b.len() > 2 && matches!(rest_b[0], b'I' | b'W' | b'E' | b'F') && rest_b[1] == b' ' {
        if let Some(r) = after_source_location(rest, 2) {
            return Some(r);
        }
    }
    Some(rest)
}

/// Skips `... file.cc:123] ` starting the search at `from`, within 200 bytes.
fn after_source_location(s: &str, from: usize) -> Option<&str> {
    let b = s.as_bytes();
    let window = &b[from.min(b.len())..b.len().min(from + 200)];
    let close = from + memchr::memchr(b']', window)?;
    // The part before `]` must end in `:digits`.
    let mut j = close;
    while j > from && b[j - 1].is_ascii_digit() {
        j -= 1;
    }
    if j == close || j == from || b[j - 1] != b':' {
        return None;
    }
    Some(&s[close + 1..])
}

/// `[rank3]:`, `[1,0]<stderr>:`, `(worker pid=123)`, `(VllmWorker rank=1 pid=254)`.
fn strip_tag(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    match b.first()? {
        b'[' => {
            let close = memchr::memchr(b']', &b[..b.len().min(48)])?;
            let inner = &s[1..close];
            // `[3]`, `[1,0]` (mpirun), not a shape's dimensions (`[1,16,4,128]`, `[]`).
            let is_rank = inner.starts_with("rank")
                || (!inner.is_empty()
                    && inner.len() <= 9
                    && inner.matches(',').count() <= 1
                    && inner.chars().all(|c| c.is_ascii_digit() || c == ','));
            // A tag ends the prefix: `[3]: `, `[3] `, `[1,0]<stderr>:`; a
            // shape's dimensions go on (`[24576], bf16[...]` in a cut row).
            let ends_prefix = matches!(b.get(close + 1), None | Some(b':' | b' ' | b'\t' | b'<'));
            if !is_rank || !ends_prefix {
                return None;
            }
            let mut rest = &s[close + 1..];
            for tag in ["<stderr>", "<stdout>"] {
                rest = rest.strip_prefix(tag).unwrap_or(rest);
            }
            Some(rest.strip_prefix(':').unwrap_or(rest))
        }
        b'(' => {
            let close = memchr::memchr(b')', &b[..b.len().min(80)])?;
            if !s[..close].contains("pid=") {
                return None;
            }
            Some(&s[close + 1..])
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_log_prefixes() {
        assert_eq!(
            payload("E1121 12:52:43.843812 6049 file.cc:3582] Hello"),
            "Hello"
        );
        assert_eq!(
            payload("E0000 00:00:1795266283.252114   17791 common_lib.cc:906] X"),
            "X"
        );
        assert_eq!(
            payload("2025-01-05 09:48:28.754302: I external/xla/xla/tsl/framework/bfc_allocator.cc:1058] BFCAllocator dump"),
            "BFCAllocator dump"
        );
        assert_eq!(
            payload("[rank3]: torch.OutOfMemoryError: x"),
            "torch.OutOfMemoryError: x"
        );
        assert_eq!(
            payload("(VllmWorker rank=1 pid=254) torch.OutOfMemoryError"),
            "torch.OutOfMemoryError"
        );
        assert_eq!(payload("> > [1,0]<stderr>:  Size: 8.00M"), "Size: 8.00M");
        assert_eq!(
            payload("[2026-04-26 14:38:11] Rank 0 scheduler is dead."),
            "Rank 0 scheduler is dead."
        );
        assert_eq!(payload("     Shape: f32[4]{0}"), "Shape: f32[4]{0}");
        assert_eq!(
            payload("I tensorflow/core/common_runtime/bfc_allocator.cc:643] Bin (256): x"),
            "Bin (256): x"
        );
        assert_eq!(payload("I see [rank:3] here"), "I see [rank:3] here");
        assert_eq!(payload("[3] x"), "x");
        assert_eq!(payload("[24576], bf16[8]"), "[24576], bf16[8]");
        assert_eq!(
            payload("Interesting [things]: here"),
            "Interesting [things]: here"
        );
    }

    #[test]
    fn counts_lines() {
        let text = "a\nb\nccc\nd";
        let mut c = LineCounter::new(text);
        assert_eq!(c.locate(0), (1, 0));
        assert_eq!(c.locate(5), (3, 4));
        assert_eq!(c.locate(9), (4, 8));
    }
}
