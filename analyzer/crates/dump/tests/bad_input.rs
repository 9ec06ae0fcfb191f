//! Bad input: truncated dumps, attributes from other XLA versions, text that
//! only looks like HLO, corrupted bytes. Always a clear error and whatever
//! could be recovered; never a panic.

use std::fs;

use oomscope_dump::{analyze_dump, buffer_assignment, live_range, memory_report, HloModule};

const PREFIX: &str = "module_0000.jit_f.cl_1014260217.after_optimizations";

fn fits_file(suffix: &str) -> String {
    fs::read_to_string(
        oomscope_testdata::corpus()
            .join("xla-runs/new-libtpu-fits")
            .join(format!("{PREFIX}{suffix}")),
    )
    .unwrap()
}

/// The largest char boundary at or below `at`.
fn cut(text: &str, at: usize) -> &str {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    &text[..at]
}

#[test]
fn truncated_hlo_says_so_and_keeps_what_was_read() {
    let text = fits_file(".txt");
    let entry_at = text.find("ENTRY").unwrap();
    // Cut in the middle of the entry computation, inside an instruction line.
    let truncated = cut(&text, entry_at + 1500);
    let parse = HloModule::parse(truncated);
    assert!(
        parse
            .problems
            .iter()
            .any(|p| p.message.contains("truncated")),
        "{:?}",
        parse.problems
    );
    let module = parse.module;
    assert_eq!(module.name, "jit_f");
    // All computations before the entry are complete, the entry's first instructions are there.
    assert_eq!(module.computations.len(), 12);
    let entry = module.entry_computation().unwrap();
    assert!(
        entry.instructions.len() >= 6,
        "{}",
        entry.instructions.len()
    );
    assert_eq!(entry.instructions[0].name, "w2.1");
}

#[test]
fn truncated_folder_gives_errors_and_a_report() {
    let hlo = fits_file(".txt");
    let ba = fits_file("-buffer-assignment.txt");
    let live = fits_file("-live-range.txt");
    let values = fits_file("-buffer-assignment-values.txt");
    let names = [
        format!("{PREFIX}.txt"),
        format!("{PREFIX}-buffer-assignment.txt"),
        format!("{PREFIX}-live-range.txt"),
        format!("{PREFIX}-buffer-assignment-values.txt"),
    ];
    let files = [
        (names[0].as_str(), cut(&hlo, hlo.len() * 9 / 10)),
        (names[1].as_str(), cut(&ba, ba.len() * 2 / 3)),
        (names[2].as_str(), live.as_str()),
        (names[3].as_str(), values.as_str()),
    ];
    let (reports, errors) = analyze_dump(&files);
    let messages: Vec<String> = errors
        .iter()
        .map(|e| format!("{}: {}", e.input, e.message))
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains(".txt: ") && m.contains("not closed: the text is truncated")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("-buffer-assignment.txt: allocations sum to")
                && m.contains("truncated")),
        "{messages:?}"
    );
    // Still a liveness report with the instruction sequence of the live ranges.
    let liveness = reports
        .iter()
        .find(|r| r.peak_kind == oomscope_report::PeakKind::BufferLiveness)
        .expect("a report");
    assert_eq!(liveness.instructions.len(), 21);
}

/// Cut every file at many points: the parsers and the analysis never panic.
#[test]
fn truncation_anywhere_never_panics() {
    for suffix in [
        ".txt",
        "-buffer-assignment.txt",
        "-live-range.txt",
        "-buffer-assignment-values.txt",
        "-memory-usage-report.txt",
    ] {
        let text = fits_file(suffix);
        let name = format!("{PREFIX}{suffix}");
        for step in 0..200 {
            let part = cut(&text, text.len() * step / 200);
            let _ = HloModule::parse(part);
            let _ = buffer_assignment::parse(part);
            let _ = live_range::parse(part);
            let _ = memory_report::parse(part);
            let _ = analyze_dump(&[(name.as_str(), part)]);
        }
    }
}

/// Attributes and metadata keys this parser has never seen (as a newer XLA
/// would print) change nothing it reads.
/// Name, shape, opcode, operands, op_name, stack_frame_id of an instruction.
type Summary = (String, String, String, Vec<String>, String, Option<u64>);

#[test]
fn unknown_attributes_from_another_xla_version() {
    let text = fits_file(".txt");
    let mut altered = String::new();
    for line in text.lines() {
        let is_instruction = line.starts_with("  ") && line.contains(" = ");
        if line.starts_with("HloModule ") {
            altered.push_str(line);
            altered.push_str(", future_module_option={a={b=\"}\"}}, replica_count=4");
        } else if is_instruction {
            let line = line.replace(
                "metadata={",
                "metadata={future_key={1 2 {3}} deduplicated_name=\"x, y\" ",
            );
            altered.push_str(&line);
            altered.push_str(
                r#", future_config={"nested":{"list":[1,{"s":"}]),\"quoted\""}]}}, result_accuracy={tolerance={atol=0.1}}, statistics={visualizing_index=1,stat-index-0=0.5}, origin={{"a"}}"#,
            );
        } else {
            altered.push_str(line);
        }
        altered.push('\n');
    }
    let original = HloModule::parse(&text);
    let parse = HloModule::parse(&altered);
    assert_eq!(parse.problems, vec![]);
    let summary = |m: &HloModule<'_>| -> Vec<Summary> {
        m.computations
            .iter()
            .flat_map(|c| c.instructions.iter())
            .map(|i| {
                (
                    i.name.to_string(),
                    i.shape.to_string(),
                    i.opcode.to_string(),
                    i.operand_names().map(str::to_string).collect(),
                    i.metadata.op_name.to_string(),
                    i.metadata.stack_frame_id,
                )
            })
            .collect()
    };
    assert_eq!(summary(&parse.module), summary(&original.module));
    assert_eq!(parse.module.name, "jit_f");
    assert!(parse.module.is_scheduled);
}

#[test]
fn text_that_only_looks_like_hlo() {
    let fakes = [
        "def f(x):\n    return {x: (1, 2)}\n\nclass A {\n  int b = c(d);\n}\n",
        "# Notes on HloModule parsing\nThe HloModule header comes first.\n",
        "{\"HloModule\": 1, \"ENTRY\": {\"a\": [1,2]}}",
        "ENTRY %main () -> f32[] {\n  this is = not an instruction\n  %x = f32[] \n}\n",
        "",
        "\u{0}\u{1}\u{2}binary\u{ff}{{{{((((\"\"\"\n",
    ];
    for fake in fakes {
        let parse = HloModule::parse(fake);
        assert!(!parse.problems.is_empty(), "{fake:?} gave no problem");
        assert!(
            parse.problems[0].message.contains("not an HLO module dump"),
            "{:?}",
            parse.problems
        );
        let name = format!("{PREFIX}.txt");
        let (reports, errors) = analyze_dump(&[(name.as_str(), fake)]);
        assert!(
            errors
                .iter()
                .any(|e| e.input == name && e.message.contains("not an HLO module")),
            "{errors:?}"
        );
        assert!(
            reports.is_empty() || reports.iter().all(|r| r.peak_bytes == 0),
            "{fake:?}"
        );
    }
    // The instruction that does not parse is named with its line.
    let parse = HloModule::parse(fakes[3]);
    assert!(
        parse
            .problems
            .iter()
            .any(|p| p.line == 2 && p.message.contains("expected")),
        "{:?}",
        parse.problems
    );

    // A buffer-assignment name on something else.
    let name = format!("{PREFIX}-buffer-assignment.txt");
    let (_, errors) = analyze_dump(&[(name.as_str(), "hello\nworld\n")]);
    assert!(
        errors
            .iter()
            .any(|e| e.message.contains("not a buffer assignment")),
        "{errors:?}"
    );
}

/// Deterministic byte corruption of every file of the folder: no panic.
#[test]
fn corrupted_bytes_never_panic() {
    let suffixes = [
        ".txt",
        "-buffer-assignment.txt",
        "-live-range.txt",
        "-buffer-assignment-values.txt",
        "-memory-usage-report.txt",
    ];
    let originals: Vec<(String, Vec<u8>)> = suffixes
        .iter()
        .map(|s| (format!("{PREFIX}{s}"), fits_file(s).into_bytes()))
        .collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let noise = b"{}()[]\",=%: \n0123456789-<>@|";
    for _ in 0..150 {
        let corrupted: Vec<(String, String)> = originals
            .iter()
            .map(|(name, bytes)| {
                let mut bytes = bytes.clone();
                for _ in 0..8 {
                    let at = (next() as usize) % bytes.len();
                    bytes[at] = noise[(next() as usize) % noise.len()];
                }
                (name.clone(), String::from_utf8_lossy(&bytes).into_owned())
            })
            .collect();
        let refs: Vec<(&str, &str)> = corrupted
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        let _ = analyze_dump(&refs);
    }
}
