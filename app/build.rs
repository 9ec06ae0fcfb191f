//! Embeds the example the page opens on: the report of the user-facing
//! files of one committed fixture (a compile log and its XLA dump folder),
//! analysed here, at build time, by the same analyzer the worker runs
//! (`oomscope_analyzer::analyze`, natively), exactly as if the user had
//! dropped them. The page shows it without starting the worker, so a first
//! visit downloads the worker only when the user drops a file or opens a
//! link (or the service worker caches it for offline use).
//!
//! Generated: `$OUT_DIR/example.rs` with `EXAMPLE_NAME`,
//! `EXAMPLE_DESCRIPTION` and `EXAMPLE_REPORT` (the report's JSON). A
//! missing fixture folder yields an empty report (the page then opens on
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
    // The report, as the worker would make it from the dropped folder.
    let inputs: Vec<oomscope_analyzer::InputFile> = files
        .iter()
        .map(|(file_name, path)| {
            println!("cargo:rerun-if-changed={}", path.display());
            oomscope_analyzer::InputFile {
                name: format!("{EXAMPLE_FIXTURE}/{file_name}"),
                data: std::fs::read(path).expect("a fixture file is readable"),
            }
        })
        .collect();
    let report_json = if inputs.is_empty() {
        String::new()
    } else {
        let report = oomscope_analyzer::analyze(inputs, &mut |_| {});
        serde_json::to_string(&report).expect("a report serialises")
    };
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out_dir.join("example-report.json"), report_json).expect("OUT_DIR is writable");
    writeln!(
        out,
        "/// The example's report (the analyzer's JSON); empty when none."
    )
    .unwrap();
    writeln!(
        out,
        "pub const EXAMPLE_REPORT: &str = include_str!(concat!(env!(\"OUT_DIR\"), \"/example-report.json\"));"
    )
    .unwrap();

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
