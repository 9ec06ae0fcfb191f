//! Live memory by call stack: the one shape that both the PyTorch snapshot
//! reader and the JAX device-memory-profile reader produce, so that one stack
//! view (icicle / flame graph) in the app draws both.

use serde::{Deserialize, Serialize};

/// Where a frame's code lives. The stack view shows user code first and folds
/// framework internals (PyTorch, JAX, CPython, C++) until asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    /// Python source of the user's own program.
    #[default]
    Python,
    /// Python source inside a framework (torch, jax, flax, ... site-packages).
    Framework,
    /// C / C++ / CUDA frames.
    Native,
}

/// One stack frame.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Frame {
    pub function: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// 1-based; 0 when unknown.
    #[serde(default)]
    pub line: u32,
    #[serde(default)]
    pub kind: FrameKind,
}

/// Bytes (and how many allocations) attributed to one call stack.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StackSample {
    /// Innermost first (the allocating frame is `frames[0]`).
    pub frames: Vec<Frame>,
    pub bytes: u64,
    pub count: u64,
}
