//! A binary string's bytes: `FileReaderSync.readAsBinaryString` gives one
//! character (U+0000 to U+00FF) per byte of a file slice, which reaches
//! wasm as UTF-8; the worker decodes it back (`BlobSource::read_direct`:
//! why a string and not an `ArrayBuffer`). Here, not in the worker, so that
//! `cargo test --workspace` runs its test (the worker needs a feature).

/// The bytes of a binary string (characters U+0000 to U+00FF) from its
/// UTF-8 form into `out`; false unless it fills `out` exactly.
pub fn latin1_from_utf8(utf8: &[u8], out: &mut [u8]) -> bool {
    if utf8.len() == out.len() {
        // Every byte below 0x80: the same bytes.
        out.copy_from_slice(utf8);
        return utf8.is_ascii();
    }
    let (mut i, mut n) = (0, 0);
    while i < utf8.len() {
        // Eight bytes below 0x80 at a time (most of a pickle's bytes).
        if let (Some(src), Some(dst)) = (utf8.get(i..i + 8), out.get_mut(n..n + 8)) {
            let word = u64::from_le_bytes(src.try_into().unwrap_or([0x80; 8]));
            if word & 0x8080_8080_8080_8080 == 0 {
                dst.copy_from_slice(src);
                i += 8;
                n += 8;
                continue;
            }
        }
        let Some(slot) = out.get_mut(n) else {
            return false;
        };
        let b = utf8[i];
        if b < 0x80 {
            *slot = b;
            i += 1;
        } else {
            // U+0080 to U+00FF: 0xC2 or 0xC3, then a continuation byte.
            match utf8.get(i + 1) {
                Some(&c) if b & 0xFE == 0xC2 && c & 0xC0 == 0x80 => {
                    *slot = (b & 0x03) << 6 | (c & 0x3F);
                    i += 2;
                }
                _ => return false,
            }
        }
        n += 1;
    }
    n == out.len()
}

#[cfg(test)]
mod tests {
    use super::latin1_from_utf8;

    #[test]
    fn a_binary_string_decodes_to_its_bytes() {
        // Every byte value, in runs long and short, as the browser hands a
        // binary string to wasm (UTF-8).
        let bytes: Vec<u8> = (0..=255u8)
            .chain(b"plain ascii run".iter().copied())
            .chain([0x80, 0xff, 0x00])
            .collect();
        let utf8: String = bytes.iter().map(|&b| char::from(b)).collect();
        let mut out = vec![0u8; bytes.len()];
        assert!(latin1_from_utf8(utf8.as_bytes(), &mut out));
        assert_eq!(out, bytes);
        // Fewer or more bytes than asked, or a character above U+00FF: the
        // file changed under the reader.
        assert!(!latin1_from_utf8(
            utf8.as_bytes(),
            &mut vec![0u8; bytes.len() - 1]
        ));
        assert!(!latin1_from_utf8(
            utf8.as_bytes(),
            &mut vec![0u8; bytes.len() + 1]
        ));
        assert!(!latin1_from_utf8("\u{100}".as_bytes(), &mut [0u8; 1]));
    }
}
