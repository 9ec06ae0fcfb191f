//! Conformance with XProf 2.24.2's Memory Viewer: every oracle JSON in the
//! corpus and in `fixtures/` (found through each folder's `fixture.json`, so
//! new fixtures are checked automatically) must equal our analysis: every heap
//! point padded and unpadded, the peak, its position, the peak buffer set and
//! the allocation totals. MiB values are compared with a 1e-9 relative
//! tolerance, for float formatting only.

use oomscope_report::{BufferCategory, ModuleReport};
use serde_json::Value;
use std::path::{Path, PathBuf};

const MIB: f64 = (1u64 << 20) as f64;

fn corpus() -> PathBuf {
    oomscope_testdata::corpus().join("xla-runs")
}

fn fixtures() -> PathBuf {
    oomscope_testdata::fixtures()
}

fn close(ours_bytes: u64, oracle_mib: f64) -> bool {
    let ours = ours_bytes as f64 / MIB;
    (ours - oracle_mib).abs() <= 1e-9 * ours.abs().max(oracle_mib.abs()) + 1e-12
}

fn num(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn group_name(c: BufferCategory) -> &'static str {
    match c {
        BufferCategory::Parameter => "Parameter",
        BufferCategory::Output => "Output",
        BufferCategory::ThreadLocal => "Thread-local",
        BufferCategory::Constant => "Constant",
        BufferCategory::Temporary => "Temporary",
        BufferCategory::Small => "",
    }
}

/// Every difference between our report and the oracle, as sentences.
fn compare(report: &ModuleReport, oracle: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let empty = Vec::new();
    let heap = oracle
        .get("heapSizes")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let unpadded = oracle
        .get("unpaddedHeapSizes")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    if heap.len() != report.heap_bytes.len() || unpadded.len() != report.unpadded_heap_bytes.len() {
        problems.push(format!(
            "heap curve lengths: ours {}/{} oracle {}/{}",
            report.heap_bytes.len(),
            report.unpadded_heap_bytes.len(),
            heap.len(),
            unpadded.len()
        ));
    }
    for (i, (ours, theirs)) in report.heap_bytes.iter().zip(heap).enumerate() {
        if !close(*ours, theirs.as_f64().unwrap_or(f64::NAN)) {
            problems.push(format!("heap[{i}]: ours {ours} B oracle {theirs} MiB"));
        }
    }
    for (i, (ours, theirs)) in report.unpadded_heap_bytes.iter().zip(unpadded).enumerate() {
        if !close(*ours, theirs.as_f64().unwrap_or(f64::NAN)) {
            problems.push(format!(
                "unpadded heap[{i}]: ours {ours} B oracle {theirs} MiB"
            ));
        }
    }
    let scalars = [
        ("peakHeapMib", report.peak_bytes),
        ("peakUnpaddedHeapMib", report.peak_unpadded_bytes),
        ("entryComputationParametersMib", report.parameters_bytes),
        ("maybeLiveOutMib", report.maybe_live_out_bytes),
        ("totalBufferAllocationMib", report.total_allocation_bytes),
        ("indefiniteBufferAllocationMib", report.indefinite_bytes),
    ];
    for (key, ours) in scalars {
        if !close(ours, num(oracle, key)) {
            problems.push(format!(
                "{key}: ours {ours} B = {} MiB, oracle {}",
                ours as f64 / MIB,
                num(oracle, key)
            ));
        }
    }
    if report.peak_position as f64 != num(oracle, "peakHeapSizePosition") {
        problems.push(format!(
            "peak position: ours {} oracle {}",
            report.peak_position,
            num(oracle, "peakHeapSizePosition")
        ));
    }

    // The peak buffer set, as a multiset of what XProf shows of each entry.
    let describe =
        |name: &str, size: f64, unpadded: f64, group: &str, shape: &str, op: &str, source: &str| {
            format!("{name} | {size:.9} | {unpadded:.9} | {group} | {shape} | {op} | {source}")
        };
    let mut theirs: Vec<String> = oracle
        .get("maxHeap")
        .and_then(Value::as_array)
        .unwrap_or(&empty)
        .iter()
        .map(|o| {
            let source = match o.get("sourceInfo") {
                Some(s) => format!("{}:{}", text(s, "fileName"), num(s, "lineNumber")),
                None => String::new(),
            };
            let name = if num(o, "logicalBufferId") == -1.0 {
                text(o, "label")
            } else {
                text(o, "instructionName")
            };
            describe(
                name,
                num(o, "logicalBufferSizeMib"),
                num(o, "unpaddedShapeMib"),
                text(o, "groupName"),
                text(o, "shapeString"),
                text(o, "tfOpName"),
                &source,
            )
        })
        .collect();
    let mut ours: Vec<String> = report
        .peak_buffers
        .iter()
        .map(|b| {
            let source = match b.source.rsplit_once(':') {
                Some((file, line)) => format!("{file}:{}", line.parse::<f64>().unwrap_or(f64::NAN)),
                None => String::new(),
            };
            describe(
                &b.name,
                b.size_bytes as f64 / MIB,
                b.unpadded_bytes as f64 / MIB,
                group_name(b.category),
                &b.shape,
                &b.op_name,
                &source,
            )
        })
        .collect();
    theirs.sort();
    ours.sort();
    if theirs != ours {
        let missing: Vec<&String> = theirs.iter().filter(|t| !ours.contains(t)).collect();
        let extra: Vec<&String> = ours.iter().filter(|o| !theirs.contains(o)).collect();
        problems.push(format!(
            "peak buffers differ:\n  oracle only: {missing:#?}\n  ours only: {extra:#?}"
        ));
    }

    // Lifetimes of the buffers drawn in the timeline equal XProf's spans.
    if let Some(spans) = oracle.get("logicalBufferSpans") {
        for b in &report.buffers {
            let span = spans.get(b.id.to_string());
            let (start, limit) =
                span.map_or((f64::NAN, f64::NAN), |s| (num(s, "start"), num(s, "limit")));
            if start != b.start as f64 || limit != b.end as f64 {
                problems.push(format!(
                    "span of buffer {} ({}): ours [{}, {}] oracle {span:?}",
                    b.id, b.name, b.start, b.end
                ));
            }
        }
    }
    // Every buffer block XProf draws (a canonical buffer with a lifetime)
    // is ours with the same padded and unpadded size, shape, name, group,
    // steps and offset in the stacked view.
    let by_id: std::collections::HashMap<i64, &oomscope_report::BufferLifetime> =
        report.buffers.iter().map(|b| (b.id, b)).collect();
    for block in oracle
        .get("bufferBlocks")
        .and_then(Value::as_array)
        .unwrap_or(&empty)
    {
        let id = num(block, "logicalBufferId") as i64;
        if id == -1 {
            continue; // an allocation's background box
        }
        let Some(ours) = by_id.get(&id) else {
            problems.push(format!(
                "buffer block {id} ({}) missing",
                text(block, "name")
            ));
            continue;
        };
        let theirs = format!(
            "{} | {} | {} B unpadded {} B | {} | steps {}..{} | offset {}",
            text(block, "name"),
            text(block, "shapeString"),
            num(block, "size"),
            num(block, "unpaddedSize"),
            text(block, "category"),
            num(block, "startStep"),
            num(block, "endStep"),
            num(block, "offset"),
        );
        let mine = format!(
            "{} | {} | {} B unpadded {} B | {} | steps {}..{} | offset {}",
            ours.name,
            ours.shape,
            ours.size_bytes,
            ours.unpadded_bytes,
            group_name(ours.category),
            ours.start,
            ours.end,
            ours.offset_bytes,
        );
        if theirs != mine {
            problems.push(format!(
                "buffer block {id}: ours {mine}\n    oracle {theirs}"
            ));
        }
    }
    problems
}

fn check(
    label: &str,
    reports: &[ModuleReport],
    space: i64,
    oracle_path: &Path,
    failures: &mut Vec<String>,
) -> bool {
    let oracle: Value = match std::fs::read(oracle_path).map(|b| serde_json::from_slice(&b)) {
        Ok(Ok(v)) => v,
        other => {
            failures.push(format!(
                "{label}: cannot read oracle {}: {other:?}",
                oracle_path.display()
            ));
            return false;
        }
    };
    let Some(report) = reports
        .iter()
        .find(|r| r.memory_space == oomscope_report::MemoryColor::from(space))
    else {
        // XProf answers a space whose trace it cannot replay with an empty result.
        if oracle.get("heapSizes").is_none() && oracle.get("maxHeap").is_none() {
            return true;
        }
        failures.push(format!("{label}: no report for memory space {space}"));
        return false;
    };
    let problems = compare(report, &oracle);
    if problems.is_empty() {
        true
    } else {
        failures.push(format!(
            "{label} space {space}:\n  {}",
            problems.join("\n  ")
        ));
        false
    }
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

#[test]
fn corpus_tpu_hlo_proto_matches_xprof() {
    let dir = corpus().join("new-libtpu-fits");
    let name = "module_0000.jit_f.cl_1014260217.after_optimizations.hlo.pb";
    let reports = oomscope_xla::analyze_hlo_proto(name, &read(&dir.join(name))).expect("analysis");
    let mut failures = Vec::new();
    assert!(
        check(
            name,
            &reports,
            0,
            &dir.join("tpu_fits_memory_viewer.json"),
            &mut failures
        ),
        "{}",
        failures.join("\n")
    );
    let hbm = reports
        .iter()
        .find(|r| r.memory_space == oomscope_report::MemoryColor::Device)
        .expect("hbm");
    // Read off tpu_fits_memory_viewer.json: peakHeapMib 11523.6142578125 at position 2.
    assert_eq!(hbm.peak_bytes, (11523.6142578125 * MIB) as u64);
    assert_eq!(hbm.peak_position, 2);
    assert_eq!(hbm.name, "jit_f");
}

#[test]
fn corpus_cpu_xplane_matches_xprof() {
    let dir = corpus().join("cpu-xplane");
    let bytes = read(&dir.join("vm.xplane.pb"));
    let mut last = (0, 0);
    let reports = oomscope_xla::analyze_xspace("vm.xplane.pb", &bytes, &mut |done, total| {
        last = (done, total)
    })
    .expect("analysis");
    assert_eq!(last, (bytes.len() as u64, bytes.len() as u64));
    let mlp: Vec<ModuleReport> = reports
        .iter()
        .filter(|r| r.display_name() == "jit_mlp(8)")
        .cloned()
        .collect();
    let mut failures = Vec::new();
    assert!(
        check(
            "jit_mlp(8)",
            &mlp,
            0,
            &dir.join("cpu_jit_mlp_memory_viewer.json"),
            &mut failures
        ),
        "{}",
        failures.join("\n")
    );
    assert!(mlp
        .iter()
        .all(|r| r.source_kind == oomscope_report::SourceKind::Xplane));
}

/// Every file named `name` under `dir`, depth first.
fn manifests(dir: &Path, name: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            manifests(&path, name, out);
        } else if path.file_name().is_some_and(|n| n == name) {
            out.push(path);
        }
    }
}

/// Every file under `dir` whose name ends with `suffix`, depth first.
fn files_ending(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        if path.is_dir() {
            files_ending(&path, suffix, out);
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
}

/// What one manifest's oracles gave.
#[derive(Default)]
struct Tally {
    checked: usize,
    passed: usize,
    failures: Vec<String>,
    /// Inputs (HloProtos and XSpaces) the manifests name, canonicalized.
    inputs: Vec<PathBuf>,
}

/// Checks the oracles of one manifest (`fixture.json` or the corpus's
/// `oracles.json`): `modules[]` with `hlo_proto` and `oracles` {memory space:
/// file}, and `xplane` with `xplane_oracles` {key: {module, memory_space,
/// json}}. Inputs are read from `inputs`, oracle files from `oracle_dir`.
/// Also checks coverage: every memory space of every module we report has an
/// oracle (XProf's answer for each was written by the generator).
fn check_manifest(manifest: &Value, inputs: &Path, oracle_dir: &Path, tally: &mut Tally) {
    for module in manifest
        .get("modules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(hlo), Some(oracles)) = (
            module.get("hlo_proto").and_then(Value::as_str),
            module.get("oracles").and_then(Value::as_object),
        ) else {
            continue;
        };
        let path = inputs.join(hlo);
        tally
            .inputs
            .push(path.canonicalize().unwrap_or(path.clone()));
        let label = path.display().to_string();
        let reports = match oomscope_xla::analyze_hlo_proto(hlo, &read(&path)) {
            Ok(r) => r,
            Err(e) => {
                tally.failures.push(format!("{label}: {e}"));
                tally.checked += oracles.len();
                continue;
            }
        };
        for report in &reports {
            if !oracles.contains_key(&report.memory_space.to_string()) {
                tally.failures.push(format!(
                    "{label}: memory space {} has no oracle (rerun tools/fixtures/generate.py --oracles-only)",
                    report.memory_space
                ));
            }
        }
        for (space, file) in oracles {
            tally.checked += 1;
            let space: i64 = space.parse().unwrap_or(-1);
            let oracle = oracle_dir.join(file.as_str().unwrap_or(""));
            if check(&label, &reports, space, &oracle, &mut tally.failures) {
                tally.passed += 1;
            }
        }
    }
    let Some(xplane) = manifest.get("xplane").and_then(Value::as_str) else {
        return;
    };
    let empty = serde_json::Map::new();
    let oracles = manifest
        .get("xplane_oracles")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let path = inputs.join(xplane);
    tally
        .inputs
        .push(path.canonicalize().unwrap_or(path.clone()));
    let label = path.display().to_string();
    let bytes = read(&path);
    let reports = match oomscope_xla::analyze_xspace(xplane, &bytes, &mut |_, _| {}) {
        Ok(r) => r,
        // XProf finds no module either (its `tool_names` answers NO_MODULE).
        Err(e) if e.kind == oomscope_xla::XlaErrorKind::NoHlo && oracles.is_empty() => Vec::new(),
        Err(e) => {
            tally.failures.push(format!("{label}: {e}"));
            tally.checked += oracles.len();
            return;
        }
    };
    // Which module and space each oracle is for (older manifests key by module
    // name alone, for memory space 0).
    let target = |key: &str, oracle: &Value| {
        let module = oracle
            .get("module")
            .and_then(Value::as_str)
            .unwrap_or(key)
            .to_string();
        let space = oracle
            .get("memory_space")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        (module, space)
    };
    for report in &reports {
        let wanted = (report.display_name(), report.memory_space.number());
        if !oracles.iter().any(|(k, o)| target(k, o) == wanted) {
            tally.failures.push(format!(
                "{label}: module {} memory space {} has no oracle",
                wanted.0, wanted.1
            ));
        }
    }
    for (key, oracle) in oracles {
        tally.checked += 1;
        let (module_name, space) = target(key, oracle);
        let file = oracle.get("json").and_then(Value::as_str).unwrap_or("");
        let module: Vec<ModuleReport> = reports
            .iter()
            .filter(|r| r.display_name() == module_name)
            .cloned()
            .collect();
        if check(
            &format!("{label} {module_name}"),
            &module,
            space,
            &oracle_dir.join(file),
            &mut tally.failures,
        ) {
            tally.passed += 1;
        }
    }
}

fn report(what: &str, tally: &Tally) {
    eprintln!("{what}: {} of {} match XProf", tally.passed, tally.checked);
    assert!(tally.checked > 0, "{what}: no oracles found");
    assert!(
        tally.failures.is_empty(),
        "{what}: {} problems:\n{}",
        tally.failures.len(),
        tally.failures.join("\n")
    );
}

/// Every inputs under `root` ending with one of `suffixes` that no manifest names.
fn unlisted(root: &Path, tally: &Tally) -> Vec<String> {
    let mut found = Vec::new();
    for suffix in [".hlo.pb", ".xplane.pb"] {
        files_ending(root, suffix, &mut found);
    }
    found
        .into_iter()
        // A before-optimizations HloProto has no buffer assignment: XProf's
        // Memory Viewer has nothing to show for it either.
        .filter(|p| !p.to_string_lossy().ends_with("before_optimizations.hlo.pb"))
        .filter(|p| {
            !tally
                .inputs
                .contains(&p.canonicalize().unwrap_or(p.clone()))
        })
        .map(|p| p.display().to_string())
        .collect()
}

/// Every `fixture.json` under `fixtures/` (so a new fixture with oracles is
/// checked without naming it here), every module and memory space; every
/// HloProto and XSpace under `fixtures/` must be named by one.
#[test]
fn every_fixture_matches_xprof() {
    let mut paths = Vec::new();
    manifests(&fixtures(), "fixture.json", &mut paths);
    let mut tally = Tally::default();
    for path in &paths {
        let dir = path.parent().unwrap_or(Path::new("."));
        let manifest: Value = serde_json::from_slice(&read(path)).unwrap_or(Value::Null);
        check_manifest(&manifest, dir, dir, &mut tally);
    }
    let mut corpus_inputs = Vec::new();
    files_ending(
        &fixtures().join("corpus-oracles"),
        ".pb",
        &mut corpus_inputs,
    );
    assert!(
        corpus_inputs.is_empty(),
        "corpus inputs are read in place, not copied: {corpus_inputs:?}"
    );
    let unlisted = unlisted(&fixtures(), &tally);
    assert!(
        unlisted.is_empty(),
        "inputs with no oracles (no fixture.json names them): {unlisted:#?}"
    );
    report("fixture oracles", &tally);
}

/// Every HloProto and XSpace of the corpus's `xla-runs/`, read in place, each
/// module in each memory space, against the oracles
/// `tools/fixtures/generate.py --corpus` wrote into `fixtures/corpus-oracles/`.
#[test]
fn every_corpus_xla_run_matches_xprof() {
    let mut paths = Vec::new();
    manifests(
        &fixtures().join("corpus-oracles"),
        "oracles.json",
        &mut paths,
    );
    let mut tally = Tally::default();
    for path in &paths {
        let dir = path.parent().unwrap_or(Path::new("."));
        let manifest: Value = serde_json::from_slice(&read(path)).unwrap_or(Value::Null);
        let folder = manifest.get("corpus").and_then(Value::as_str).unwrap_or("");
        let inputs = corpus().parent().unwrap_or(Path::new(".")).join(folder);
        check_manifest(&manifest, &inputs, dir, &mut tally);
    }
    let unlisted = unlisted(&corpus(), &tally);
    assert!(
        unlisted.is_empty(),
        "corpus inputs with no oracles (rerun tools/fixtures/generate.py --corpus): {unlisted:#?}"
    );
    report("corpus oracles", &tally);
}
