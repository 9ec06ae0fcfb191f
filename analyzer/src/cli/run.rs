//! `oomscope run [--out DIR] [--every SECONDS] -- COMMAND...`: runs a
//! program unchanged while its Python processes record what the analyzer
//! reads, then analyses the recording.
//!
//! The recording is done inside each Python process by a `sitecustomize`
//! (`run_hook.py`, written to `DIR/.oomscope/hook/` and put first on
//! `PYTHONPATH`); it does nothing until jax or torch is imported. Each
//! process records into `DIR/pid<PID>/` and notes its rank in
//! `DIR/.oomscope/pid<PID>.json`; once every process has ended, this side
//! renames the folders `rank<N>/`. Renaming after the end, from ranks the
//! processes noted, makes the layout the same on every run whatever order
//! the processes learnt their ranks in.
//!
//! The program's stdout and stderr pass through as they come and are also
//! kept in `DIR/output.log`. The exit code is the program's (128 + N when it
//! died of signal N); a program that cannot be recorded still runs.

use super::inputs::Inputs;
use clap::ArgMatches;
use oomscope_report::Report;
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};

/// The recording hook, loaded by every Python process of the run.
pub const HOOK: &str = include_str!("run_hook.py");
/// Where the run's own files live, inside DIR (left out of the analysis).
pub const META_DIR: &str = ".oomscope";
/// The log of the program's output, inside DIR.
pub const LOG_NAME: &str = "output.log";
/// Past this, `output.log` becomes `output.1.log` (replacing an older one)
/// and a new `output.log` starts: at most twice this on disk, and the end of
/// the output (where an OOM is) always kept.
const LOG_ROTATE_BYTES: u64 = 128 << 20;
/// Default seconds between two samples of device memory.
pub const DEFAULT_EVERY: &str = "5";

pub fn command() -> clap::Command {
    use clap::{Arg, Command};
    Command::new("run")
        .about("Run a program unchanged, record its memory (JAX: XLA dumps and device memory profiles; PyTorch CUDA: allocator history, OOM snapshot, memory_stats), then analyse it")
        .arg(
            Arg::new("out")
                .long("out")
                .value_name("DIR")
                .value_parser(clap::value_parser!(PathBuf))
                .help("where to record (default: oomscope-run-<time> in the current folder); must be empty or new"),
        )
        .arg(
            Arg::new("every")
                .long("every")
                .value_name("SECONDS")
                .default_value(DEFAULT_EVERY)
                .value_parser(clap::value_parser!(f64))
                .help("seconds between two device memory samples (0: only at exit)"),
        )
        .arg(
            Arg::new("command")
                .value_name("COMMAND")
                .help("the program and its arguments, after --")
                .num_args(1..)
                .trailing_var_arg(true)
                .allow_hyphen_values(true)
                .value_parser(clap::value_parser!(OsString)),
        )
}

pub fn cmd_run(m: &ArgMatches) -> ExitCode {
    let argv: Vec<OsString> = m
        .get_many::<OsString>("command")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let Some(program) = argv.first() else {
        eprintln!("oomscope run: no command given (usage: oomscope run [--out DIR] [--every SECONDS] -- COMMAND...)");
        return ExitCode::from(2);
    };
    let every = m.get_one::<f64>("every").copied().unwrap_or(5.0);
    if !every.is_finite() || every < 0.0 {
        eprintln!("oomscope run: --every must be a number of seconds, 0 or more");
        return ExitCode::from(2);
    }
    if find_program(program).is_none() {
        eprintln!(
            "oomscope run: {}: command not found",
            program.to_string_lossy()
        );
        return ExitCode::from(127);
    }
    let out = match m.get_one::<PathBuf>("out") {
        Some(dir) => {
            if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
                eprintln!(
                    "oomscope run: {} is not empty: give a new or empty folder to --out",
                    dir.display()
                );
                return ExitCode::from(2);
            }
            dir.clone()
        }
        None => default_dir(),
    };
    let dir = match prepare(&out) {
        Ok(dir) => dir,
        Err(e) => {
            // An unwritable DIR stops the recording, not the program.
            eprintln!(
                "oomscope run: cannot record into {}: {e}; running the program without recording",
                out.display()
            );
            return match Command::new(program).args(&argv[1..]).status() {
                Ok(status) => exit_code(status),
                Err(e) => spawn_failed(program, &e),
            };
        }
    };
    let mut cmd = Command::new(program);
    cmd.args(&argv[1..]);
    set_environment(&mut cmd, &dir, every);
    cmd.stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return spawn_failed(program, &e),
    };
    // Ctrl-C reaches the whole process group: the program decides what it
    // means, and this side lives on to analyse what was recorded. A
    // SIGTERM or SIGHUP sent to this side alone is passed on to the program.
    signals::pass_on_to(child.id());
    let log = Log::open(&dir);
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let mut pumps = 0;
    if let Some(out) = child.stdout.take() {
        pump(out, std::io::stdout(), log.clone(), done_tx.clone());
        pumps += 1;
    }
    if let Some(err) = child.stderr.take() {
        pump(err, std::io::stderr(), log.clone(), done_tx.clone());
        pumps += 1;
    }
    let status = child.wait();
    // The pipes close when the program ends, unless something it started
    // still holds them: wait a little for the rest of its output, not for ever.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    for _ in 0..pumps {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            break;
        }
    }
    let code = match status {
        Ok(status) => exit_code(status),
        Err(e) => {
            eprintln!("oomscope run: cannot wait for the program: {e}");
            ExitCode::FAILURE
        }
    };
    let mut notes = log.notes();
    let processes = finish_layout(&dir, &mut notes);
    let report = analyse(&dir);
    save_report(&dir, &report, &mut notes);
    print_end(&dir, &report, &processes, &notes);
    code
}

/// `DIR/.oomscope/report.json`: the report `run` printed the headline of
/// (as `analyze --json` writes it, without buffer lifetimes), for scripts.
fn save_report(dir: &Path, report: &Report, problems: &mut Vec<String>) {
    let mut report = report.clone();
    for module in &mut report.modules {
        module.buffers.clear();
        module.instructions.clear();
    }
    let written = serde_json::to_vec_pretty(&report)
        .map_err(|e| e.to_string())
        .and_then(|json| {
            std::fs::write(dir.join(META_DIR).join("report.json"), json).map_err(|e| e.to_string())
        });
    if let Err(e) = written {
        problems.push(format!("the report could not be saved: {e}"));
    }
}

/// `oomscope-run-<UTC time>` in the current folder, with `-2`, `-3`... when
/// a run of the same second exists.
fn default_dir() -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let base = format!("oomscope-run-{}", utc_stamp(secs));
    let mut dir = PathBuf::from(&base);
    let mut n = 2;
    while dir.exists() {
        dir = PathBuf::from(format!("{base}-{n}"));
        n += 1;
    }
    dir
}

/// `20260128-193501` for a Unix time (UTC; civil-from-days, Howard Hinnant's algorithm).
fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Creates DIR and writes the hook; DIR made absolute, since the program may
/// change its working folder.
fn prepare(out: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(out)?;
    let dir = std::path::absolute(out)?;
    let hook = dir.join(META_DIR).join("hook");
    std::fs::create_dir_all(&hook)?;
    std::fs::write(hook.join("sitecustomize.py"), HOOK)?;
    Ok(dir)
}

fn set_environment(cmd: &mut Command, dir: &Path, every: f64) {
    let hook = dir.join(META_DIR).join("hook");
    let mut path = hook.into_os_string();
    if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(old);
    }
    cmd.env("PYTHONPATH", path);
    cmd.env("OOMSCOPE_RUN_DIR", dir);
    cmd.env("OOMSCOPE_RUN_EVERY", every.to_string());
    // Through a pipe Python would hold its output in a buffer: keep it live.
    if std::env::var_os("PYTHONUNBUFFERED").is_none() {
        cmd.env("PYTHONUNBUFFERED", "1");
    }
}

/// The program as the system would run it: a path, or a name on PATH.
fn find_program(program: &OsStr) -> Option<PathBuf> {
    let p = Path::new(program);
    if p.components().count() > 1 || program.to_string_lossy().contains('/') {
        return p.exists().then(|| p.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(p))
        .find(|c| c.is_file())
}

fn spawn_failed(program: &OsStr, e: &std::io::Error) -> ExitCode {
    let name = program.to_string_lossy();
    if e.kind() == std::io::ErrorKind::NotFound {
        eprintln!("oomscope run: {name}: command not found");
        ExitCode::from(127)
    } else {
        eprintln!("oomscope run: {name}: cannot run it: {e}");
        ExitCode::from(126)
    }
}

/// The program's exit code; 128 + N when signal N ended it, as shells say.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    if let Some(code) = status.code() {
        return ExitCode::from(code as u8);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return ExitCode::from((128 + signal) as u8);
        }
    }
    ExitCode::FAILURE
}

#[cfg(unix)]
mod signals {
    //! std has no signal API; `signal(2)` and `kill(2)` are in the C
    //! library std links.
    use std::sync::atomic::{AtomicI32, Ordering};

    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
        fn kill(pid: i32, sig: i32) -> i32;
    }
    const SIGHUP: i32 = 1;
    const SIGINT: i32 = 2;
    const SIGTERM: i32 = 15;
    const SIG_IGN: usize = 1;

    static CHILD: AtomicI32 = AtomicI32::new(0);

    extern "C" fn pass_on(sig: i32) {
        // Only async-signal-safe calls here: an atomic load and kill(2).
        let pid = CHILD.load(Ordering::Relaxed);
        if pid > 0 {
            // SAFETY: kill(2) with a pid we spawned and a plain signal number.
            unsafe {
                kill(pid, sig);
            }
        }
    }

    /// SIGINT ignored here (the terminal sends it to the program too);
    /// SIGTERM and SIGHUP passed on to `child`. Set after the spawn, so the
    /// program starts with the dispositions it would have had.
    pub fn pass_on_to(child: u32) {
        CHILD.store(i32::try_from(child).unwrap_or(0), Ordering::Relaxed);
        let handler: extern "C" fn(i32) = pass_on;
        // SAFETY: installs dispositions; the handler only loads an atomic
        // and calls kill(2).
        unsafe {
            signal(SIGINT, SIG_IGN);
            signal(SIGTERM, handler as usize);
            signal(SIGHUP, handler as usize);
        }
    }
}

#[cfg(not(unix))]
mod signals {
    pub fn pass_on_to(_child: u32) {}
}

/// `DIR/output.log`, shared by the stdout and stderr pumps; a write that
/// fails (a full disk) stops the log, never the passing through.
#[derive(Clone)]
struct Log(Arc<Mutex<LogState>>);

struct LogState {
    dir: PathBuf,
    file: Option<std::fs::File>,
    written: u64,
    notes: Vec<String>,
}

impl Log {
    fn open(dir: &Path) -> Log {
        let mut notes = Vec::new();
        let file = std::fs::File::create(dir.join(LOG_NAME))
            .map_err(|e| notes.push(format!("the output log could not be written: {e}")))
            .ok();
        Log(Arc::new(Mutex::new(LogState {
            dir: dir.to_path_buf(),
            file,
            written: 0,
            notes,
        })))
    }

    fn write(&self, bytes: &[u8]) {
        let Ok(mut s) = self.0.lock() else { return };
        if s.written >= LOG_ROTATE_BYTES {
            let (log, old) = (s.dir.join(LOG_NAME), s.dir.join("output.1.log"));
            s.file = None;
            s.written = 0;
            match std::fs::rename(&log, &old).and_then(|()| std::fs::File::create(&log)) {
                Ok(f) => s.file = Some(f),
                Err(e) => s.notes.push(format!("the output log stopped: {e}")),
            }
        }
        let Some(file) = s.file.as_mut() else { return };
        if let Err(e) = file.write_all(bytes) {
            s.file = None;
            s.notes.push(format!("the output log stopped: {e}"));
        } else {
            s.written += bytes.len() as u64;
        }
    }

    fn notes(&self) -> Vec<String> {
        self.0.lock().map(|s| s.notes.clone()).unwrap_or_default()
    }
}

/// Copies the program's `from` to our `to` as it comes, and to the log.
fn pump(
    mut from: impl Read + Send + 'static,
    mut to: impl Write + Send + 'static,
    log: Log,
    done: std::sync::mpsc::Sender<()>,
) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let chunk = &buf[..n];
                    // Our own stdout closed (a pager quit): keep logging.
                    let _ = to.write_all(chunk).and_then(|()| to.flush());
                    log.write(chunk);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
}

/// What one process noted (`DIR/.oomscope/pid<PID>.json`).
#[derive(Debug, Default, serde::Deserialize)]
pub struct ProcessNotes {
    #[serde(default)]
    pub pid: u64,
    #[serde(default)]
    pub rank: Option<u64>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// The uncaught exception's traceback, when the process ended with one.
    #[serde(default)]
    pub exception: Option<String>,
}

/// A process of the run, after the layout is final.
#[derive(Debug)]
pub struct Process {
    /// `rank0`, or `pid1234` when its rank is unknown or taken twice.
    pub folder: String,
    pub notes: ProcessNotes,
}

/// Renames each `pid<PID>/` folder `rank<N>/` from the rank its process
/// noted; a rank claimed twice (or none) keeps its `pid` name. Sorted by
/// folder name, so the result does not depend on timing.
pub fn finish_layout(dir: &Path, problems: &mut Vec<String>) -> Vec<Process> {
    let mut found: Vec<ProcessNotes> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir.join(META_DIR)) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !(name.starts_with("pid") && name.ends_with(".json")) {
                continue;
            }
            match std::fs::read(e.path())
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<ProcessNotes>(&b).map_err(|e| e.to_string()))
            {
                Ok(n) => found.push(n),
                Err(e) => problems.push(format!("{name}: {e}")),
            }
        }
    }
    found.sort_by_key(|n| (n.rank, n.pid));
    let mut ranks = std::collections::BTreeMap::<u64, usize>::new();
    for n in &found {
        if let Some(r) = n.rank {
            *ranks.entry(r).or_default() += 1;
        }
    }
    let mut processes = Vec::new();
    for n in found {
        let pid_folder = format!("pid{}", n.pid);
        let mut folder = pid_folder.clone();
        if let Some(r) = n.rank.filter(|r| ranks.get(r) == Some(&1)) {
            let target = format!("rank{r}");
            let from = dir.join(&pid_folder);
            if from.is_dir() {
                match std::fs::rename(&from, dir.join(&target)) {
                    Ok(()) => folder = target,
                    Err(e) => {
                        problems.push(format!("{pid_folder} could not be renamed {target}: {e}"))
                    }
                }
            } else {
                folder = target;
            }
        }
        drop_unoptimised_protos(&dir.join(&folder).join("xla_dump"));
        processes.push(Process { folder, notes: n });
    }
    processes.sort_by(|a, b| a.folder.cmp(&b.folder));
    processes
}

/// `--xla_dump_hlo_as_proto` writes each module before and after
/// optimisation; only the optimised one has the buffer assignment the
/// analyzer reads, and the other would be listed as an input it cannot use.
fn drop_unoptimised_protos(xla_dump: &Path) {
    let Ok(entries) = std::fs::read_dir(xla_dump) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name()
            .to_string_lossy()
            .ends_with(".before_optimizations.hlo.pb")
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Every recorded file of DIR, the run's own `.oomscope/` left out, read as
/// `oomscope analyze DIR` reads a folder.
pub fn analyse(dir: &Path) -> Report {
    let mut inputs = Inputs::default();
    let mut children: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    children.sort();
    for child in children {
        if child.file_name() == Some(OsStr::new(META_DIR)) {
            continue;
        }
        if let Some(p) = child.to_str() {
            inputs.add(p);
        }
    }
    let mut report = oomscope_analyzer::analyze_inputs(inputs.files, inputs.sources, &mut |_| {});
    report
        .errors
        .extend(
            inputs
                .unreadable
                .into_iter()
                .map(|(input, why)| oomscope_report::InputError {
                    message: format!("{input}: {why}"),
                    input,
                }),
        );
    report
}

fn print_end(dir: &Path, report: &Report, processes: &[Process], problems: &[String]) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err);
    match &report.diagnosis.headline {
        Some(h) => {
            let _ = writeln!(err, "oomscope: {}", h.text);
        }
        None => {
            let _ = writeln!(err, "oomscope: nothing to say about memory from this run");
        }
    }
    let folders: Vec<&str> = processes
        .iter()
        .filter(|p| dir.join(&p.folder).is_dir())
        .map(|p| p.folder.as_str())
        .collect();
    let what = if folders.is_empty() {
        "no Python process imported jax or torch: only the output log".to_string()
    } else {
        folders.join(", ")
    };
    let _ = writeln!(err, "oomscope: recorded in {} ({what})", dir.display());
    for p in processes {
        if let Some(last) = p
            .notes
            .exception
            .as_deref()
            .and_then(|e| e.lines().rev().find(|l| !l.trim().is_empty()))
        {
            let _ = writeln!(err, "oomscope: {}: ended with {last}", p.folder);
        }
        for note in &p.notes.notes {
            let _ = writeln!(err, "oomscope: {}: {note}", p.folder);
        }
    }
    for note in problems {
        let _ = writeln!(err, "oomscope: {note}");
    }
    for e in &report.errors {
        let _ = writeln!(err, "oomscope: {}", e.message);
    }
    match crate::link_for(report, crate::DEFAULT_BASE_URL, None) {
        Ok(url) => {
            let _ = writeln!(
                err,
                "oomscope: open with `oomscope serve {}`, or:\n{url}",
                dir.display()
            );
        }
        Err(e) => {
            let _ = writeln!(err, "oomscope: cannot make a link: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps_are_civil_dates() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        // 2026-11-28 19:35:01 UTC
        assert_eq!(utc_stamp(1_795_894_501), "20261128-193501");
        // A leap day.
        assert_eq!(utc_stamp(951_782_400), "20000229-000000");
    }

    #[test]
    fn ranks_rename_pid_folders_and_a_duplicate_keeps_its_pid() {
        let dir = std::env::temp_dir().join(format!("oomscope-layout-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(META_DIR)).unwrap();
        for (pid, rank) in [(30, Some(1)), (20, Some(0)), (40, Some(1)), (50, None)] {
            std::fs::create_dir_all(dir.join(format!("pid{pid}"))).unwrap();
            let rank = rank.map_or("null".to_string(), |r: u64| r.to_string());
            std::fs::write(
                dir.join(META_DIR).join(format!("pid{pid}.json")),
                format!(r#"{{"pid":{pid},"rank":{rank},"notes":[]}}"#),
            )
            .unwrap();
        }
        let mut problems = Vec::new();
        let folders: Vec<String> = finish_layout(&dir, &mut problems)
            .into_iter()
            .map(|p| p.folder)
            .collect();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(folders, ["pid30", "pid40", "pid50", "rank0"]);
        assert!(dir.join("rank0").is_dir() && !dir.join("pid20").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
