//! oomscope's analyzer: everything that decodes and analyses, with no browser
//! dependency. It runs natively (tests, benchmarks, the `oomscope` CLI) and
//! inside the app's Web Worker.
//!
//! This crate is the facade: it expands archives, offers each input to the
//! [`readers`] (one per format, each joining its format's crate to the
//! report), then runs the cross-input analyses (padding, ranks, diagnosis)
//! on the assembled [`Report`].
//! Format crates never see each other; only this facade combines them.

pub mod archive;
pub mod compare;
pub mod ranks;
pub mod readers;
pub mod what_if;

pub use oomscope_report as report;
use oomscope_report::{InputError, InputInfo, InputKind, Report};

/// One file as the user gave it. `name` is the path relative to what was
/// dropped (`dump/module_0000.jit_f.after_optimizations.txt`), so a name with
/// a `/` came from a folder or an archive.
#[derive(Debug, Clone)]
pub struct InputFile {
    pub name: String,
    pub data: Vec<u8>,
}

/// A large input read by slices rather than held in memory: in the browser
/// worker a `File` read with `FileReaderSync`, natively anything seekable.
/// XProf profiles given this way are decoded plane by plane, so a
/// multi-gigabyte profile never sits in memory whole.
pub struct InputSource {
    pub name: String,
    pub source: Box<dyn ReadAt>,
}

pub use oomscope_xla::ReadAt;

/// Bytes of a source offered to the readers before it is read.
const SOURCE_HEAD: u64 = 64;

/// Sources other than profiles are read whole, up to this size.
const MAX_WHOLE_READ: u64 = 2 << 30;

/// Progress of a long analysis, reported per input.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub input: String,
    pub done_bytes: u64,
    pub total_bytes: u64,
    pub stage: String,
}

/// Analyse everything the user gave, together. Never panics on bad input:
/// an input that cannot be read lands in `report.errors` with a message naming
/// it, and every other input still loads.
pub fn analyze(files: Vec<InputFile>, progress: &mut dyn FnMut(Progress)) -> Report {
    analyze_inputs(files, Vec::new(), progress)
}

/// [`analyze`] with some inputs given as random-access [`InputSource`]s.
pub fn analyze_inputs(
    files: Vec<InputFile>,
    sources: Vec<InputSource>,
    progress: &mut dyn FnMut(Progress),
) -> Report {
    analyze_keeping_programs(files, sources, progress).0
}

/// [`analyze_inputs`], also returning the programs of the HloProto modules
/// (what the what-if engine replays: the CLI's `--what-if`).
///
/// Each input is offered to the [`readers`] in order and read by the first
/// that recognises it: a source by slices when that reader reads so, else
/// whole; archives are expanded first, their files offered in turn.
pub fn analyze_keeping_programs(
    mut files: Vec<InputFile>,
    sources: Vec<InputSource>,
    progress: &mut dyn FnMut(Progress),
) -> (Report, Vec<oomscope_report::program::HeapProgram>) {
    let mut report = Report::new();
    let mut programs: Vec<oomscope_report::program::HeapProgram> = Vec::new();
    let mut list = readers::readers();
    for s in sources {
        let len = s.source.len();
        // The first bytes decide as much as a name (a pickle's protocol);
        // unreadable, the name alone decides.
        let mut head = vec![0u8; len.min(SOURCE_HEAD) as usize];
        if s.source.read_at(0, &mut head).is_err() {
            head.clear();
        }
        let i = readers::recognise(&list, &s.name, &head);
        if list[i].access() == readers::Access::Slices {
            let mut out = readers::Out::new(&mut report, &mut programs, progress, (0, len));
            let kind = list[i].read_slices(&s.name, s.source.as_ref(), &mut out);
            report.inputs.push(InputInfo {
                name: s.name,
                kind,
                size_bytes: len,
                content_hash: String::new(),
            });
            continue;
        }
        if len > MAX_WHOLE_READ {
            report.errors.push(InputError {
                input: s.name.clone(),
                message: format!("{}: {} is too large to read whole; only XProf profiles (*.xplane.pb) are read by slices", s.name, oomscope_report::units::format_bytes(len)),
            });
            continue;
        }
        let mut data = vec![0u8; len as usize];
        match s.source.read_at(0, &mut data) {
            Ok(()) => files.push(InputFile { name: s.name, data }),
            Err(e) => report.errors.push(InputError {
                input: s.name.clone(),
                message: format!("{}: cannot read: {e}", s.name),
            }),
        }
    }
    let total: u64 = files.iter().map(|f| f.data.len() as u64).sum();
    let mut done = 0u64;
    // (file, explicit, content hash): an archive's files are hashed as it
    // is expanded, together with it (`content_hashes`), the other files
    // together below.
    let mut expanded: Vec<(InputFile, bool, Option<String>)> = Vec::new();
    for file in files {
        let explicit = !file.name.contains('/');
        let size = file.data.len() as u64;
        if let Some(container) = archive::container_of(&file.name, &file.data) {
            progress(Progress {
                input: file.name.clone(),
                done_bytes: done,
                total_bytes: total,
                stage: "expanding".into(),
            });
            let mut budget = archive::Budget::new(archive::Limits::default());
            let (inner, errors) = archive::expand_kept(&file, container, &mut budget);
            let mut hashes = {
                let bytes: Vec<&[u8]> = std::iter::once(&file.data)
                    .chain(inner.iter().map(|f| &f.data))
                    .map(Vec::as_slice)
                    .collect();
                oomscope_report::content_hashes(&bytes).into_iter()
            };
            let info = InputInfo {
                name: file.name,
                kind: InputKind::Archive,
                size_bytes: size,
                content_hash: hashes.next().unwrap_or_default(),
            };
            // One gzipped file (a JAX `.prof`, a `.raw.json.gz`) is that
            // file, not an archive: listed once, as what it holds.
            let lone = container == archive::Container::Gzip
                && errors.is_empty()
                && matches!(inner.as_slice(), [one] if !one.name.starts_with(&format!("{}/", info.name)));
            if !lone {
                report.inputs.push(info);
            }
            for (input, message) in errors {
                report.errors.push(InputError { input, message });
            }
            expanded.extend(inner.into_iter().zip(hashes).map(|(f, h)| (f, lone && explicit, Some(h))));
        } else {
            expanded.push((file, explicit, None));
        }
        done += size;
    }
    let unhashed: Vec<&[u8]> = expanded
        .iter()
        .filter(|(_, _, h)| h.is_none())
        .map(|(f, _, _)| f.data.as_slice())
        .collect();
    let mut hashes = oomscope_report::content_hashes(&unhashed).into_iter();

    let mut done = 0u64;
    for (file, explicit, hash) in expanded {
        let size = file.data.len() as u64;
        let content_hash = hash.or_else(|| hashes.next()).unwrap_or_default();
        progress(Progress {
            input: file.name.clone(),
            done_bytes: done,
            total_bytes: total,
            stage: "reading".into(),
        });
        let i = readers::recognise(&list, &file.name, &file.data);
        let mut out = readers::Out::new(&mut report, &mut programs, progress, (done, total));
        let kind = list[i].read(&file, explicit, &mut out);
        report.inputs.push(InputInfo {
            name: file.name,
            kind,
            size_bytes: size,
            content_hash,
        });
        done += size;
    }
    let mut out = readers::Out::new(&mut report, &mut programs, progress, (done, total));
    for reader in &mut list {
        reader.finish(&mut out);
    }

    for module in &mut report.modules {
        module.padding = Some(oomscope_layout::module_padding(module));
    }
    for event in &mut report.oom_events {
        event.padding = oomscope_layout::event_padding(event);
    }
    ranks::attach(&mut report);
    report.diagnosis = oomscope_diagnosis::diagnose(&report);
    what_if::attach(&mut report, &programs, None);
    progress(Progress {
        input: String::new(),
        done_bytes: total,
        total_bytes: total,
        stage: "done".into(),
    });
    (report, programs)
}
