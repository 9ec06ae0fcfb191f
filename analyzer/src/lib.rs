//! oomscope's analyzer: everything that decodes and analyses, with no browser
//! dependency. It runs natively (tests, benchmarks, the `oomscope` CLI) and
//! inside the app's Web Worker.
//!
//! This crate is the facade: it expands archives, decides what each input is
//! ([`sniff`]), hands it to the crate that owns that format, then runs the
//! cross-input analyses (padding, diagnosis) on the assembled [`Report`].
//! Format crates never see each other; only this facade combines them.

pub mod archive;
pub mod compare;
pub mod ranks;
pub mod sniff;
pub mod what_if;

pub use oomscope_report as report;
use oomscope_report::{InputError, InputInfo, InputKind, Report};
use sniff::Sniffed;

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

/// Host planes (`/host:CPU`, one per host) read from one profile.
const MAX_HOST_PLANES: u64 = 64;

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
pub fn analyze_keeping_programs(
    mut files: Vec<InputFile>,
    sources: Vec<InputSource>,
    progress: &mut dyn FnMut(Progress),
) -> (Report, Vec<oomscope_report::program::HeapProgram>) {
    let mut report = Report::new();
    // Programs of the HloProto modules, for the what-if replay.
    let mut programs: Vec<oomscope_report::program::HeapProgram> = Vec::new();
    // Texts dropped on their own in which no reader found anything.
    let mut empty_texts: Vec<String> = Vec::new();
    for s in sources {
        let len = s.source.len();
        if sniff::sniff(&s.name, &[]) == Sniffed::Xplane {
            report.inputs.push(InputInfo {
                name: s.name.clone(),
                kind: InputKind::Xplane,
                size_bytes: len,
                content_hash: String::new(),
            });
            analyze_xplane(&s.name, s.source.as_ref(), &mut report, progress);
            continue;
        }
        let mut head = [0u8; 2];
        if s.source
            .read_at(0, &mut head[..(len.min(2) as usize)])
            .is_ok()
            && sniff::sniff(&s.name, &head) == Sniffed::MemorySnapshot
        {
            let reader = oomscope_xla::source::SequentialReader::new(s.source.as_ref());
            analyze_memory_snapshot(&s.name, reader, len, String::new(), &mut report);
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
    let mut expanded = Vec::new();
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
            let info = InputInfo {
                name: file.name.clone(),
                kind: InputKind::Archive,
                size_bytes: size,
                content_hash: oomscope_report::content_hash(&file.data),
            };
            let mut budget = archive::Budget::new(archive::Limits::default());
            let (inner, errors) = archive::expand(file, &mut budget, 0);
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
            expanded.extend(inner.into_iter().map(|f| (f, lone && explicit)));
        } else {
            expanded.push((file, explicit));
        }
        done += size;
    }

    let mut dump_texts: Vec<(String, String)> = Vec::new();
    let mut device_profiles: Vec<oomscope_runtime::DecodedDeviceProfile> = Vec::new();
    let mut done = 0u64;
    for (file, explicit) in expanded {
        let size = file.data.len() as u64;
        let content_hash = oomscope_report::content_hash(&file.data);
        progress(Progress {
            input: file.name.clone(),
            done_bytes: done,
            total_bytes: total,
            stage: "reading".into(),
        });
        let sniffed = sniff::sniff(&file.name, &file.data);
        match sniffed {
            Sniffed::DumpText => {
                report.inputs.push(InputInfo {
                    name: file.name.clone(),
                    kind: InputKind::XlaDumpText,
                    size_bytes: size,
                    content_hash,
                });
                dump_texts.push((file.name, String::from_utf8_lossy(&file.data).into_owned()));
            }
            Sniffed::HloProto => {
                report.inputs.push(InputInfo {
                    name: file.name.clone(),
                    kind: InputKind::HloProto,
                    size_bytes: size,
                    content_hash,
                });
                // Decoded once: the Memory Viewer analysis, and the program
                // the what-if engine replays.
                let analysed =
                    oomscope_xla::decode_hlo_proto(&file.name, &file.data).and_then(|hlo| {
                        let modules = oomscope_xla::analyze_hlo(&file.name, &hlo, None)?;
                        if let Ok(p) = oomscope_xla::heap_programs(&file.name, &hlo, None) {
                            programs.extend(p);
                        }
                        Ok(modules)
                    });
                match analysed {
                    Ok(modules) => report.modules.extend(modules),
                    Err(e) => report.errors.push(InputError {
                        input: file.name.clone(),
                        message: e.to_string(),
                    }),
                }
            }
            Sniffed::Xplane => {
                report.inputs.push(InputInfo {
                    name: file.name.clone(),
                    kind: InputKind::Xplane,
                    size_bytes: size,
                    content_hash,
                });
                analyze_xplane(&file.name, &file.data, &mut report, progress);
            }
            Sniffed::DeviceMemoryProfile | Sniffed::MemoryTimeline | Sniffed::KinetoTrace => {
                let kind = if sniffed == Sniffed::DeviceMemoryProfile {
                    InputKind::DeviceMemoryProfile
                } else {
                    InputKind::MemoryTimeline
                };
                report.inputs.push(InputInfo {
                    name: file.name.clone(),
                    kind,
                    size_bytes: size,
                    content_hash,
                });
                read_runtime_profile(&sniffed, &file, &mut device_profiles, &mut report);
            }
            Sniffed::MemorySnapshot => {
                analyze_memory_snapshot(
                    &file.name,
                    &file.data[..],
                    size,
                    content_hash,
                    &mut report,
                );
            }
            Sniffed::Text => {
                let text = String::from_utf8_lossy(&file.data);
                let events = oomscope_logs::parse_oom_log(&file.name, &text);
                let mut series = oomscope_steps::parse_step_log(&file.name, &text);
                let usages = oomscope_logs::parse_compile_usage(&file.name, &text);
                let kind = if !events.is_empty() {
                    InputKind::OomLog
                } else if !series.is_empty() {
                    InputKind::StepLog
                } else if !usages.is_empty() {
                    InputKind::CompileLog
                } else {
                    InputKind::Unknown
                };
                if kind == InputKind::Unknown && explicit && !sniff::is_companion(&file.name) {
                    empty_texts.push(file.name.clone());
                }
                for s in &mut series {
                    oomscope_steps::analyze_series(s);
                }
                report.inputs.push(InputInfo {
                    name: file.name.clone(),
                    kind,
                    size_bytes: size,
                    content_hash,
                });
                report.oom_events.extend(events);
                report.step_series.extend(series);
                report.compile_usages.extend(usages);
            }
            Sniffed::Companion => {
                // Read, nothing to analyse: listed as an input, never an error.
                report.inputs.push(InputInfo {
                    name: file.name.clone(),
                    kind: InputKind::Unknown,
                    size_bytes: size,
                    content_hash,
                });
            }
            Sniffed::Unrecognised(what) => {
                report.inputs.push(InputInfo {
                    name: file.name.clone(),
                    kind: InputKind::Unknown,
                    size_bytes: size,
                    content_hash,
                });
                // Inside a dropped folder or archive, files of other kinds (scripts,
                // images) are normal and skipped quietly; a file dropped on its own
                // that we cannot read deserves an explanation.
                if explicit {
                    report.errors.push(InputError {
                        input: file.name.clone(),
                        message: format!("{}: {what}", file.name),
                    });
                }
            }
        }
        done += size;
    }

    if !dump_texts.is_empty() {
        progress(Progress {
            input: "XLA dump".into(),
            done_bytes: done,
            total_bytes: total,
            stage: "analysing dump".into(),
        });
        let borrowed: Vec<(&str, &str)> = dump_texts
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        let (modules, errors) = oomscope_dump::analyze_dump(&borrowed);
        merge_dump_modules(&mut report, modules);
        report.errors.extend(errors);
    }

    // Profiles of one run taken at several steps: what grows between them.
    report.device_memory_series = oomscope_runtime::device_memory_series(&device_profiles);
    report
        .device_memory_profiles
        .extend(device_profiles.into_iter().map(|d| d.profile));

    // A text with nothing to read (the log of a compile that fit, beside
    // its HloProto) is a problem only when nothing else in the drop describes
    // memory; otherwise it was read and had nothing to analyse, as a dump's
    // companion files.
    if !describes_memory(&report) {
        report.errors.extend(empty_texts.into_iter().map(|name| InputError {
            message: format!(
                "{name}: no out-of-memory error, XLA dump or memory-per-step data found in this text"
            ),
            input: name,
        }));
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

/// An XProf profile: the Memory Viewer of every compiled module (plane
/// `/host:metadata`) and the allocator timelines (plane `/host:CPU`). Only
/// those two planes are decoded. A profile holding only one of them is fine;
/// holding neither is an error naming the file.
/// Whether anything in the report describes memory use.
fn describes_memory(report: &Report) -> bool {
    !report.oom_events.is_empty()
        || !report.modules.is_empty()
        || !report.step_series.is_empty()
        || !report.allocator_profiles.is_empty()
        || !report.memory_snapshots.is_empty()
        || !report.device_memory_profiles.is_empty()
        || !report.memory_timelines.is_empty()
        || !report.compile_usages.is_empty()
}

fn analyze_xplane(
    name: &str,
    src: &dyn ReadAt,
    report: &mut Report,
    progress: &mut dyn FnMut(Progress),
) {
    let mut on_progress = |d: u64, t: u64| {
        progress(Progress {
            input: name.to_string(),
            done_bytes: d,
            total_bytes: t,
            stage: "decoding profile".into(),
        })
    };
    // One pass over the source reads both planes (for a gzipped profile, one
    // decompression); every other plane is skipped unread. A profile has one
    // host plane per host; past MAX_HOST_PLANES the rest are skipped too, so
    // a profile of thousands of them cannot exhaust memory.
    let host_planes = std::cell::Cell::new(0u64);
    let wanted = |plane: &str| {
        if plane == oomscope_xla::HOST_CPU_PLANE {
            host_planes.set(host_planes.get() + 1);
            host_planes.get() <= MAX_HOST_PLANES
        } else {
            plane == oomscope_xla::METADATA_PLANE
        }
    };
    let planes = match oomscope_xla::read_planes(name, src, &wanted, &mut on_progress) {
        Ok(p) => p,
        Err(e) => {
            report.errors.push(InputError {
                input: name.to_string(),
                message: e.to_string(),
            });
            return;
        }
    };
    if host_planes.get() > MAX_HOST_PLANES {
        report.errors.push(InputError {
            input: name.to_string(),
            message: format!(
                "{name}: the profile has {} {} planes; the allocator timelines of the first {MAX_HOST_PLANES} are shown",
                host_planes.get(),
                oomscope_xla::HOST_CPU_PLANE
            ),
        });
    }
    let modules = oomscope_xla::analyze_planes(name, &planes);
    let profiles: Result<Vec<_>, oomscope_xla::XlaError> = Ok(planes
        .iter()
        .filter(|p| p.name == oomscope_xla::HOST_CPU_PLANE)
        .flat_map(|p| oomscope_xla::allocator_profiles_from_plane(name, p))
        .collect());
    match (modules, profiles) {
        (Ok(m), Ok(p)) => {
            report.modules.extend(m);
            report.allocator_profiles.extend(p);
        }
        (Err(e), Ok(p)) if !p.is_empty() && e.kind == oomscope_xla::XlaErrorKind::NoHlo => {
            report.allocator_profiles.extend(p)
        }
        (Ok(m), Err(_)) if !m.is_empty() => report.modules.extend(m),
        (Err(e), _) | (_, Err(e)) => report.errors.push(InputError {
            input: name.to_string(),
            message: e.to_string(),
        }),
    }
}

/// A JAX device memory profile, a PyTorch memory timeline or a Kineto
/// trace (issue 17). Device profiles are kept whole until every input is
/// read, so that profiles of one run can be compared as a series.
fn read_runtime_profile(
    sniffed: &Sniffed,
    file: &InputFile,
    device_profiles: &mut Vec<oomscope_runtime::DecodedDeviceProfile>,
    report: &mut Report,
) {
    let result = match sniffed {
        Sniffed::DeviceMemoryProfile => {
            oomscope_runtime::read_device_memory_profile(&file.name, &file.data)
                .map(|p| device_profiles.push(p))
        }
        Sniffed::KinetoTrace => oomscope_runtime::read_kineto_trace(&file.name, &file.data)
            .map(|t| report.memory_timelines.extend(t)),
        _ => oomscope_runtime::read_memory_timeline(&file.name, &file.data)
            .map(|t| report.memory_timelines.push(t)),
    };
    if let Err(e) = result {
        report.errors.push(InputError {
            input: file.name.clone(),
            message: e.to_string(),
        });
    }
}

/// A PyTorch memory snapshot pickle, streamed: one `memory_snapshots[]`
/// entry per device, and its OOM (if any) in `oom_events[]`.
fn analyze_memory_snapshot(
    name: &str,
    reader: impl std::io::Read,
    len: u64,
    content_hash: String,
    report: &mut Report,
) {
    report.inputs.push(InputInfo {
        name: name.to_string(),
        kind: InputKind::MemorySnapshot,
        size_bytes: len,
        content_hash,
    });
    match oomscope_snapshot::analyze(name, reader, len) {
        Ok(devices) => {
            report
                .oom_events
                .extend(devices.iter().filter_map(oomscope_snapshot::oom_event));
            report.memory_snapshots.extend(devices);
        }
        Err(e) => report.errors.push(InputError {
            input: name.to_string(),
            message: e.to_string(),
        }),
    }
}

/// A module present both as HloProto and as dump text is reported once: the
/// proto analysis (it is what XProf shows) wins, and keeps the compiler's own
/// peak from the text when the proto lacks it. Twins are recognised by
/// folder and `module_NNNN` prefix, so equally named modules of different
/// dumps stay apart.
fn merge_dump_modules(report: &mut Report, text_modules: Vec<oomscope_report::ModuleReport>) {
    for text in text_modules {
        let key = dump_module_key(&text.input);
        let twin = report.modules.iter_mut().find(|m| {
            m.source_kind == oomscope_report::SourceKind::HloProto
                && m.memory_space == text.memory_space
                && dump_module_key(&m.input) == key
        });
        match twin {
            Some(proto) => {
                if proto.compiler_peak_bytes.is_none() {
                    proto.compiler_peak_bytes = text.compiler_peak_bytes;
                }
            }
            None => report.modules.push(text),
        }
    }
}

/// `dir/module_0000.jit_f.cl_1.after_optimizations.txt, …` → `("dir", "module_0000")`.
fn dump_module_key(inputs: &str) -> (String, String) {
    let first = inputs.split(", ").next().unwrap_or(inputs);
    let (dir, base) = first.rsplit_once('/').unwrap_or(("", first));
    (
        dir.to_string(),
        base.split('.').next().unwrap_or(base).to_string(),
    )
}
