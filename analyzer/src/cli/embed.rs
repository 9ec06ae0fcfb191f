//! The page itself inside `--html`'s fragment: when the page is installed
//! (the wheel's `share/oomscope/dist`, `$OOMSCOPE_DIST`, or a checkout's
//! `dist/`), the fragment also carries the page's own wasm, JS glue and CSS
//! in an `<iframe srcdoc>`, with the report's JSON beside them. Where
//! scripts run (a trusted notebook: Jupyter, JupyterLab, VS Code, Colab),
//! the iframe shows the whole interactive report, drawn by the same code as
//! the page, offline and with no server, and hides the static fragment;
//! where they do not, the static fragment stays (`html.rs`).
//!
//! The wasm travels zlib-compressed and base64-encoded (2.8 MB becomes about
//! 1.2 MB) and is inflated by the browser's `DecompressionStream`.

use std::io::Write as _;
use std::path::Path;

use base64::Engine as _;
use oomscope_report::Report;

use super::html::esc;

/// The page's element ids the embedded page reads (`app/src/embedded.rs`).
const REPORT_ELEMENT: &str = "oomscope-report";
const LINK_ATTRIBUTE: &str = "data-link";

/// A report whose JSON is larger than this is embedded without its
/// buffer and instruction lists, as a link carries it: a notebook output of
/// tens of megabytes slows every save and reopen of the notebook.
const MAX_REPORT_JSON_BYTES: usize = 8 << 20;

/// The page's files, named by its `index.html` (trunk's hashed names).
struct PageFiles {
    glue_js: String,
    wasm: Vec<u8>,
    css: String,
}

fn read_page(dist: &Path) -> Result<PageFiles, String> {
    let index_path = dist.join("index.html");
    let index = std::fs::read_to_string(&index_path)
        .map_err(|e| format!("{}: {e}", index_path.display()))?;
    let file = |target: &str| -> Result<Vec<u8>, String> {
        let path = super::serve::resolve(dist, target).ok_or_else(|| {
            format!(
                "{}: names {target}, which is not in {}",
                index_path.display(),
                dist.display()
            )
        })?;
        std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let attribute = |name: &str| -> Result<String, String> {
        attribute_value(&index, name).ok_or_else(|| {
            format!(
                "{}: no {name} (not a page trunk built?)",
                index_path.display()
            )
        })
    };
    let glue_js = String::from_utf8(file(&attribute("data-js")?)?)
        .map_err(|_| format!("{}: the JS glue is not UTF-8", dist.display()))?;
    let wasm = file(&attribute("data-wasm")?)?;
    let mut css = String::new();
    for href in stylesheets(&index) {
        css.push_str(&String::from_utf8_lossy(&file(href)?));
        css.push('\n');
    }
    Ok(PageFiles { glue_js, wasm, css })
}

/// The value of the first `name="…"` in `html`.
fn attribute_value(html: &str, name: &str) -> Option<String> {
    let start = html.find(&format!("{name}=\""))? + name.len() + 2;
    let len = html[start..].find('"')?;
    Some(html[start..start + len].to_string())
}

/// The `href`s of `<link rel="stylesheet" href="…">`, in order.
fn stylesheets(html: &str) -> Vec<&str> {
    html.match_indices("rel=\"stylesheet\" href=\"")
        .filter_map(|(at, m)| {
            let start = at + m.len();
            html[start..].find('"').map(|len| &html[start..start + len])
        })
        .collect()
}

/// JSON safe inside `<script>`: `<` appears in JSON only inside strings,
/// where `\u003c` means the same, so no `</script>` or `<!--` can end or
/// bend the element.
fn script_safe_json(report: &Report) -> Result<String, String> {
    let mut json = serde_json::to_string(report).map_err(|e| e.to_string())?;
    if json.len() > MAX_REPORT_JSON_BYTES {
        let mut lighter = report.clone();
        for module in &mut lighter.modules {
            module.buffers.clear();
            module.instructions.clear();
        }
        json = serde_json::to_string(&lighter).map_err(|e| e.to_string())?;
    }
    Ok(json.replace('<', "\\u003c"))
}

/// The module script that starts the page in the iframe: it shows the
/// iframe (sized to its content) and hides the static fragment beside it,
/// or leaves the static fragment when anything fails.
const START: &str = r#"
const frame = window.frameElement;
const fallback = frame && frame.previousElementSibling;
// As tall as the report, up to about a screen: a notebook scrolls past
// its outputs, and the report scrolls inside its frame.
function fit() { if (frame) frame.style.height = Math.min(document.documentElement.scrollHeight + 2, 960) + "px"; }
try {
  if (frame) { frame.style.display = "block"; }
  const packed = Uint8Array.from(atob(document.getElementById("oomscope-wasm").textContent), (c) => c.charCodeAt(0));
  const wasm = await new Response(new Blob([packed]).stream().pipeThrough(new DecompressionStream("deflate"))).arrayBuffer();
  await __wbg_init({ module_or_path: wasm });
  if (fallback) fallback.style.display = "none";
  document.getElementById("boot-status")?.remove();
  new ResizeObserver(fit).observe(document.body);
  fit();
} catch (error) {
  if (frame) frame.style.display = "none";
  console.error("oomscope: the embedded page could not start:", error);
}
"#;

/// The static fragment followed by the page embedded on `report`.
pub fn with_page(
    static_html: &str,
    report: &Report,
    link: Option<&str>,
    dist: &Path,
) -> Result<String, String> {
    let page = read_page(dist)?;
    let mut packed = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    packed
        .write_all(&page.wasm)
        .and_then(|()| packed.try_finish())
        .map_err(|e| e.to_string())?;
    let wasm_b64 = base64::engine::general_purpose::STANDARD.encode(packed.get_ref());
    let json = script_safe_json(report)?;
    let link_attr = link
        .map(|l| format!(" {LINK_ATTRIBUTE}=\"{}\"", esc(l)))
        .unwrap_or_default();
    // The glue is an ES module with no imports: inlined, its `__wbg_init`
    // is in the start script's scope (its `export`s are inert there).
    let document = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><style>{css}</style></head><body>\
<p id=\"boot-status\" class=\"boot-status\">Loading oomscope…</p>\
<script type=\"application/json\" id=\"{REPORT_ELEMENT}\"{link_attr}>{json}</script>\
<script type=\"text/plain\" id=\"oomscope-wasm\">{wasm_b64}</script>\
<script type=\"module\">{glue}\n{START}</script></body></html>",
        css = page.css.replace("</", "<\\/"),
        glue = page.glue_js,
    );
    Ok(format!(
        "<div class=\"oomscope-embed\"><div class=\"oomscope-static\">{static_html}</div>\
<iframe class=\"oomscope-page\" title=\"oomscope report\" style=\"display:none;width:100%;min-height:480px;border:0\" srcdoc=\"{}\"></iframe></div>",
        esc(&document)
    ))
}

/// `--html`'s output: the static fragment, with the page embedded when it
/// is installed. A page that cannot be read is said on stderr and the
/// static fragment is printed alone.
pub fn fragment(report: &Report, link: Option<&str>) -> String {
    let static_html = super::html::page(report, link);
    let Some(dist) = super::serve::installed_page(None) else {
        return static_html;
    };
    match with_page(&static_html, report, link, &dist) {
        Ok(html) => html,
        Err(e) => {
            eprintln!("oomscope: the interactive page is not embedded: {e}");
            static_html
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_cannot_close_its_script_element() {
        let mut report = Report::default();
        report.errors.push(oomscope_report::InputError {
            input: "</script><script>alert(1)</script>".into(),
            message: "<!-- x".into(),
        });
        let json = script_safe_json(&report).unwrap();
        assert!(!json.contains('<'), "{json}");
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(back.errors[0].input, "</script><script>alert(1)</script>");
    }

    #[test]
    fn page_files_are_found_from_trunks_index() {
        let index = r#"<link rel="stylesheet" href="/style-1.css" integrity="x"/>
<link rel="stylesheet" href="/views-2.css"/><script src="/boot.js" data-js="/oomscope-app-3.js" data-wasm="/oomscope-app-3_bg.wasm" defer></script>"#;
        assert_eq!(stylesheets(index), vec!["/style-1.css", "/views-2.css"]);
        assert_eq!(
            attribute_value(index, "data-js").as_deref(),
            Some("/oomscope-app-3.js")
        );
        assert_eq!(
            attribute_value(index, "data-wasm").as_deref(),
            Some("/oomscope-app-3_bg.wasm")
        );
    }
}
