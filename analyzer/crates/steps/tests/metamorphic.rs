//! Metamorphic tests for the step-log readers: every real step log (the
//! shared corpus's train_step_memory files, the posted samples) is put
//! through what logs go through on the way to the user, and must give the
//! same series (source, device, metric, points, limit, retries).

use oomscope_steps::{parse_step_log, StepSeries};
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn inputs() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let corpus = Path::new(ROOT).join("../../../../shared/corpus/logs");
    let mut paths: Vec<_> = std::fs::read_dir(&corpus)
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().contains("train_step_memory"))
        .collect();
    let samples = Path::new(ROOT).join("tests/samples");
    paths.extend(
        std::fs::read_dir(&samples)
            .expect("samples")
            .filter_map(|e| e.ok().map(|e| e.path())),
    );
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        // Corpus files have a `# ---` header; samples a `# source:` line.
        let body = match text.split_once("\n# ---\n") {
            Some((_, b)) => b.to_string(),
            None => text.split_once('\n').map_or("", |(_, b)| b).to_string(),
        };
        out.push((path.display().to_string(), body));
    }
    assert!(out.len() >= 10, "only {} step logs", out.len());
    out
}

/// What a transform must not change.
fn summary(series: &[StepSeries]) -> Vec<String> {
    series
        .iter()
        .map(|s| {
            format!(
                "{}|{}|{}|{:?}|{:?}|{:?}",
                s.source,
                s.device,
                s.metric,
                s.points
                    .iter()
                    .map(|p| (p.step, p.bytes))
                    .collect::<Vec<_>>(),
                s.limit_bytes,
                s.allocation_retries
                    .iter()
                    .map(|p| (p.step, p.bytes))
                    .collect::<Vec<_>>(),
            )
        })
        .collect()
}

/// A transform's name and the function that applies it.
type Transform = (&'static str, fn(&str) -> String);

fn map_lines(text: &str, f: impl Fn(&str) -> String) -> String {
    text.lines().map(|l| f(l) + "\n").collect()
}

#[test]
fn transforms_keep_the_series() {
    let variants: [Transform; 6] = [
        ("CRLF", |t| t.replace('\n', "\r\n")),
        ("trailing spaces", |t| map_lines(t, |l| format!("{l}  "))),
        ("UTF-8 BOM", |t| format!("\u{feff}{t}")),
        ("Ray worker prefix", |t| {
            map_lines(t, |l| format!("(TrainWorker pid=4242) {l}"))
        }),
        ("timestamp prefix", |t| {
            map_lines(t, |l| format!("2025-01-05 09:48:28,754 {l}"))
        }),
        ("unrelated lines around", |t| {
            format!("Starting job 42\nwandb: syncing run\n{t}\nJob finished\n")
        }),
    ];
    let mut failures = Vec::new();
    for (name, text) in inputs() {
        let want = summary(&parse_step_log("x", &text));
        assert!(!want.is_empty(), "{name}: no series");
        for (what, f) in &variants {
            let got = summary(&parse_step_log("x", &f(&text)));
            if got != want {
                failures.push(format!("{name} / {what}:\n  want {want:?}\n  got  {got:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
