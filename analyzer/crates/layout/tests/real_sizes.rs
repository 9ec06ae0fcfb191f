//! Our sizes against the compiler's own, on every real file we have: the
//! buffer assignment dumps (`value: <id name @i> (size=N,offset=M): SHAPE`)
//! in the shared corpus and in `fixtures/`, the XProf Memory Viewer oracle
//! JSON (padded and unpadded size per buffer) and the "Largest program
//! allocations" entries of the corpus logs.

use oomscope_layout::{parse_shape, tpu_tuple_table_bytes, Shape};
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    oomscope_testdata::corpus()
}

fn fixtures() -> PathBuf {
    oomscope_testdata::fixtures()
}

fn files_under(root: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_under(&path, suffix, out);
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
}

/// The TPU's allocation granule for the chip a dump was compiled for
/// (`topology` in the fixture's `versions.txt`): 32 bytes on v5p and v6e, 512
/// on v4 and v5e (the corpus dumps are v5e and have no `versions.txt`).
fn allocation_granule(dump_file: &Path) -> u64 {
    let versions = dump_file.with_file_name("versions.txt");
    let text = std::fs::read_to_string(versions).unwrap_or_default();
    let topology = text
        .lines()
        .find_map(|l| l.strip_prefix("topology "))
        .unwrap_or("v5e");
    if topology.starts_with("v5p") || topology.starts_with("v6e") {
        32
    } else {
        512
    }
}

/// (file, size, shape text) of every value line of a buffer assignment dump.
fn buffer_assignment_values(path: &Path) -> Vec<(u64, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut values = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        if !line.starts_with("value: <") {
            continue;
        }
        let size_at = line.find("(size=").expect("value line with size") + "(size=".len();
        let size_end = size_at + line[size_at..].find(',').unwrap();
        let size: u64 = line[size_at..size_end].parse().unwrap();
        let shape_at = size_end + line[size_end..].find("): ").unwrap() + 3;
        values.push((size, line[shape_at..].to_string()));
    }
    values
}

#[test]
fn buffer_assignment_sizes_equal_the_compilers() {
    let mut files = Vec::new();
    files_under(&corpus(), "buffer-assignment.txt", &mut files);
    files_under(&fixtures(), "buffer-assignment.txt", &mut files);
    // TPU compiles only: an XLA:CPU dump (`cpu_after_optimizations`) has
    // neither tiles nor TPU's allocation granule.
    files.retain(|f| !f.to_string_lossy().contains("cpu_after_optimizations"));
    assert!(
        files.len() >= 5,
        "expected the corpus and fixture dumps, found {files:?}"
    );
    let mut arrays = 0;
    let mut untiled = 0;
    let mut element_types = std::collections::BTreeSet::new();
    let mut tuples = 0;
    let mut mismatches = Vec::new();
    for file in &files {
        let granule = allocation_granule(file);
        for (size, shape_text) in buffer_assignment_values(file) {
            let shape = parse_shape(&shape_text)
                .unwrap_or_else(|e| panic!("{}: {shape_text}: {e}", file.display()));
            assert_eq!(shape.to_string(), shape_text, "prints back as read");
            let ours = match &shape {
                Shape::Array(array) => {
                    if array.is_tiled() {
                        arrays += 1;
                    } else {
                        untiled += 1;
                    }
                    element_types.insert(array.element_type.name());
                    array.tpu_padded_bytes()
                }
                Shape::Tuple(elements) => {
                    tuples += 1;
                    tpu_tuple_table_bytes(elements.len(), granule)
                }
                Shape::Token | Shape::Opaque => size,
            };
            if ours != size {
                mismatches.push(format!(
                    "{}: {shape_text}: compiler {size}, ours {ours}",
                    file.display()
                ));
            }
        }
    }
    mismatches.dedup();
    // The padding zoo's types are all covered.
    for name in [
        "bf16", "f16", "f32", "s8", "u8", "s4", "u4", "s16", "s32", "u32", "pred", "f8e4m3fn",
    ] {
        assert!(
            element_types.contains(name),
            "no {name} buffer checked; seen {element_types:?}"
        );
    }
    eprintln!(
        "checked {arrays} tiled array values, {untiled} untiled, {tuples} tuples in {} buffer assignment files",
        files.len()
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// (padded, unpadded) bytes the Memory Viewer oracle gives each buffer, by
/// shape text: `maxHeap` entries (MiB as exact binary fractions) and
/// `bufferBlocks` (bytes). An unpadded size of 0 is omitted by the JSON.
fn memory_viewer_buffers(path: &Path) -> Vec<(String, u64, u64)> {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mib = |v: Option<&serde_json::Value>| {
        (v.and_then(|v| v.as_f64()).unwrap_or(0.0) * 1048576.0).round() as u64
    };
    let bytes = |v: Option<&serde_json::Value>| {
        v.and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        .unwrap_or(0)
    };
    let mut out = Vec::new();
    for entry in json["maxHeap"].as_array().into_iter().flatten() {
        if let Some(shape) = entry["shapeString"].as_str() {
            out.push((
                shape.to_string(),
                mib(entry.get("logicalBufferSizeMib")),
                mib(entry.get("unpaddedShapeMib")),
            ));
        }
    }
    for block in json["bufferBlocks"].as_array().into_iter().flatten() {
        if let Some(shape) = block["shapeString"].as_str() {
            out.push((
                shape.to_string(),
                bytes(block.get("size")),
                bytes(block.get("unpaddedSize")),
            ));
        }
    }
    out
}

#[test]
fn memory_viewer_padded_and_unpadded_sizes_equal_xprofs() {
    let mut files = Vec::new();
    files_under(&corpus(), "memory_viewer.json", &mut files);
    files_under(&fixtures(), ".json", &mut files);
    files.retain(|f| {
        f.file_name()
            .is_some_and(|n| n.to_string_lossy().contains("memory_viewer"))
    });
    assert!(
        files.len() >= 3,
        "expected Memory Viewer oracle files, found {files:?}"
    );
    let (mut checked, mut tuples) = (0, 0);
    let mut mismatches = Vec::new();
    // Folders of TPU programs: their oracles' shapes carry tiles (a CPU
    // program's never do; the oracles of a TPU program's small memory spaces
    // may have none, its HBM oracle always has). Their sizes are XLA:TPU's,
    // where an untiled array outside the sync-flag space takes whole vector
    // registers (`tpu_padded_bytes`).
    let tpu_folders: Vec<&Path> = files
        .iter()
        .filter(|f| {
            memory_viewer_buffers(f)
                .iter()
                .any(|(shape, _, _)| shape.contains(":T("))
        })
        .filter_map(|f| f.parent())
        .collect();
    for file in &files {
        let buffers = memory_viewer_buffers(file);
        let tpu = file.parent().is_some_and(|d| tpu_folders.contains(&d));
        for (shape_text, padded, unpadded) in buffers {
            let shape = parse_shape(&shape_text)
                .unwrap_or_else(|e| panic!("{}: {shape_text}: {e}", file.display()));
            let Shape::Array(array) = &shape else {
                tuples += 1;
                continue;
            };
            checked += 1;
            let ours = if tpu {
                array.tpu_padded_bytes()
            } else {
                array.padded_bytes()
            };
            if ours != padded || array.unpadded_bytes() != unpadded {
                mismatches.push(format!(
                    "{}: {shape_text}: xprof {padded}/{unpadded}, ours {ours}/{}",
                    file.display(),
                    array.unpadded_bytes()
                ));
            }
        }
    }
    mismatches.dedup();
    eprintln!(
        "checked {checked} Memory Viewer buffers (skipped {tuples} tuples) in {} files",
        files.len()
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// Bytes as libtpu prints them in "Largest program allocations" (tsl's
/// `HumanReadableNumBytes` without the `iB`): `512B`, `64.0K`, `512.00M`,
/// `2.25G`. Whole units are divided off in integers (truncating) before the
/// last division, so 9175171072 bytes print as `8.54G`, not `8.55G`.
fn libtpu_human_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    let units = ['K', 'M', 'G', 'T', 'P', 'E'];
    let (mut value, mut unit) = (bytes, 0);
    while value >= 1024 * 1024 && unit + 1 < units.len() {
        value /= 1024;
        unit += 1;
    }
    let value = value as f64 / 1024.0;
    if unit == 0 {
        format!("{value:.1}K")
    } else {
        format!("{value:.2}{}", units[unit])
    }
}

/// One "Largest program allocations" entry: printed size, shape, unpadded
/// size and the padding line when present.
struct LoggedAllocation {
    size: String,
    shape: String,
    unpadded: Option<String>,
    padding: Option<String>,
}

fn logged_allocations(text: &str) -> Vec<LoggedAllocation> {
    let mut out: Vec<LoggedAllocation> = Vec::new();
    let mut current: Option<LoggedAllocation> = None;
    for line in text.lines() {
        let line = line.trim();
        let after_rank = line
            .split_once(". Size: ")
            .filter(|(rank, _)| rank.chars().all(|c| c.is_ascii_digit()));
        if let Some((_, size)) = after_rank {
            out.extend(current.take());
            current = Some(LoggedAllocation {
                size: size.to_string(),
                shape: String::new(),
                unpadded: None,
                padding: None,
            });
        } else if let Some(entry) = current.as_mut() {
            if let Some(shape) = line.strip_prefix("Shape: ") {
                entry.shape = shape.to_string();
            } else if let Some(unpadded) = line.strip_prefix("Unpadded size: ") {
                entry.unpadded = Some(unpadded.to_string());
            } else if let Some(padding) = line.strip_prefix("Extra memory due to padding: ") {
                entry.padding = Some(padding.to_string());
            } else if line.starts_with("=====") {
                out.extend(current.take());
            }
        }
    }
    out.extend(current);
    out
}

#[test]
fn largest_program_allocations_in_logs_equal_ours() {
    let mut files = Vec::new();
    files_under(&corpus(), ".txt", &mut files);
    files_under(&corpus(), ".log", &mut files);
    files_under(&fixtures(), "compile.log", &mut files);
    let mut checked = 0;
    let mut with_padding = 0;
    let mut mismatches = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        // Entries without a shape (e.g. register allocator spill slots) have nothing to size.
        for entry in logged_allocations(&text)
            .into_iter()
            .filter(|e| !e.shape.is_empty())
        {
            let shape = parse_shape(&entry.shape)
                .unwrap_or_else(|e| panic!("{}: {}: {e}", file.display(), entry.shape));
            // A tuple's allocation is its index table: one granule, the same
            // padded and unpadded (512 bytes on v5e).
            let (padded, unpadded) = match &shape {
                Shape::Array(array) => (array.padded_bytes(), array.unpadded_bytes()),
                _ => (512, 512),
            };
            let mut ours = LoggedAllocation {
                size: libtpu_human_bytes(padded),
                shape: entry.shape.clone(),
                unpadded: entry
                    .unpadded
                    .as_ref()
                    .map(|_| libtpu_human_bytes(unpadded)),
                padding: None,
            };
            if entry.padding.is_some() {
                with_padding += 1;
                let expansion = padded as f64 / unpadded as f64;
                ours.padding = Some(format!(
                    "{} ({expansion:.1}x expansion)",
                    libtpu_human_bytes(padded - unpadded)
                ));
            }
            checked += 1;
            if (&ours.size, &ours.unpadded, &ours.padding)
                != (&entry.size, &entry.unpadded, &entry.padding)
            {
                mismatches.push(format!(
                    "{}: {}: log {} / {:?} / {:?}, ours {} / {:?} / {:?}",
                    file.display(),
                    entry.shape,
                    entry.size,
                    entry.unpadded,
                    entry.padding,
                    ours.size,
                    ours.unpadded,
                    ours.padding
                ));
            }
        }
    }
    eprintln!(
        "checked {checked} logged allocations ({with_padding} with a padding line) in {} files",
        files.len()
    );
    assert!(
        checked >= 60,
        "expected the corpus logs' entries, found {checked}"
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// Memory usage reports list, per allocation, `used_by_n_values` and the
/// values' shapes with repeat counts (`s32[], 6×u32[]`): the counts add up.
#[test]
fn memory_usage_report_shape_lists_parse_and_count_their_values() {
    let mut files = Vec::new();
    files_under(&corpus(), "memory-usage-report.txt", &mut files);
    files_under(&fixtures(), "memory-usage-report.txt", &mut files);
    assert!(files.len() >= 5, "{files:?}");
    let mut rows = 0;
    for file in &files {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            let columns: Vec<&str> = line.split(';').map(str::trim).collect();
            let [_, _, _, n_values, shapes] = columns.as_slice() else {
                continue;
            };
            let Ok(n_values) = n_values.parse::<u64>() else {
                continue;
            };
            let list = oomscope_layout::parse_counted_shape_list(shapes)
                .unwrap_or_else(|e| panic!("{}: {shapes}: {e}", file.display()));
            assert_eq!(
                list.iter().map(|(count, _)| count).sum::<u64>(),
                n_values,
                "{}: {line}",
                file.display()
            );
            rows += 1;
        }
    }
    eprintln!(
        "parsed {rows} memory usage report rows in {} files",
        files.len()
    );
    assert!(rows >= 100);
}

/// The scalar zoo (`tools/fixtures/programs/scalar_zoo.py`): scalars and tiny
/// arrays of every dtype in every memory space the compiler uses, on four TPU
/// generations and three libtpu versions. Every array value of every buffer
/// assignment must have the compiler's size, and the zoo must really hold the
/// cases the untiled rule is about (so this cannot pass on an empty folder).
#[test]
fn scalar_zoo_sizes_equal_the_compilers_on_every_generation_and_libtpu() {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("scalar-zoo-"))
        })
        .collect();
    folders.sort();
    let names: Vec<String> = folders
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for chip in ["v4", "v5e", "v5p", "v6e", "mid", "old"] {
        assert!(
            names.contains(&format!("scalar-zoo-{chip}")),
            "scalar-zoo-{chip} missing: {names:?}"
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut mismatches = Vec::new();
    let mut checked = 0;
    for folder in &folders {
        let mut files = Vec::new();
        files_under(folder, "buffer-assignment.txt", &mut files);
        assert!(
            !files.is_empty(),
            "{}: no buffer assignment",
            folder.display()
        );
        for file in &files {
            let granule = allocation_granule(file);
            for (size, shape_text) in buffer_assignment_values(file) {
                let shape = parse_shape(&shape_text)
                    .unwrap_or_else(|e| panic!("{}: {shape_text}: {e}", file.display()));
                let array = match shape {
                    Shape::Array(array) => array,
                    Shape::Tuple(elements) => {
                        let ours = tpu_tuple_table_bytes(elements.len(), granule);
                        seen.insert(format!("tuple of {} bytes", ours));
                        if ours != size {
                            mismatches.push(format!(
                                "{}: {shape_text}: compiler {size}, ours {ours}",
                                file.display()
                            ));
                        }
                        continue;
                    }
                    Shape::Token | Shape::Opaque => continue,
                };
                checked += 1;
                let space = array.memory_space();
                let kind = match (array.is_tiled(), array.dims.is_empty()) {
                    (false, true) => "untiled scalar",
                    (false, false) => "untiled array",
                    (true, true) => "tiled scalar",
                    (true, false) => "tiled array",
                };
                seen.insert(format!("{kind} {} S({space})", array.element_type.name()));
                seen.insert(format!("S({space})"));
                if array.tpu_padded_bytes() != size {
                    mismatches.push(format!(
                        "{}: {shape_text}: compiler {size}, ours {}",
                        file.display(),
                        array.tpu_padded_bytes()
                    ));
                }
            }
        }
    }
    eprintln!("checked {checked} scalar zoo array values: {seen:?}");
    for case in [
        "untiled scalar pred S(0)",
        "untiled scalar bf16 S(0)",
        "untiled scalar s32 S(0)",
        "untiled scalar pred S(6)",
        "untiled scalar u32 S(2)",
        "tiled scalar pred S(6)",
        "tiled scalar f32 S(5)",
        "tiled scalar s8 S(0)",
        "tiled scalar f8e4m3fn S(0)",
        "S(1)",
        "tuple of 64 bytes",
    ] {
        assert!(seen.contains(case), "the zoo has no {case}: {seen:?}");
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
