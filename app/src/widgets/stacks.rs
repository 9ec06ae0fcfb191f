//! The one stack view (issues 16 and 17): live bytes by call stack as an
//! icicle, root at the top, widths in proportion to bytes. Used for PyTorch
//! snapshots (`stacks_at_peak`) and JAX device memory profiles
//! (`top_stacks`).
//!
//! Runs of framework and native frames are folded into one
//! "… N framework frames" box until the user unfolds them, so the user's own
//! Python lines are what one sees first. Hover names a box; a click lists the
//! stacks (allocations) beneath it. Stacks are at most a few hundred, so SVG.

use std::collections::HashMap;

use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use oomscope_report::{Frame, FrameKind, StackSample};

use crate::format::{base_name, group_digits, Bytes};

const WIDTH: f64 = 1000.0;
const ROW: f64 = 18.0;
/// Boxes narrower than this (viewBox units) are not drawn.
const MIN_WIDTH: f64 = 0.5;
/// Stacks listed under a clicked box.
const LISTED: usize = 50;

/// What a box stands for.
#[derive(Debug, Clone, PartialEq)]
enum BoxKind {
    Root,
    Frame(FrameKind),
    /// This many framework / native frames folded together.
    Folded(usize),
}

/// One box of the icicle: a frame (or folded run) shared by the stacks in `samples`.
#[derive(Debug, Clone, PartialEq)]
struct Node {
    label: String,
    /// `file:line`, or the folded frames one per line.
    detail: String,
    kind: BoxKind,
    bytes: u64,
    count: u64,
    depth: usize,
    children: Vec<usize>,
    /// Indices into the input stacks passing through this box.
    samples: Vec<usize>,
}

/// `function (file.py:42)`.
pub fn frame_label(f: &Frame) -> String {
    let file = base_name(&f.file);
    match (file.is_empty(), f.line) {
        (true, _) => f.function.clone(),
        (false, 0) => format!("{} ({file})", f.function),
        (false, line) => format!("{} ({file}:{line})", f.function),
    }
}

fn frame_at(f: &Frame) -> String {
    if f.line > 0 {
        format!("{}:{}", f.file, f.line)
    } else {
        f.file.clone()
    }
}

/// Outermost first, with framework / native runs made one segment when folding.
fn segments(frames: &[Frame], fold: bool) -> Vec<&[Frame]> {
    // `frames` is innermost first; walk it from the root.
    let mut out: Vec<&[Frame]> = Vec::new();
    let mut end = frames.len();
    while end > 0 {
        let mut start = end - 1;
        if fold && frames[start].kind != FrameKind::Python {
            while start > 0 && frames[start - 1].kind != FrameKind::Python {
                start -= 1;
            }
        }
        out.push(&frames[start..end]);
        end = start;
    }
    out
}

/// The icicle's boxes; `nodes[0]` is the root holding every stack.
fn build_tree(stacks: &[StackSample], fold: bool) -> Vec<Node> {
    let mut nodes = vec![Node {
        label: "all".into(),
        detail: String::new(),
        kind: BoxKind::Root,
        bytes: 0,
        count: 0,
        depth: 0,
        children: Vec::new(),
        samples: Vec::new(),
    }];
    let mut child_of: HashMap<(usize, Vec<&Frame>), usize> = HashMap::new();
    for (i, sample) in stacks.iter().enumerate() {
        let mut at = 0;
        nodes[0].bytes += sample.bytes;
        nodes[0].count += sample.count;
        nodes[0].samples.push(i);
        for segment in segments(&sample.frames, fold) {
            let key = (at, segment.iter().collect::<Vec<_>>());
            let next = match child_of.get(&key) {
                Some(&n) => n,
                None => {
                    let folded =
                        segment.len() > 1 || (fold && segment[0].kind != FrameKind::Python);
                    let node = if folded {
                        Node {
                            label: format!(
                                "… {} framework frame{}",
                                segment.len(),
                                if segment.len() == 1 { "" } else { "s" }
                            ),
                            // Outermost last, as a traceback reads.
                            detail: segment
                                .iter()
                                .map(frame_label)
                                .collect::<Vec<_>>()
                                .join("\n"),
                            kind: BoxKind::Folded(segment.len()),
                            ..empty_node()
                        }
                    } else {
                        Node {
                            label: frame_label(&segment[0]),
                            detail: frame_at(&segment[0]),
                            kind: BoxKind::Frame(segment[0].kind),
                            ..empty_node()
                        }
                    };
                    nodes.push(Node {
                        depth: nodes[at].depth + 1,
                        ..node
                    });
                    let n = nodes.len() - 1;
                    nodes[at].children.push(n);
                    child_of.insert(key, n);
                    n
                }
            };
            nodes[next].bytes += sample.bytes;
            nodes[next].count += sample.count;
            nodes[next].samples.push(i);
            at = next;
        }
    }
    for n in 0..nodes.len() {
        let mut children = std::mem::take(&mut nodes[n].children);
        crate::sort::sort_by(&mut children, |&a, &b| nodes[b].bytes.cmp(&nodes[a].bytes));
        nodes[n].children = children;
    }
    nodes
}

fn empty_node() -> Node {
    Node {
        label: String::new(),
        detail: String::new(),
        kind: BoxKind::Root,
        bytes: 0,
        count: 0,
        depth: 0,
        children: Vec::new(),
        samples: Vec::new(),
    }
}

/// `(node, x, width)` of every box wide enough to draw, root first. Iterative,
/// so deep stacks cannot overflow the call stack.
fn layout(nodes: &[Node]) -> Vec<(usize, f64, f64)> {
    let total = nodes.first().map_or(0, |n| n.bytes).max(1) as f64;
    let mut out = Vec::new();
    let mut todo = vec![(0usize, 0.0f64)];
    while let Some((n, x)) = todo.pop() {
        let width = nodes[n].bytes as f64 / total * WIDTH;
        if width < MIN_WIDTH {
            continue;
        }
        out.push((n, x, width));
        let mut child_x = x;
        for &c in &nodes[n].children {
            todo.push((c, child_x));
            child_x += nodes[c].bytes as f64 / total * WIDTH;
        }
    }
    out
}

fn fill(kind: &BoxKind) -> &'static str {
    match kind {
        BoxKind::Root => "#8c959f",
        BoxKind::Frame(FrameKind::Python) => "#d4a72c",
        BoxKind::Frame(FrameKind::Framework) => "#54aeff",
        BoxKind::Frame(FrameKind::Native) => "#a475f9",
        BoxKind::Folded(_) => "#afb8c1",
    }
}

/// The icicle for `stacks` (each innermost frame first).
#[component]
pub fn StackView(stacks: Vec<StackSample>) -> impl IntoView {
    if stacks.is_empty() {
        return ().into_any();
    }
    let has_folds = stacks
        .iter()
        .flat_map(|s| &s.frames)
        .any(|f| f.kind != FrameKind::Python);
    let unfold = RwSignal::new(false);
    let selected = RwSignal::new(None::<usize>);
    let hovered = RwSignal::new(None::<usize>);
    let stacks = StoredValue::new(stacks);
    let tree = Memo::new(move |_| stacks.with_value(|s| build_tree(s, !unfold.get())));
    let describe = move |n: usize| {
        tree.with(|t| {
            let node = &t[n];
            let at = if node.detail.is_empty() || matches!(node.kind, BoxKind::Folded(_)) {
                String::new()
            } else {
                format!(" · {}", node.detail)
            };
            format!(
                "{}{at} · {} in {} allocations",
                node.label,
                format_bytes(node.bytes),
                group_digits(node.count)
            )
        })
    };

    let picture = move || {
        tree.with(|nodes| {
            let boxes = layout(nodes);
            let depth = boxes.iter().map(|&(n, _, _)| nodes[n].depth).max().unwrap_or(0) + 1;
            let height = depth as f64 * ROW;
            let drawn = boxes
                .into_iter()
                .map(|(n, x, w)| {
                    let node = &nodes[n];
                    let y = node.depth as f64 * ROW;
                    // About 7 viewBox units per character at this size.
                    let chars = ((w - 4.0) / 7.0).floor().max(0.0) as usize;
                    let text: String = if chars >= 4 { node.label.chars().take(chars).collect() } else { String::new() };
                    let tip = format!("{}\n{}\n{} in {} allocations", node.label, node.detail, format_bytes(node.bytes), group_digits(node.count));
                    view! {
                        <g
                            class="stack-box"
                            data-depth=node.depth.to_string()
                            data-bytes=node.bytes.to_string()
                            on:mouseenter=move |_| hovered.set(Some(n))
                            on:click=move |_| selected.set(Some(n))
                        >
                            <title>{tip}</title>
                            <rect x=format!("{x:.2}") y=format!("{y:.1}") width=format!("{:.2}", (w - 0.5).max(0.5)) height=(ROW - 1.0).to_string() fill=fill(&node.kind)></rect>
                            <text x=format!("{:.2}", x + 3.0) y=format!("{:.1}", y + ROW - 5.0) font-size="12" fill="#1f2328">{text}</text>
                        </g>
                    }
                })
                .collect_view();
            view! {
                <svg viewBox=format!("0 0 {WIDTH} {height}") role="img" aria-label="Live bytes by call stack, root at the top" class="stacks-svg" style:aspect-ratio=format!("{WIDTH} / {height}")>
                    {drawn}
                </svg>
            }
        })
    };

    let listing = move || {
        let n = selected.get()?;
        let (label, rows) = tree.with(|t| {
            let node = t.get(n)?;
            let mut rows: Vec<(u64, u64, String)> = stacks.with_value(|s| {
                node.samples
                    .iter()
                    .filter_map(|&i| s.get(i))
                    .map(|s| {
                        (
                            s.bytes,
                            s.count,
                            s.frames.first().map(frame_label).unwrap_or_default(),
                        )
                    })
                    .collect()
            });
            crate::sort::sort_by_key(&mut rows, |r| std::cmp::Reverse(r.0));
            Some((node.label.clone(), rows))
        })?;
        let more = rows.len().saturating_sub(LISTED);
        Some(view! {
            <table class="data" data-testid="stack-allocations">
                <caption>{format!("Allocations under {label}")}</caption>
                <thead><tr><th>"Allocated at (innermost frame)"</th><th class="num">"Count"</th><th class="num">"Bytes"</th></tr></thead>
                <tbody>
                    {rows.into_iter().take(LISTED).map(|(bytes, count, at)| view! {
                        <tr><td>{at}</td><td class="num">{group_digits(count)}</td><td class="num"><Bytes value=bytes/></td></tr>
                    }).collect_view()}
                </tbody>
                {(more > 0).then(|| view! { <tfoot><tr><td colspan="3">{format!("and {more} more stacks")}</td></tr></tfoot> })}
            </table>
        })
    };

    view! {
        <figure class="stack-view" data-testid="stack-view">
            <figcaption>
                <strong>"Where the bytes come from"</strong>
                " · call stacks, root at the top, widths by bytes; click a box to list its allocations. "
                {has_folds.then(|| view! {
                    <label>
                        <input type="checkbox" prop:checked=move || unfold.get() on:change=move |_| { selected.set(None); unfold.update(|u| *u = !*u) }/>
                        " Show framework frames"
                    </label>
                })}
            </figcaption>
            <p class="stack-readout" aria-live="polite">{move || hovered.get().map(describe).unwrap_or_else(|| "Hover a box for its frame and bytes.".into())}</p>
            {picture}
            {listing}
        </figure>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(function: &str, kind: FrameKind) -> Frame {
        Frame {
            function: function.into(),
            file: format!("{function}.py"),
            line: 1,
            kind,
        }
    }

    fn sample(frames: Vec<Frame>, bytes: u64) -> StackSample {
        StackSample {
            frames,
            bytes,
            count: 1,
        }
    }

    #[test]
    fn framework_runs_fold_into_one_box_and_unfold_on_request() {
        use FrameKind::*;
        // Innermost first: torch internals under the user's `forward`, under `main`.
        let a = sample(
            vec![
                frame("empty", Native),
                frame("linear", Framework),
                frame("forward", Python),
                frame("main", Python),
            ],
            30,
        );
        let b = sample(
            vec![
                frame("zeros", Native),
                frame("forward", Python),
                frame("main", Python),
            ],
            10,
        );
        let folded = build_tree(&[a.clone(), b.clone()], true);
        // root, main, forward, then two different folded runs.
        assert_eq!(folded.len(), 5);
        assert_eq!(folded[0].bytes, 40);
        let forward = folded
            .iter()
            .position(|n| n.label.starts_with("forward"))
            .unwrap();
        assert_eq!(folded[forward].bytes, 40);
        let kids: Vec<&Node> = folded[forward]
            .children
            .iter()
            .map(|&c| &folded[c])
            .collect();
        assert_eq!(kids[0].kind, BoxKind::Folded(2));
        assert_eq!(kids[0].bytes, 30, "largest first");
        assert_eq!(kids[1].label, "… 1 framework frame");

        let unfolded = build_tree(&[a, b], false);
        assert_eq!(unfolded.len(), 6);
        assert!(unfolded
            .iter()
            .all(|n| !matches!(n.kind, BoxKind::Folded(_))));
        // Widths add up: the children of a box never exceed it.
        let boxes = layout(&unfolded);
        assert_eq!(boxes[0], (0, 0.0, WIDTH));
        let forward_box = boxes
            .iter()
            .find(|b| unfolded[b.0].label.starts_with("forward"))
            .unwrap();
        assert_eq!(forward_box.2, WIDTH);
        let deepest = boxes.iter().map(|b| unfolded[b.0].depth).max().unwrap();
        assert_eq!(deepest, 4);
    }

    #[test]
    fn a_very_deep_stack_lays_out_without_recursion() {
        let frames: Vec<Frame> = (0..100_000)
            .map(|i| frame(&format!("f{i}"), FrameKind::Python))
            .collect();
        let tree = build_tree(&[sample(frames, 1)], true);
        assert_eq!(layout(&tree).len(), 100_001);
    }
}
