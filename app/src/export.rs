//! Saving what the page shows: CSV writing, PNG export of a canvas, and
//! downloads through object URLs (nothing leaves the page). The drawings
//! themselves come from [`crate::draw`].

use wasm_bindgen::{JsCast, JsValue};

/// One CSV field, quoted when needed (RFC 4180).
pub fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_string()
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
    let parts = js_sys::Array::of1(&JsValue::from_str(content));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let blob =
        web_sys::Blob::new_with_str_sequence_and_options(&parts, &options).map_err(js_text)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(js_text)?;
    let result = click_link(file_name, &url);
    // The click has started the download; the URL is no longer needed.
    let _ = web_sys::Url::revoke_object_url(&url);
    result
}

/// Offers a canvas's current pixels as a PNG download.
pub fn download_canvas_png(
    file_name: &str,
    canvas: &web_sys::HtmlCanvasElement,
) -> Result<(), String> {
    let url = canvas.to_data_url_with_type("image/png").map_err(js_text)?;
    click_link(file_name, &url)
}

fn click_link(file_name: &str, href: &str) -> Result<(), String> {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("no document")?;
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
    fn file_stems_are_safe() {
        assert_eq!(file_stem("jit_train step(3)"), "jit_train_step_3_");
    }
}
