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
    /// A JAX device memory profile (pprof `profile.proto`, gunzipped).
    DeviceMemoryProfile,
    /// A PyTorch `export_memory_timeline` JSON (raw or `[times, sizes]`).
    MemoryTimeline,
    /// A Chrome trace (Kineto `*.pt.trace.json`): its `[memory]` events.
    KinetoTrace,
    /// A Python pickle: a PyTorch memory snapshot (`_dump_snapshot`), or refused by its reader.
    MemorySnapshot,
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
    // Pickles by content (PROTO 2..5), or by name when no bytes are given
    // yet (sources read by slices are sniffed by name first).
    let pickle_name = base.ends_with(".pickle") || base.ends_with(".pkl");
    if oomscope_snapshot::looks_like_pickle(data) || (pickle_name && data.is_empty()) {
        return Sniffed::MemorySnapshot;
    }
    if let Some(runtime) = runtime_kind(base, data) {
        return runtime;
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
    SUFFIXES
        .iter()
        .any(|s| base == *s || base.ends_with(&format!(".{s}")) || base.ends_with(&format!("_{s}")))
}

/// Run-time memory profiles (issue 17), by content; pprof files also by
/// name (`*.prof`, `*.pprof`, as `save_device_memory_profile` users name
/// them) so a damaged one gets an error saying what is wrong with it.
/// Gzipped inputs reach here already expanded by `archive`.
fn runtime_kind(base: &str, data: &[u8]) -> Option<Sniffed> {
    if base.ends_with(".prof") || base.ends_with(".pprof") || oomscope_runtime::is_pprof(data) {
        return Some(Sniffed::DeviceMemoryProfile);
    }
    let head = &data[..data.len().min(64 * 1024)];
    if oomscope_runtime::is_chrome_trace(head) {
        return Some(Sniffed::KinetoTrace);
    }
    let json_name = base.ends_with(".json");
    let starts_as_list_of_lists = head
        .iter()
        .filter(|b| !b.is_ascii_whitespace())
        .take(2)
        .eq(b"[[".iter());
    if (json_name || starts_as_list_of_lists)
        && oomscope_runtime::torch_timeline_form(data).is_some()
    {
        return Some(Sniffed::MemoryTimeline);
    }
    None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dump_companions_are_read_not_errors() {
        for name in [
            "dump/module_0001.jit_f.target_arguments.txt",
            "dump/debug_options",
            "xla_dump/flagfile",
            "run/compile.flagfile",
        ] {
            assert_eq!(
                sniff(name, b"--xla_dump_to=/tmp/d\n"),
                Sniffed::Companion,
                "{name}"
            );
        }
        // log.txt is searched for an error like any text.
        assert_eq!(sniff("run/log.txt", b"step 1\n"), Sniffed::Text);
        assert!(is_companion("run/log.txt"));
        assert!(!is_companion("my_oom.txt"));
    }

    #[test]
    fn images_are_named_not_parsed() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert_eq!(
            sniff("screenshot.png", png),
            Sniffed::Unrecognised("not a file oomscope reads: it looks like a PNG image".into())
        );
    }

    #[test]
    fn text_is_routed_by_content() {
        assert_eq!(
            sniff("anything.log", b"Ran out of memory in memory space hbm."),
            Sniffed::Text
        );
        assert_eq!(sniff("random.bin", &[0u8, 1, 2, 3, 200, 201]), Sniffed::Unrecognised("not a file oomscope reads: binary data that is neither an XProf profile (*.xplane.pb) nor an HloProto (*.hlo.pb)".into()));
    }

    #[test]
    fn runtime_profiles_are_routed_by_content() {
        assert_eq!(
            sniff("x.raw.json", b"[[-1, 1, 512, 0], [5000, 2, 64, 4]]"),
            Sniffed::MemoryTimeline
        );
        assert_eq!(
            sniff(
                "timeline",
                b"[[1, 2], [[0,1,0,0,0,0,0,0,0], [0,2,0,0,0,0,0,0,0]]]"
            ),
            Sniffed::MemoryTimeline
        );
        assert_eq!(
            sniff(
                "w.pt.trace.json",
                b"{\"schemaVersion\": 1, \"traceEvents\": []}"
            ),
            Sniffed::KinetoTrace
        );
        assert_eq!(
            sniff("memory.prof", b"\x0a\x04\x08\x01\x10\x02"),
            Sniffed::DeviceMemoryProfile
        );
        assert_eq!(sniff("notes.json", b"{\"a\": 1}"), Sniffed::Text);
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
        assert_eq!(
            sniff("module_0000.jit_f.after_optimizations.hlo.pb", &[]),
            Sniffed::HloProto
        );
    }
}
