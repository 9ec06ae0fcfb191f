//! Hostile dump text: a quarter million instructions, a million allocations, call
//! chains far deeper than any compiler emits, and computations that call
//! themselves. Each must finish with a report or an error naming the file,
//! never a stack overflow, hang or panic.

use oomscope_dump::analyze_dump;

const HLO: &str = "module_0000.jit_f.after_optimizations.txt";
const BUFFERS: &str = "module_0000.jit_f.after_optimizations-buffer-assignment.txt";

fn analyze(files: &[(&str, &str)]) -> (usize, usize) {
    let (reports, errors) = analyze_dump(files);
    (reports.len(), errors.len())
}

/// An entry computation that adds a value to itself `n` times.
fn long_hlo(n: usize) -> String {
    let mut text =
        String::from("HloModule jit_f, is_scheduled=true\n\nENTRY %main (x: f32[8]) -> f32[8] {\n");
    text.push_str("  %a.0 = f32[8]{0} parameter(0)\n");
    for i in 1..n {
        text.push_str(&format!(
            "  %a.{i} = f32[8]{{0}} add(f32[8]{{0}} %a.{p}, f32[8]{{0}} %a.{p})\n",
            p = i - 1
        ));
    }
    text.push_str(&format!(
        "  ROOT %out = f32[8]{{0}} negate(f32[8]{{0}} %a.{})\n}}\n",
        n - 1
    ));
    text
}

#[test]
fn a_quarter_million_instructions_are_read_in_bounded_work() {
    // Linear: a million take about 4x as long (a minute in a debug build).
    let n = 250_000;
    let hlo = long_hlo(n);
    let (reports, _) = analyze(&[(HLO, &hlo)]);
    assert!(reports >= 1, "the estimate from HLO text alone");
}

#[test]
fn a_million_allocations_are_read_in_bounded_work() {
    let n = 1_000_000;
    let mut text = String::from("BufferAssignment:\n");
    for i in 0..n {
        text.push_str(&format!(
            "allocation {i}: size 32, preallocated-temp:\n value: <{i} a.{i} @0> (size=32,offset=0): f32[8]{{0}}\n"
        ));
    }
    let hlo = long_hlo(16);
    let (_reports, errors) = analyze(&[(HLO, &hlo), (BUFFERS, &text)]);
    // Values naming instructions that are not in the HLO are reported, not trusted.
    assert!(errors <= n, "at most one error per allocation");
}

/// `depth` computations, each calling the next; with `cycle`, the last one
/// calls the first again.
fn call_chain(depth: usize, cycle: bool) -> String {
    let mut text = String::from("HloModule jit_f, is_scheduled=true\n\n");
    for i in (0..depth).rev() {
        let callee = if i + 1 < depth {
            i + 1
        } else if cycle {
            0
        } else {
            usize::MAX
        };
        text.push_str(&format!(
            "%c.{i} (p: f32[8]) -> f32[8] {{\n  %p.{i} = f32[8]{{0}} parameter(0)\n"
        ));
        if callee == usize::MAX {
            text.push_str(&format!(
                "  ROOT %n.{i} = f32[8]{{0}} negate(f32[8]{{0}} %p.{i})\n}}\n\n"
            ));
        } else {
            text.push_str(&format!("  ROOT %call.{i} = f32[8]{{0}} call(f32[8]{{0}} %p.{i}), to_apply=%c.{callee}\n}}\n\n"));
        }
    }
    text.push_str("ENTRY %main (x: f32[8]) -> f32[8] {\n  %x = f32[8]{0} parameter(0)\n");
    text.push_str("  ROOT %call = f32[8]{0} call(f32[8]{0} %x), to_apply=%c.0\n}\n");
    text
}

#[test]
fn call_chains_deeper_than_any_compiler_emits_do_not_overflow_the_stack() {
    let hlo = call_chain(100_000, false);
    let _ = analyze(&[(HLO, &hlo)]);
}

#[test]
fn computations_that_call_themselves_terminate() {
    let hlo = call_chain(1, true);
    let _ = analyze(&[(HLO, &hlo)]);
    let hlo = call_chain(50, true);
    let _ = analyze(&[(HLO, &hlo)]);
}

/// Found by `fuzz/fuzz_targets/dump_text.rs`
/// (`fuzz/regressions/dump_text/unterminated-metadata-string-multibyte.txt`):
/// an unterminated metadata string whose last character before the newline
/// is two bytes long was cut inside that character.
#[test]
fn an_unterminated_metadata_string_ending_in_a_multibyte_character() {
    let hlo = "HloModule jit_f\n\nENTRY %main (x: f32[]) -> f32[] {\n  \
               ROOT %x = f32[] parameter(0), metadata={op_name=\"a\u{742}\n}\n";
    let _ = analyze(&[(HLO, hlo)]);
}

/// Every input the `dump_text` fuzz target ever crashed on
/// (`fuzz/regressions/dump_text/`), fed as the target feeds it: parts cut at
/// NUL bytes, one per file kind, then the whole input under each name. Among
/// them `sum-of-sizes-overflows.txt`: sizes taken from hostile text are
/// summed, and every sum must saturate, not overflow.
#[test]
fn every_past_fuzz_crash_of_dump_text() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../fuzz/regressions/dump_text"
    );
    // As in fuzz/fuzz_targets/dump_text.rs.
    let names = [
        "module_0000.jit_f.after_optimizations.txt",
        "module_0000.jit_f.after_optimizations-buffer-assignment.txt",
        "module_0000.jit_f.after_optimizations-live-range.txt",
        "module_0000.jit_f.after_optimizations-memory-usage-report.txt",
        "module_0000.jit_f.after_optimizations-buffer-assignment-values.txt",
        "module_0000.jit_f.after_optimizations_after_buffer_assignment.txt",
    ];
    let mut inputs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    assert!(inputs
        .iter()
        .any(|p| p.ends_with("sum-of-sizes-overflows.txt")));
    for path in inputs {
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let together: Vec<(&str, &str)> = names.iter().copied().zip(text.split('\0')).collect();
        let _ = analyze(&together);
        for name in names {
            let _ = analyze(&[(name, &text)]);
        }
    }
}
