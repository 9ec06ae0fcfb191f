//! `oomscope`: the analyzer on the command line, for terminals, TPU VMs
//! without a browser, and CI.
//!
//! ```text
//! oomscope analyze PATH... [--json] [--buffers] [--link [--base-url URL]]
//! oomscope size SHAPE... [--json]
//! ```

use oomscope_analyzer::{analyze_inputs, InputFile, InputSource, ReadAt};
use oomscope_report::units::format_bytes;
use oomscope_report::Report;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage:
  oomscope analyze PATH... [--json] [--buffers] [--link [--base-url URL]]
      PATH: a file, a folder, a .zip, a .tar.gz/.tgz or a .gz
      --json      print the JSON report instead of a summary
      --buffers   include every buffer's lifetime in the JSON (large)
      --link      print a permalink that carries the report
      --base-url  where the page is hosted (default http://127.0.0.1:8080/)
  oomscope size SHAPE... [--json]
      padded and unpadded bytes of XLA shapes, e.g. 'f32[129,1024]{1,0:T(8,128)}'";

const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080/";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("analyze") => cmd_analyze(&args[1..]),
        Some("size") => cmd_size(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn cmd_analyze(args: &[String]) -> ExitCode {
    let mut json = false;
    let mut buffers = false;
    let mut link = false;
    let mut base_url = DEFAULT_BASE_URL.to_string();
    let mut paths = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--buffers" => buffers = true,
            "--link" => link = true,
            "--base-url" => match it.next() {
                Some(u) => base_url = u.clone(),
                None => return usage_error("--base-url needs a URL"),
            },
            s if s.starts_with("--") => return usage_error(&format!("unknown option {s}")),
            _ => paths.push(PathBuf::from(a)),
        }
    }
    if paths.is_empty() {
        return usage_error("analyze needs at least one PATH");
    }

    let mut inputs = Inputs::default();
    let mut unreadable = Vec::new();
    for path in &paths {
        if let Err(e) = collect(path, path, &mut inputs) {
            unreadable.push(format!("{}: {e}", path.display()));
        }
    }
    let mut report = analyze_inputs(inputs.files, inputs.sources, &mut |_| {});
    for message in unreadable {
        report.errors.push(oomscope_report::InputError { input: message.split(':').next().unwrap_or("").into(), message });
    }
    if !buffers {
        for m in &mut report.modules {
            m.buffers.clear();
            m.instructions.clear();
        }
    }

    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("oomscope: cannot serialise the report: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        print!("{}", summary(&report));
    }
    if link {
        match oomscope_permalink::encode_link(&report, &base_url) {
            Ok(l) => println!("{}", l.url),
            Err(e) => eprintln!("oomscope: cannot make a link: {e}"),
        }
    }
    for e in &report.errors {
        eprintln!("oomscope: {}", e.message);
    }
    if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("oomscope: {msg}\n{USAGE}");
    ExitCode::from(2)
}

/// What the command line hands the analyzer: files read whole, and XProf
/// profiles opened for reading by slices (as the page's worker does), so a
/// multi-GB profile costs the few planes it needs, not its size in memory.
#[derive(Default)]
struct Inputs {
    files: Vec<InputFile>,
    sources: Vec<InputSource>,
}

/// An open file read at offsets.
struct FileSource {
    file: std::sync::Mutex<std::fs::File>,
    len: u64,
}

impl ReadAt for FileSource {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = self.file.lock().map_err(|_| std::io::Error::other("file lock poisoned"))?;
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(buf)
    }
}

/// Read a file, or every file below a folder, naming each relative to what
/// the user named (a folder's files get `folder/…`, so they count as part of it).
fn collect(root: &Path, path: &Path, out: &mut Inputs) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)?.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            collect(root, &p, out)?;
        }
        return Ok(());
    }
    let name = if path == root {
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    } else {
        let base = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| ".".into());
        let rel = path.strip_prefix(root).unwrap_or(path);
        format!("{base}/{}", rel.display())
    };
    // Profiles and memory snapshots (pickles) can be gigabytes: read by slices.
    let lower = name.to_ascii_lowercase();
    if name.ends_with(".xplane.pb") || lower.ends_with(".pickle") || lower.ends_with(".pkl") {
        let file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        out.sources.push(InputSource { name, source: Box::new(FileSource { file: std::sync::Mutex::new(file), len }) });
    } else {
        out.files.push(InputFile { name, data: std::fs::read(path)? });
    }
    Ok(())
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "?".into();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

/// The human summary: what ran out, by how much, the peaks, the diagnosis.
fn summary(r: &Report) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "oomscope report: {} input(s)", r.inputs.len());
    for i in &r.inputs {
        let _ = writeln!(s, "  {:<14} {:>12}  {}", i.kind.as_str(), format_bytes(i.size_bytes), i.name);
    }
    if !r.oom_events.is_empty() {
        let _ = writeln!(s, "\nOut-of-memory errors: {}", r.oom_events.len());
    }
    for e in &r.oom_events {
        let _ = write!(s, "  [{:?}] {} at {}:{}", e.kind, e.memory_space, e.input, e.line);
        if e.repeats > 1 {
            let _ = write!(s, " (×{})", e.repeats);
        }
        let _ = writeln!(s);
        match (e.used_bytes.or(e.requested_bytes), e.limit_bytes.or(e.total_capacity_bytes)) {
            (Some(used), Some(limit)) => {
                let _ = writeln!(
                    s,
                    "    needs {} of {} ({} of the limit){}",
                    format_bytes(used),
                    format_bytes(limit),
                    pct(used, limit),
                    e.exceeded_bytes.map(|x| format!(", exceeded by {}", format_bytes(x))).unwrap_or_default()
                );
            }
            (Some(used), None) => {
                let _ = writeln!(s, "    needs {}", format_bytes(used));
            }
            _ => {}
        }
        let limit = e.limit_bytes.unwrap_or(0);
        for a in e.top_allocations.iter().take(5) {
            let _ = writeln!(s, "    #{:<2} {:>12} {:>7}  {}  {}", a.rank, format_bytes(a.size_bytes), pct(a.size_bytes, limit), a.shape, a.op_name.as_deref().unwrap_or(""));
        }
    }
    if !r.modules.is_empty() {
        let _ = writeln!(s, "\nModules: {}", r.modules.len());
    }
    for m in &r.modules {
        let _ = writeln!(
            s,
            "  {} (memory space {}, from {}): peak {} ({} unpadded) at position {} of {}{}",
            m.display_name(),
            m.memory_space,
            m.source_kind,
            format_bytes(m.peak_bytes),
            format_bytes(m.peak_unpadded_bytes),
            m.peak_position,
            m.heap_bytes.len(),
            if m.peak_kind.is_empty() { String::new() } else { format!(" [{} peak]", m.peak_kind) }
        );
        for b in m.peak_buffers.iter().take(5) {
            let _ = writeln!(s, "    {:>12}  {:?}  {}  {}", format_bytes(b.size_bytes), b.category, b.shape, b.name);
        }
        if let Some(p) = &m.padding {
            if p.total_padding_bytes > 0 {
                let _ = writeln!(s, "    padding: {} at the peak, {} over all buffers", format_bytes(p.peak_padding_bytes), format_bytes(p.total_padding_bytes));
            }
        }
    }
    for st in &r.step_series {
        let _ = writeln!(
            s,
            "\nMemory per step: {} {} {} ({} points){}",
            st.source,
            st.device,
            st.metric,
            st.points.len(),
            st.slope_bytes_per_step.map(|x| format!(", trend {}/step", format_bytes(x.max(0.0) as u64))).unwrap_or_default()
        );
        if let Some(step) = st.projected_limit_step {
            let when = st.projected_limit_seconds.map(|s| format!(", in about {:.1} h", s / 3600.0)).unwrap_or_default();
            let _ = writeln!(s, "  at this slope the limit is reached at step {step}{when} (estimate)");
        }
    }
    for p in &r.allocator_profiles {
        let _ = writeln!(s, "\nAllocator {}: peak heap {} at {} ps", p.allocator, format_bytes(p.peak_heap_bytes), p.peak_time_ps);
    }
    if !r.diagnosis.path.is_empty() {
        let _ = writeln!(s, "\nDiagnosis ({:?}): {}", r.diagnosis.tree, r.diagnosis.path.join(" → "));
        if let Some(leaf) = r.diagnosis.path.last().and_then(|id| r.diagnosis.nodes.iter().find(|n| &n.id == id)) {
            let _ = writeln!(s, "  {}", leaf.reason);
            for a in &leaf.actions {
                let _ = writeln!(s, "  - {}", a.text);
            }
        }
    }
    if !r.errors.is_empty() {
        let _ = writeln!(s, "\nCould not read: {}", r.errors.len());
        for e in &r.errors {
            let _ = writeln!(s, "  {}", e.message);
        }
    }
    s
}

fn cmd_size(args: &[String]) -> ExitCode {
    let json = args.iter().any(|a| a == "--json");
    let shapes: Vec<&String> = args.iter().filter(|a| *a != "--json").collect();
    if shapes.is_empty() {
        return usage_error("size needs at least one SHAPE");
    }
    let mut infos = Vec::new();
    let mut failed = false;
    for s in shapes {
        match oomscope_layout::size_of(s) {
            Ok(info) => infos.push(info),
            Err(e) => {
                eprintln!("oomscope: {s}: {e}");
                failed = true;
            }
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&infos).unwrap_or_else(|_| "[]".into()));
    } else {
        for i in &infos {
            let waste = i.padded_bytes.saturating_sub(i.unpadded_bytes);
            println!(
                "{}\n  padded {} ({} B), unpadded {} ({} B), padding {} ({:.2}×)",
                i.shape,
                format_bytes(i.padded_bytes),
                i.padded_bytes,
                format_bytes(i.unpadded_bytes),
                i.unpadded_bytes,
                format_bytes(waste),
                if i.unpadded_bytes == 0 { 1.0 } else { i.padded_bytes as f64 / i.unpadded_bytes as f64 }
            );
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
