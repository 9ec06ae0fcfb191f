//! The readers: one per input format, behind one interface ([`Reader`]).
//! The facade ([`crate::analyze_inputs`]) offers each input to the readers
//! of [`readers`] in order; the first that recognises it reads it.
//!
//! A reader says how it recognises its input (its name and first bytes),
//! whether it needs the whole input or reads it by slices ([`Access`]), and
//! what it adds to the report: when it reads an input, and once every input
//! is read ([`Reader::finish`]: what needs several inputs together, as the
//! files of one dump or the profiles of one run). The decoding itself stays
//! in the format's crate (`oomscope-xla`, `-dump`, `-logs`, ...); a reader
//! is the few lines that join that crate to the facade's inputs and report.
//!
//! Adding a format: a module here implementing [`Reader`], and one line in
//! [`readers`], placed by precedence.

mod companion;
mod device_profile;
mod dump;
mod hlo_proto;
mod kineto;
mod memory_timeline;
mod snapshot;
mod text;
mod unreadable;
mod xplane;

use crate::{InputFile, Progress, ReadAt};
use oomscope_report::program::HeapProgram;
use oomscope_report::{InputError, InputKind, Report};

/// Every reader, in the order inputs are offered to them: names that decide
/// (profiles, HloProtos) before contents, binary formats before the checks
/// that a file is text, the catch-all text reader last. `finish` runs in
/// the same order, so the text reader, last, sees everything the others
/// added. A fresh list per analysis: readers keep what they gather.
pub fn readers() -> Vec<Box<dyn Reader>> {
    vec![
        Box::new(xplane::Xplane),
        Box::new(hlo_proto::HloProto::default()),
        Box::new(snapshot::Snapshot),
        Box::new(device_profile::DeviceProfile::default()),
        Box::new(kineto::Kineto),
        Box::new(memory_timeline::MemoryTimeline),
        Box::new(unreadable::Unreadable),
        Box::new(dump::Dump::default()),
        Box::new(companion::Companion),
        Box::new(text::Text::default()),
    ]
}

/// How a reader takes its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The whole input in memory.
    Whole,
    /// Random access by slices ([`ReadAt`]); a file given whole is read
    /// from memory the same way. Inputs of any size.
    Slices,
}

/// An input as offered to the readers: its name as given
/// (`dump/module_0000.jit_f.after_optimizations.txt`) and its bytes (all of
/// them for an input held whole; the first bytes, possibly none, for a
/// source read by slices, which is offered before it is read).
pub struct Offer<'a> {
    pub name: &'a str,
    /// The file name after the last `/`, lowercased.
    pub base: &'a str,
    pub data: &'a [u8],
}

/// Where a reader puts what it reads.
pub struct Out<'a> {
    pub report: &'a mut Report,
    /// Programs of the HloProto modules, for the what-if replay.
    pub programs: &'a mut Vec<HeapProgram>,
    pub progress: &'a mut dyn FnMut(Progress),
    /// Bytes read so far, and in all (for progress).
    pub done_bytes: u64,
    pub total_bytes: u64,
}

impl<'a> Out<'a> {
    /// `done`: bytes read so far, and in all.
    pub fn new(
        report: &'a mut Report,
        programs: &'a mut Vec<HeapProgram>,
        progress: &'a mut dyn FnMut(Progress),
        (done_bytes, total_bytes): (u64, u64),
    ) -> Self {
        Out {
            report,
            programs,
            progress,
            done_bytes,
            total_bytes,
        }
    }

    /// An error about one input; `message` names it (format crates' errors
    /// carry the file and the byte offset).
    pub fn error(&mut self, input: &str, message: String) {
        self.report.errors.push(InputError {
            input: input.to_string(),
            message,
        });
    }
}

/// One input format.
pub trait Reader {
    /// A short name (for tests and notes).
    fn name(&self) -> &'static str;

    /// Whether this reader takes the input (asked only of readers before it
    /// in [`readers`] that declined).
    fn recognises(&self, input: &Offer) -> bool;

    /// Whether it needs the whole input or reads it by slices.
    fn access(&self) -> Access {
        Access::Whole
    }

    /// Reads an input held whole and returns what it was (the report's
    /// `inputs[].kind`). `explicit`: the user named the file itself (not a
    /// file of a dropped folder or archive).
    fn read(&mut self, file: &InputFile, explicit: bool, out: &mut Out) -> InputKind;

    /// Reads an input by slices ([`Access::Slices`] readers only).
    fn read_slices(&mut self, name: &str, _src: &dyn ReadAt, out: &mut Out) -> InputKind {
        out.error(name, format!("{name}: this input cannot be read by slices"));
        InputKind::Unknown
    }

    /// After every input was read: what needs them together.
    fn finish(&mut self, _out: &mut Out) {}

    /// Whether what it adds is complete on its own (no `finish`, nothing
    /// combined with other inputs but by the ranks and the diagnosis), so
    /// that a drop of such files can be analysed one file at a time
    /// (`crate::ranks::per_file`).
    fn analysed_alone(&self) -> bool {
        false
    }
}

/// `name`'s base name, lowercased.
pub fn base_name(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    lower.rsplit('/').next().unwrap_or(&lower).to_string()
}

/// The index in `readers` of the first reader recognising the input.
/// The text reader recognises everything, so there always is one.
pub fn recognise(readers: &[Box<dyn Reader>], name: &str, data: &[u8]) -> usize {
    let base = base_name(name);
    let offer = Offer {
        name,
        base: &base,
        data,
    };
    readers
        .iter()
        .position(|r| r.recognises(&offer))
        .unwrap_or(readers.len().saturating_sub(1))
}

/// Whether a file of this name is read by a reader whose report is
/// complete on its own ([`Reader::analysed_alone`]: a snapshot).
pub fn analysed_alone(name: &str) -> bool {
    let list = readers();
    list[recognise(&list, name, &[])].analysed_alone()
}

/// Whether a file of this name is read by slices (a profile, a snapshot):
/// the CLI and the page's worker then hand it over as a source, never
/// reading it whole.
pub fn reads_by_slices(name: &str) -> bool {
    let list = readers();
    list[recognise(&list, name, &[])].access() == Access::Slices
}

/// Files that sit beside the modules of an XLA dump or a compile run:
/// `*target_arguments.txt`, `debug_options`, `flagfile`, and the run's
/// `log.txt` (the companion reader lists them; the text reader, which reads
/// `log.txt`, never calls one of them empty).
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

#[cfg(test)]
mod tests {
    use super::*;

    fn reader_of(name: &str, data: &[u8]) -> &'static str {
        let list = readers();
        list[recognise(&list, name, data)].name()
    }

    #[test]
    fn dump_companions_are_read_not_errors() {
        for name in [
            "dump/module_0001.jit_f.target_arguments.txt",
            "dump/debug_options",
            "xla_dump/flagfile",
            "run/compile.flagfile",
        ] {
            assert_eq!(
                reader_of(name, b"--xla_dump_to=/tmp/d\n"),
                "companion",
                "{name}"
            );
        }
        // log.txt is searched for an error like any text.
        assert_eq!(reader_of("run/log.txt", b"step 1\n"), "text");
        assert!(is_companion("run/log.txt"));
        assert!(!is_companion("my_oom.txt"));
    }

    #[test]
    fn images_are_named_not_parsed() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert_eq!(reader_of("screenshot.png", png), "unreadable");
        assert_eq!(
            unreadable::what(png).as_deref(),
            Some("not a file oomscope reads: it looks like a PNG image")
        );
    }

    #[test]
    fn text_is_routed_by_content() {
        assert_eq!(
            reader_of("anything.log", b"Ran out of memory in memory space hbm."),
            "text"
        );
        let binary = [0u8, 1, 2, 3, 200, 201];
        assert_eq!(reader_of("random.bin", &binary), "unreadable");
        assert_eq!(unreadable::what(&binary).as_deref(), Some("not a file oomscope reads: binary data that is neither an XProf profile (*.xplane.pb) nor an HloProto (*.hlo.pb)"));
        assert_eq!(unreadable::what(b"plain text"), None);
    }

    #[test]
    fn runtime_profiles_are_routed_by_content() {
        assert_eq!(
            reader_of("x.raw.json", b"[[-1, 1, 512, 0], [5000, 2, 64, 4]]"),
            "memory_timeline"
        );
        assert_eq!(
            reader_of(
                "timeline",
                b"[[1, 2], [[0,1,0,0,0,0,0,0,0], [0,2,0,0,0,0,0,0,0]]]"
            ),
            "memory_timeline"
        );
        assert_eq!(
            reader_of(
                "w.pt.trace.json",
                b"{\"schemaVersion\": 1, \"traceEvents\": []}"
            ),
            "kineto_trace"
        );
        assert_eq!(
            reader_of("memory.prof", b"\x0a\x04\x08\x01\x10\x02"),
            "device_memory_profile"
        );
        assert_eq!(reader_of("notes.json", b"{\"a\": 1}"), "text");
    }

    #[test]
    fn pickles_are_routed_by_content_and_name() {
        assert_eq!(reader_of("x.bin", b"\x80\x05\x95"), "memory_snapshot");
        assert_eq!(reader_of("x.pickle", b""), "memory_snapshot");
        assert_eq!(reader_of("x.pkl", b"\x80\x02}q\x00."), "memory_snapshot");
        // Protocol 0/1 pickles are text-like or unknown binary, never snapshots.
        assert_ne!(reader_of("x.pickle", b"\x80\x01"), "memory_snapshot");
    }

    #[test]
    fn protobufs_are_routed_by_name() {
        assert_eq!(reader_of("d/host.xplane.pb", &[10, 2]), "xplane");
        assert_eq!(
            reader_of("module_0000.jit_f.after_optimizations.hlo.pb", &[]),
            "hlo_proto"
        );
    }

    #[test]
    fn profiles_and_snapshots_are_read_by_slices() {
        for name in ["run/host.xplane.pb", "A.XPLANE.PB", "s.pickle", "d/s.pkl"] {
            assert!(reads_by_slices(name), "{name}");
        }
        for name in ["m.hlo.pb", "memory.prof", "log.txt", "x.pt.trace.json.gz"] {
            assert!(!reads_by_slices(name), "{name}");
        }
    }
}
