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
    let Some(report) = reports.iter().find(|r| r.memory_space == oomscope_report::MemoryColor::from(space)) else {
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
    let hbm = reports.iter().find(|r| r.memory_space == oomscope_report::MemoryColor::Device).expect("hbm");
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
    assert!(mlp.iter().all(|r| r.source_kind == oomscope_report::SourceKind::Xplane));
}

/// Every `fixture.json` under `fixtures/`, depth first.
fn fixture_manifests(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            fixture_manifests(&path, out);
        } else if path.file_name().is_some_and(|n| n == "fixture.json") {
            out.push(path);
        }
    }
}

#[test]
fn every_fixture_matches_xprof() {
    let mut manifests = Vec::new();
    fixture_manifests(&fixtures(), &mut manifests);
    let (mut checked, mut passed) = (0, 0);
    let mut failures = Vec::new();
    for manifest in &manifests {
        let dir = manifest.parent().unwrap_or(Path::new("."));
        let fixture: Value = serde_json::from_slice(&read(manifest)).unwrap_or(Value::Null);
        for module in fixture
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
            let label = dir.join(hlo).display().to_string();
            let reports = match oomscope_xla::analyze_hlo_proto(hlo, &read(&dir.join(hlo))) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{label}: {e}"));
                    checked += oracles.len();
                    continue;
                }
            };
            for (space, file) in oracles {
                checked += 1;
                let space: i64 = space.parse().unwrap_or(-1);
                if check(
                    &label,
                    &reports,
                    space,
                    &dir.join(file.as_str().unwrap_or("")),
                    &mut failures,
                ) {
                    passed += 1;
                }
            }
        }
        if let (Some(xplane), Some(oracles)) = (
            fixture.get("xplane").and_then(Value::as_str),
            fixture.get("xplane_oracles").and_then(Value::as_object),
        ) {
            let label = dir.join(xplane).display().to_string();
            let bytes = read(&dir.join(xplane));
            let reports = match oomscope_xla::analyze_xspace(xplane, &bytes, &mut |_, _| {}) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{label}: {e}"));
                    checked += oracles.len();
                    continue;
                }
            };
            for (module_name, oracle) in oracles {
                checked += 1;
                let space = oracle
                    .get("memory_space")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                let file = oracle.get("json").and_then(Value::as_str).unwrap_or("");
                let module: Vec<ModuleReport> = reports
                    .iter()
                    .filter(|r| &r.display_name() == module_name)
                    .cloned()
                    .collect();
                if check(
                    &format!("{label} {module_name}"),
                    &module,
                    space,
                    &dir.join(file),
                    &mut failures,
                ) {
                    passed += 1;
                }
            }
        }
    }
    eprintln!("fixture oracles: {passed} of {checked} match XProf");
    assert!(
        checked > 0,
        "no fixture oracles found under {}",
        fixtures().display()
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} oracles differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
