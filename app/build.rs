//! Embeds the example the page opens on: the user-facing files of one
//! committed fixture (a compile log and its XLA dump folder), exactly as a
//! user would drop them. The page runs them through the worker at startup,
//! so the example shows what the analyzer really does with them.
//!
//! Generated: `$OUT_DIR/example.rs` with `EXAMPLE_NAME` and `EXAMPLE_FILES`.
//! A missing fixture folder yields an empty list (the page then opens on
//! its welcome screen) rather than a failed build.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The fixture shown by default (under the repository's `fixtures/`).
const EXAMPLE_FIXTURE: &str = "oom-single-buffer";

/// Files of a fixture folder that are not what a user would drop: the
/// generator's metadata, the program source and the XProf oracle outputs.
fn is_user_input(name: &str) -> bool {
    !(name == "fixture.json"
        || name == "versions.txt"
        || name.ends_with(".py")
        || name.contains(".memory_viewer"))
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let fixture_dir = manifest_dir
        .join("..")
        .join("fixtures")
        .join(EXAMPLE_FIXTURE);
    println!("cargo:rerun-if-changed={}", fixture_dir.display());
    println!("cargo:rerun-if-changed=build.rs");

    let mut files = list_files(&fixture_dir);
    files.retain(|(name, _)| is_user_input(name));
    files.sort();

    let mut out = String::new();
    let name = if files.is_empty() {
        ""
    } else {
        EXAMPLE_FIXTURE
    };
    let description = describe_fixture(&fixture_dir.join("fixture.json"));
    writeln!(
        out,
        "/// Name of the embedded example fixture; empty when none."
    )
    .unwrap();
    writeln!(out, "pub const EXAMPLE_NAME: &str = {name:?};").unwrap();
    writeln!(
        out,
        "/// What the example shows (the fixture's own description)."
    )
    .unwrap();
    writeln!(
        out,
        "pub const EXAMPLE_DESCRIPTION: &str = {description:?};"
    )
    .unwrap();
    writeln!(
        out,
        "/// The example's files, named as if its folder had been dropped."
    )
    .unwrap();
    writeln!(out, "pub const EXAMPLE_FILES: &[(&str, &[u8])] = &[").unwrap();
    for (file_name, path) in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(
            out,
            "    ({:?}, include_bytes!({:?})),",
            format!("{EXAMPLE_FIXTURE}/{file_name}"),
            path.display().to_string()
        )
        .unwrap();
    }
    writeln!(out, "];").unwrap();

    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out_dir.join("example.rs"), out).expect("OUT_DIR is writable");
}

/// The `shows` line of the fixture's `fixture.json`, if any.
fn describe_fixture(path: &Path) -> String {
    println!("cargo:rerun-if-changed={}", path.display());
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|json| json.get("shows")?.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Plain files directly in `dir` (fixture folders are flat), by file name.
fn list_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .collect()
}
