//! Bounded gunzip for callers that hand the readers a file as it lies on
//! disk (pprof files are gzipped by definition). The facade expands `.gz`
//! inputs itself (`analyzer/src/archive.rs`, with its archive budget) and
//! passes the plain bytes, so this path only serves direct callers: tests,
//! benchmarks, fuzzing.

use crate::error::{RuntimeError, RuntimeErrorKind};
use std::borrow::Cow;
use std::io::Read;

/// Decompressed bytes a direct caller may get from one input.
pub const MAX_DECOMPRESSED_BYTES: u64 = 2 << 30;

pub fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(&[0x1f, 0x8b])
}

/// `data` itself, or its decompressed contents when it is gzip.
pub fn maybe_gunzip<'a>(
    input: &str,
    data: &'a [u8],
    limit: u64,
) -> Result<Cow<'a, [u8]>, RuntimeError> {
    if !is_gzip(data) {
        return Ok(Cow::Borrowed(data));
    }
    let mut reader = flate2::read::MultiGzDecoder::new(data).take(limit.saturating_add(1));
    let mut out: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(RuntimeError::new(
                    input,
                    RuntimeErrorKind::Gzip,
                    format!(
                        "truncated or corrupt gzip stream after {} decompressed bytes: {e}",
                        out.len()
                    ),
                ))
            }
        };
        out.try_reserve(n).map_err(|_| {
            RuntimeError::new(
                input,
                RuntimeErrorKind::TooLarge,
                format!("out of memory after decompressing {} bytes", out.len()),
            )
        })?;
        out.extend_from_slice(chunk.get(..n).unwrap_or_default());
        if out.len() as u64 > limit {
            return Err(RuntimeError::new(
                input,
                RuntimeErrorKind::TooLarge,
                format!("decompresses to more than {limit} bytes; stopped"),
            ));
        }
    }
    Ok(Cow::Owned(out))
}
