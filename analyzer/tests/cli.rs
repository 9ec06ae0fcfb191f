//! The `oomscope` command line, run as a user runs it: the JSON report of a
//! folder (with its XProf profile read by slices) equals the library's
//! analysis of the same files; `--link` prints a link that decodes to the
//! same verdict; `size` prints the compiler's sizes; bad paths and options
//! give clear errors and the documented exit codes.

mod common;

use common::*;
use std::process::{Command, Output};

fn oomscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn analyze_json_equals_the_library_on_a_profile_folder() {
    let dir = fixtures().join("cpu-profile");
    let out = oomscope(&["analyze", dir.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli: oomscope_report::Report = serde_json::from_str(&stdout(&out)).unwrap();
    let lib = oomscope_analyzer::analyze(load_folder(&dir), &mut |_| {});
    let modules = |r: &oomscope_report::Report| {
        let mut m: Vec<_> = r
            .modules
            .iter()
            .map(|m| {
                (
                    m.display_name(),
                    m.memory_space,
                    m.peak_bytes,
                    m.heap_bytes.clone(),
                    m.peak_buffers.len(),
                )
            })
            .collect();
        m.sort();
        m
    };
    assert!(!cli.modules.is_empty());
    assert_eq!(modules(&cli), modules(&lib));
    let names = |r: &oomscope_report::Report| {
        let mut n: Vec<_> = r
            .inputs
            .iter()
            .map(|i| (i.name.clone(), i.kind.as_str(), i.size_bytes))
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(&cli), names(&lib));
    assert_eq!(cli.diagnosis.path, lib.diagnosis.path);
}

#[test]
fn analyze_link_decodes_to_the_same_verdict() {
    let log = corpus().join("logs/01_tpu_compile_hbm.txt");
    let out = oomscope(&[
        "analyze",
        log.to_str().unwrap(),
        "--link",
        "--base-url",
        "https://example.org/oomscope/",
    ]);
    assert!(out.status.success());
    let text = stdout(&out);
    let link = text
        .lines()
        .find(|l| l.starts_with("https://example.org/oomscope/#r=1."))
        .unwrap_or_else(|| panic!("no link in {text}"));
    let shared = oomscope_permalink::decode(link).unwrap();
    let direct = oomscope_analyzer::analyze(
        vec![oomscope_analyzer::InputFile {
            name: "01_tpu_compile_hbm.txt".into(),
            data: std::fs::read(&log).unwrap(),
        }],
        &mut |_| {},
    );
    assert_eq!(
        shared.oom_events[0].used_bytes,
        direct.oom_events[0].used_bytes
    );
    assert_eq!(
        shared.oom_events[0].limit_bytes,
        direct.oom_events[0].limit_bytes
    );
    assert_eq!(shared.diagnosis.path, direct.diagnosis.path);
}

#[test]
fn size_prints_the_padded_and_unpadded_bytes() {
    // 129 rows pad to 136 (8-row tiles): 136 × 1024 × 4 bytes.
    let out = oomscope(&["size", "f32[129,1024]{1,0:T(8,128)}", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let first = if v.is_array() { &v[0] } else { &v };
    assert_eq!(first["padded_bytes"], 136 * 1024 * 4, "{v}");
    assert_eq!(first["unpadded_bytes"], 129 * 1024 * 4, "{v}");
}

#[test]
fn bad_paths_and_options_are_clear_errors() {
    let out = oomscope(&["analyze", "/nonexistent/oom.log"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/oom.log"));
    let out = oomscope(&["analyze", "--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("'--frobnicate'"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(oomscope(&[]).status.code(), Some(2));
}

fn oomscope_with_stdin(args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn version_and_help_as_rust_clis_print_them() {
    let out = oomscope(&["--version"]);
    assert!(out.status.success());
    assert_eq!(
        stdout(&out).trim(),
        format!("oomscope {}", env!("CARGO_PKG_VERSION"))
    );
    let out = oomscope(&["analyze", "--help"]);
    assert!(out.status.success());
    let help = stdout(&out);
    for option in [
        "--json",
        "--buffers",
        "--link",
        "--base-url <URL>",
        "standard input",
    ] {
        assert!(help.contains(option), "{option} missing from {help}");
    }
}

#[test]
fn a_dash_reads_standard_input_as_a_piped_log() {
    let log = std::fs::read(corpus().join("logs/01_tpu_compile_hbm.txt")).unwrap();
    let out = oomscope_with_stdin(&["analyze", "-", "--json"], &log);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let piped: oomscope_report::Report = serde_json::from_str(&stdout(&out)).unwrap();
    let direct = oomscope_analyzer::analyze(
        vec![oomscope_analyzer::InputFile {
            name: "stdin".into(),
            data: log,
        }],
        &mut |_| {},
    );
    assert_eq!(piped.inputs[0].name, "stdin");
    assert!(!piped.oom_events.is_empty());
    let numbers = |r: &oomscope_report::Report| {
        r.oom_events
            .iter()
            .map(|e| {
                (
                    e.used_bytes,
                    e.limit_bytes,
                    e.exceeded_bytes,
                    e.top_allocations
                        .iter()
                        .map(|a| a.size_bytes)
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(numbers(&piped), numbers(&direct));
    assert_eq!(piped.diagnosis.path, direct.diagnosis.path);
}

#[test]
fn options_take_their_value_after_an_equals_sign() {
    let log = corpus().join("logs/01_tpu_compile_hbm.txt");
    let out = oomscope(&[
        "analyze",
        log.to_str().unwrap(),
        "--link",
        "--base-url=https://example.org/x/",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout(&out).contains("https://example.org/x/#r=1."),
        "{}",
        stdout(&out)
    );
}

#[test]
fn the_link_is_printed_last_and_alone() {
    let log = corpus().join("logs/01_tpu_compile_hbm.txt");
    let out = oomscope(&["analyze", log.to_str().unwrap(), "--link"]);
    assert!(out.status.success());
    let text = stdout(&out);
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(
        last.starts_with("http://127.0.0.1:8080/#r=1.") && !last.contains(' '),
        "last line: {last}"
    );
    assert_eq!(text.matches("#r=1.").count(), 1);
}

#[test]
fn a_failed_link_exits_non_zero_and_says_why() {
    let log = corpus().join("logs/01_tpu_compile_hbm.txt");
    let out = oomscope(&[
        "analyze",
        log.to_str().unwrap(),
        "--link",
        "--base-url",
        "file:///tmp/page",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot make a link") && stderr.contains("file:///tmp/page"),
        "{stderr}"
    );
    assert!(!stdout(&out).contains("#r=1."));
}

#[test]
fn a_folder_walk_reports_an_unreadable_entry_and_goes_on() {
    let dir = std::env::temp_dir().join(format!("oomscope-cli-walk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        corpus().join("logs/01_tpu_compile_hbm.txt"),
        dir.join("b.log"),
    )
    .unwrap();
    // A dangling link: listed by the folder, unreadable (even for root).
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.join("gone.txt"), dir.join("a.txt")).unwrap();
    let out = oomscope(&["analyze", dir.to_str().unwrap(), "--json"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(1));
    let report: oomscope_report::Report = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        report.inputs.iter().any(|i| i.name.ends_with("/b.log")),
        "{:?}",
        report.inputs
    );
    assert!(
        !report.oom_events.is_empty(),
        "the readable file after the bad entry was analysed"
    );
    #[cfg(unix)]
    assert!(
        report.errors.iter().any(|e| e.input.ends_with("a.txt")),
        "{:?}",
        report.errors
    );
}

#[test]
fn the_text_output_names_nodes_by_title_and_each_oom_once() {
    let log = std::fs::read_to_string(corpus().join("logs/01_tpu_compile_hbm.txt")).unwrap();
    // The same OOM printed by three ranks.
    let three = format!("{log}\n{log}\n{log}");
    let out = oomscope_with_stdin(&["analyze", "-"], three.as_bytes());
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("Out-of-memory errors: 1"), "{text}");
    assert_eq!(text.matches("needs ").count(), 1, "{text}");
    let report = oomscope_analyzer::analyze(
        vec![oomscope_analyzer::InputFile {
            name: "stdin".into(),
            data: three.into_bytes(),
        }],
        &mut |_| {},
    );
    let diagnosis_line = text
        .lines()
        .find(|l| l.starts_with("Diagnosis: "))
        .expect("a diagnosis line");
    for id in &report.diagnosis.path {
        let node = report.diagnosis.nodes.iter().find(|n| &n.id == id).unwrap();
        assert!(
            diagnosis_line.contains(&node.title),
            "{diagnosis_line} lacks {}",
            node.title
        );
        assert!(
            !diagnosis_line
                .split(" → ")
                .any(|part| part.trim_start_matches("Diagnosis: ") == id),
            "id {id} printed"
        );
    }
}

/// `oomscope compare A -- B` on a real same-program pair: the JSON's peak
/// difference is the difference of XProf's peaks in `pair.json`, and the
/// text names the donation.
#[test]
fn compare_a_real_pair_names_the_donation() {
    let pair = fixtures().join("pair-donate");
    let (a, b) = (pair.join("plain"), pair.join("donated"));
    // Options go before `--` or after B's files.
    let out = oomscope(&[
        "compare",
        "--json",
        a.to_str().unwrap(),
        "--",
        b.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let modules = json["comparison"]["modules"].as_array().unwrap();
    let hbm = modules.iter().find(|m| m["memory_space"] == 0).unwrap();
    let pair_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(pair.join("pair.json")).unwrap()).unwrap();
    let mib = |v: &serde_json::Value| (v.as_f64().unwrap() * (1u64 << 20) as f64).round() as i64;
    // B minus A: the XProf peak of the "after" variant minus the "before" one.
    let peak = |variant: &str| {
        mib(&pair_json["variants"][pair_json[variant].as_str().unwrap()]["xprof_peak_heap_mib"])
    };
    let expected = peak("after") - peak("before");
    assert!(expected < 0, "donation lowers the peak");
    assert_eq!(
        hbm["difference_bytes"].as_i64().unwrap(),
        expected,
        "pair.json: {pair_json}"
    );
    let sum: i64 = hbm["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["bytes"].as_i64().unwrap())
        .sum();
    assert_eq!(sum, expected);
    let text = stdout(&oomscope(&[
        "compare",
        a.to_str().unwrap(),
        "--",
        b.to_str().unwrap(),
    ]));
    assert!(text.contains("donation aliased"), "{text}");
    // B must come after `--`: without it, clap refuses the command.
    let no_separator = oomscope(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(no_separator.status.code(), Some(2));
    // A trailing `--json` is the option, never a file of B named `--json`.
    let trailing = oomscope(&[
        "compare",
        a.to_str().unwrap(),
        "--",
        b.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        trailing.status.success(),
        "{}",
        String::from_utf8_lossy(&trailing.stderr)
    );
    let trailing: serde_json::Value = serde_json::from_str(&stdout(&trailing)).unwrap();
    assert_eq!(
        trailing["comparison"]["modules"],
        json["comparison"]["modules"]
    );
    assert!(!serde_json::to_string(&trailing["b"]["inputs"])
        .unwrap()
        .contains("--json"));
    // An unknown option there is a usage error that says how to name such a file.
    let unknown = oomscope(&[
        "compare",
        a.to_str().unwrap(),
        "--",
        b.to_str().unwrap(),
        "--jsonn",
    ]);
    assert_eq!(unknown.status.code(), Some(2));
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        err.contains("'--jsonn'") && err.contains("Usage: oomscope compare"),
        "{err}"
    );
}

/// `oomscope analyze ... --json | head`: the reader closes the pipe early;
/// the command ends quietly, with no panic or backtrace.
#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let dir = fixtures().join("fits-mlp");
    let mut child = Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .args(["analyze", dir.to_str().unwrap(), "--json", "--buffers"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).unwrap();
    // `head` has what it wanted and goes away.
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(0), "{err}");
}

/// `--device` is the page's device picker: a lone HloProto judged against
/// a listed device, the verdict equal to the library's `diagnose_with`,
/// the pick carried by `--link`; a name outside the list is a usage error
/// that lists the names.
#[test]
fn device_picks_the_limit_for_a_lone_hlo_proto() {
    let dir = fixtures().join("pair-batch-oom/full");
    let pb = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".hlo.pb"))
        .unwrap();
    let out = oomscope(&[
        "analyze",
        pb.to_str().unwrap(),
        "--json",
        "--device",
        "TPU v5e",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli: oomscope_report::Report = serde_json::from_str(&stdout(&out)).unwrap();
    let lib = oomscope_analyzer::analyze(
        vec![oomscope_analyzer::InputFile {
            name: pb.file_name().unwrap().to_string_lossy().into(),
            data: std::fs::read(&pb).unwrap(),
        }],
        &mut |_| {},
    );
    let v5e = oomscope_report::devices::known_device("TPU v5e")
        .unwrap()
        .limit();
    let expected = oomscope_diagnosis::diagnose_with(&lib, Some(&v5e));
    assert_eq!(cli.diagnosis.headline, expected.headline);
    assert_eq!(cli.diagnosis.tree, oomscope_report::TreeKind::CompileHbmOom);

    let out = oomscope(&[
        "analyze",
        pb.to_str().unwrap(),
        "--device",
        "TPU v5e",
        "--link",
    ]);
    let text = stdout(&out);
    let link = text.lines().last().unwrap();
    let shared = oomscope_permalink::decode(link).unwrap();
    assert_eq!(shared.shared.unwrap().view.device, Some(v5e));
    assert_eq!(shared.diagnosis.headline, expected.headline);

    let out = oomscope(&["analyze", pb.to_str().unwrap(), "--device", "TPU v9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("TPU v6e"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `oomscope compare ... --link`: the URL is printed last, alone, and opens
/// to the same peaks and named changes as `--json` reports.
#[test]
fn compare_link_is_printed_last_and_carries_the_comparison() {
    let pair = fixtures().join("pair-dtype-oom");
    let (a, b) = (pair.join("f32"), pair.join("bf16"));
    let out = oomscope(&[
        "compare",
        "--link",
        "--base-url",
        "https://example.org/o/",
        a.to_str().unwrap(),
        "--",
        b.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("https://example.org/o/#c=1."),
        "last line: {last}"
    );
    assert_eq!(
        text.lines().rev().nth(1),
        Some(""),
        "the link stands alone: {text}"
    );
    let shared = oomscope_permalink::decode_comparison(last).unwrap();
    let json: serde_json::Value = serde_json::from_str(&stdout(&oomscope(&[
        "compare",
        "--json",
        a.to_str().unwrap(),
        "--",
        b.to_str().unwrap(),
    ])))
    .unwrap();
    let hbm = json["comparison"]["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["memory_space"] == 0)
        .unwrap();
    let linked = shared
        .modules
        .iter()
        .find(|m| m.memory_space == oomscope_report::MemoryColor::Device)
        .unwrap();
    assert_eq!(
        linked.difference_bytes,
        hbm["difference_bytes"].as_i64().unwrap()
    );
    assert_eq!(
        linked.changes[0].kind.as_str(),
        hbm["changes"][0]["kind"].as_str().unwrap()
    );
    assert_eq!(
        (shared.a.label.as_str(), shared.b.label.as_str()),
        ("f32", "bf16")
    );
}

#[test]
fn a_failed_compare_link_exits_non_zero_and_says_why() {
    let pair = fixtures().join("pair-donate");
    let (a, b) = (pair.join("plain"), pair.join("donated"));
    let out = oomscope(&[
        "compare",
        "--link",
        "--base-url",
        "file:///tmp/page",
        a.to_str().unwrap(),
        "--",
        b.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot make a link") && stderr.contains("file:///tmp/page"),
        "{stderr}"
    );
    assert!(!stdout(&out).contains("#c="), "no link printed");
}

/// Modules are named by their memory in words and their peak by what it
/// counts; a memory space the program never uses is one line, not a block
/// reading "peak 0 B" (fixture oom-vmem: its VMEM OOM comes from a Pallas
/// kernel, and one of its modules allocates nothing).
#[test]
fn modules_say_their_memory_and_peak_in_words_and_empty_ones_are_one_line() {
    let dir = fixtures().join("oom-vmem");
    let json: oomscope_report::Report = serde_json::from_str(&stdout(&oomscope(&[
        "analyze",
        "--json",
        dir.to_str().unwrap(),
    ])))
    .unwrap();
    let empty: Vec<_> = json.modules.iter().filter(|m| m.peak_bytes == 0).collect();
    assert!(
        !empty.is_empty(),
        "the fixture has a module that allocates nothing"
    );
    let text = stdout(&oomscope(&["analyze", dir.to_str().unwrap()]));
    let module_lines: Vec<&str> = text.lines().filter(|l| l.starts_with("Module ")).collect();
    assert_eq!(
        module_lines.len(),
        json.modules.len() - empty.len(),
        "{text}"
    );
    for line in &module_lines {
        assert!(
            !line.contains("peak 0 B") && !line.contains("memory space"),
            "{line}"
        );
    }
    for m in json.modules.iter().filter(|m| m.peak_bytes > 0) {
        assert!(
            module_lines
                .iter()
                .any(|l| l.contains(&m.memory_space.words()) && l.contains(m.peak_kind.words())),
            "{text}"
        );
    }
    let nothing = text
        .lines()
        .find(|l| l.starts_with("Nothing allocated: "))
        .expect(&text);
    for m in empty {
        assert!(
            nothing.contains(&format!(
                "{} in {}",
                m.display_name(),
                m.memory_space.words()
            )),
            "{nothing}"
        );
    }
}

#[test]
fn what_if_prints_a_combination_replayed_on_the_program() {
    let dir = oomscope_testdata::fixtures().join("pair-donate/plain");
    let o = oomscope(&[
        "analyze",
        dir.to_str().unwrap(),
        "--what-if",
        "donation,bf16",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.starts_with("What if donation + bf16 on jit_sgd_step"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("peak 16.25 GiB →") && line.contains("fits with"),
        "{line}"
    );
    // --json keeps every single remedy and adds the combination.
    let o = oomscope(&[
        "analyze",
        dir.to_str().unwrap(),
        "--what-if",
        "donation,bf16",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let what_if = json["diagnosis"]["what_if"].as_array().unwrap();
    assert!(what_if
        .iter()
        .any(|w| w["remedy"] == "donation" && w.get("with").is_none()));
    assert!(what_if
        .iter()
        .any(|w| w["remedy"] == "donation" && w["with"][0] == "bf16"));
    // An unknown remedy is a usage error.
    assert_eq!(
        oomscope(&["analyze", dir.to_str().unwrap(), "--what-if", "magic"])
            .status
            .code(),
        Some(2)
    );
}

/// Issue 29: the error and the log of one run (the E1000 line the program
/// raised, saved on its own, and the compile log that printed the classic
/// message with its listing) are one OOM seen in two files, listed with
/// the log's allocations.
#[test]
fn the_same_oom_in_two_files_is_one_oom() {
    let log_path = fixtures().join("oom-single-buffer/compile.log");
    let log = std::fs::read_to_string(&log_path).unwrap();
    let error = log
        .lines()
        .find(|l| l.starts_with("ERR: RESOURCE_EXHAUSTED: E1000"))
        .expect("the raised error is in the log");
    let dir = std::env::temp_dir().join(format!("oomscope-same-oom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("error.txt"), format!("{error}\n")).unwrap();
    std::fs::write(dir.join("compile.log"), &log).unwrap();
    let out = oomscope(&[
        "analyze",
        dir.join("error.txt").to_str().unwrap(),
        dir.join("compile.log").to_str().unwrap(),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(text.contains("Out-of-memory errors: 1\n"), "{text}");
    assert!(
        text.contains("at compile.log:68 (the same OOM also in error.txt:1)"),
        "{text}"
    );
    assert!(!text.contains("×2"), "{text}");
    assert_eq!(text.matches("f32[32768,100003]").count(), 2, "{text}");
}

/// Issue 29: a libtpu usage report's `5×bf16[…]` is one chunk that five
/// values use in turn (fixtures/oom-transformer-scan), not five copies.
#[test]
fn a_shared_chunk_is_not_listed_as_copies() {
    let out = oomscope(&[
        "analyze",
        fixtures()
            .join("oom-transformer-scan/compile.log")
            .to_str()
            .unwrap(),
    ]);
    let text = stdout(&out);
    let listing: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Out-of-memory errors"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(listing.iter().all(|l| !l.contains('×')), "{listing:#?}");
    assert!(
        listing
            .iter()
            .any(|l| l.contains("one chunk for 5 values of bf16[32,4,2048,4608] in turn")),
        "{listing:#?}"
    );
}

/// Issue 29: the text summary of a snapshot and of a device memory profile
/// gives the peak and each device's numbers, as the page does.
#[test]
fn runtime_inputs_print_their_peak_and_devices() {
    let profile = corpus().join("runtime/sholtodouglas__scalingExperiments__memory.prof@664e8b17");
    let text = stdout(&oomscope(&["analyze", profile.to_str().unwrap()]));
    let report = oomscope_analyzer::analyze(
        vec![oomscope_analyzer::InputFile {
            name: "p.prof".into(),
            data: std::fs::read(&profile).unwrap(),
        }],
        &mut |_| {},
    );
    let p = &report.device_memory_profiles[0];
    assert!(
        text.contains(&format!(
            "{} in 1234 live buffers on 8 devices",
            oomscope_report::units::format_bytes(p.buffer_bytes)
        )),
        "{text}"
    );
    // One line per device, in the devices' order, with its bytes and buffers.
    let mut at = 0;
    for i in 0..8 {
        let d = p
            .devices
            .iter()
            .find(|d| d.device.starts_with(&format!("TPU_{i}(")))
            .unwrap();
        let line = format!(
            "{:<12} {:>12}  {} buffers",
            d.device,
            oomscope_report::units::format_bytes(d.buffer_bytes),
            d.buffer_count
        );
        let found = text[at..]
            .find(&line)
            .unwrap_or_else(|| panic!("{line} after {at}: {text}"));
        at += found + line.len();
    }
    let snapshot = corpus().join(
        "snapshots/NiuHuangxiaozi__assignment2-systems__cs336_systems__profile_memory__forward_and_backward_memory_snapshot_200.pickle",
    );
    let text = stdout(&oomscope(&["analyze", snapshot.to_str().unwrap()]));
    assert!(
        text.contains("(device 0): peak allocated 1.15 GiB"),
        "{text}"
    );
    assert!(
        text.contains("softmax.py:14"),
        "the line holding the most at the peak: {text}"
    );
}

/// `--without FRAME` on a real snapshot: the replay without that frame's
/// allocations equals the peak of the same snapshot with those allocations
/// really removed (`tools/fixtures/snapshot_without.py`'s rewritten traces,
/// read by the same command), for a frame not among the three lines the
/// report replays by itself; a frame no allocation has adds nothing and
/// says so.
#[test]
fn without_replays_a_snapshot_without_the_chosen_frame() {
    let file = "/root/autodl-tmp/assignment2-systems/cs336_systems/trace_peak_memory.py";
    let source = corpus().join("snapshots/silmont2000__assignment2-systems__mem_snapshot.pickle");
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/snapshot/tests/samples/without");
    let report = |args: &[&str]| -> (oomscope_report::Report, String) {
        let out = oomscope(args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            serde_json::from_str(&stdout(&out)).unwrap(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (plain, _) = report(&["analyze", source.to_str().unwrap(), "--json"]);
    let replayed_by_default: Vec<String> = plain.memory_snapshots[0]
        .what_if
        .iter()
        .filter_map(|w| w.frame.clone())
        .collect();
    for (frame, rewritten) in [
        (
            format!("custom_softmax {file}:7"),
            "silmont2000-mem_snapshot-without-softmax7.pickle",
        ),
        (
            format!("main {file}:43"),
            "silmont2000-mem_snapshot-without-main43.pickle",
        ),
    ] {
        let (really, _) = report(&[
            "analyze",
            samples.join(rewritten).to_str().unwrap(),
            "--json",
        ]);
        let (chosen, _) = report(&[
            "analyze",
            source.to_str().unwrap(),
            "--json",
            "--without",
            &frame,
        ]);
        let snap = &chosen.memory_snapshots[0];
        let entry = snap
            .what_if
            .iter()
            .find(|w| w.frame.as_deref() == Some(frame.as_str()))
            .unwrap_or_else(|| panic!("no entry for {frame}"));
        assert_eq!(
            entry.predicted_peak_bytes, really.memory_snapshots[0].peak_allocated_bytes,
            "{frame}"
        );
        assert!(
            entry.predicted_peak_bytes < snap.peak_allocated_bytes,
            "{frame}"
        );
        assert_eq!(
            entry.saving_bytes,
            snap.peak_allocated_bytes as i64 - entry.predicted_peak_bytes as i64
        );
        // Once, in the snapshot and in the diagnosis alike.
        let in_diagnosis = chosen
            .diagnosis
            .what_if
            .iter()
            .filter(|w| w.frame.as_deref() == Some(frame.as_str()))
            .count();
        assert_eq!(in_diagnosis, 1, "{frame}");
        // The summary prints it.
        let text = stdout(&oomscope(&[
            "analyze",
            source.to_str().unwrap(),
            "--without",
            &frame,
        ]));
        assert!(text.contains(&frame), "{text}");
    }
    // At least one of the two is a frame the report does not replay itself.
    assert!(
        !replayed_by_default.iter().any(|f| f.contains(":43"))
            || !replayed_by_default.iter().any(|f| f.contains(":7")),
        "{replayed_by_default:?}"
    );
    let (none, warning) = report(&[
        "analyze",
        source.to_str().unwrap(),
        "--json",
        "--without",
        "nowhere x.py:1",
    ]);
    assert_eq!(
        none.memory_snapshots[0].what_if,
        plain.memory_snapshots[0].what_if
    );
    assert!(warning.contains("no allocation"), "{warning}");
}
