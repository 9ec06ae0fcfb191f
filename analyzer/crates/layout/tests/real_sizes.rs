//! Our sizes against the compiler's own, on every real file we have: the
//! buffer assignment dumps (`value: <id name @i> (size=N,offset=M): SHAPE`)
//! in the shared corpus and in `fixtures/`, the XProf Memory Viewer oracle
//! JSON (padded and unpadded size per buffer) and the "Largest program
//! allocations" entries of the corpus logs.

use oomscope_layout::{parse_shape, ArrayShape, Layout, Shape, Tile};
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../../shared/corpus"
    ))
}

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../fixtures"))
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

fn is_tiled_or_sync_flag(array: &ArrayShape) -> bool {
    array
        .layout
        .as_ref()
        .is_some_and(|l| !l.tiles.is_empty() || l.memory_space == 2)
}

#[test]
fn buffer_assignment_sizes_equal_the_compilers() {
    let mut files = Vec::new();
    files_under(&corpus(), "buffer-assignment.txt", &mut files);
    files_under(&fixtures(), "buffer-assignment.txt", &mut files);
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
        let mut tuple_sizes = std::collections::BTreeSet::new();
        for (size, shape_text) in buffer_assignment_values(file) {
            let shape = parse_shape(&shape_text)
                .unwrap_or_else(|e| panic!("{}: {shape_text}: {e}", file.display()));
            assert_eq!(shape.to_string(), shape_text, "prints back as read");
            let ours = match &shape {
                Shape::Array(array) if is_tiled_or_sync_flag(array) => {
                    arrays += 1;
                    element_types.insert(array.element_type.name());
                    array.padded_bytes()
                }
                // Untiled arrays outside the sync-flag space S(2) (scalars of
                // reduction and sort sub-computations, thread-local) get the
                // TPU's default (8,128) tiling.
                Shape::Array(array) => {
                    untiled += 1;
                    let mut tiled = array.clone();
                    let layout = tiled.layout.get_or_insert_with(Layout::default);
                    layout.minor_to_major = (0..array.dims.len() as i64).rev().collect();
                    layout.tiles = vec![Tile { dims: vec![8, 128] }];
                    tiled.padded_bytes()
                }
                // The TPU gives a tuple's index table one allocation granule:
                // the same size for every tuple of a module (512 bytes on v4
                // and v5e, 32 on v5p and v6e); checked below.
                _ => {
                    tuples += 1;
                    tuple_sizes.insert(size);
                    size
                }
            };
            if ours != size {
                mismatches.push(format!(
                    "{}: {shape_text}: compiler {size}, ours {ours}",
                    file.display()
                ));
            }
        }
        assert!(
            tuple_sizes.len() <= 1,
            "{}: tuple tables of several sizes {tuple_sizes:?}",
            file.display()
        );
        assert!(
            tuple_sizes.iter().all(|s| [32, 512].contains(s)),
            "{}: tuple tables {tuple_sizes:?}",
            file.display()
        );
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
        "checked {arrays} tiled or sync-flag array values, {untiled} other untiled, {tuples} tuples in {} buffer assignment files",
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
    for file in &files {
        for (shape_text, padded, unpadded) in memory_viewer_buffers(file) {
            let shape = parse_shape(&shape_text)
                .unwrap_or_else(|e| panic!("{}: {shape_text}: {e}", file.display()));
            let Shape::Array(array) = &shape else {
                tuples += 1;
                continue;
            };
            checked += 1;
            if array.padded_bytes() != padded || array.unpadded_bytes() != unpadded {
                mismatches.push(format!(
                    "{}: {shape_text}: xprof {padded}/{unpadded}, ours {}/{}",
                    file.display(),
                    array.padded_bytes(),
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
