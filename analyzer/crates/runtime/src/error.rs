//! Errors of the run-time profile readers. Every message names the input,
//! and the byte offset where the problem was found when there is one.

use std::fmt;

/// What went wrong, for callers that branch on it (tests, the facade).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeErrorKind {
    /// A gzip stream that is truncated or corrupt.
    Gzip,
    /// Bytes that are not a pprof `Profile` protobuf.
    Protobuf,
    /// A well-formed pprof that breaks the format's rules (dangling ids,
    /// string indices out of range, negative sizes, missing sample types).
    InvalidProfile,
    /// JSON that is malformed or not of the expected shape.
    Json,
    /// More data than a reader accepts (decompressed size, output entries).
    TooLarge,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeError {
    pub input: String,
    pub kind: RuntimeErrorKind,
    pub message: String,
    /// Offset in the (decompressed) input where the problem was found.
    pub offset: Option<u64>,
}

impl RuntimeError {
    pub(crate) fn new(input: &str, kind: RuntimeErrorKind, message: impl Into<String>) -> Self {
        RuntimeError {
            input: input.to_string(),
            kind,
            message: message.into(),
            offset: None,
        }
    }

    pub(crate) fn at(
        input: &str,
        kind: RuntimeErrorKind,
        offset: usize,
        message: impl Into<String>,
    ) -> Self {
        RuntimeError {
            input: input.to_string(),
            kind,
            message: message.into(),
            offset: Some(offset as u64),
        }
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.input, self.message)?;
        if let Some(offset) = self.offset {
            write!(f, " (at byte {offset})")?;
        }
        Ok(())
    }
}

impl std::error::Error for RuntimeError {}
