//! A buffered, position-tracking reader over any `io::Read`, for the
//! unpickler: the input is streamed in 256 KiB slices and never held whole.

use std::io::Read;

use crate::error::{PickleError, Problem};

const BUFFER: usize = 256 * 1024;

pub struct Input<R: Read> {
    reader: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Offset in the input of `buf[0]`.
    base: u64,
    /// Total input length, so that claimed lengths are checked before anything is allocated.
    total: u64,
}

impl<R: Read> Input<R> {
    pub fn new(reader: R, total: u64) -> Self {
        Input {
            reader,
            buf: vec![0; BUFFER],
            start: 0,
            end: 0,
            base: 0,
            total,
        }
    }

    /// Offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    pub fn remaining(&self) -> u64 {
        self.total.saturating_sub(self.offset())
    }

    fn err(&self, problem: Problem) -> PickleError {
        PickleError {
            offset: self.offset(),
            problem,
        }
    }

    /// Makes at least `n` (≤ BUFFER) bytes available; false at end of input.
    fn fill(&mut self, n: usize) -> Result<bool, PickleError> {
        if self.end - self.start >= n {
            return Ok(true);
        }
        self.buf.copy_within(self.start..self.end, 0);
        self.base += self.start as u64;
        self.end -= self.start;
        self.start = 0;
        while self.end < n {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(false),
                Ok(k) => self.end += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.err(Problem::Io(e.to_string()))),
            }
        }
        Ok(true)
    }

    /// The bytes already read ahead (possibly none), for fast paths that
    /// decode several opcodes at once; [`Input::advance`] consumes them.
    #[inline]
    pub fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Reads ahead until at least `n` (≤ 256 KiB) bytes are buffered, or
    /// the input ends.
    pub fn ensure(&mut self, n: usize) -> Result<(), PickleError> {
        self.fill(n.min(BUFFER)).map(|_| ())
    }

    /// Consumes `n` bytes of [`Input::buffered`].
    #[inline]
    pub fn advance(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
    }

    /// The next byte. The buffered case is inlined into the opcode loop;
    /// refilling is not.
    #[inline]
    pub fn byte(&mut self) -> Result<u8, PickleError> {
        if let Some(&b) = self.buf[..self.end].get(self.start) {
            self.start += 1;
            return Ok(b);
        }
        self.byte_slow()
    }

    #[inline(never)]
    fn byte_slow(&mut self) -> Result<u8, PickleError> {
        if !self.fill(1)? {
            return Err(self.err(Problem::Truncated));
        }
        let b = self.buf[self.start];
        self.start += 1;
        Ok(b)
    }

    /// The next `N` bytes as an array.
    #[inline]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], PickleError> {
        if let Some(Ok(out)) = self.buf[..self.end]
            .get(self.start..self.start + N)
            .map(<[u8; N]>::try_from)
        {
            self.start += N;
            return Ok(out);
        }
        self.array_slow()
    }

    #[inline(never)]
    fn array_slow<const N: usize>(&mut self) -> Result<[u8; N], PickleError> {
        if !self.fill(N)? {
            return Err(self.err(Problem::Truncated));
        }
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[self.start..self.start + N]);
        self.start += N;
        Ok(out)
    }

    /// Checks a length read from the input against what remains.
    pub fn check_len(&self, claimed: u64) -> Result<usize, PickleError> {
        let remaining = self.remaining();
        if claimed > remaining {
            return Err(self.err(Problem::LengthBeyondInput { claimed, remaining }));
        }
        Ok(claimed as usize)
    }

    /// Calls `f` with the next `n` bytes (checked against the input's length
    /// first, so a hostile length never allocates).
    pub fn with_bytes<T>(&mut self, n: u64, f: impl FnOnce(&[u8]) -> T) -> Result<T, PickleError> {
        let n = self.check_len(n)?;
        if n <= BUFFER {
            if !self.fill(n)? {
                return Err(self.err(Problem::Truncated));
            }
            let out = f(&self.buf[self.start..self.start + n]);
            self.start += n;
            return Ok(out);
        }
        let mut big = Vec::with_capacity(n);
        while big.len() < n {
            if self.start == self.end && !self.fill(1)? {
                return Err(self.err(Problem::Truncated));
            }
            let take = (n - big.len()).min(self.end - self.start);
            big.extend_from_slice(&self.buf[self.start..self.start + take]);
            self.start += take;
        }
        Ok(f(&big))
    }

    /// Skips `n` bytes without keeping them.
    pub fn skip(&mut self, n: u64) -> Result<(), PickleError> {
        let mut left = self.check_len(n)?;
        while left > 0 {
            if self.start == self.end && !self.fill(1)? {
                return Err(self.err(Problem::Truncated));
            }
            let take = left.min(self.end - self.start);
            self.start += take;
            left -= take;
        }
        Ok(())
    }

    /// A protocol-0 text argument up to `\n` (at most 4 KiB).
    pub fn line(&mut self) -> Result<String, PickleError> {
        let mut out = Vec::new();
        loop {
            let b = self.byte()?;
            if b == b'\n' {
                break;
            }
            if out.len() >= 4096 {
                return Err(self.err(Problem::BadText("line longer than 4 KiB")));
            }
            out.push(b);
        }
        String::from_utf8(out).map_err(|_| self.err(Problem::BadText("not UTF-8")))
    }
}
