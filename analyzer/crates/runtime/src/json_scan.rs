//! Walking a large JSON document one element at a time, without building a
//! tree of values: a 2 GB timeline must not need 2 GB of `serde_json::Value`.
//!
//! The scanner only finds where values begin and end (strings, nesting);
//! each small element is then handed to serde on its own byte span. Nesting
//! is tracked with a counter, never by recursion, so a hostile document of a
//! million `[` cannot overflow the stack.

use crate::error::{RuntimeError, RuntimeErrorKind};

pub struct Scanner<'a> {
    input: &'a str,
    data: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    pub fn new(input: &'a str, data: &'a [u8]) -> Self {
        Scanner {
            input,
            data,
            pos: 0,
        }
    }

    pub fn at(input: &'a str, data: &'a [u8], pos: usize) -> Self {
        Scanner { input, data, pos }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn error(&self, message: impl Into<String>) -> RuntimeError {
        RuntimeError::at(self.input, RuntimeErrorKind::Json, self.pos, message)
    }

    fn skip_ws(&mut self) {
        while let Some(b) = self.data.get(self.pos) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.pos += 1;
        }
    }

    /// The next non-blank byte, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.data.get(self.pos).copied()
    }

    pub fn expect(&mut self, byte: u8) -> Result<(), RuntimeError> {
        match self.peek() {
            Some(b) if b == byte => {
                self.pos += 1;
                Ok(())
            }
            Some(b) => Err(self.error(format!(
                "expected '{}', found '{}'",
                byte as char,
                b.escape_ascii()
            ))),
            None => Err(self.error(format!(
                "expected '{}', found the end of the file (truncated?)",
                byte as char
            ))),
        }
    }

    /// After an array or object element: `true` if another follows (a comma
    /// was consumed), `false` at the closing `close` (consumed).
    pub fn next_element(&mut self, close: u8) -> Result<bool, RuntimeError> {
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b) if b == close => {
                self.pos += 1;
                Ok(false)
            }
            Some(b) => Err(self.error(format!(
                "expected ',' or '{}', found '{}'",
                close as char,
                b.escape_ascii()
            ))),
            None => Err(self.error(format!(
                "expected ',' or '{}', found the end of the file (truncated?)",
                close as char
            ))),
        }
    }

    /// Just after an opening bracket: `true` if the container is empty (the
    /// closing bracket was consumed).
    pub fn empty_container(&mut self, close: u8) -> bool {
        if self.peek() == Some(close) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Skip one value and return its bytes.
    pub fn value(&mut self) -> Result<&'a [u8], RuntimeError> {
        self.skip_ws();
        let start = self.pos;
        let mut depth: usize = 0;
        loop {
            let Some(&b) = self.data.get(self.pos) else {
                return Err(self.error("the file ends inside a value (truncated?)"));
            };
            match b {
                b'"' => self.skip_string()?,
                b'[' | b'{' => {
                    depth += 1;
                    self.pos += 1;
                }
                b']' | b'}' => {
                    if depth == 0 {
                        return Err(self.error(format!("unexpected '{}'", b as char)));
                    }
                    depth -= 1;
                    self.pos += 1;
                }
                b',' | b':' if depth == 0 => {
                    return Err(self.error(format!("unexpected '{}'", b as char)))
                }
                _ => {
                    self.pos += 1;
                    if depth == 0 {
                        // A scalar: read until a delimiter.
                        while let Some(&c) = self.data.get(self.pos) {
                            if matches!(c, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                                break;
                            }
                            self.pos += 1;
                        }
                    }
                }
            }
            if depth == 0 && self.pos > start {
                return Ok(self.data.get(start..self.pos).unwrap_or_default());
            }
        }
    }

    fn skip_string(&mut self) -> Result<(), RuntimeError> {
        let start = self.pos;
        self.pos += 1;
        while let Some(&b) = self.data.get(self.pos) {
            match b {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => self.pos += 1,
            }
        }
        self.pos = start;
        Err(self.error("the file ends inside a string (truncated?)"))
    }

    /// An object key (a string, then `:`), unescaped by serde.
    pub fn key(&mut self) -> Result<String, RuntimeError> {
        let at = self.pos;
        if self.peek() != Some(b'"') {
            return Err(self.error("expected an object key"));
        }
        let span = self.value()?;
        let key: String = serde_json::from_slice(span).map_err(|e| {
            RuntimeError::at(
                self.input,
                RuntimeErrorKind::Json,
                at,
                format!("bad object key: {e}"),
            )
        })?;
        self.expect(b':')?;
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_spans_and_nesting_is_not_recursion() {
        let deep = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
        let mut s = Scanner::new("deep.json", deep.as_bytes());
        assert_eq!(s.value().unwrap().len(), 2_000_000);

        let mut s = Scanner::new("x.json", br#" [1, "a,]\"b", {"k": [2]}] "#);
        s.expect(b'[').unwrap();
        assert_eq!(s.value().unwrap(), b"1");
        assert!(s.next_element(b']').unwrap());
        assert_eq!(s.value().unwrap(), br#""a,]\"b""#);
        assert!(s.next_element(b']').unwrap());
        assert_eq!(s.value().unwrap(), br#"{"k": [2]}"#);
        assert!(!s.next_element(b']').unwrap());
    }

    #[test]
    fn truncation_is_an_error_with_an_offset() {
        let mut s = Scanner::new("t.json", b"[[1, 2], [3, ");
        s.expect(b'[').unwrap();
        s.value().unwrap();
        assert!(s.next_element(b']').unwrap());
        let e = s.value().unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.json: the file ends inside a value"),
            "{e}"
        );
        assert!(e.offset.is_some());
    }
}
