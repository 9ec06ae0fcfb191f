//! Inputs no reader takes and that are not text: well-known binary formats
//! users drop by mistake, and other binary data. Listed; an error says
//! what it looks like when the user named the file itself (inside a
//! dropped folder or archive, scripts and images are normal and skipped
//! quietly).

use super::{Offer, Out, Reader};
use crate::InputFile;
use oomscope_report::InputKind;

pub struct Unreadable;

impl Reader for Unreadable {
    fn name(&self) -> &'static str {
        "unreadable"
    }

    fn recognises(&self, input: &Offer) -> bool {
        what(input.data).is_some()
    }

    fn read(&mut self, file: &InputFile, explicit: bool, out: &mut Out) -> InputKind {
        if explicit {
            if let Some(what) = what(&file.data) {
                out.error(&file.name, format!("{}: {what}", file.name));
            }
        }
        InputKind::Unknown
    }
}

/// Why `data` is not read: it is a known binary format, or binary data.
pub fn what(data: &[u8]) -> Option<String> {
    if let Some(what) = binary_kind(data) {
        return Some(format!("not a file oomscope reads: it looks like {what}"));
    }
    (!is_text(data)).then(|| {
        "not a file oomscope reads: binary data that is neither an XProf profile (*.xplane.pb) nor an HloProto (*.hlo.pb)".to_string()
    })
}

/// Well-known binary formats users drop by mistake, named in the error.
fn binary_kind(data: &[u8]) -> Option<&'static str> {
    const MAGICS: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"%PDF", "a PDF document"),
        (b"\x7fELF", "an executable (ELF)"),
        (b"PK\x03\x04", "a zip archive"),
        (b"\x93NUMPY", "a NumPy array"),
    ];
    MAGICS
        .iter()
        .find(|(m, _)| data.starts_with(m))
        .map(|(_, what)| *what)
}

/// Text if the first 64 KiB hold no NUL and mostly printable UTF-8.
fn is_text(data: &[u8]) -> bool {
    let head = &data[..data.len().min(64 * 1024)];
    if head.contains(&0) {
        return false;
    }
    if head.is_ascii() {
        return ascii_is_text(head);
    }
    chars_are_text(head)
}

/// At most 1% of the characters are replacements of invalid bytes or
/// controls other than whitespace and ESC.
fn chars_are_text(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let bad = text
        .chars()
        .filter(|&c| c == '\u{FFFD}' || (c.is_control() && !c.is_whitespace() && c != '\x1b'))
        .count();
    bad * 100 <= text.chars().count().max(1)
}

/// [`chars_are_text`] of ASCII without decoding characters (every text
/// file of a dump is offered here first): an ASCII byte is one character,
/// a control when below 0x20 or 0x7f, whitespace when \t \n \v \f \r.
fn ascii_is_text(head: &[u8]) -> bool {
    let bad = head
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\t'..=b'\r' | 0x1b)) || b == 0x7f)
        .count();
    bad * 100 <= head.len().max(1)
}

#[cfg(test)]
mod tests {
    use super::{ascii_is_text, chars_are_text, is_text};

    #[test]
    fn ascii_is_judged_as_by_characters_at_every_byte_and_around_the_one_percent() {
        for byte in 0..0x80u8 {
            for (bad, len) in [
                (1, 100),
                (2, 100),
                (1, 99),
                (3, 300),
                (4, 300),
                (1, 1),
                (655, 65_536),
                (656, 65_536),
            ] {
                let mut data = vec![b'a'; len];
                for slot in data.iter_mut().take(bad) {
                    *slot = byte;
                }
                assert_eq!(
                    ascii_is_text(&data),
                    chars_are_text(&data),
                    "byte {byte:#x}, {bad} in {len}"
                );
            }
        }
        assert_eq!(ascii_is_text(b""), chars_are_text(b""));
        // Past 64 KiB nothing counts; a NUL is never text.
        let mut long = vec![b'a'; 64 * 1024];
        long.extend([1u8; 1000]);
        assert!(is_text(&long));
        assert!(!is_text(b"ab\0c"));
        // Not ASCII: read by characters (a C1 control, invalid bytes).
        assert!(!is_text("\u{85}\u{9b}ab".repeat(10).as_bytes()));
        assert!(!is_text(b"\xff\xfe\xfd\xfc"));
    }
}
