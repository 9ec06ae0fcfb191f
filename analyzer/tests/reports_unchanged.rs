//! The `--json` reports of every corpus input and every fixture are
//! byte-identical to those recorded in `reports_unchanged.txt`, which were
//! made by main's binary before the readers became one registry (issue 28)
//! and before the log scan re-read only the lines around a wrapped message.
//! A change that alters a report on purpose records them again:
//!
//! ```text
//! OOMSCOPE_RECORD_REPORTS=1 cargo test -p oomscope-analyzer --test reports_unchanged
//! ```
//!
//! (`1` records this build's own command; an absolute path records another
//! build's, as the registry refactor's proof recorded main's.)
//!
//! Inputs: each corpus file alone (the CLI's `analyze --json FILE`), each
//! corpus run folder, each fixture folder. Each line of the record is the
//! report's FNV-1a hash, its length in bytes, and the input.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

const RECORD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reports_unchanged.txt");

/// (label, path) of every input, sorted.
fn inputs() -> Vec<(String, PathBuf)> {
    let corpus = common::corpus();
    let mut out = Vec::new();
    for family in ["logs", "runtime", "snapshots", "xla-runs"] {
        let mut stack = vec![corpus.join(family)];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for p in entries.filter_map(|e| e.ok().map(|e| e.path())) {
                let rel = p.strip_prefix(&corpus).unwrap().display().to_string();
                if p.is_dir() {
                    out.push((format!("corpus/{rel}/"), p.clone()));
                    stack.push(p);
                } else {
                    out.push((format!("corpus/{rel}"), p));
                }
            }
        }
    }
    for dir in common::fixture_dirs() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        out.push((format!("fixtures/{name}/"), dir));
    }
    out.sort();
    out
}

/// `oomscope analyze --json PATH` by `binary`: the hash and length of its
/// output, or what went wrong.
fn report_of(binary: &Path, path: &Path) -> String {
    match Command::new(binary)
        .args(["analyze", "--json"])
        .arg(path)
        .output()
    {
        Ok(out) => format!(
            "{} {} exit {}",
            oomscope_analyzer::report::content_hash(&out.stdout),
            out.stdout.len(),
            out.status.code().unwrap_or(-1)
        ),
        Err(e) => format!("cannot run: {e}"),
    }
}

/// Every input's line, two processes at a time.
fn lines(binary: &Path) -> Vec<String> {
    let inputs = inputs();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut lines: Vec<(usize, String)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((label, path)) = inputs.get(i) else {
                            break mine;
                        };
                        mine.push((i, format!("{} {label}", report_of(binary, path))));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    lines.sort();
    lines.into_iter().map(|(_, l)| l).collect()
}

#[test]
fn every_report_is_as_recorded() {
    if let Ok(binary) = std::env::var("OOMSCOPE_RECORD_REPORTS") {
        // `1`: this build's own command; else another build's, by its path
        // (a refactor's proof records main's, then tests its own).
        let binary = if binary == "1" {
            PathBuf::from(env!("CARGO_BIN_EXE_oomscope"))
        } else {
            std::fs::canonicalize(&binary).unwrap_or_else(|e| {
                panic!("OOMSCOPE_RECORD_REPORTS={binary}: {e} (give 1, or an absolute path)")
            })
        };
        let text = lines(&binary).join("\n") + "\n";
        std::fs::write(RECORD, text).unwrap();
        return;
    }
    let recorded = std::fs::read_to_string(RECORD).unwrap();
    let want: Vec<&str> = recorded.lines().collect();
    let got = lines(Path::new(env!("CARGO_BIN_EXE_oomscope")));
    let label = |l: &str| l.splitn(5, ' ').nth(4).unwrap_or("").to_string();
    let want_labels: Vec<String> = want.iter().map(|l| label(l)).collect();
    let got_labels: Vec<String> = got.iter().map(|l| label(l)).collect();
    assert_eq!(
        got_labels, want_labels,
        "the inputs differ from those recorded (corpus or fixtures changed: record again)"
    );
    let differ: Vec<String> = want
        .iter()
        .zip(&got)
        .filter(|(w, g)| w != g)
        .map(|(w, g)| format!("recorded {w}\n     now {g}"))
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} reports differ:\n{}",
        differ.len(),
        want.len(),
        differ.join("\n")
    );
    assert!(want.len() > 150, "{} inputs only", want.len());
}
