//! `oomscope run` on real programs: JAX on the CPU (`tests/run_programs/`),
//! run through the built command as a user runs it. They need Python 3 with
//! jax and jaxlib (`scripts/install-python.sh`; `OOMSCOPE_PYTHON` names
//! another interpreter) and fail, saying so, when jax is missing.

mod common;

use common::cli_analyze_json;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> String {
    std::env::var("OOMSCOPE_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn require_jax() {
    let py = python();
    let ok = Command::new(&py)
        .args(["-c", "import jax, jaxlib"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "these tests run real JAX programs, and `{py} -c 'import jax'` fails: run scripts/install-python.sh (pip install jax jaxlib), or set OOMSCOPE_PYTHON to an interpreter that has jax"
    );
}

fn program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/run_programs")
        .join(name)
}

/// A fresh, not yet existing folder for one run.
fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oomscope-run-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    dir: PathBuf,
}

fn run_in(dir: &Path, options: &[&str], command: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .arg("run")
        .arg("--out")
        .arg(dir)
        .args(options)
        .arg("--")
        .args(command)
        .output()
        .expect("oomscope runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        dir: dir.to_path_buf(),
    }
}

fn run_python(name: &str, args: &[&str]) -> Run {
    require_jax();
    let dir = out_dir(name);
    let script = program(name);
    let mut command = vec![python(), script.display().to_string()];
    command.extend(args.iter().map(|a| a.to_string()));
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    run_in(&dir, &["--every", "0.2"], &command)
}

impl Run {
    fn report(&self) -> Value {
        let path = self.dir.join(".oomscope/report.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}\nstderr: {}", path.display(), self.stderr));
        serde_json::from_str(&text).expect("report.json is JSON")
    }

    /// The per-process folders of the run, sorted.
    fn process_folders(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .expect("the run's folder")
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        names
    }

    fn files_in(&self, folder: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.join(folder))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("output.log")).unwrap_or_default()
    }

    fn cleanup(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The 1-based line of `program` holding `marker`.
fn line_of(name: &str, marker: &str) -> u64 {
    let text = std::fs::read_to_string(program(name)).unwrap();
    text.lines()
        .position(|l| l.contains(marker))
        .expect("marker") as u64
        + 1
}

#[test]
fn a_per_step_leak_is_found_with_its_line() {
    let run = run_python("leak.py", &["60"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The program's output passes through and is kept.
    assert!(run.stdout.contains("done 60"), "{}", run.stdout);
    assert!(run.log().contains("done 60"));
    assert_eq!(run.process_folders(), ["rank0"]);
    let profiles: Vec<String> = run
        .files_in("rank0")
        .into_iter()
        .filter(|f| f.ends_with(".prof"))
        .collect();
    assert!(profiles.len() >= 3, "{profiles:?}");
    // Step numbers where visible: the loop's `step` at each sample.
    assert!(
        profiles.iter().any(|p| !p.ends_with("_step0.prof")),
        "{profiles:?}"
    );

    let report = run.report();
    let series = &report["device_memory_series"][0];
    let stack = &series["growing_stacks"][0];
    assert!(
        stack["frame"]["file"]
            .as_str()
            .unwrap_or("")
            .ends_with("leak.py"),
        "{stack}"
    );
    assert_eq!(
        stack["frame"]["line"].as_u64(),
        Some(line_of("leak.py", "# LEAK LINE")),
        "{stack}"
    );
    // 256×256 f32 per step: at least 40 steps' worth between the first and last profile.
    assert!(
        stack["growth_bytes"].as_u64().unwrap() >= 40 * 256 * 1024,
        "{stack}"
    );
    // The end: headline, folder, link.
    assert!(
        run.stderr
            .contains(&format!("recorded in {}", run.dir.display())),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("http://127.0.0.1:8080/#r="),
        "{}",
        run.stderr
    );
    run.cleanup();
}

#[test]
fn a_program_that_fits_is_recorded_whole() {
    let run = run_python("fits.py", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.process_folders(), ["rank0"]);
    let files = run.files_in("rank0");
    assert!(files.iter().any(|f| f.ends_with(".prof")), "{files:?}");
    assert!(files.contains(&"xla_dump".to_string()), "{files:?}");
    let report = run.report();
    // The XLA dump of the jitted step is read: its module is in the report.
    let modules = report["modules"].as_array().unwrap();
    assert!(
        modules
            .iter()
            .any(|m| m["name"].as_str().unwrap_or("").contains("train_step")),
        "{:?}",
        modules.iter().map(|m| &m["name"]).collect::<Vec<_>>()
    );
    assert!(report["oom_events"].as_array().unwrap().is_empty());
    assert!(!report["device_memory_profiles"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(
        report["diagnosis"]["headline"]["text"].is_string(),
        "{}",
        report["diagnosis"]
    );
    run.cleanup();
}

#[test]
fn a_program_that_raises_keeps_its_exit_code_and_its_exception() {
    let run = run_python("raises.py", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let message = "ValueError: the loss became NaN at step 12";
    assert!(run.stderr.contains(message), "{}", run.stderr);
    assert!(run.log().contains(message));
    let notes = std::fs::read_dir(run.dir.join(".oomscope"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("pid"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect::<String>();
    assert!(notes.contains(message), "{notes}");
    run.cleanup();
}

#[test]
fn exit_codes_and_signals_are_the_programs() {
    let run = run_python("exits.py", &["7"]);
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert!(run.stdout.contains("exiting with 7"));
    run.cleanup();
    let run = run_python("exits.py", &["signal:15"]);
    assert_eq!(run.code, 128 + 15, "{}", run.stderr);
    run.cleanup();
}

#[test]
fn ranks_name_the_folders_of_a_multi_process_job_every_time() {
    // Three runs: the folders must not depend on which process learns its
    // rank first.
    for attempt in 0..3 {
        let run = run_python("launcher.py", &[]);
        assert_eq!(run.code, 0, "attempt {attempt}: {}", run.stderr);
        assert!(
            run.stdout.contains("workers exited [0, 0]"),
            "{}",
            run.stdout
        );
        assert_eq!(
            run.process_folders(),
            ["rank0", "rank1"],
            "attempt {attempt}: {}",
            run.stderr
        );
        for rank in ["rank0", "rank1"] {
            let files = run.files_in(rank);
            assert!(
                files.iter().any(|f| f.ends_with(".prof")),
                "{rank}: {files:?}"
            );
            assert!(files.contains(&"xla_dump".to_string()), "{rank}: {files:?}");
        }
        let report = run.report();
        let inputs: Vec<&str> = report["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["name"].as_str())
            .collect();
        assert!(inputs.iter().any(|i| i.starts_with("rank1/")), "{inputs:?}");
        // Each rank's profiles are a series of their own, never one across ranks.
        for series in report["device_memory_series"].as_array().unwrap() {
            let names: Vec<&str> = series["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|i| i.as_str())
                .collect();
            let rank = names[0].split('/').next().unwrap();
            assert!(
                names.iter().all(|n| n.starts_with(&format!("{rank}/"))),
                "{names:?}"
            );
        }
        run.cleanup();
    }
}

#[test]
fn an_unwritable_folder_stops_the_recording_not_the_program() {
    let run = run_python("unwritable.py", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("still running 10.0"), "{}", run.stdout);
    assert!(run.stderr.contains("recording stopped"), "{}", run.stderr);
    run.cleanup();

    // A DIR that cannot be made at all: the program runs unrecorded.
    let out = Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .args([
            "run",
            "--out",
            "/proc/oomscope-cannot-be-made",
            "--",
            "sh",
            "-c",
            "echo ran; exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot record into /proc/oomscope-cannot-be-made"),
        "{stderr}"
    );
}

#[test]
fn no_command_or_a_missing_one_is_one_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .args(["run", "--out", "/tmp/never-made-by-oomscope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no command given"), "{stderr}");

    let out = Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .args([
            "run",
            "--out",
            "/tmp/never-made-by-oomscope",
            "--",
            "no-such-program-oomscope",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim(),
        "oomscope run: no-such-program-oomscope: command not found"
    );
    assert!(!Path::new("/tmp/never-made-by-oomscope").exists());

    // A folder holding something else: a usage error before anything runs.
    let dir = out_dir("not-empty");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("keep.txt"), "mine").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .args(["run", "--out"])
        .arg(&dir)
        .args(["--", "sh", "-c", "echo ran"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("is not empty"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_program_without_python_still_runs_and_is_logged() {
    let dir = out_dir("sh");
    let run = run_in(&dir, &[], &["sh", "-c", "echo out; echo err >&2; exit 5"]);
    assert_eq!(run.code, 5);
    assert_eq!(run.stdout, "out\n");
    assert!(run.stderr.starts_with("err\n"), "{}", run.stderr);
    // Two pipes: the order between them is the reading threads', not the program's.
    let log = run.log();
    assert!(
        log.contains("out\n") && log.contains("err\n") && log.len() == 8,
        "{log}"
    );
    assert!(run.process_folders().is_empty());
    assert!(run.stderr.contains("only the output log"), "{}", run.stderr);
    run.cleanup();
}

#[test]
fn pytorch_without_cuda_records_nothing_and_says_so() {
    let dir = out_dir("torch");
    let stand_in = program("torch_stand_in");
    let out = Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .env("PYTHONPATH", &stand_in)
        .args(["run", "--every", "0.1", "--out"])
        .arg(&dir)
        .args([
            "--",
            &python(),
            "-c",
            "import torch, time; time.sleep(0.3); print('trained')",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "trained\n");
    assert!(
        stderr.contains("PyTorch without CUDA: no CUDA memory to record"),
        "{stderr}"
    );
    // Nothing was recorded: no process folder.
    let folders: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir() && !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(folders.is_empty(), "{folders:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `body` (Python) with the recording hook's own module loaded as
/// `hook` (and `os` imported), outside any run: what the hook writes, made
/// by its own code.
fn with_the_hook(body: &str) {
    let hook = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli/run_hook.py");
    let script = format!(
        r#"
import importlib.util, os
os.environ.pop("OOMSCOPE_RUN_DIR", None)
spec = importlib.util.spec_from_file_location("oomscope_hook", {hook:?})
hook = importlib.util.module_from_spec(spec); spec.loader.exec_module(hook)
{body}"#,
        hook = hook.display().to_string()
    );
    let made = Command::new(python()).args(["-c", &script]).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
}

/// What the hook writes on CUDA, made by its own code from
/// `memory_stats()`-shaped samples, and a real snapshot of the corpus under
/// the name the OOM observer gives it: the analyzer reads both.
#[test]
fn what_the_cuda_hook_writes_is_read_back() {
    let dir = out_dir("cuda-files");
    let rank = dir.join("rank0");
    std::fs::create_dir_all(&rank).unwrap();
    let csv = rank.join("cuda0_memory_steps.csv");
    // 30 samples growing 64 MiB a step, as allocated_bytes.all.current would.
    with_the_hook(&format!(
        r#"
with open({csv:?}, "w") as f:
    f.write(hook.CUDA_STATS_HEADER)
    for step in range(30):
        stats = {{"allocated_bytes.all.current": (1 << 30) + step * (64 << 20),
                 "reserved_bytes.all.current": 2 << 30, "active_bytes.all.current": (1 << 30) + step * (64 << 20),
                 "num_ooms": 0}}
        f.write(hook.cuda_stats_row(step * 10, stats))
"#,
        csv = csv.display().to_string()
    ));
    let snapshot = oomscope_testdata::corpus()
        .join("snapshots/Charan6924__assignment2-systems__cs336_systems__memory_snapshot.pickle");
    std::fs::copy(&snapshot, rank.join("snapshot_oom.pickle")).unwrap();

    let report: Value = cli_analyze_json(&[&dir]);
    let series = report["step_series"].as_array().unwrap();
    let allocated = series
        .iter()
        .find(|s| s["metric"].as_str().unwrap_or("").contains("allocated"))
        .unwrap_or_else(|| panic!("{series:?}"));
    assert_eq!(allocated["points"].as_array().unwrap().len(), 30);
    let slope = allocated["slope_bytes_per_step"].as_f64().unwrap();
    assert!((slope - (64u64 << 20) as f64 / 10.0).abs() < 1.0, "{slope}");
    assert_eq!(report["memory_snapshots"].as_array().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sigterm_to_oomscope_reaches_the_program_and_the_run_still_ends_well() {
    let dir = out_dir("sigterm");
    let program = "import signal, sys, time\n\
        def stop(sig, frame):\n    print('stopping on', sig, flush=True); sys.exit(4)\n\
        signal.signal(signal.SIGTERM, stop)\n\
        print('ready', flush=True)\n\
        time.sleep(30)\n";
    let mut child = Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .args(["run", "--out"])
        .arg(&dir)
        .args(["--", &python(), "-c", program])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the program has set its handler.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    assert_eq!(line, "ready\n");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(rest, "stopping on 15\n", "{stderr}");
    assert_eq!(status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("recorded in"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_users_xla_flags_are_kept_beside_the_dump_flags() {
    require_jax();
    let dir = out_dir("xla-flags");
    let out = Command::new(env!("CARGO_BIN_EXE_oomscope"))
        .env("XLA_FLAGS", "--xla_force_host_platform_device_count=3")
        .args(["run", "--out"])
        .arg(&dir)
        .args([
            "--",
            &python(),
            "-c",
            "import os, jax; print(jax.device_count()); print(os.environ['XLA_FLAGS'])",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = stdout.lines();
    // The user's flag took effect...
    assert_eq!(lines.next(), Some("3"), "{stdout}");
    // ...and the dump goes to this process's folder of the run.
    let flags = lines.next().unwrap_or("");
    assert!(
        flags.starts_with("--xla_force_host_platform_device_count=3 "),
        "{flags}"
    );
    let dump_to = format!(
        "--xla_dump_to={}/pid",
        std::path::absolute(&dir).unwrap().display()
    );
    assert!(flags.contains(&dump_to), "{flags}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A real PyTorch/XLA program on the CPU: the XLA dumps are recorded and
/// read, the memory info the CPU does not have is noted once, and the
/// program's output and exit code are its own. Needs torch and torch_xla
/// (about 5 GB), which CI does not install:
/// `OOMSCOPE_TORCH_XLA_PYTHON=/path/to/python cargo test --test run -- --ignored`.
#[test]
#[ignore = "needs torch_xla: set OOMSCOPE_TORCH_XLA_PYTHON and run with --ignored"]
fn torch_xla_on_the_cpu_records_its_xla_dumps() {
    let py = std::env::var("OOMSCOPE_TORCH_XLA_PYTHON")
        .expect("OOMSCOPE_TORCH_XLA_PYTHON names a Python with torch and torch_xla");
    let dir = out_dir("torch-xla");
    let script = program("torch_xla_train.py");
    let run = run_in(
        &dir,
        &["--every", "0.2"],
        &[&py, &script.display().to_string()],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("trained 4 steps"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("torch_xla get_memory_info() gives nothing on this device"),
        "{}",
        run.stderr
    );
    let folders = run.process_folders();
    assert_eq!(folders.len(), 1, "{folders:?}");
    let files = run.files_in(&format!("{}/xla_dump", folders[0]));
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("after_optimizations-buffer-assignment.txt")),
        "{files:?}"
    );
    let report = run.report();
    let modules = report["modules"].as_array().unwrap();
    assert!(
        modules.iter().any(|m| m["name"]
            .as_str()
            .unwrap_or("")
            .starts_with("SyncTensorsGraph")
            && m["peak_bytes"].as_u64().unwrap_or(0) > 0),
        "{modules:?}"
    );
    run.cleanup();
}

/// What the PyTorch/XLA hook writes, made by its own code from
/// `get_memory_info()` dicts of both versions' keys: the analyzer reads the
/// growth and the device's limit.
#[test]
fn what_the_torch_xla_hook_writes_is_read_back() {
    let dir = out_dir("torch-xla-files");
    let rank = dir.join("rank0");
    std::fs::create_dir_all(&rank).unwrap();
    with_the_hook(&format!(
        r#"
with open(os.path.join({rank:?}, "xla_memory_steps.log"), "w") as f:
    for step in range(30):
        f.write(hook.xla_memory_line(step, "xla:0", {{"bytes_used": (2 << 30) + step * (32 << 20), "bytes_limit": 16 << 30}}))
os.makedirs(os.path.join({rank:?}, "old"))
with open(os.path.join({rank:?}, "old", "xla_memory_steps.log"), "w") as f:
    for step in range(30):
        f.write(hook.xla_memory_line(step, "xla:1", {{"kb_free": (8 << 20) - step * 1024, "kb_total": 8 << 20}}))
"#,
        rank = rank.display().to_string()
    ));
    let report: Value = cli_analyze_json(&[&dir]);
    let series = report["step_series"].as_array().unwrap();
    let used = series
        .iter()
        .find(|s| s["device"] == "xla:0")
        .unwrap_or_else(|| panic!("{series:?}"));
    assert_eq!(used["limit_bytes"].as_u64(), Some(16 << 30));
    assert_eq!(used["points"].as_array().unwrap().len(), 30);
    let slope = used["slope_bytes_per_step"].as_f64().unwrap();
    assert!((slope - (32u64 << 20) as f64).abs() < 1.0, "{slope}");
    let old = series
        .iter()
        .find(|s| s["device"] == "xla:1")
        .unwrap_or_else(|| panic!("{series:?}"));
    assert_eq!(old["limit_bytes"].as_u64(), Some(8 << 30));
    assert!((old["slope_bytes_per_step"].as_f64().unwrap() - 1048576.0).abs() < 1.0);
    // Growing 32 MiB a step from 2 GiB, the 16 GiB limit is projected.
    assert!(used["projected_limit_step"].as_u64().is_some(), "{used:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
