//! Saving and sharing a comparison: the JSON of `oomscope compare --json`
//! (both reports and the comparison; a comparison opened from a link has
//! only `comparison`, as the link carries no report), the buffer changes as
//! CSV (cells neutralised by [`export::csv`]), and a `#c=` link.

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::compare::Comparison;

use crate::export;
use crate::navigate::base_url;
use crate::state::{use_state, ShownComparison};
use crate::widgets::copy_link::CopyLinkButton;
use crate::worker_client::{self, LinkCallback};

use super::buffers::json_name;

const CSV_HEADER: [&str; 14] = [
    "module",
    "memory_space",
    "kind",
    "matched_by",
    "name_a",
    "name_b",
    "shape_a",
    "shape_b",
    "bytes_a",
    "bytes_b",
    "difference_bytes",
    "op_name",
    "source",
    "category",
];

/// Every listed buffer change of every module, in the modules' order.
pub fn buffers_csv(c: &Comparison) -> String {
    let rows = c.modules.iter().flat_map(|m| {
        m.buffers.iter().map(move |b| {
            vec![
                m.name.clone(),
                m.memory_space.to_string(),
                b.kind.as_str().to_string(),
                json_name(&b.matched_by),
                b.name_a.clone(),
                b.name_b.clone(),
                b.shape_a.clone(),
                b.shape_b.clone(),
                b.bytes_a.to_string(),
                b.bytes_b.to_string(),
                b.difference_bytes.to_string(),
                b.op_name.clone(),
                b.source.clone(),
                json_name(&b.category),
            ]
        })
    });
    export::csv(&CSV_HEADER, rows)
}

/// What a link carries, in the shape of `oomscope compare --json` without
/// the two reports.
#[derive(serde::Serialize)]
struct SharedExport<'a> {
    comparison: &'a Comparison,
}

/// The JSON of `oomscope compare --json` for what is on screen (compact:
/// the page links one JSON writer, not a second, pretty one).
fn comparison_json(shown: &ShownComparison) -> Result<String, String> {
    match shown {
        ShownComparison::Analysed(runs) => serde_json::to_string(runs),
        ShownComparison::Shared(comparison) => serde_json::to_string(&SharedExport { comparison }),
    }
    .map_err(|e| format!("the comparison could not be written: {e}"))
}

#[component]
pub fn ComparisonExports(shown: Arc<ShownComparison>) -> impl IntoView {
    let state = use_state();
    let error: RwSignal<Option<String>> = RwSignal::new(None);
    let c = shown.comparison();
    let stem = export::file_stem(&format!("{}-vs-{}", c.a.label, c.b.label));
    let shown = StoredValue::new(shown);
    let json_stem = stem.clone();
    let save_json = move |_| {
        let result = comparison_json(&shown.get_value()).and_then(|text| {
            export::download_text(
                &format!("{json_stem}.comparison.json"),
                "application/json",
                &text,
            )
        });
        error.set(result.err());
    };
    let save_csv = move |_| {
        let text = buffers_csv(shown.get_value().comparison());
        error.set(
            export::download_text(&format!("{stem}.buffer-changes.csv"), "text/csv", &text).err(),
        );
    };
    let make = move |done: LinkCallback| {
        let Some(shown) = state.comparison.get_untracked() else {
            return done(Err("no comparison on screen".to_string()));
        };
        worker_client::make_comparison_link(state, shown.comparison(), base_url(), done);
    };
    view! {
        <div class="compare-exports">
            <button type="button" id="compare-json" class="button small secondary" on:click=save_json>"JSON"</button>
            <button type="button" id="compare-csv" class="button small secondary" on:click=save_csv>"Buffer changes (CSV)"</button>
            <CopyLinkButton make=make what="this comparison"/>
            {move || error.get().map(|e| view! { <span class="share-error" role="alert">{e}</span> })}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomscope_report::compare::{BufferChange, BufferMatch, ChangeKind, ModuleComparison};

    #[test]
    fn buffer_changes_are_one_row_each_with_formula_cells_neutralised() {
        let mut c = Comparison::default();
        c.modules.push(ModuleComparison {
            name: "jit_step".into(),
            buffers: vec![
                BufferChange {
                    kind: ChangeKind::Dtype,
                    matched_by: BufferMatch::Metadata,
                    name_a: "fusion.1".into(),
                    name_b: "fusion.2".into(),
                    difference_bytes: -1024,
                    ..BufferChange::default()
                },
                BufferChange {
                    kind: ChangeKind::Appeared,
                    name_b: "=HYPERLINK(\"x\")".into(),
                    difference_bytes: 64,
                    ..BufferChange::default()
                },
            ],
            ..ModuleComparison::default()
        });
        let text = buffers_csv(&c);
        let lines: Vec<&str> = text.split("\r\n").filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("module,memory_space,kind,matched_by,name_a,name_b"));
        assert!(
            lines[1].starts_with("jit_step,0,dtype,metadata,fusion.1,fusion.2,"),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].contains(",-1024,"),
            "numbers stay numbers: {}",
            lines[1]
        );
        assert!(
            lines[2].contains("\"'=HYPERLINK(\"\"x\"\")\""),
            "{}",
            lines[2]
        );
    }
}
