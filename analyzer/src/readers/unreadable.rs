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
    let text = String::from_utf8_lossy(head);
    let bad = text
        .chars()
        .filter(|&c| c == '\u{FFFD}' || (c.is_control() && !c.is_whitespace() && c != '\x1b'))
        .count();
    bad * 100 <= text.chars().count().max(1)
}
