//! The one error type of this crate: which input, what kind of problem, and a
//! sentence a user can act on.

use std::fmt;

/// What went wrong, for callers that react differently (tests, the facade).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XlaErrorKind {
    /// The data ends inside a field or message.
    Truncated,
    /// The bytes are not the protobuf message expected (random data, a bad
    /// length, a wrong message type).
    Malformed,
    /// An XSpace without any HloProto (no `/host:metadata` plane or no `Hlo Proto` stat).
    NoHlo,
    /// An HloProto without the buffer assignment the Memory Viewer needs.
    NoBufferAssignment,
    /// The heap-simulator trace cannot be replayed (XProf rejects it too).
    BadTrace,
    /// Reading the source failed.
    Io,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XlaError {
    /// The input file the problem is in.
    pub input: String,
    pub kind: XlaErrorKind,
    pub message: String,
}

impl XlaError {
    pub(crate) fn new(input: &str, kind: XlaErrorKind, message: impl Into<String>) -> Self {
        XlaError {
            input: input.to_string(),
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for XlaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.input, self.message)
    }
}

impl std::error::Error for XlaError {}
