//! `oomscope serve [--port N] [PATH...]` and `oomscope open LINK`: the page,
//! bundled with the command (the `dist/` that `trunk build --release`
//! makes), served on 127.0.0.1 with the standard library only, so a wheel
//! needs neither Rust, trunk nor a network.
//!
//! Given paths, `serve` analyses them as `analyze` does and opens the page
//! on that report's link; `open` opens a link someone sent on the local page
//! (what follows `#` carries the whole report, so any base works).
//!
//! The page is looked for in `--dist`, then `$OOMSCOPE_DIST`, then
//! `<prefix>/share/oomscope/dist` beside the installed command (where the
//! wheel puts it), then `dist/` of the checkout a `target/*/oomscope` was
//! built in.

use clap::{Arg, ArgAction, ArgMatches, Command};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The port the links `analyze --link` and `run` print point at.
pub const DEFAULT_PORT: u16 = 8080;
/// A request line and its headers, at most.
const MAX_REQUEST_HEAD: u64 = 16 << 10;

fn common_args(cmd: Command) -> Command {
    cmd.arg(
        Arg::new("port")
            .long("port")
            .value_name("N")
            .default_value("8080")
            .value_parser(clap::value_parser!(u16))
            .help("the port on 127.0.0.1 (0: any free one)"),
    )
    .arg(
        Arg::new("dist")
            .long("dist")
            .value_name("DIR")
            .value_parser(clap::value_parser!(PathBuf))
            .help("the built page to serve (default: the one installed with oomscope)"),
    )
    .arg(
        Arg::new("no-open")
            .long("no-open")
            .action(ArgAction::SetTrue)
            .help("print the address, do not open a browser"),
    )
}

pub fn serve_command() -> Command {
    common_args(
        Command::new("serve")
            .about("Serve the page offline on 127.0.0.1 and open it (on the report of PATHs when given)")
            .arg(
                Arg::new("paths")
                    .value_name("PATH")
                    .num_args(0..)
                    .help("inputs to analyse and open, as for analyze"),
            ),
    )
}

pub fn open_command() -> Command {
    common_args(
        Command::new("open")
            .about("Open a report or comparison link (…#r=… or …#c=…) on the page served locally")
            .arg(Arg::new("link").value_name("LINK").required(true)),
    )
}

pub fn cmd_serve(m: &ArgMatches) -> ExitCode {
    let Some(dist) = find_dist(m) else {
        return no_dist();
    };
    let Some((listener, base)) = bind(m) else {
        return ExitCode::FAILURE;
    };
    let mut url = base.clone();
    if m.get_many::<String>("paths").is_some_and(|p| p.len() > 0) {
        let inputs = crate::side_inputs(m.get_many::<String>("paths").into_iter().flatten());
        let mut report =
            oomscope_analyzer::analyze_inputs(inputs.files, inputs.sources, &mut |_| {});
        report.errors.extend(inputs.unreadable);
        for e in &report.errors {
            eprintln!("oomscope: {}", e.message);
        }
        match crate::link_for(&report, &base, None) {
            Ok(link) => url = link,
            Err(e) => {
                eprintln!("oomscope: cannot make a link: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    run_server(listener, &dist, &url, !m.get_flag("no-open"))
}

pub fn cmd_open(m: &ArgMatches) -> ExitCode {
    let link = m.get_one::<String>("link").map_or("", String::as_str);
    let Some(fragment) = link.find('#').map(|i| &link[i..]) else {
        eprintln!("oomscope open: {link:?} is not a report link (it has no #r= or #c= part)");
        return ExitCode::from(2);
    };
    let Some(dist) = find_dist(m) else {
        return no_dist();
    };
    let Some((listener, base)) = bind(m) else {
        return ExitCode::FAILURE;
    };
    run_server(
        listener,
        &dist,
        &format!("{base}{fragment}"),
        !m.get_flag("no-open"),
    )
}

fn no_dist() -> ExitCode {
    eprintln!("oomscope: the page is not installed with this oomscope: give --dist DIR (the dist/ of `trunk build --release`) or set OOMSCOPE_DIST");
    ExitCode::FAILURE
}

fn bind(m: &ArgMatches) -> Option<(TcpListener, String)> {
    let port = m.get_one::<u16>("port").copied().unwrap_or(DEFAULT_PORT);
    match TcpListener::bind(("127.0.0.1", port)) {
        Ok(l) => {
            let port = l.local_addr().map_or(port, |a| a.port());
            Some((l, format!("http://127.0.0.1:{port}/")))
        }
        Err(e) => {
            eprintln!("oomscope: cannot listen on 127.0.0.1:{port}: {e} (another port: --port N)");
            None
        }
    }
}

/// The first folder holding an `index.html` among the places the page is
/// looked for.
fn find_dist(m: &ArgMatches) -> Option<PathBuf> {
    installed_page(m.get_one::<PathBuf>("dist").map(PathBuf::as_path))
}

/// The page: `explicit` when given (that one or none), else
/// `$OOMSCOPE_DIST`, the wheel's `share/oomscope/dist`, or a checkout's
/// `dist/` beside `target/`.
pub fn installed_page(explicit: Option<&Path>) -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(d) = explicit {
        // Named by the user: that one or none.
        return d.join("index.html").is_file().then(|| d.to_path_buf());
    }
    if let Some(d) = std::env::var_os("OOMSCOPE_DIST") {
        candidates.push(d.into());
    }
    if let Some(bin) = std::env::current_exe()
        .ok()
        .and_then(|e| e.canonicalize().ok())
    {
        if let Some(dir) = bin.parent() {
            candidates.push(dir.join("../share/oomscope/dist"));
            // target/{debug,release}/oomscope in a checkout.
            candidates.push(dir.join("../../dist"));
        }
    }
    candidates
        .into_iter()
        .find(|d| d.join("index.html").is_file())
}

fn run_server(listener: TcpListener, dist: &Path, url: &str, open: bool) -> ExitCode {
    println!("oomscope: serving {} on {url}", dist.display());
    println!("oomscope: press Ctrl-C to stop");
    let _ = std::io::stdout().flush();
    if open {
        open_browser(url);
    }
    let dist = dist.to_path_buf();
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let dist = dist.clone();
        std::thread::spawn(move || {
            let _ = handle(stream, &dist);
        });
    }
    ExitCode::SUCCESS
}

fn open_browser(url: &str) {
    let candidates: Vec<(String, Vec<String>)> = if let Ok(b) = std::env::var("BROWSER") {
        vec![(b, vec![url.into()])]
    } else if cfg!(target_os = "macos") {
        vec![("open".into(), vec![url.into()])]
    } else if cfg!(windows) {
        vec![(
            "cmd".into(),
            vec!["/c".into(), "start".into(), String::new(), url.into()],
        )]
    } else {
        vec![("xdg-open".into(), vec![url.into()])]
    };
    for (program, args) in candidates {
        let spawned = std::process::Command::new(&program)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if spawned.is_ok() {
            return;
        }
    }
    println!("oomscope: open this address in a browser: {url}");
}

/// Answers one request: GET or HEAD of a file under `dist`.
fn handle(stream: TcpStream, dist: &Path) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?.take(MAX_REQUEST_HEAD));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // The headers are read and ignored (nothing in them changes the answer).
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let mut out = stream;
    if method != "GET" && method != "HEAD" {
        return respond(
            &mut out,
            "405 Method Not Allowed",
            "text/plain",
            b"only GET and HEAD\n",
            true,
        );
    }
    match resolve(dist, target) {
        Some(path) => match std::fs::read(&path) {
            Ok(body) => respond(
                &mut out,
                "200 OK",
                content_type(&path),
                &body,
                method == "GET",
            ),
            Err(_) => respond(
                &mut out,
                "404 Not Found",
                "text/plain",
                b"not found\n",
                method == "GET",
            ),
        },
        None => respond(
            &mut out,
            "404 Not Found",
            "text/plain",
            b"not found\n",
            method == "GET",
        ),
    }
}

/// The file a request target names under `dist`: the query and fragment
/// dropped, percent-escapes decoded, `/` meaning `index.html`; `None` for
/// anything that would leave `dist` (`..`, absolute parts).
pub fn resolve(dist: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next()?;
    let path = percent_decode(path)?;
    let mut out = dist.to_path_buf();
    for c in Path::new(path.trim_start_matches('/')).components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if out.is_dir() {
        out.push("index.html");
    }
    out.is_file().then_some(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Content types the page's files need (wasm must be `application/wasm`
/// for streaming compilation).
pub fn content_type(path: &Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
        .as_str()
    {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" | "webmanifest" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn respond(
    out: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    with_body: bool,
) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if with_body {
        out.write_all(body)?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_stay_inside_the_page_folder() {
        let dist = std::env::temp_dir().join(format!("oomscope-serve-{}", std::process::id()));
        std::fs::create_dir_all(dist.join("sub")).unwrap();
        std::fs::write(dist.join("index.html"), "<p>page</p>").unwrap();
        std::fs::write(dist.join("sub/a b.wasm"), [0u8, 97, 115, 109]).unwrap();
        assert_eq!(resolve(&dist, "/"), Some(dist.join("index.html")));
        assert_eq!(resolve(&dist, "/?x=1#r=abc"), Some(dist.join("index.html")));
        assert_eq!(
            resolve(&dist, "/sub/a%20b.wasm"),
            Some(dist.join("sub/a b.wasm"))
        );
        assert_eq!(resolve(&dist, "/../etc/passwd"), None);
        assert_eq!(resolve(&dist, "/sub/%2e%2e/%2e%2e/etc/passwd"), None);
        assert_eq!(resolve(&dist, "/missing.js"), None);
        assert_eq!(resolve(&dist, "/%zz"), None);
        assert_eq!(content_type(Path::new("x_bg.wasm")), "application/wasm");
        let _ = std::fs::remove_dir_all(&dist);
    }
}
