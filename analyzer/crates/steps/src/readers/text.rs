//! Pieces of log lines every reader uses: colour codes, rank prefixes,
//! devices, step numbers, `key: value unit` pairs and numbers.

use oomscope_report::units::{binary_multiplier, scale};
use std::borrow::Cow;

/// Removes ANSI escape sequences (`ESC [ ... m` and other CSI sequences) and
/// the bare `[31m` remnants left when the ESC byte was lost in copying.
pub(super) fn strip_ansi(line: &str) -> Cow<'_, str> {
    let bytes = line.as_bytes();
    let has_code = bytes.iter().enumerate().any(|(i, &b)| {
        b == 0x1b || (b == b'[' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
    });
    if !has_code {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let rest = &line[i..];
        if c == '\u{1b}' {
            if rest[1..].starts_with('[') {
                chars.next();
                // Parameters then one final byte in 0x40..=0x7e.
                for (_, d) in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&d) {
                        break;
                    }
                }
            }
            continue;
        }
        if c == '[' {
            let body: &str = &rest[1..];
            let len = body
                .find(|ch: char| !(ch.is_ascii_digit() || ch == ';'))
                .unwrap_or(body.len());
            if len > 0 && len <= 8 && body[len..].starts_with('m') {
                for _ in 0..=len {
                    chars.next();
                }
                continue;
            }
        }
        out.push(c);
    }
    Cow::Owned(out)
}

/// `[rank3]:rest` (torchrun) or `[default3]:rest` → ("rank 3", rest).
/// The tag may follow what a launcher or logger puts first (a Ray worker
/// tag, a timestamp): it is looked for in the first 160 bytes.
pub(super) fn split_rank_prefix(line: &str) -> (Option<String>, &str) {
    let head = &line[..floor_char_boundary(line, 160)];
    for prefix in ["[rank", "[default"] {
        let mut from = 0;
        while let Some(at) = head[from..].find(prefix) {
            let after = &line[from + at + prefix.len()..];
            if let Some((n, rest)) = parse_uint(after) {
                if let Some(rest) = rest.strip_prefix("]:") {
                    return (Some(format!("rank {n}")), rest);
                }
            }
            from += at + prefix.len();
        }
    }
    (None, line)
}

/// Largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The device a print names: `cuda:1` (also written `GPU 1`), `xla:0`, `TPU_3`.
pub(super) fn find_device(line: &str) -> Option<String> {
    for (prefix, name) in [
        ("cuda:", "cuda:"),
        ("GPU ", "cuda:"),
        ("xla:", "xla:"),
        ("TPU_", "TPU_"),
    ] {
        if let Some(pos) = line.find(prefix) {
            if let Some((n, _)) = parse_uint(&line[pos + prefix.len()..]) {
                return Some(format!("{name}{n}"));
            }
        }
    }
    None
}

/// The step number of a line: `step: N`, `step N`, `Step N:`, `step=N`,
/// `iter N`, `iteration: N`. Returns (step, is `validate step`, text after it).
pub(super) fn find_step(line: &str) -> Option<(u64, bool, &str)> {
    let bytes = line.as_bytes();
    for word in ["step", "iteration", "iter"] {
        let mut from = 0;
        while let Some(pos) = find_ascii_ci(bytes, word.as_bytes(), from) {
            from = pos + word.len();
            let before_ok = pos == 0
                || !bytes
                    .get(pos - 1)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
            if !before_ok {
                continue;
            }
            // `pos` starts an ASCII match, so it is a char boundary.
            let after = line.get(pos + word.len()..)?;
            let sep_len = after.len() - after.trim_start_matches([' ', ':', '=', '\t', '#']).len();
            let after = &after[sep_len..];
            if sep_len == 0 {
                continue;
            }
            if let Some((n, rest)) = parse_uint(after) {
                // `step 3/100`: fine; `step 1.5`: not a step.
                if rest.starts_with('.') && rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
                    continue;
                }
                let before = line[..pos].trim_end().as_bytes();
                let validation = ["validate", "validation"].iter().any(|w| {
                    before.len() >= w.len()
                        && before[before.len() - w.len()..].eq_ignore_ascii_case(w.as_bytes())
                });
                return Some((n, validation, rest));
            }
        }
    }
    None
}

/// Position of an ASCII `needle` in `hay` at or after `from`, ignoring ASCII case.
pub(super) fn find_ascii_ci(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let last = hay.len().checked_sub(needle.len())?;
    (from..=last).find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

/// One `key: value unit (pct%)` found in a line.
pub(super) struct SizeKv {
    pub(super) key: String,
    pub(super) bytes: u64,
    pub(super) unit: String,
    pub(super) pct: Option<f64>,
}

/// Every `key: <number> <byte unit>` (or `key=...`) in a line, with an optional
/// `(NN.NN%)` right after the unit. The key is up to four words before the
/// separator, stopping at numbers, units and other separators.
pub(super) fn scan_sizes(line: &str) -> Vec<SizeKv> {
    let mut out = Vec::new();
    for (sep_pos, _) in line.match_indices([':', '=']) {
        let Some(after) = line.get(sep_pos + 1..) else {
            continue;
        };
        let Some((value, rest)) = parse_float(after.trim_start()) else {
            continue;
        };
        let rest_trim = rest.trim_start();
        let unit_len = rest_trim
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest_trim.len());
        let unit = &rest_trim[..unit_len];
        if unit.is_empty() {
            continue;
        }
        let Some(mult) = binary_multiplier(unit) else {
            continue;
        };
        let after_unit = rest_trim[unit_len..].trim_start();
        let pct = after_unit
            .strip_prefix('(')
            .and_then(|p| parse_float(p.trim_start()))
            .and_then(|(v, r)| r.trim_start().starts_with('%').then_some(v));
        let key = key_before(&line[..sep_pos]);
        if key.is_empty() {
            continue;
        }
        out.push(SizeKv {
            key,
            bytes: scale(value, mult),
            unit: unit.to_string(),
            pct,
        });
    }
    out
}

/// The key words right before a `:`/`=` separator.
pub(super) fn key_before(prefix: &str) -> String {
    let segment_start = prefix
        .rfind([',', ';', '|', '\t', '[', ']', '{', '}', '"', '\''])
        .map_or(0, |p| p + 1);
    let segment = &prefix[segment_start..];
    let mut words: Vec<&str> = Vec::new();
    for w in segment.split(' ').rev() {
        if w.is_empty() {
            if words.is_empty() {
                continue;
            }
            break; // two spaces separate torchtitan's fields
        }
        let is_unit = binary_multiplier(w).is_some();
        let numeric = w.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+');
        if is_unit || numeric || w.contains([':', '=']) || words.len() == 4 {
            break;
        }
        words.push(w);
    }
    words.reverse();
    words.join(" ")
}

/// `Memory Allocated` → `memory_allocated`; `torch.cuda.memory_reserved()` → `memory_reserved`.
pub(super) fn metric_name(key: &str) -> String {
    let k = key.trim().to_ascii_lowercase();
    let k = k.strip_prefix("torch.cuda.").unwrap_or(&k);
    let mut out = String::new();
    for c in k.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

/// A leading unsigned decimal number (`12`, `1.5`, `1e3`, `.5`); the rest of the text.
pub(super) fn parse_float(s: &str) -> Option<(f64, &str)> {
    let bytes = s.as_bytes();
    let mut end = 0;
    let mut digits = 0;
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
        digits += 1;
    }
    if end < bytes.len() && bytes[end] == b'.' {
        end += 1;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
            digits += 1;
        }
    }
    if digits == 0 || digits > 40 {
        return None;
    }
    if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
        let mut e = end + 1;
        if e < bytes.len() && (bytes[e] == b'+' || bytes[e] == b'-') {
            e += 1;
        }
        let start = e;
        while e < bytes.len() && bytes[e].is_ascii_digit() {
            e += 1;
        }
        if e > start {
            end = e;
        }
    }
    let v: f64 = s[..end].parse().ok()?;
    v.is_finite().then_some((v, &s[end..]))
}

/// A leading unsigned integer that fits in u64; the rest of the text.
pub(super) fn parse_uint(s: &str) -> Option<(u64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    let v: u64 = s[..end].parse().ok()?;
    Some((v, &s[end..]))
}
