//! `oomscope analyze --html`: the report as one self-contained HTML
//! fragment (inline CSS and SVG, no script, nothing fetched), for notebooks
//! (`oomscope.show()`). It is what shows where scripts do not run (an
//! untrusted notebook, a viewer that strips them); where they run, the page
//! embedded beside it (`embed.rs`) replaces it. It shows what the
//! page puts first: the headline, the verdict's numbers, the decision path,
//! each module's peak and largest buffers, and memory over steps and over
//! profiles as charts; the link opens the whole report on the page.

use oomscope_report::units::format_bytes;
use oomscope_report::{Report, Severity};
use std::fmt::Write;

const CHART_W: f64 = 560.0;
const CHART_H: f64 = 160.0;

/// `&`, `<`, `>`, `"` and `'` escaped: report text comes from the user's files.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "<style>
.oomscope{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;color:#1d2330;background:#fff;padding:12px 16px;border:1px solid #d5dae3;border-radius:8px;max-width:900px}
.oomscope h3{font-size:15px;margin:14px 0 6px}
.oomscope .headline{font-size:16px;font-weight:600;padding:10px 12px;border-radius:6px;border-left:5px solid #5b6b84;background:#f1f4f8}
.oomscope .failure{border-left-color:#c62828;background:#fdecea}
.oomscope .warning{border-left-color:#b26a00;background:#fff4e0}
.oomscope .info{border-left-color:#2e7d32;background:#edf7ee}
.oomscope table{border-collapse:collapse;font-size:13px}
.oomscope td,.oomscope th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}
.oomscope .num{text-align:right;font-variant-numeric:tabular-nums}
.oomscope .bar{height:10px;background:#4f74b3;border-radius:2px}
.oomscope .muted{color:#5b6b84;font-size:12px}
.oomscope code{font-size:12px}
</style>";

/// The report as HTML; `link`, when given, opens it on the page.
pub fn page(r: &Report, link: Option<&str>) -> String {
    let mut s = String::new();
    s.push_str(STYLE);
    s.push_str("<div class=\"oomscope\">");
    match &r.diagnosis.headline {
        Some(h) => {
            let class = match h.severity {
                Severity::Failure => "failure",
                Severity::Warning => "warning",
                Severity::Info => "info",
            };
            let estimate = h
                .estimate_bytes
                .map(|b| {
                    format!(
                        " <span class=\"muted\">(estimate {})</span>",
                        format_bytes(b)
                    )
                })
                .unwrap_or_default();
            let _ = write!(
                s,
                "<div class=\"headline {class}\">{}{estimate}</div>",
                esc(&h.text)
            );
        }
        None => {
            s.push_str("<div class=\"headline\">Nothing to say about memory in these inputs.</div>")
        }
    }
    let path: Vec<String> = r
        .diagnosis
        .path
        .iter()
        .filter_map(|id| r.diagnosis.nodes.iter().find(|n| &n.id == id))
        .filter(|n| !n.title.is_empty())
        .map(|n| esc(&n.title))
        .collect();
    if !path.is_empty() {
        let _ = write!(s, "<p class=\"muted\">Diagnosis: {}</p>", path.join(" → "));
    }
    oom_events(&mut s, r);
    modules(&mut s, r);
    for st in &r.step_series {
        let points: Vec<(f64, f64)> = st
            .points
            .iter()
            .map(|p| (p.step as f64, p.bytes as f64))
            .collect();
        let title = format!("Memory per step: {} {} {}", st.source, st.device, st.metric);
        let trend = st
            .slope_bytes_per_step
            .map(|x| format!("trend {}/step", format_bytes(x.max(0.0) as u64)))
            .unwrap_or_default();
        chart(&mut s, &title, "step", &points, st.limit_bytes, &trend);
    }
    for series in &r.device_memory_series {
        let points: Vec<(f64, f64)> = series
            .buffer_bytes
            .iter()
            .enumerate()
            .map(|(i, b)| (i as f64, *b as f64))
            .collect();
        chart(
            &mut s,
            "Device memory over profiles",
            "profile",
            &points,
            None,
            "",
        );
        if !series.growing_stacks.is_empty() {
            s.push_str("<table><tr><th>growing line</th><th class=\"num\">growth</th></tr>");
            for g in series.growing_stacks.iter().take(5) {
                let where_ = if g.frame.file.is_empty() {
                    esc(&g.frame.function)
                } else {
                    format!(
                        "{} <code>{}:{}</code>",
                        esc(&g.frame.function),
                        esc(&g.frame.file),
                        g.frame.line
                    )
                };
                let _ = write!(
                    s,
                    "<tr><td>{where_}</td><td class=\"num\">{}</td></tr>",
                    format_bytes(g.growth_bytes)
                );
            }
            s.push_str("</table>");
        }
    }
    if !r.errors.is_empty() {
        let _ = write!(s, "<h3>Could not read ({})</h3><ul>", r.errors.len());
        for e in r.errors.iter().take(20) {
            let _ = write!(s, "<li class=\"muted\">{}</li>", esc(&e.message));
        }
        s.push_str("</ul>");
    }
    let _ = write!(s, "<p class=\"muted\">{} input(s)", r.inputs.len());
    if let Some(link) = link {
        let _ = write!(
            s,
            " · <a href=\"{}\" target=\"_blank\" rel=\"noopener noreferrer\">the whole report on the page</a> (run <code>oomscope serve</code> first)",
            esc(link)
        );
    }
    s.push_str("</p></div>");
    s
}

fn oom_events(s: &mut String, r: &Report) {
    let events: Vec<_> = r
        .oom_events
        .iter()
        .filter(|e| e.used_bytes.is_some() || e.limit_bytes.is_some())
        .collect();
    if events.is_empty() {
        return;
    }
    s.push_str("<h3>Out of memory</h3><table><tr><th>where</th><th class=\"num\">used</th><th class=\"num\">limit</th><th class=\"num\">over by</th></tr>");
    for e in events.iter().take(10) {
        let b = |x: Option<u64>| x.map(format_bytes).unwrap_or_else(|| "?".into());
        let _ = write!(
            s,
            "<tr><td>{} ({})</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&e.input),
            esc(&e.memory_space.to_string()),
            b(e.used_bytes),
            b(e.limit_bytes),
            b(e.excess())
        );
    }
    s.push_str("</table>");
}

fn modules(s: &mut String, r: &Report) {
    let mut used: Vec<_> = r.modules.iter().filter(|m| m.peak_bytes > 0).collect();
    if used.is_empty() {
        return;
    }
    used.sort_by_key(|m| std::cmp::Reverse(m.peak_bytes));
    let _ = write!(s, "<h3>Modules ({}), largest peak first</h3>", used.len());
    for m in used.iter().take(3) {
        let _ = write!(
            s,
            "<p><b>{}</b>: peak {} <span class=\"muted\">({})</span></p>",
            esc(&m.display_name()),
            format_bytes(m.peak_bytes),
            esc(m.peak_kind.words())
        );
        let buffers = super::summary::largest_peak_buffers(m);
        if buffers.is_empty() {
            continue;
        }
        s.push_str("<table>");
        for b in buffers {
            let width = (b.size_bytes as f64 / m.peak_bytes as f64 * 200.0).clamp(1.0, 200.0);
            let _ = write!(
                s,
                "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td><div class=\"bar\" style=\"width:{width:.0}px\"></div></td></tr>",
                esc(&b.name),
                format_bytes(b.size_bytes)
            );
        }
        s.push_str("</table>");
    }
}

/// A line chart of (x, bytes) as inline SVG, with the limit as a red line.
fn chart(
    s: &mut String,
    title: &str,
    x_name: &str,
    points: &[(f64, f64)],
    limit: Option<u64>,
    note: &str,
) {
    if points.len() < 2 {
        return;
    }
    let (x0, x1) = points
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let top = points
        .iter()
        .map(|p| p.1)
        .fold(0.0, f64::max)
        .max(limit.map_or(0.0, |l| l as f64));
    let top = if top <= 0.0 { 1.0 } else { top * 1.05 };
    let span = if x1 > x0 { x1 - x0 } else { 1.0 };
    let (left, bottom) = (70.0, 20.0);
    let x = |v: f64| left + (v - x0) / span * (CHART_W - left - 10.0);
    let y = |v: f64| (CHART_H - bottom) - v / top * (CHART_H - bottom - 10.0);
    let _ = write!(s, "<h3>{}</h3>", esc(title));
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{CHART_W}\" height=\"{CHART_H}\" role=\"img\" aria-label=\"{}\">",
        esc(title)
    );
    let _ = write!(
        s,
        "<line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#98a2b3\"/><text x=\"4\" y=\"{}\" font-size=\"11\" fill=\"#5b6b84\">{}</text><text x=\"4\" y=\"{}\" font-size=\"11\" fill=\"#5b6b84\">0</text><text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#5b6b84\" text-anchor=\"end\">{} {}</text>",
        CHART_H - bottom,
        CHART_W - 10.0,
        CHART_H - bottom,
        y(top / 1.05) + 4.0,
        format_bytes((top / 1.05) as u64),
        CHART_H - bottom,
        CHART_W - 10.0,
        CHART_H - 4.0,
        x_name,
        x1
    );
    if let Some(l) = limit {
        let _ = write!(
            s,
            "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#c62828\" stroke-dasharray=\"4 3\"/>",
            y(l as f64),
            CHART_W - 10.0
        );
    }
    let line: Vec<String> = points
        .iter()
        .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1)))
        .collect();
    let _ = write!(
        s,
        "<polyline fill=\"none\" stroke=\"#4f74b3\" stroke-width=\"2\" points=\"{}\"/></svg>",
        line.join(" ")
    );
    if !note.is_empty() {
        let _ = write!(s, "<p class=\"muted\">{}</p>", esc(note));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_files_is_escaped() {
        let mut r = Report::new();
        r.errors.push(oomscope_report::InputError {
            input: "x".into(),
            message: "<script>alert(1)</script> & \"q\"".into(),
        });
        let html = page(&r, Some("http://127.0.0.1:8080/#r=a\"b"));
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;"));
        assert!(html.contains("#r=a&quot;b"));
    }
}
