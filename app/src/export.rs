//! Saving what the page shows: CSV writing, PNG export of a canvas, and
//! downloads through object URLs (nothing leaves the page). The drawings
//! themselves come from [`crate::draw`].

use wasm_bindgen::{JsCast, JsValue};

/// One CSV field, quoted when needed (RFC 4180). A text starting with `=`,
/// `+`, `-` or `@` (or a tab or carriage return) would be run as a formula
/// by a spreadsheet, and a link's strings come from whoever made the link:
/// such a cell gets a leading `'`, which spreadsheets show as text. Numbers
/// (`-12`, `-1.5e3`) stay numbers.
pub fn csv_field(value: &str) -> String {
    let formula =
        value.starts_with(['=', '+', '-', '@', '\t', '\r']) && value.parse::<f64>().is_err();
    let value = if formula {
        format!("'{value}")
    } else {
        value.to_string()
    };
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value
    }
}

/// A CSV document from a header and rows.
pub fn csv(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut out = header
        .iter()
        .map(|h| csv_field(h))
        .collect::<Vec<_>>()
        .join(",");
    out.push_str("\r\n");
    for row in rows {
        out.push_str(
            &row.iter()
                .map(|f| csv_field(f))
                .collect::<Vec<_>>()
                .join(","),
        );
        out.push_str("\r\n");
    }
    out
}

/// Offers `content` as a file download named `file_name`.
pub fn download_text(file_name: &str, mime: &str, content: &str) -> Result<(), String> {
    let blob = gloo_file::Blob::new_with_options(content, Some(mime));
    let url = gloo_file::ObjectUrl::from(blob);
    click_link(file_name, &url)?;
    // The browser fetches the URL after `click()` returns: revoking it at
    // once (dropping it) can cancel the download. It is revoked a minute
    // later instead.
    gloo_timers::callback::Timeout::new(URL_LIFETIME_MS, move || drop(url)).forget();
    Ok(())
}

/// How long a download's object URL lives.
const URL_LIFETIME_MS: u32 = 60_000;

/// Offers a canvas's current pixels as a PNG download.
pub fn download_canvas_png(
    file_name: &str,
    canvas: &web_sys::HtmlCanvasElement,
) -> Result<(), String> {
    let url = canvas.to_data_url_with_type("image/png").map_err(js_text)?;
    click_link(file_name, &url)
}

fn click_link(file_name: &str, href: &str) -> Result<(), String> {
    let document = gloo_utils::document();
    let link: web_sys::HtmlAnchorElement = document
        .create_element("a")
        .map_err(js_text)?
        .dyn_into()
        .map_err(|_| "not a link".to_string())?;
    link.set_href(href);
    link.set_download(file_name);
    link.click();
    Ok(())
}

fn js_text(value: JsValue) -> String {
    value
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| value.as_string())
        .unwrap_or_else(|| format!("{value:?}"))
}

/// A file name made of safe characters only.
pub fn file_stem(name: &str) -> String {
    let stem: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.is_empty() {
        "oomscope".to_string()
    } else {
        stem
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_only_what_needs_it() {
        let text = csv(
            &["name", "op"],
            vec![
                vec!["a,b".to_string(), "say \"hi\"".to_string()],
                vec!["x".into(), "y".into()],
            ],
        );
        assert_eq!(text, "name,op\r\n\"a,b\",\"say \"\"hi\"\"\"\r\nx,y\r\n");
    }

    #[test]
    fn csv_cells_that_a_spreadsheet_would_run_are_text() {
        assert_eq!(csv_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field("+1+2"), "'+1+2");
        assert_eq!(csv_field("-cmd"), "'-cmd");
        assert_eq!(csv_field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_field("\tx"), "'\tx");
        // Numbers stay numbers; other text is untouched.
        assert_eq!(csv_field("-12"), "-12");
        assert_eq!(csv_field("-1.5e3"), "-1.5e3");
        assert_eq!(csv_field("fusion.1"), "fusion.1");
    }

    #[test]
    fn file_stems_are_safe() {
        assert_eq!(file_stem("jit_train step(3)"), "jit_train_step_3_");
    }
}
