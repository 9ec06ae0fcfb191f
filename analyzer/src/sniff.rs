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
    /// Any other text: OOM logs and step logs are found by content.
    Text,
    /// A file an XLA dump folder holds beside the modules (the compiler's
    /// flags and target arguments): read, nothing to analyse, not a problem.
    Companion,
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
    if is_companion(name) && base != "log.txt" {
        return Sniffed::Companion;
    }
    Sniffed::Text
}

/// Files that sit beside the modules of an XLA dump or a compile run and
/// describe how it was made: `*target_arguments.txt`, `debug_options`,
/// `flagfile`, and the run's `log.txt` (still searched for an error, but
/// without one it is not a problem).
pub fn is_companion(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let base = lower.rsplit('/').next().unwrap_or(&lower);
    const SUFFIXES: [&str; 6] = [
        "target_arguments.txt",
        "debug_options",
        "debug_options.txt",
        "flagfile",
        "flagfile.txt",
        "log.txt",
    ];
    SUFFIXES.iter().any(|s| base == *s || base.ends_with(&format!(".{s}")) || base.ends_with(&format!("_{s}")))
}

/// Well-known binary formats users drop by mistake, named in the error.
fn binary_kind(data: &[u8]) -> Option<&'static str> {
    const MAGICS: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"%PDF", "a PDF document"),
        (b"\x7fELF", "an executable (ELF)"),
        (b"\x80\x02", "a Python pickle"),
        (b"\x80\x04", "a Python pickle"),
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
    fn dump_companions_are_read_not_errors() {
        for name in ["dump/module_0001.jit_f.target_arguments.txt", "dump/debug_options", "xla_dump/flagfile", "run/compile.flagfile"] {
            assert_eq!(sniff(name, b"--xla_dump_to=/tmp/d\n"), Sniffed::Companion, "{name}");
        }
        // log.txt is searched for an error like any text.
        assert_eq!(sniff("run/log.txt", b"step 1\n"), Sniffed::Text);
        assert!(is_companion("run/log.txt"));
        assert!(!is_companion("my_oom.txt"));
    }

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
    fn protobufs_are_routed_by_name() {
        assert_eq!(sniff("d/host.xplane.pb", &[10, 2]), Sniffed::Xplane);
        assert_eq!(sniff("module_0000.jit_f.after_optimizations.hlo.pb", &[]), Sniffed::HloProto);
    }
}
