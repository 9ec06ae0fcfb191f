//! Random-access byte sources and a bounded protobuf wire reader over them.
//!
//! An XSpace can be gigabytes; in the browser a worker reads the user's `File`
//! by slices (`FileReaderSync`), so the XSpace reader never asks for the whole
//! input: it reads field headers (a few bytes each) and only the planes it
//! needs. Every length read from the input is checked against the bytes that
//! remain before anything is allocated.

use std::io;

/// A byte source that can be read at any offset.
pub trait ReadAt {
    /// Total length in bytes.
    fn len(&self) -> u64;
    /// Fills `buf` with the bytes at `offset..offset + buf.len()`; an error if
    /// that range is not inside the source.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ReadAt for [u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| out_of_range())?;
        let end = start.checked_add(buf.len()).ok_or_else(out_of_range)?;
        let bytes = self.get(start..end).ok_or_else(out_of_range)?;
        buf.copy_from_slice(bytes);
        Ok(())
    }
}

impl ReadAt for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.as_slice().read_at(offset, buf)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn len(&self) -> u64 {
        (**self).len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        (**self).read_at(offset, buf)
    }
}

fn out_of_range() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "read past the end of the input",
    )
}

/// Sequential `io::Read` over a [`ReadAt`], in chunks (for the gzip decoder).
pub struct SequentialReader<'a> {
    src: &'a dyn ReadAt,
    pos: u64,
}

impl<'a> SequentialReader<'a> {
    pub fn new(src: &'a dyn ReadAt) -> Self {
        SequentialReader { src, pos: 0 }
    }
    /// Bytes consumed so far.
    pub fn position(&self) -> u64 {
        self.pos
    }
}

impl io::Read for SequentialReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let remaining = self.src.len().saturating_sub(self.pos);
        let n = usize::try_from(remaining)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        if n == 0 {
            return Ok(0);
        }
        let chunk = buf.get_mut(..n).ok_or_else(out_of_range)?;
        self.src.read_at(self.pos, chunk)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Protobuf wire types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireType {
    Varint,
    Fixed64,
    Len,
    Fixed32,
}

/// Why a wire-level read failed.
#[derive(Debug)]
pub enum WireError {
    Truncated(&'static str),
    /// A field declares more bytes than remain in its message or the input.
    Overrun {
        field: u32,
        declared: u64,
        remaining: u64,
    },
    Malformed(String),
    Io(io::Error),
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            WireError::Truncated("the input ends inside a field")
        } else {
            WireError::Io(e)
        }
    }
}

/// Splits a tag into field number and wire type.
pub fn split_tag(tag: u64) -> Result<(u32, WireType), WireError> {
    let field = u32::try_from(tag >> 3)
        .map_err(|_| WireError::Malformed(format!("field number {} too large", tag >> 3)))?;
    if field == 0 {
        return Err(WireError::Malformed("field number 0".into()));
    }
    let wire = match tag & 7 {
        0 => WireType::Varint,
        1 => WireType::Fixed64,
        2 => WireType::Len,
        5 => WireType::Fixed32,
        other => {
            return Err(WireError::Malformed(format!(
                "unsupported wire type {other} (field {field})"
            )))
        }
    };
    Ok((field, wire))
}

/// Decodes a varint from the front of `bytes`: (value, bytes used).
pub fn decode_varint(bytes: &[u8]) -> Result<(u64, usize), WireError> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if i == 9 && b > 1 {
                return Err(WireError::Malformed("varint overflows 64 bits".into()));
            }
            return Ok((value, i + 1));
        }
    }
    if bytes.len() >= 10 {
        Err(WireError::Malformed("varint longer than 10 bytes".into()))
    } else {
        Err(WireError::Truncated("the input ends inside a varint"))
    }
}

/// A field header read at some position: its number, wire type, and where its
/// payload lies (`[payload_start, payload_end)`; varints have their value).
#[derive(Debug, Clone, Copy)]
pub struct FieldHeader {
    pub field: u32,
    pub wire: WireType,
    pub payload_start: u64,
    pub payload_end: u64,
    pub varint: u64,
}

/// Reads the field header at `pos` inside `[pos, end)` of `src`, checking that
/// the payload fits before `end`.
pub fn read_field_header(src: &dyn ReadAt, pos: u64, end: u64) -> Result<FieldHeader, WireError> {
    let mut head = [0u8; 20];
    let available = usize::try_from(end.saturating_sub(pos))
        .unwrap_or(usize::MAX)
        .min(head.len());
    let head = head
        .get_mut(..available)
        .ok_or(WireError::Truncated("empty field"))?;
    src.read_at(pos, head)?;
    let (tag, tag_len) = decode_varint(head)?;
    let (field, wire) = split_tag(tag)?;
    let rest = head.get(tag_len..).unwrap_or(&[]);
    let after_tag = pos + tag_len as u64;
    let (payload_start, payload_end, varint) = match wire {
        WireType::Varint => {
            let (v, n) = decode_varint(rest)?;
            (after_tag, after_tag + n as u64, v)
        }
        WireType::Fixed64 => (after_tag, after_tag.saturating_add(8), 0),
        WireType::Fixed32 => (after_tag, after_tag.saturating_add(4), 0),
        WireType::Len => {
            let (len, n) = decode_varint(rest)?;
            let start = after_tag + n as u64;
            let stop = start.checked_add(len).ok_or_else(|| {
                WireError::Malformed(format!("field {field} declares an impossible length {len}"))
            })?;
            (start, stop, len)
        }
    };
    if payload_end > end {
        return Err(WireError::Overrun {
            field,
            declared: payload_end.saturating_sub(payload_start),
            remaining: end.saturating_sub(payload_start),
        });
    }
    Ok(FieldHeader {
        field,
        wire,
        payload_start,
        payload_end,
        varint,
    })
}

/// Reads `[start, end)` of `src` into a new vector (the range was checked
/// against the source's length by [`read_field_header`]).
pub fn read_range(src: &dyn ReadAt, start: u64, end: u64) -> Result<Vec<u8>, WireError> {
    let len = usize::try_from(end.saturating_sub(start))
        .map_err(|_| WireError::Malformed("range too large for this machine".into()))?;
    if end > src.len() {
        return Err(WireError::Truncated("the input ends inside a field"));
    }
    let mut buf = vec![0u8; len];
    src.read_at(start, &mut buf)?;
    Ok(buf)
}
