//! The whole pipeline on real inputs: what users drop, as they drop it.

mod common;

use common::*;
use oomscope_analyzer::{analyze, InputFile};
use oomscope_report::{InputKind, OomKind, TreeKind};
use std::io::Write;

fn analyze_files(files: Vec<InputFile>) -> oomscope_report::Report {
    analyze(files, &mut |_| {})
}

#[test]
fn the_whole_corpus_loads_without_errors() {
    let r = analyze_files(load_folder(&corpus()));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    // Every OOM log of the corpus is found (66 is a successful compile: no OOM).
    let logs_with_oom = ["01_", "38_", "58_", "62_", "63_", "64_", "65_", "72_"];
    for prefix in logs_with_oom {
        assert!(
            r.oom_events
                .iter()
                .any(|e| e.input.contains(&format!("logs/{prefix}"))),
            "no event from {prefix}"
        );
    }
    assert!(
        !r.oom_events.iter().any(|e| e.input.contains("logs/66_")),
        "66 is a negative control"
    );
    // Each kind of input is recognised.
    for kind in [
        InputKind::OomLog,
        InputKind::XlaDumpText,
        InputKind::HloProto,
        InputKind::Xplane,
        InputKind::StepLog,
    ] {
        assert!(r.inputs.iter().any(|i| i.kind == kind), "no {kind:?}");
    }
    assert!(
        !r.allocator_profiles.is_empty(),
        "tf-cpu-allocator holds allocator events"
    );
}

#[test]
fn old_libtpu_dump_and_log_give_the_compiler_numbers() {
    let r = analyze_files(load_folder(&corpus().join("xla-runs/old-libtpu-oom")));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let e = &r.oom_events[0];
    assert_eq!(e.kind, OomKind::TpuCompileHbm);
    // "Used 25.64G of 15.75G hbm. Exceeded hbm capacity by 9.89G."
    assert_eq!(
        e.used_bytes,
        Some((25.64f64 * (1u64 << 30) as f64).round() as u64)
    );
    assert_eq!(e.limit_bytes, Some(16_911_433_728));
    assert_eq!(r.diagnosis.tree, TreeKind::CompileHbmOom);
    assert!(
        r.diagnosis.path.iter().any(|p| p == "aggregate"),
        "{:?}",
        r.diagnosis.path
    );
    assert!(r
        .modules
        .iter()
        .any(|m| m.source_kind == oomscope_report::SourceKind::XlaDumpText));
}

#[test]
fn proto_and_text_of_one_module_are_reported_once_with_the_compiler_peak() {
    let r = analyze_files(load_folder(&corpus().join("xla-runs/new-libtpu-fits")));
    let hbm: Vec<_> = r
        .modules
        .iter()
        .filter(|m| m.memory_space == oomscope_report::MemoryColor::Device)
        .collect();
    assert_eq!(
        hbm.len(),
        1,
        "{:?}",
        hbm.iter()
            .map(|m| (&m.source_kind, &m.peak_kind))
            .collect::<Vec<_>>()
    );
    assert_eq!(hbm[0].source_kind, oomscope_report::SourceKind::HloProto);
    assert!(
        hbm[0].compiler_peak_bytes.is_some(),
        "the live-range peak of the text dump is kept"
    );
}

/// The typed vocabulary is written as the words and integers the JSON
/// always had, for every module and OOM of the corpus, and a report read
/// back from its JSON writes the same words (none is lost or renamed).
#[test]
fn the_vocabulary_keeps_its_json_words() {
    let r = analyze_files(load_folder(&corpus()));
    let json = serde_json::to_value(&r).unwrap();
    let words = |json: &serde_json::Value, list: &str, field: &str| -> Vec<serde_json::Value> {
        json[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v[field].clone())
            .collect()
    };
    let peak_kinds = [
        "heap_simulator",
        "buffer_liveness",
        "buffer_liveness_estimated",
        "live_range",
    ];
    for kind in words(&json, "modules", "peak_kind") {
        assert!(peak_kinds.contains(&kind.as_str().unwrap()), "{kind}");
    }
    for kind in words(&json, "modules", "source_kind") {
        assert!(
            ["hlo_proto", "xplane", "xla_dump_text"].contains(&kind.as_str().unwrap()),
            "{kind}"
        );
    }
    let colours = words(&json, "modules", "memory_space");
    assert!(
        colours.iter().all(|s| s.is_i64()) && colours.contains(&serde_json::json!(0)),
        "{colours:?}"
    );
    let spaces = words(&json, "oom_events", "memory_space");
    assert!(
        spaces.contains(&serde_json::json!("hbm")) && spaces.contains(&serde_json::json!("gpu")),
        "{spaces:?}"
    );
    // Read back and written again: the same words in the same places.
    let again: oomscope_report::Report = serde_json::from_value(json.clone()).unwrap();
    let back = serde_json::to_value(&again).unwrap();
    for (list, field) in [
        ("modules", "peak_kind"),
        ("modules", "source_kind"),
        ("modules", "memory_space"),
        ("oom_events", "memory_space"),
    ] {
        assert_eq!(
            words(&back, list, field),
            words(&json, list, field),
            "{list}[].{field}"
        );
    }
}

/// The same dump folder dropped as a folder, a zip and a tar.gz gives the same modules.
#[test]
fn archives_give_the_same_report_as_the_folder() {
    let dir = corpus().join("xla-runs/new-libtpu-oom");
    let folder = load_folder(&dir);
    let plain = analyze_files(folder.clone());

    let mut zip_bytes = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut zip_bytes);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for f in &folder {
            z.start_file(f.name.clone(), opts).unwrap();
            z.write_all(&f.data).unwrap();
        }
        z.finish().unwrap();
    }
    let zipped = analyze_files(vec![InputFile {
        name: "dump.zip".into(),
        data: zip_bytes.into_inner(),
    }]);

    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for f in &folder {
        let mut h = tar::Header::new_gnu();
        h.set_size(f.data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, &f.name, &f.data[..]).unwrap();
    }
    let tgz = tar.into_inner().unwrap().finish().unwrap();
    let tarred = analyze_files(vec![InputFile {
        name: "dump.tar.gz".into(),
        data: tgz,
    }]);

    for other in [&zipped, &tarred] {
        assert!(other.errors.is_empty(), "{:?}", other.errors);
        assert_eq!(other.oom_events.len(), plain.oom_events.len());
        assert_eq!(
            other.oom_events[0].used_bytes,
            plain.oom_events[0].used_bytes
        );
        let peaks = |r: &oomscope_report::Report| {
            r.modules
                .iter()
                .map(|m| (m.name.clone(), m.peak_bytes))
                .collect::<Vec<_>>()
        };
        assert_eq!(peaks(other), peaks(&plain));
    }
}

#[test]
fn a_png_or_a_truncated_profile_is_a_clear_error_and_the_rest_still_loads() {
    let log = std::fs::read(corpus().join("logs/72_tpu_compile_hbm.txt")).unwrap();
    let mut hlo = std::fs::read(corpus().join(
        "xla-runs/new-libtpu-fits/module_0000.jit_f.cl_1014260217.after_optimizations.hlo.pb",
    ))
    .unwrap();
    hlo.truncate(hlo.len() / 3);
    let r = analyze_files(vec![
        InputFile {
            name: "screenshot.png".into(),
            data: b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0".to_vec(),
        },
        InputFile {
            name: "cut.hlo.pb".into(),
            data: hlo,
        },
        InputFile {
            name: "72.txt".into(),
            data: log,
        },
    ]);
    assert_eq!(r.oom_events.len(), 1, "the good log still loads");
    assert_eq!(r.errors.len(), 2, "{:?}", r.errors);
    assert!(
        r.errors[0].message.starts_with("screenshot.png: ")
            && r.errors[0].message.contains("PNG image")
    );
    assert!(
        r.errors[1].message.starts_with("cut.hlo.pb: "),
        "{}",
        r.errors[1].message
    );
}

#[test]
fn every_fixture_folder_loads_without_errors() {
    for dir in fixture_dirs() {
        let r = analyze_files(load_folder(&dir));
        assert!(r.errors.is_empty(), "{}: {:?}", dir.display(), r.errors);
        let found = r.oom_events.len()
            + r.modules.len()
            + r.step_series.len()
            + r.allocator_profiles.len()
            + r.device_memory_profiles.len()
            + r.memory_timelines.len();
        assert!(found > 0, "{}: nothing found", dir.display());
    }
}

/// A source that counts the bytes read from it.
struct CountingSource {
    data: Vec<u8>,
    read: std::rc::Rc<std::cell::Cell<u64>>,
}

impl oomscope_analyzer::ReadAt for CountingSource {
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.read.set(self.read.get() + buf.len() as u64);
        oomscope_analyzer::ReadAt::read_at(&self.data, offset, buf)
    }
}

/// A profile given as a random-access source (as the browser worker does with
/// a `File`) gives the same analysis as its bytes, without reading trace planes.
#[test]
fn profiles_read_by_slices_match_profiles_read_whole() {
    let path = corpus().join("xla-runs/cpu-xplane/vm.xplane.pb");
    let data = std::fs::read(&path).unwrap();
    let whole = analyze_files(vec![InputFile {
        name: "vm.xplane.pb".into(),
        data: data.clone(),
    }]);
    let read = std::rc::Rc::new(std::cell::Cell::new(0));
    let source = oomscope_analyzer::InputSource {
        name: "vm.xplane.pb".into(),
        source: Box::new(CountingSource {
            data: data.clone(),
            read: read.clone(),
        }),
    };
    let sliced = oomscope_analyzer::analyze_inputs(Vec::new(), vec![source], &mut |_| {});
    assert!(sliced.errors.is_empty(), "{:?}", sliced.errors);
    let peaks = |r: &oomscope_report::Report| {
        r.modules
            .iter()
            .map(|m| (m.display_name(), m.peak_bytes, m.heap_bytes.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(peaks(&sliced), peaks(&whole));
    assert!(!sliced.modules.is_empty());
    println!("read {} of {} bytes by slices", read.get(), data.len());
}

/// A profile is one host plane per host. One grown to thousands of
/// `/host:CPU` planes (copies of a real one, as `tools/bench/make_big_xplane.py
/// --copies same` makes) reads only the first 64 and says so, instead of
/// decoding every copy: the 1 GiB variant took 9 GB of memory before.
#[test]
fn a_profile_with_thousands_of_host_planes_reads_a_bounded_number() {
    use oomscope_proto::prost::Message;
    use oomscope_proto::tensorflow::profiler::XSpace;
    let data = std::fs::read(fixtures().join("tf-cpu-allocator/profile.xplane.pb")).unwrap();
    let space = XSpace::decode(data.as_slice()).unwrap();
    let host = space
        .planes
        .iter()
        .find(|p| p.name == "/host:CPU")
        .unwrap()
        .encode_to_vec();
    let one = analyze_files(vec![InputFile {
        name: "one.xplane.pb".into(),
        data: data.clone(),
    }]);
    assert!(one.errors.is_empty(), "{:?}", one.errors);
    let per_plane = one.allocator_profiles.len();
    assert!(per_plane > 0);

    // XSpace field 1 (planes), length-delimited: appended planes are more planes.
    let mut grown = data;
    for _ in 0..1000 {
        grown.push(0x0a);
        let mut n = host.len() as u64;
        while n >= 0x80 {
            grown.push((n as u8) | 0x80);
            n >>= 7;
        }
        grown.push(n as u8);
        grown.extend_from_slice(&host);
    }
    let r = analyze_files(vec![InputFile {
        name: "grown.xplane.pb".into(),
        data: grown,
    }]);
    assert_eq!(r.allocator_profiles.len(), 64 * per_plane);
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert!(
        r.errors[0].message.contains("1001 /host:CPU planes"),
        "{}",
        r.errors[0].message
    );
    assert_eq!(
        r.modules.len(),
        one.modules.len(),
        "the modules are all still read"
    );
}

/// Padding "across all buffers" covers the buffers at the peak, those with
/// a lifetime band and those live for the whole program (parameters,
/// constants) alike: it is never less than the padding at the peak.
#[test]
fn padding_of_all_buffers_includes_the_peak_buffers() {
    let mut checked = 0;
    for dir in fixture_dirs() {
        let r = analyze(load_folder(&dir), &mut |_| {});
        for m in r.modules.iter().filter(|m| !m.buffers.is_empty()) {
            let Some(p) = &m.padding else { continue };
            let what = format!(
                "{}: {} space {}",
                dir.display(),
                m.display_name(),
                m.memory_space
            );
            assert!(
                p.total_padding_bytes >= p.peak_padding_bytes,
                "{what}: all {} < peak {}",
                p.total_padding_bytes,
                p.peak_padding_bytes
            );
            let listed = oomscope_layout::buffer_padding(m);
            for b in m
                .peak_buffers
                .iter()
                .filter(|b| b.category == oomscope_report::BufferCategory::Parameter)
            {
                assert!(
                    listed
                        .iter()
                        .any(|l| l.name == b.name && l.padded_bytes == b.size_bytes),
                    "{what}: parameter {} missing",
                    b.name
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} modules");
}

/// A text with nothing to read (the CPU fixture's log: "compiled ok; loss
/// ..."), dropped beside its profile, was read and had nothing to analyse:
/// not a problem. Dropped alone, it is one, naming the file (nothing else
/// describes memory). (The log of a TPU compile that fit has something to
/// read: its usage lines, below.)
#[test]
fn a_text_with_nothing_to_read_is_a_problem_only_when_alone() {
    let dir = fixtures().join("cpu-profile");
    let read = |name: &str| InputFile {
        name: name.to_string(),
        data: std::fs::read(dir.join(name)).unwrap(),
    };
    let log = "compile.log";
    let profile = "profile.xplane.pb";

    let alone = analyze_files(vec![read(log)]);
    assert_eq!(alone.errors.len(), 1, "{:?}", alone.errors);
    assert!(alone.errors[0]
        .message
        .starts_with("compile.log: no out-of-memory error"));

    let beside = analyze_files(vec![read(log), read(profile)]);
    assert!(beside.errors.is_empty(), "{:?}", beside.errors);
    assert!(!beside.modules.is_empty());
    let listed = beside.inputs.iter().find(|i| i.name == log).unwrap();
    assert_eq!(listed.kind, InputKind::Unknown);

    // The log of a TPU compile that fit, alone, is read.
    let fit = fixtures().join("padding-zoo-v5e/compile.log");
    let fit = analyze_files(vec![InputFile {
        name: "compile.log".into(),
        data: std::fs::read(fit).unwrap(),
    }]);
    assert!(fit.errors.is_empty(), "{:?}", fit.errors);
    assert_eq!(fit.inputs[0].kind, InputKind::CompileLog);
}

/// The log of a compile that fit, dropped alone, from every libtpu
/// generation (0.0.8, 0.0.23, 0.0.52, and a posted v5p log of maxtext):
/// read as a compile log, its `XLA::TPU program HBM usage: P / L` and
/// `Total hbm usage` block give the fit verdict with its headroom at once
/// (no device to pick, no "not recognised").
#[test]
fn the_log_of_a_compile_that_fit_gives_its_headroom() {
    let g = |v: f64| (v * (1u64 << 30) as f64).round() as u64;
    let m = |v: f64| (v * (1u64 << 20) as f64).round() as u64;
    let cases: [(std::path::PathBuf, u64, u64, u64); 4] = [
        // (log, program, arguments, limit) as each log prints them.
        (
            fixtures().join("old-libtpu-fits/compile.log"),
            m(325.04),
            m(116.44),
            g(15.75),
        ),
        (
            fixtures().join("mid-libtpu-fits/compile.log"),
            m(325.22),
            m(116.44),
            g(15.75),
        ),
        (
            fixtures().join("fits-mlp/compile.log"),
            m(326.68),
            m(116.44),
            g(15.75),
        ),
        (
            corpus().join("logs/66_tpu_compile_hbm.txt"),
            g(14.10),
            g(6.47),
            g(94.74),
        ),
    ];
    for (path, program, arguments, limit) in cases {
        let name = path.display().to_string();
        let r = analyze_files(vec![InputFile {
            name: name.clone(),
            data: std::fs::read(&path).unwrap(),
        }]);
        assert!(r.errors.is_empty(), "{name}: {:?}", r.errors);
        assert!(r.oom_events.is_empty(), "{name}: a fit is no OOM");
        assert_eq!(r.inputs[0].kind, InputKind::CompileLog, "{name}");
        let u = r
            .compile_usages
            .iter()
            .find(|u| u.memory_space == oomscope_report::MemorySpace::Hbm)
            .unwrap_or_else(|| panic!("{name}: no HBM usage"));
        assert_eq!(
            (u.program_bytes, u.arguments_bytes, u.limit_bytes),
            (program, Some(arguments), Some(limit)),
            "{name}"
        );
        assert!(
            u.total_usage_bytes.is_some() && u.reserved_bytes.is_some(),
            "{name}"
        );
        assert!(!oomscope_diagnosis::asks_for_device(&r), "{name}");
        let h = r.diagnosis.headline.as_ref().unwrap();
        assert_eq!(h.node, "verdict.fits", "{name}: {}", h.text);
        assert_eq!(
            h.estimate_bytes,
            Some(limit - program - arguments),
            "{name}"
        );
        assert!(h.text.contains("to spare"), "{}", h.text);
    }
}

/// XLA writes a before-optimizations HloProto (no buffer assignment yet)
/// beside every after-optimizations one (`--xla_dump_hlo_as_proto`, here
/// PyTorch/XLA's dump on the CPU): the folder is read without an error, and
/// the lone before-optimizations file still says what to dump.
#[test]
fn a_dump_folder_is_not_in_error_for_its_before_optimizations_proto() {
    let dir = fixtures().join("torch-xla-cpu-dump");
    let r = analyze_files(load_folder(&dir));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.modules.len(), 1);
    assert!(r.modules[0].peak_bytes > 0);
    let lone: Vec<InputFile> = load_folder(&dir)
        .into_iter()
        .filter(|f| f.name.ends_with("before_optimizations.hlo.pb"))
        .collect();
    assert_eq!(lone.len(), 1);
    let r = analyze_files(lone);
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert!(r.errors[0].message.contains("dump it after optimizations"), "{}", r.errors[0].message);
}

/// A module's memory space is named on its platform: HBM on a TPU (tiled
/// layouts), CPU memory for XLA:CPU's dumps (`cpu_after_optimizations`),
/// and only "device memory" where the module does not say (an XProf
/// profile of a CPU run carries no layouts).
#[test]
fn a_module_space_is_named_on_its_platform() {
    use oomscope_report::Platform;
    for (dir, platform, words) in [
        (fixtures().join("oom-aggregate"), Platform::Tpu, "HBM (device memory)"),
        (fixtures().join("torch-xla-cpu-dump"), Platform::Cpu, "CPU memory (the XLA:CPU device)"),
        (corpus().join("xla-runs/cpu-xplane"), Platform::Unknown, "Device memory"),
    ] {
        let r = analyze_files(load_folder(&dir));
        let m = r
            .modules
            .iter()
            .find(|m| m.memory_space == oomscope_report::MemoryColor::Device)
            .unwrap_or_else(|| panic!("{}: no device module", dir.display()));
        assert_eq!(m.platform(), platform, "{}", dir.display());
        assert_eq!(m.space_words(), words, "{}", dir.display());
    }
}
