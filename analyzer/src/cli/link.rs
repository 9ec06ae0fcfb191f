//! `oomscope link [--base-url URL] [FILE|-]`: the permalink of a JSON
//! report (`analyze --json`'s) or comparison (`compare --json`'s), read from
//! a file or standard input. The Python API's `oomscope.link(report)`;
//! with `--html`, the report as `analyze --html` prints it, the link inside
//! (`oomscope.show(report)`).

use clap::{Arg, ArgAction, ArgMatches, Command};
use oomscope_report::compare::ComparedRuns;
use oomscope_report::Report;
use std::io::Read;
use std::process::ExitCode;

pub fn command() -> Command {
    Command::new("link")
        .about("Print the link of a JSON report (analyze --json) or comparison (compare --json)")
        .arg(
            Arg::new("file")
                .value_name("FILE")
                .default_value("-")
                .help("the JSON; - (the default) reads standard input"),
        )
        .arg(crate::base_url_arg())
        .arg(
            Arg::new("html")
                .long("html")
                .action(ArgAction::SetTrue)
                .help("print the report as HTML (as analyze --html), the link inside"),
        )
}

pub fn cmd_link(m: &ArgMatches) -> ExitCode {
    let file = m.get_one::<String>("file").map_or("-", String::as_str);
    let base_url = m
        .get_one::<String>("base-url")
        .map_or(crate::DEFAULT_BASE_URL, String::as_str);
    let mut data = Vec::new();
    let read = if file == "-" {
        std::io::stdin().lock().read_to_end(&mut data).map(|_| ())
    } else {
        std::fs::read(file).map(|d| data = d)
    };
    if let Err(e) = read {
        eprintln!("oomscope: {file}: {e}");
        return ExitCode::FAILURE;
    }
    match link_of_json(&data, base_url, m.get_flag("html")) {
        Ok(url) => {
            println!("{url}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("oomscope: {file}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A comparison when the JSON has `comparison`, else a report; the link,
/// or the HTML with the link inside.
fn link_of_json(data: &[u8], base_url: &str, html: bool) -> Result<String, String> {
    let value: serde_json::Value =
        serde_json::from_slice(data).map_err(|e| format!("not JSON: {e}"))?;
    if value.get("comparison").is_some() {
        let runs: ComparedRuns = serde_json::from_value(value)
            .map_err(|e| format!("not a comparison (compare --json): {e}"))?;
        crate::check_base_url(base_url)?;
        let url = oomscope_permalink::encode_comparison_link(&runs.comparison, base_url)
            .map(|l| l.url)
            .map_err(|e| e.to_string())?;
        if !html {
            return Ok(url);
        }
        // Each side as its own report; the link opens the comparison.
        return Ok(format!(
            "<p><b>A: {}</b></p>{}<p><b>B: {}</b></p>{}",
            super::html::esc(&runs.comparison.a.label),
            super::html::page(&runs.a, None),
            super::html::esc(&runs.comparison.b.label),
            super::html::page(&runs.b, Some(&url))
        ));
    }
    let report: Report =
        serde_json::from_value(value).map_err(|e| format!("not a report (analyze --json): {e}"))?;
    let url = crate::link_for(&report, base_url, None)?;
    Ok(if html {
        super::embed::fragment(&report, Some(&url))
    } else {
        url
    })
}
