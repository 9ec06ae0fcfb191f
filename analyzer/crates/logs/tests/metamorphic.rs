//! Metamorphic tests: every real OOM input (the shared corpus, the project's
//! `fixtures/*/compile.log`, the posted samples) is put through what real
//! logs go through (hard wraps, logger prefixes, quoting, CRLF, colours,
//! repeats, ...) and must give the same numbers; a message cut inside keeps
//! the numbers still present, invents none and names the missing ones.
//!
//! The transforms are plain functions of the text; the variants (widths,
//! prefixes, cut points) are fixed lists, so a failure reproduces exactly.

use oomscope_logs::parse_oom_log;
use oomscope_report::{OomEvent, OomKind};
use std::collections::BTreeMap;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One real input: where it comes from and its text.
struct Input {
    name: String,
    text: String,
}

fn read_dir_sorted(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    paths.sort();
    paths
}

/// Every real OOM input the logs reader is tested on.
fn inputs() -> Vec<Input> {
    let mut out = Vec::new();
    let corpus = oomscope_testdata::corpus().join("logs");
    for path in read_dir_sorted(&corpus) {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        // Step logs (train_step_memory) belong to the steps reader.
        if !name.ends_with(".txt") || name.contains("train_step") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let body = text.split_once("\n# ---\n").map_or("", |(_, b)| b);
        out.push(Input {
            name: format!("corpus/{name}"),
            text: body.to_string(),
        });
    }
    // Every compile.log of the generated fixtures, the variants of the
    // estimate pairs (`pair-*/<variant>/`) included.
    let fixtures = oomscope_testdata::fixtures();
    for dir in read_dir_sorted(&fixtures) {
        let mut folders = vec![dir.clone()];
        if dir.is_dir() {
            folders.extend(read_dir_sorted(&dir).into_iter().filter(|p| p.is_dir()));
        }
        for folder in folders {
            if let Ok(text) = std::fs::read_to_string(folder.join("compile.log")) {
                let name = folder.strip_prefix(&fixtures).unwrap_or(&folder);
                out.push(Input {
                    name: format!("fixtures/{}", name.display()),
                    text,
                });
            }
        }
    }
    for path in read_dir_sorted(&Path::new(ROOT).join("tests/samples")) {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let body = text.split_once('\n').map_or("", |(_, b)| b);
        out.push(Input {
            name: format!("samples/{name}"),
            text: body.to_string(),
        });
    }
    assert!(out.len() >= 110, "only {} real inputs found", out.len());
    out
}

/// The numbers of an event: every `*_bytes` field, the extras, and the
/// listed allocations' sizes (what a transform must not change).
#[derive(Debug, PartialEq)]
struct Numbers {
    kind: OomKind,
    space: oomscope_report::MemorySpace,
    fields: BTreeMap<String, u64>,
    top: Vec<(u32, u64, Option<u64>, Option<u64>)>,
}

fn numbers(e: &OomEvent) -> Numbers {
    let mut fields = BTreeMap::new();
    if let Ok(serde_json::Value::Object(obj)) = serde_json::to_value(e) {
        for (k, v) in obj {
            if let (true, Some(n)) = (k.ends_with("_bytes"), v.as_u64()) {
                fields.insert(k, n);
            }
        }
    }
    for (k, v) in &e.extra {
        fields.insert(format!("extra.{k}"), *v);
    }
    let top = e
        .top_allocations
        .iter()
        .chain(&e.top_arguments)
        .map(|t| (t.rank, t.size_bytes, t.unpadded_bytes, t.padding_bytes))
        .collect();
    Numbers {
        kind: e.kind,
        space: e.memory_space.clone(),
        fields,
        top,
    }
}

fn all_numbers(events: &[OomEvent]) -> Vec<Numbers> {
    events.iter().map(numbers).collect()
}

// ---------------------------------------------------------------------------
// Transforms

fn map_lines(text: &str, f: impl Fn(usize, &str) -> String) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for (i, line) in text.lines().enumerate() {
        out.push_str(&f(i, line));
        out.push('\n');
    }
    out
}

/// A terminal's hard wrap: every line cut every `width` characters.
fn hard_wrap(text: &str, width: usize) -> String {
    map_lines(text, |_, line| {
        let chars: Vec<char> = line.chars().collect();
        if chars.is_empty() {
            return String::new();
        }
        chars
            .chunks(width)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    })
}

fn prefix_every_line(text: &str, prefix: &str) -> String {
    map_lines(text, |_, line| format!("{prefix}{line}"))
}

/// What loggers put in front of every line.
const PREFIXES: [&str; 5] = [
    "E1121 12:52:43.843812    6049 file.cc:3582] ",
    "[rank3]: ",
    "(Worker pid=4242) ",
    "2025-01-05 09:48:28,754 ",
    "[1,0]<stderr>:",
];

fn quoted(text: &str) -> String {
    map_lines(text, |_, line| format!("> {line}"))
}

fn fenced(text: &str) -> String {
    format!("Here is the error:\n\n```\n{text}\n```\n")
}

fn crlf(text: &str) -> String {
    text.replace('\n', "\r\n")
}

fn trailing_spaces(text: &str) -> String {
    map_lines(text, |i, line| format!("{line}{}", " ".repeat(1 + i % 3)))
}

fn surrounded(text: &str) -> String {
    format!(
        "Epoch 1/10 - loss 0.4213 - acc 0.91\nSaving checkpoint to /tmp/ckpt-12\n{text}\nProcess finished with exit code 1\nwandb: Waiting for W&B process to finish...\n"
    )
}

fn bom(text: &str) -> String {
    format!("\u{feff}{text}")
}

fn colours(text: &str) -> String {
    map_lines(text, |i, line| {
        let colour = [31, 33, 36][i % 3];
        format!("\u{1b}[{colour}m{line}\u{1b}[0m")
    })
}

/// Leading runs of four spaces as tabs.
fn tabs(text: &str) -> String {
    map_lines(text, |_, line| {
        let indent = line.len() - line.trim_start_matches(' ').len();
        format!(
            "{}{}",
            "\t".repeat(indent / 4),
            &line[indent - indent % 4..]
        )
    })
}

/// The whole output printed once per rank, each with its rank tag.
fn ranks_in_turn(text: &str, n: usize) -> String {
    (0..n)
        .map(|r| prefix_every_line(text, &format!("[rank{r}]: ")))
        .collect()
}

// ---------------------------------------------------------------------------
// The suite

/// An unrelated line of more than 170 characters, as comments hold.
const LONG_LINE: &str = "Reproduce with: XLA_FLAGS=--xla_dump_to=/tmp/dump python3 -m maxtext.train maxtext/configs/base.yml run_name=repro per_device_batch_size=8 max_target_length=4096 steps=20 enable_checkpointing=false";

/// A transform name and the text it makes.
type Variant = (String, String);

fn same_numbers_variants(text: &str) -> Vec<Variant> {
    let mut v: Vec<Variant> = Vec::new();
    // Every third column from 41 to 140: a terminal can cut anywhere (in a
    // word, a number, a keyword, a report line's name).
    for width in (41..=140).step_by(3) {
        v.push((format!("hard wrap at {width}"), hard_wrap(text, width)));
    }
    for p in PREFIXES {
        v.push((
            format!("prefix {p:?} on every line"),
            prefix_every_line(text, p),
        ));
        // A logger prefixes each line it writes, then the terminal wraps:
        // continuation lines carry no prefix.
        for width in [100, 87 + p.len()] {
            v.push((
                format!("prefix {p:?} then hard wrap at {width}"),
                hard_wrap(&prefix_every_line(text, p), width),
            ));
        }
    }
    // A whole comment pasted: one unrelated line longer than the wrap
    // (a command line, a URL) before or after the wrapped message.
    // (Widths of the plain wraps above: each plain wrap reads right.)
    for width in [62, 80, 101, 122] {
        let wrapped = hard_wrap(text, width);
        v.push((
            format!("long line before, hard wrap at {width}"),
            format!("{LONG_LINE}\n{wrapped}"),
        ));
        v.push((
            format!("hard wrap at {width}, long line after"),
            format!("{wrapped}{LONG_LINE}\n"),
        ));
    }
    v.push(("markdown quote".into(), quoted(text)));
    v.push(("code fence".into(), fenced(text)));
    v.push(("CRLF".into(), crlf(text)));
    v.push(("trailing spaces".into(), trailing_spaces(text)));
    v.push(("unrelated lines around".into(), surrounded(text)));
    v.push(("UTF-8 BOM".into(), bom(text)));
    v.push(("ANSI colours".into(), colours(text)));
    v.push(("tabs".into(), tabs(text)));
    v
}

/// Variants the reader still gets wrong, each with what goes wrong. The
/// suite fails if one of them starts passing (remove it then) or if any
/// other variant differs. None today: the last six (a one-line message cut
/// before a keyword it holds or inside the name before its keyword, a
/// runtime breakdown after a cut headline, a Ray-framed BFC dump whose cut
/// lines start like report lines, a headless report printed by each rank)
/// are read by the messages' grammar (see `site::Site::headline`,
/// `normalize::unwrap`, `event::same_error`).
const KNOWN_GAPS: [(&str, &str); 0] = [];

fn known_gap(input: &str, what: &str) -> bool {
    KNOWN_GAPS.iter().any(|(i, w)| *i == input && *w == what)
}

#[test]
fn transforms_keep_every_number() {
    let mut failures = Vec::new();
    let mut gaps_seen = Vec::new();
    let mut checked = 0;
    for input in inputs() {
        let base = parse_oom_log(&input.name, &input.text);
        let want = all_numbers(&base);
        for (what, text) in same_numbers_variants(&input.text) {
            checked += 1;
            let got = all_numbers(&parse_oom_log(&input.name, &text));
            let gap = known_gap(&input.name, &what);
            if gap {
                gaps_seen.push((input.name.clone(), what.clone(), got != want));
            } else if got != want {
                failures.push(format!(
                    "{} / {what}:\n  want {want:?}\n  got  {got:?}",
                    input.name
                ));
            }
        }
    }
    for (input, what, still_wrong) in &gaps_seen {
        if !still_wrong {
            failures.push(format!(
                "{input} / {what}: now right, remove it from KNOWN_GAPS"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} variants differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn ranks_repeat_one_event() {
    let mut failures = Vec::new();
    for input in inputs() {
        let base = parse_oom_log(&input.name, &input.text);
        let text = ranks_in_turn(&input.text, 3);
        let got = parse_oom_log(&input.name, &text);
        let gap = known_gap(&input.name, "ranks in turn");
        if all_numbers(&got) != all_numbers(&base) {
            if !gap {
                failures.push(format!("{}: numbers differ", input.name));
            }
            continue;
        }
        if gap {
            failures.push(format!(
                "{}: now right, remove it from KNOWN_GAPS",
                input.name
            ));
        }
        for (b, g) in base.iter().zip(&got) {
            if g.repeats != 3 * b.repeats {
                failures.push(format!(
                    "{}: repeats {} for {} × 3",
                    input.name, g.repeats, b.repeats
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The numbers the headline of each kind states, when the full message has them.
fn headline_fields(kind: OomKind) -> &'static [&'static str] {
    match kind {
        OomKind::TorchCuda => &[
            "requested_bytes",
            "total_capacity_bytes",
            "free_bytes",
            "allocated_bytes",
            "reserved_bytes",
        ],
        OomKind::TpuCompileHbm | OomKind::TpuCompileOtherSpace | OomKind::TorchXla => {
            &["used_bytes", "limit_bytes"]
        }
        OomKind::TpuRuntime => &["requested_bytes", "free_bytes", "reserved_bytes"],
        OomKind::TpuSparsecore => &["tensorcore_bytes", "sparsecore_bytes", "limit_bytes"],
        OomKind::XlaGpu => &["requested_bytes"],
        OomKind::TpuScopedVmem => &["requested_bytes", "limit_bytes"],
    }
}

/// Equal, or the same value printed rounded (a cut can leave only the
/// rounded one of `2.99GiB (3206250496B)`).
fn close(a: u64, b: u64) -> bool {
    a.abs_diff(b) <= (a.max(b) / 200).max(1)
}

#[test]
fn cut_messages_keep_what_is_left_and_name_what_is_missing() {
    let mut failures = Vec::new();
    let mut cuts = 0;
    for input in inputs() {
        let base = parse_oom_log(&input.name, &input.text);
        let Some(first) = base.first() else { continue };
        let line_start: usize = input
            .text
            .split_inclusive('\n')
            .take(first.line.saturating_sub(1) as usize)
            .map(str::len)
            .sum();
        for step in 0..24 {
            let mut cut = (line_start + 7 + step * 29).min(input.text.len());
            while !input.text.is_char_boundary(cut) {
                cut -= 1;
            }
            cuts += 1;
            let events = parse_oom_log(&input.name, &input.text[..cut]);
            let Some(e) = events.iter().find(|e| e.line == first.line) else {
                continue;
            };
            let got = numbers(e).fields;
            let want = numbers(first).fields;
            for (key, v) in &got {
                if let Some(w) = want.get(key) {
                    if !close(*v, *w) {
                        failures.push(format!(
                            "{} cut at {cut}: {key} = {v}, full message {w}",
                            input.name
                        ));
                    }
                }
            }
            for key in headline_fields(first.kind) {
                if want.contains_key(*key)
                    && !got.contains_key(*key)
                    && !e.missing.iter().any(|m| m == key)
                {
                    failures.push(format!(
                        "{} cut at {cut}: {key} neither read nor missing ({:?})",
                        input.name, e.missing
                    ));
                }
            }
            for key in &e.missing {
                if got.contains_key(key) {
                    failures.push(format!(
                        "{} cut at {cut}: {key} read and missing",
                        input.name
                    ));
                }
            }
        }
    }
    assert!(cuts > 500, "{cuts}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn unrelated_text_gives_no_event() {
    let text = "Epoch 3: loss 0.12, reserved memory 12.00 GiB, free 3.00 GiB\nTotal host usage >= 0B:\nUsed 3 of 4 workers. out of memory? no.\n";
    for (what, variant) in same_numbers_variants(text) {
        assert!(parse_oom_log("plain", &variant).is_empty(), "{what}");
    }
}

/// Unrelated lines as a long log holds them (some with keywords of no
/// message, and a line longer than any wrap), `n` of them.
fn noise(n: usize) -> String {
    const LINES: [&str; 5] = [
        "I0706 16:50:26.230209 140110937163584 metric_logger.py:214] completed step: 1, seconds: 24.930, loss: 0.693",
        "step: 1200  loss:  2.3412  memory: 23.45GiB(24.67%)  tps: 5,812  tflops: 201.33  mfu: 20.36%",
        "I0813 17:21:06.501245    5157 deepsea_compiler_backend.cc:2130] XLA::TPU program HBM usage: 14.10G / 94.74G",
        "  File \"/usr/local/lib/python3.12/site-packages/jax/_src/interpreters/pxla.py\", line 1260, in compile",
        LONG_LINE,
    ];
    (0..n)
        .map(|i| format!("{}\n", LINES[(i * 7 + 3) % LINES.len()]))
        .collect()
}

/// The lines around a wrapped message are read again alone
/// (`rescan`): the events are exactly those of reading the whole joined
/// text again, on every input and variant, and with the message buried in
/// a long log (where the windows are a small part of the text), twice.
#[test]
fn reading_around_wraps_equals_reading_everything_again() {
    let mut failures = Vec::new();
    let mut checked = 0;
    let (before, between, after) = (noise(400), noise(200), noise(300));
    for input in inputs() {
        let mut variants = same_numbers_variants(&input.text);
        for width in [62, 80, 101] {
            let wrapped = hard_wrap(&input.text, width);
            variants.push((
                format!("in a long log, hard wrap at {width}"),
                format!("{before}{wrapped}{between}{wrapped}{after}"),
            ));
        }
        variants.push((
            "in a long log".into(),
            format!("{before}{}{between}{after}", input.text),
        ));
        for (what, text) in variants {
            checked += 1;
            let got = oomscope_logs::parse_oom_log(&input.name, &text);
            let want = oomscope_logs::parse_oom_log_rescanning_all(&input.name, &text);
            if got != want {
                failures.push(format!("{} / {what}", input.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} readings differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The compiler's own usage lines of a compile (`XLA::TPU program HBM
/// usage: 14.10G / 94.74G`, the `Total hbm usage >=` block), which give a
/// compile that fit its verdict, read through the same transforms: a
/// coloured or quoted log must not turn "fits with X to spare" into "not
/// recognised". Numbers only: the transforms move lines.
#[test]
fn compile_usages_survive_the_transforms() {
    use oomscope_logs::parse_compile_usage;
    let numbers = |text: &str| -> Vec<String> {
        parse_compile_usage("input", text)
            .iter()
            .map(|u| {
                format!(
                    "{} {:?} {} {:?} {:?} {:?} {:?} {:?}",
                    u.module,
                    u.memory_space,
                    u.program_bytes,
                    u.limit_bytes,
                    u.total_usage_bytes,
                    u.reserved_bytes,
                    u.arguments_bytes,
                    u.output_bytes
                )
            })
            .collect()
    };
    let mut failures = Vec::new();
    let mut inputs_with_usages = 0;
    for input in inputs() {
        let want = numbers(&input.text);
        if want.is_empty() {
            continue;
        }
        inputs_with_usages += 1;
        for (what, text) in same_numbers_variants(&input.text) {
            // A terminal's hard wrap cuts the usage lines themselves, which
            // are read as the compiler prints them (one line each).
            if what.contains("hard wrap") {
                continue;
            }
            let got = numbers(&text);
            if got != want {
                failures.push(format!(
                    "{} / {what}:\n  want {want:?}\n  got  {got:?}",
                    input.name
                ));
            }
        }
    }
    assert!(
        inputs_with_usages >= 3,
        "{inputs_with_usages} inputs with usage lines"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
