//! The little the estimates need from a printed shape: element type and
//! dimensions of a single array (`f32[32768,70001]{0,1:T(8,128)}`). Tuples,
//! lists of shapes and anything else give `None`: the estimate then skips the
//! buffer and says so.

/// Element type and dimensions of an array shape, layout ignored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ArrayShape {
    pub dtype: String,
    pub dims: Vec<u64>,
}

impl ArrayShape {
    /// `f32[32768,70001]`: the shape without its layout, to match buffers.
    pub fn key(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(u64::to_string).collect();
        format!("{}[{}]", self.dtype, dims.join(","))
    }
}

/// Parses one array shape; `None` for tuples, shape lists and junk.
pub(crate) fn parse_array(shape: &str) -> Option<ArrayShape> {
    let text = shape.trim();
    let open = text.find('[')?;
    let dtype = &text[..open];
    if dtype.is_empty() || !dtype.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let rest = &text[open + 1..];
    let close = rest.find(']')?;
    let after = rest[close + 1..].trim();
    if !(after.is_empty() || after.starts_with('{')) {
        return None;
    }
    let dims_text = rest[..close].trim();
    let mut dims = Vec::new();
    if !dims_text.is_empty() {
        for dim in dims_text.split(',') {
            // Dynamic dimensions print as `<=N`: the bound is what is allocated.
            let dim = dim.trim().trim_start_matches("<=");
            dims.push(dim.parse::<u64>().ok()?);
        }
    }
    Some(ArrayShape {
        dtype: dtype.to_string(),
        dims,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arrays_and_rejects_the_rest() {
        let s = parse_array("f32[32768,70001]{0,1:T(8,128)}").unwrap();
        assert_eq!(s.dtype, "f32");
        assert_eq!(s.dims, vec![32768, 70001]);
        assert_eq!(s.key(), "f32[32768,70001]");
        assert_eq!(
            parse_array("f32[]{:T(256)}").unwrap().dims,
            Vec::<u64>::new()
        );
        assert_eq!(parse_array("bf16[<=8,128]").unwrap().dims, vec![8, 128]);
        assert!(parse_array("(f32[2], f32[3])").is_none());
        assert!(parse_array("bf16[1536,24576], f32[262144,1536]").is_none());
        assert!(parse_array("5×bf16[1,8,24576,12288]").is_none());
        assert!(parse_array("f32[a,b]").is_none());
        assert!(parse_array("").is_none());
    }
}
