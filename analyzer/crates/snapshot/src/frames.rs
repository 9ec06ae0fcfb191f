//! Frames as people read them: which frame names an allocation, and whether
//! a frame is the user's code, a framework's, or native.

use oomscope_report::stacks::{Frame as ReportFrame, FrameKind};

use crate::model::{Frame, Snapshot};
use crate::value::StackId;

/// Python source (`.py`); everything else in a snapshot stack is C/C++.
pub fn is_python(snap: &Snapshot, f: &Frame) -> bool {
    snap.strings.get(f.filename).ends_with(".py")
}

/// Python code of a framework or the standard library rather than the user's.
fn is_framework_path(path: &str) -> bool {
    const MARKERS: [&str; 6] = [
        "site-packages/",
        "dist-packages/",
        "/torch/",
        "<frozen ",
        "/lib/python3",
        "/lib64/python3",
    ];
    MARKERS.iter().any(|m| path.contains(m))
}

pub fn kind(snap: &Snapshot, f: &Frame) -> FrameKind {
    let path = snap.strings.get(f.filename);
    if !path.ends_with(".py") {
        FrameKind::Native
    } else if is_framework_path(path) {
        FrameKind::Framework
    } else {
        FrameKind::Python
    }
}

fn frames<'a>(snap: &'a Snapshot, stack: StackId) -> impl Iterator<Item = &'a Frame> + 'a {
    snap.stacks
        .get(stack)
        .iter()
        .filter_map(|&f| snap.frames.get(f as usize))
}

/// The innermost Python frame (MemoryViz's choice for naming an allocation).
pub fn first_python(snap: &Snapshot, stack: StackId) -> Option<&Frame> {
    frames(snap, stack).find(|f| is_python(snap, f))
}

/// The innermost frame of the user's own code, else the innermost Python
/// frame, else (allocations of the autograd engine's thread have no Python
/// frames) the innermost autograd node, e.g. `MmBackward0::apply`.
pub fn first_user(snap: &Snapshot, stack: StackId) -> Option<&Frame> {
    frames(snap, stack)
        .find(|f| kind(snap, f) == FrameKind::Python)
        .or_else(|| first_python(snap, stack))
        .or_else(|| frames(snap, stack).find(|f| snap.strings.get(f.name).contains("Backward")))
}

/// `function file:line`.
pub fn label(snap: &Snapshot, f: &Frame) -> String {
    format!(
        "{} {}:{}",
        snap.strings.get(f.name),
        snap.strings.get(f.filename),
        f.line
    )
}

/// The stack for the stack view: Python frames (innermost first) when there
/// are any, else the native frames; at most `max` frames.
pub fn report_stack(snap: &Snapshot, stack: StackId, max: usize) -> Vec<ReportFrame> {
    let python: Vec<&Frame> = frames(snap, stack).filter(|f| is_python(snap, f)).collect();
    let chosen: Vec<&Frame> = if python.is_empty() {
        frames(snap, stack).collect()
    } else {
        python
    };
    chosen
        .into_iter()
        .take(max)
        .map(|f| ReportFrame {
            function: snap.strings.get(f.name).to_string(),
            file: snap.strings.get(f.filename).to_string(),
            line: f.line,
            kind: kind(snap, f),
        })
        .collect()
}

/// Whether the autograd engine is on the stack (the allocation happened in backward).
pub fn in_backward(snap: &Snapshot, stack: StackId) -> bool {
    frames(snap, stack).any(|f| {
        let name = snap.strings.get(f.name);
        let file = snap.strings.get(f.filename);
        name.contains("autograd::Engine")
            || name == "_engine_run_backward"
            || (name == "backward" && file.ends_with("autograd/__init__.py"))
    })
}
