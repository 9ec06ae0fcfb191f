//! Deciding what an input is, from its name and its first bytes.
//!
//! Text is routed by content, not by name: users paste logs into files with
//! any name. Binary protobufs have no magic number, so their names decide
//! (`*.xplane.pb`, `*.hlo.pb`, `*.hlo_proto.pb`), with a structural check.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sniffed {
    /// A file of an XLA dump folder (HLO text, buffer assignment, live ranges…).
    DumpText,
    HloProto,
    Xplane,
    /// A Python pickle: a PyTorch memory snapshot (`_dump_snapshot`), or refused by its reader.
    MemorySnapshot,
    /// Any other text: OOM logs and step logs are found by content.
    Text,
    /// Not something oomscope reads; the string says what it looks like.
    Unrecognised(String),
}

pub fn sniff(name: &str, data: &[u8]) -> Sniffed {
    let lower = name.to_ascii_lowercase();
    let base = lower.rsplit('/').next().unwrap_or(&lower);
    if base.ends_with(".xplane.pb") {
        return Sniffed::Xplane;
    }
    if base.ends_with(".hlo.pb") || base.ends_with(".hlo_proto.pb") || base.ends_with(".hloproto") {
        return Sniffed::HloProto;
    }
    // Pickles by content (PROTO 2..5), or by name when no bytes are given
    // yet (sources read by slices are sniffed by name first).
    let pickle_name = base.ends_with(".pickle") || base.ends_with(".pkl");
    if oomscope_snapshot::looks_like_pickle(data) || (pickle_name && data.is_empty()) {
        return Sniffed::MemorySnapshot;
    }
    if let Some(what) = binary_kind(data) {
        return Sniffed::Unrecognised(format!("not a file oomscope reads: it looks like {what}"));
    }
    if !is_text(data) {
        return Sniffed::Unrecognised(
            "not a file oomscope reads: binary data that is neither an XProf profile (*.xplane.pb) nor an HloProto (*.hlo.pb)"
                .into(),
        );
    }
    if oomscope_dump::is_dump_file(name) {
        return Sniffed::DumpText;
    }
    Sniffed::Text
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
    MAGICS.iter().find(|(m, _)| data.starts_with(m)).map(|(_, what)| *what)
}

/// Text if the first 64 KiB hold no NUL and mostly printable UTF-8.
fn is_text(data: &[u8]) -> bool {
    let head = &data[..data.len().min(64 * 1024)];
    if head.contains(&0) {
        return false;
    }
    let text = String::from_utf8_lossy(head);
    let bad = text.chars().filter(|&c| c == '\u{FFFD}' || (c.is_control() && !c.is_whitespace() && c != '\x1b')).count();
    bad * 100 <= text.chars().count().max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_named_not_parsed() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert_eq!(sniff("screenshot.png", png), Sniffed::Unrecognised("not a file oomscope reads: it looks like a PNG image".into()));
    }

    #[test]
    fn text_is_routed_by_content() {
        assert_eq!(sniff("anything.log", b"Ran out of memory in memory space hbm."), Sniffed::Text);
        assert_eq!(sniff("random.bin", &[0u8, 1, 2, 3, 200, 201]), Sniffed::Unrecognised("not a file oomscope reads: binary data that is neither an XProf profile (*.xplane.pb) nor an HloProto (*.hlo.pb)".into()));
    }

    #[test]
    fn pickles_are_routed_by_content_and_name() {
        assert_eq!(sniff("x.bin", b"\x80\x05\x95"), Sniffed::MemorySnapshot);
        assert_eq!(sniff("x.pickle", b""), Sniffed::MemorySnapshot);
        assert_eq!(sniff("x.pkl", b"\x80\x02}q\x00."), Sniffed::MemorySnapshot);
        // Protocol 0/1 pickles are text-like or unknown binary, never snapshots.
        assert_ne!(sniff("x.pickle", b"\x80\x01"), Sniffed::MemorySnapshot);
    }

    #[test]
    fn protobufs_are_routed_by_name() {
        assert_eq!(sniff("d/host.xplane.pb", &[10, 2]), Sniffed::Xplane);
        assert_eq!(sniff("module_0000.jit_f.after_optimizations.hlo.pb", &[]), Sniffed::HloProto);
    }
}
