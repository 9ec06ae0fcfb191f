//! Errors that name the file, the problem and, for pickle decoding, the byte
//! offset of the opcode that failed.

use std::fmt;

/// What went wrong while reading a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// The input ended inside an opcode or before `STOP`.
    Truncated,
    /// Not a pickle at all (no `PROTO` header of protocol 2 to 5).
    NotAPickle,
    UnsupportedProtocol(u8),
    UnknownOpcode(u8),
    /// A well-formed opcode that builds something other than plain data
    /// (a class reference, a call, an object): refused, never executed.
    NotPlainData(&'static str),
    /// A length field claims more bytes than the input has left.
    LengthBeyondInput {
        claimed: u64,
        remaining: u64,
    },
    /// An opcode found the stack in a state a valid pickle never produces.
    Malformed(&'static str),
    MemoMissing(u64),
    /// Containers nested deeper than any snapshot (a recursion bomb).
    TooDeep(usize),
    /// Decoding would hold more than the budget for an input of this size.
    TooLarge {
        budget_bytes: u64,
    },
    /// Text of a protocol-0 opcode that does not parse.
    BadText(&'static str),
    /// The pickle decoded, but it is not a memory snapshot.
    NotASnapshot(String),
    /// A snapshot field has the wrong type or an impossible value.
    BadField(String),
    Io(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Truncated => write!(f, "the pickle is truncated (it ends before its STOP opcode)"),
            Problem::NotAPickle => write!(f, "not a Python pickle of protocol 2 to 5"),
            Problem::UnsupportedProtocol(p) => write!(f, "pickle protocol {p} is not supported (2 to 5 are)"),
            Problem::UnknownOpcode(op) => write!(f, "unknown pickle opcode 0x{op:02x}"),
            Problem::NotPlainData(op) => write!(
                f,
                "opcode {op} refers to Python code or classes; a memory snapshot is plain data, so this pickle is refused (nothing was executed)"
            ),
            Problem::LengthBeyondInput { claimed, remaining } => {
                write!(f, "a length of {claimed} bytes is claimed but only {remaining} bytes remain")
            }
            Problem::Malformed(what) => write!(f, "malformed pickle: {what}"),
            Problem::MemoMissing(i) => write!(f, "memo entry {i} is read before it is written"),
            Problem::TooDeep(max) => write!(f, "containers nested deeper than {max} levels"),
            Problem::TooLarge { budget_bytes } => write!(
                f,
                "decoding would hold more than {budget_bytes} bytes (twice the file's size plus 64 MiB); a memory snapshot never needs that"
            ),
            Problem::BadText(what) => write!(f, "bad text in a protocol-0 opcode: {what}"),
            Problem::NotASnapshot(what) => write!(f, "a Python pickle, but not a PyTorch memory snapshot: {what}"),
            Problem::BadField(what) => write!(f, "bad memory snapshot: {what}"),
            Problem::Io(e) => write!(f, "cannot read: {e}"),
        }
    }
}

/// A snapshot that cannot be read: the file, the byte offset when the pickle
/// itself is at fault, and the problem.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotError {
    pub input: String,
    pub offset: Option<u64>,
    pub problem: Problem,
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(at) => write!(f, "{}: at byte {at}: {}", self.input, self.problem),
            None => write!(f, "{}: {}", self.input, self.problem),
        }
    }
}

impl std::error::Error for SnapshotError {}

/// An error inside the unpickler, before the file name is attached.
#[derive(Debug, Clone, PartialEq)]
pub struct PickleError {
    pub offset: u64,
    pub problem: Problem,
}

impl PickleError {
    pub fn named(self, input: &str) -> SnapshotError {
        SnapshotError {
            input: input.to_string(),
            offset: Some(self.offset),
            problem: self.problem,
        }
    }
}
