//! `oomscope`: the analyzer on the command line, for terminals, TPU VMs
//! without a browser, and CI.
//!
//! ```text
//! oomscope analyze PATH... [--json | --html] [--buffers] [--device NAME] [--link [--base-url URL]]
//! kubectl logs pod | oomscope analyze -
//! oomscope compare [--json] [--link [--base-url URL]] [--label-a X] [--label-b Y] A... -- B... [the same options]
//! oomscope size SHAPE... [--json]
//! oomscope run [--out DIR] [--every SECONDS] -- COMMAND...
//! oomscope serve [--port N] [PATH...]
//! oomscope open LINK
//! oomscope link [FILE|-]
//! ```
//!
//! Exit codes: 0 success, 1 an input could not be read or the link could not
//! be made, 2 a usage error (clap's).

mod cli {
    pub mod compare;
    pub mod embed;
    pub mod html;
    pub mod inputs;
    pub mod link;
    pub mod ranks;
    pub mod run;
    pub mod serve;
    pub mod summary;
}

use clap::{Arg, ArgAction, ArgMatches, Command};
use cli::inputs::Inputs;
use oomscope_report::units::format_bytes;
use oomscope_report::{DeviceLimit, InputError, Report, ViewState};
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080/";

fn command() -> Command {
    Command::new("oomscope")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Why did my XLA / PyTorch job run out of memory? The analyzer of the oomscope page, on the command line.")
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommand(
            Command::new("analyze")
                .about("Analyze OOM logs, XLA dumps, HloProtos, XProf profiles, step logs (files, folders, archives, or - for standard input)")
                .arg(
                    Arg::new("paths")
                        .value_name("PATH")
                        .help("a file, a folder, a .zip, a .tar.gz/.tgz or a .gz; - reads standard input (kubectl logs pod | oomscope analyze -)")
                        .required(true)
                        .num_args(1..),
                )
                .arg(Arg::new("json").long("json").action(ArgAction::SetTrue).help("print the JSON report instead of a summary"))
                .arg(Arg::new("html").long("html").action(ArgAction::SetTrue).conflicts_with("json").help("print the report as one self-contained HTML fragment (for notebooks), with the link when --link is given"))
                .arg(Arg::new("buffers").long("buffers").action(ArgAction::SetTrue).help("include every buffer's lifetime in the JSON (large)"))
                .arg(
                    Arg::new("device")
                        .long("device")
                        .value_name("NAME")
                        .value_parser(clap::builder::PossibleValuesParser::new(
                            oomscope_report::devices::KNOWN_DEVICES.iter().map(|d| d.name),
                        ))
                        .help("judge the peak against this device's limit when the inputs give none (a lone HloProto, a step log), as the page's device picker does"),
                )
                .arg(Arg::new("link").long("link").action(ArgAction::SetTrue).help("print a link to the page that carries the report, last and alone on its line"))
                .arg(
                    Arg::new("what-if")
                        .long("what-if")
                        .value_name("REMEDIES")
                        .value_delimiter(',')
                        .value_parser(clap::builder::PossibleValuesParser::new(
                            oomscope_report::whatif::Remedy::ALL.iter().map(|r| r.as_str()),
                        ))
                        .help("replay these remedies together on the module that ran out (e.g. donation,bf16) and print the predicted peak; --json always holds every single remedy"),
                )
                .arg(
                    Arg::new("without")
                        .long("without")
                        .value_name("FRAME")
                        .action(ArgAction::Append)
                        .help("PyTorch snapshots: replay the trace without the allocations whose stack holds this frame ('function file:line', as the snapshot's lines are printed) and print the new peak; repeat for several frames"),
                )
                .arg(base_url_arg()),
        )
        .subcommand(
            Command::new("compare")
                .about("Compare two runs: the files of run A, then --, then the files of run B (e.g. before and after a change)")
                .arg(Arg::new("a").value_name("A").help("files, folders or archives of run A (before)").required(true).num_args(1..))
                .arg(
                    Arg::new("b")
                        .value_name("B")
                        .help("files, folders or archives of run B (after), given after --; the options may follow them")
                        .required(true)
                        .num_args(1..)
                        .last(true),
                )
                .arg(Arg::new("label-a").long("label-a").value_name("LABEL").help("what to call run A (default: its file names)"))
                .arg(Arg::new("label-b").long("label-b").value_name("LABEL").help("what to call run B (default: its file names)"))
                .arg(Arg::new("json").long("json").action(ArgAction::SetTrue).help("print both reports and their comparison as JSON"))
                .arg(Arg::new("link").long("link").action(ArgAction::SetTrue).help("print a link to the page that carries the comparison, last and alone on its line"))
                .arg(base_url_arg()),
        )
        .subcommand(
            Command::new("size")
                .about("Padded and unpadded bytes of XLA shapes, e.g. 'f32[129,1024]{1,0:T(8,128)}'")
                .arg(Arg::new("shapes").value_name("SHAPE").required(true).num_args(1..))
                .arg(Arg::new("json").long("json").action(ArgAction::SetTrue).help("print JSON")),
        )
        .subcommand(cli::run::command())
        .subcommand(cli::serve::serve_command())
        .subcommand(cli::serve::open_command())
        .subcommand(cli::link::command())
}

fn base_url_arg() -> Arg {
    Arg::new("base-url")
        .long("base-url")
        .value_name("URL")
        .default_value(DEFAULT_BASE_URL)
        .help("where the page is hosted (http or https)")
}

/// Set once standard output's reader went away (`oomscope ... | head`).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to standard output. A reader that closed the pipe ends the
/// output quietly (as `cat` and `grep` do), not with a panic: what is left
/// is not written, and errors still go to standard error. Returns false on
/// any other write error.
fn out(text: &str) -> bool {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return true;
    }
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            true
        }
        Err(e) => {
            eprintln!("oomscope: cannot write the output: {e}");
            false
        }
    }
}

fn main() -> ExitCode {
    let matches = command().get_matches();
    match matches.subcommand() {
        Some(("analyze", m)) => cmd_analyze(m),
        Some(("compare", m)) => cmd_compare(m),
        Some(("size", m)) => cmd_size(m),
        Some(("run", m)) => cli::run::cmd_run(m),
        Some(("serve", m)) => cli::serve::cmd_serve(m),
        Some(("open", m)) => cli::serve::cmd_open(m),
        Some(("link", m)) => cli::link::cmd_link(m),
        _ => ExitCode::from(2),
    }
}

fn cmd_analyze(m: &ArgMatches) -> ExitCode {
    let inputs = side_inputs(m.get_many::<String>("paths").into_iter().flatten());
    // `--without FRAME`: each snapshot's trace replayed without that frame's
    // allocations (read before the analysis, which consumes the inputs).
    let frames: Vec<&String> = m
        .get_many::<String>("without")
        .into_iter()
        .flatten()
        .collect();
    let mut without = Vec::new();
    let mut without_errors = Vec::new();
    for frame in &frames {
        let (found, errors) =
            oomscope_analyzer::what_if::snapshots_without(&inputs.files, &inputs.sources, frame);
        if found.is_empty() && errors.is_empty() {
            eprintln!("oomscope: --without {frame}: no allocation of a snapshot has this frame on its stack");
        }
        without.extend(found);
        without_errors.extend(errors);
    }
    let (mut report, programs) =
        oomscope_analyzer::analyze_keeping_programs(inputs.files, inputs.sources, &mut |_| {});
    oomscope_analyzer::what_if::attach_snapshot_what_ifs(&mut report, without);
    for e in without_errors {
        if !report.errors.iter().any(|r| r.input == e.input) {
            report.errors.push(e);
        }
    }
    // Paths that could not be read are listed after what was analysed.
    report.errors.extend(inputs.unreadable);
    // The page's device picker: the verdict made again with the device's limit.
    let device = m
        .get_one::<String>("device")
        .and_then(|name| oomscope_report::devices::known_device(name))
        .map(|d| d.limit());
    if device.is_some() {
        report.diagnosis = oomscope_diagnosis::diagnose_with(&report, device.as_ref());
        oomscope_analyzer::what_if::attach(
            &mut report,
            &programs,
            device.as_ref().map(|d| d.limit_bytes),
        );
    }
    // `--what-if a,b`: the combination, replayed in one plan.
    let remedies: Vec<oomscope_report::whatif::Remedy> = m
        .get_many::<String>("what-if")
        .into_iter()
        .flatten()
        .filter_map(|w| oomscope_report::whatif::Remedy::from_word(w))
        .collect();
    let combination = (!remedies.is_empty()).then(|| {
        oomscope_analyzer::what_if::combination(
            &report,
            &programs,
            &remedies,
            device.as_ref().map(|d| d.limit_bytes),
        )
    });
    if let Some(Ok(w)) = &combination {
        if !w.with.is_empty() {
            report.diagnosis.what_if.push(w.clone());
        }
    }
    // The page embedded by --html draws the buffers (cli/embed.rs).
    if !m.get_flag("buffers") && !m.get_flag("html") {
        for module in &mut report.modules {
            module.buffers.clear();
            module.instructions.clear();
        }
    }
    // The link is made before anything is printed, so that it can be printed last.
    let link = m.get_flag("link").then(|| {
        link_for(
            &report,
            m.get_one::<String>("base-url")
                .map_or(DEFAULT_BASE_URL, String::as_str),
            device,
        )
    });

    if m.get_flag("html") {
        // The link goes inside the HTML, not after it.
        let url = link.as_ref().and_then(|l| l.as_ref().ok()).cloned();
        print!("{}", cli::embed::fragment(&report, url.as_deref()));
        for e in &report.errors {
            eprintln!("oomscope: {}", e.message);
        }
        let failed = !report.errors.is_empty() | matches!(link, Some(Err(_)));
        if let Some(Err(e)) = &link {
            eprintln!("oomscope: cannot make a link: {e}");
        }
        return if failed {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    if m.get_flag("json") {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => {
                out(&format!("{s}\n"));
            }
            Err(e) => {
                eprintln!("oomscope: cannot serialise the report: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        if out(&cli::summary::summary(&report)) {
            if let Some(c) = &combination {
                out(&cli::summary::what_if_line(&remedies, c));
            }
        }
    }
    if let (true, Some(Err(why))) = (m.get_flag("json"), &combination) {
        eprintln!(
            "oomscope: what if {}: {why}",
            remedies
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(" + ")
        );
    }
    for e in &report.errors {
        eprintln!("oomscope: {}", e.message);
    }
    let failed = !report.errors.is_empty() | !print_link(link);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The paths of `analyze`, or of one side of `compare`: what the user
/// named, read; a path that cannot be read is an error.
fn side_inputs<'a>(
    paths: impl IntoIterator<Item = &'a String>,
) -> oomscope_analyzer::compare::SideInputs {
    let mut inputs = Inputs::default();
    for path in paths {
        inputs.add(path);
    }
    let unreadable = inputs
        .unreadable
        .into_iter()
        .map(|(input, why)| InputError {
            message: format!("{input}: {why}"),
            input,
        })
        .collect();
    oomscope_analyzer::compare::SideInputs {
        files: inputs.files,
        sources: inputs.sources,
        unreadable,
    }
}

fn cmd_compare(m: &ArgMatches) -> ExitCode {
    let after_b = match cli::compare::AfterB::split(
        m.get_many::<String>("b")
            .into_iter()
            .flatten()
            .map(String::as_str),
    ) {
        Ok(after) => after,
        Err(e) => {
            eprintln!("error: {e}\n\nUsage: oomscope compare [OPTIONS] <A>... -- <B>... [OPTIONS]");
            return ExitCode::from(2);
        }
    };
    let json = m.get_flag("json") || after_b.json;
    let a = side_inputs(m.get_many::<String>("a").into_iter().flatten());
    let b = side_inputs(&after_b.paths);
    let labels = oomscope_analyzer::compare::Labels {
        a: after_b
            .label_a
            .or_else(|| m.get_one::<String>("label-a").cloned()),
        b: after_b
            .label_b
            .or_else(|| m.get_one::<String>("label-b").cloned()),
    };
    let runs =
        oomscope_analyzer::compare::compare_inputs(a, b, labels, &mut |_| {}).without_lifetimes();
    // Made before anything is printed, so that it can be printed last.
    let base_url = after_b
        .base_url
        .or_else(|| m.get_one::<String>("base-url").cloned());
    let link = (m.get_flag("link") || after_b.link).then(|| {
        let base_url = base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
        check_base_url(base_url)?;
        oomscope_permalink::encode_comparison_link(&runs.comparison, base_url)
            .map(|l| l.url)
            .map_err(|e| e.to_string())
    });
    if json {
        match serde_json::to_string_pretty(&runs) {
            Ok(s) => {
                out(&format!("{s}\n"));
            }
            Err(e) => {
                eprintln!("oomscope: cannot serialise the comparison: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        out(&cli::compare::summary(&runs.comparison));
    }
    let mut failed = false;
    for (side, report) in [("A", &runs.a), ("B", &runs.b)] {
        for e in &report.errors {
            eprintln!("oomscope: {side}: {}", e.message);
            failed = true;
        }
    }
    failed |= !print_link(link);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Prints a made link last, alone on its line, or why it could not be
/// made; returns whether there was no failure.
fn print_link(link: Option<Result<String, String>>) -> bool {
    match link {
        Some(Ok(url)) => {
            out(&format!("\n{url}\n"));
            true
        }
        Some(Err(e)) => {
            eprintln!("oomscope: cannot make a link: {e}");
            false
        }
        None => true,
    }
}

fn check_base_url(base_url: &str) -> Result<(), String> {
    if base_url.starts_with("http://") || base_url.starts_with("https://") {
        Ok(())
    } else {
        Err(format!(
            "--base-url {base_url:?} is not an http:// or https:// URL"
        ))
    }
}

/// The permalink of `report` under `base_url` (which must be an http(s) URL:
/// anything else could not open the page), opening on the verdict; a
/// picked device travels with it, as from the page.
fn link_for(
    report: &Report,
    base_url: &str,
    device: Option<DeviceLimit>,
) -> Result<String, String> {
    check_base_url(base_url)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let view = ViewState {
        view: "verdict".into(),
        device,
        ..Default::default()
    };
    oomscope_permalink::encode_link_at(report, base_url, &view, now)
        .map(|l| l.url)
        .map_err(|e| format!("{e:?}"))
}

fn cmd_size(m: &ArgMatches) -> ExitCode {
    let mut infos = Vec::new();
    let mut failed = false;
    for shape in m.get_many::<String>("shapes").into_iter().flatten() {
        match oomscope_layout::size_of(shape) {
            Ok(info) => infos.push(info),
            Err(e) => {
                eprintln!("oomscope: {shape}: {e}");
                failed = true;
            }
        }
    }
    if m.get_flag("json") {
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&infos).unwrap_or_else(|_| "[]".into())
        ));
    } else {
        for i in &infos {
            let waste = i.padded_bytes.saturating_sub(i.unpadded_bytes);
            out(&format!(
                "{}\n  padded {} ({} B), unpadded {} ({} B), padding {} ({:.2}×)\n",
                i.shape,
                format_bytes(i.padded_bytes),
                i.padded_bytes,
                format_bytes(i.unpadded_bytes),
                i.unpadded_bytes,
                format_bytes(waste),
                if i.unpadded_bytes == 0 {
                    1.0
                } else {
                    i.padded_bytes as f64 / i.unpadded_bytes as f64
                }
            ));
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomscope_report::{
        Diagnosis, DiagnosisNode, Headline, ModuleReport, OomEvent, PeakBuffer, Severity,
    };

    #[test]
    fn the_command_line_is_consistent() {
        command().debug_assert();
    }

    fn report_with_a_headline() -> Report {
        let mut r = Report::new();
        r.diagnosis = Diagnosis {
            path: vec!["root".into(), "remat".into()],
            nodes: vec![
                DiagnosisNode {
                    id: "root".into(),
                    title: "Compile-time HBM OOM".into(),
                    selected: true,
                    ..Default::default()
                },
                DiagnosisNode {
                    id: "remat".into(),
                    title: "Rematerialisation".into(),
                    selected: true,
                    reason: "activations are 70% of the peak".into(),
                    ..Default::default()
                },
            ],
            headline: Some(Headline {
                node: "remat".into(),
                text: "Wrap each layer in jax.checkpoint".into(),
                estimate_bytes: Some(3 << 30),
                severity: Severity::Failure,
                confidence: None,
            }),
            ..Default::default()
        };
        r
    }

    #[test]
    fn the_headline_comes_first_with_its_node_title_and_estimate() {
        let text = cli::summary::summary(&report_with_a_headline());
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("Wrap each layer in jax.checkpoint"));
        assert_eq!(
            lines.next(),
            Some(format!("  (Rematerialisation; estimate {})", format_bytes(3 << 30)).as_str())
        );
        assert!(
            text.contains("Diagnosis: Compile-time HBM OOM → Rematerialisation"),
            "{text}"
        );
        assert!(!text.contains("root →"), "internal ids printed: {text}");
    }

    #[test]
    fn no_headline_line_without_a_headline() {
        let mut r = report_with_a_headline();
        r.diagnosis.headline = None;
        assert!(cli::summary::summary(&r).starts_with("oomscope report:"));
    }

    #[test]
    fn one_line_per_distinct_oom_with_its_count() {
        let oom = |input: &str, used: u64, repeats: u32| OomEvent {
            input: input.into(),
            memory_space: oomscope_report::MemorySpace::Hbm,
            used_bytes: Some(used),
            limit_bytes: Some(16 << 30),
            repeats,
            ..Default::default()
        };
        let mut r = Report::new();
        r.oom_events = vec![
            oom("rank0.log", 20 << 30, 1),
            oom("rank1.log", 20 << 30, 2),
            oom("other.log", 30 << 30, 1),
        ];
        let text = cli::summary::summary(&r);
        assert!(text.contains("Out-of-memory errors: 2"), "{text}");
        // The same numbers in two files are one OOM seen in each (issue 29:
        // the error and the log of one run); the count is the most one file
        // repeats it, not the sum over files.
        assert!(
            text.contains("(hbm) ×2, at rank0.log:0 (the same OOM also in rank1.log:0)"),
            "{text}"
        );
        assert_eq!(text.matches("needs ").count(), 2, "{text}");
    }

    #[test]
    fn a_modules_largest_buffers_are_listed_largest_first() {
        let buffer = |name: &str, size: u64| PeakBuffer {
            name: name.into(),
            size_bytes: size,
            ..Default::default()
        };
        let module = ModuleReport {
            // XProf's order: indefinite (parameters, outputs) first, then the temporaries.
            peak_buffers: (0..6)
                .map(|i| buffer(&format!("output.{i}"), 128 << 20))
                .chain([buffer("temp.big", 12 << 30), buffer("temp.mid", 1 << 30)])
                .collect(),
            ..Default::default()
        };
        let names: Vec<&str> = cli::summary::largest_peak_buffers(&module)
            .iter()
            .map(|b| b.name.as_str())
            .collect();
        assert_eq!(names[..2], ["temp.big", "temp.mid"]);
        assert_eq!(names.len(), cli::summary::LARGEST_BUFFERS);
    }
}
