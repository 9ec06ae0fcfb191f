//! The little the estimates need from a printed shape, read with
//! `oomscope_layout`'s parser (the project's one shape grammar): element type
//! and dimensions of a single array. Tuples, lists of shapes and anything
//! else give `None`: the estimate then skips the buffer and says so.

use oomscope_layout::{parse_shape, ElementType, Shape};

/// Element type and dimensions of an array shape, layout ignored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ArrayShape {
    pub element_type: ElementType,
    /// Dimension sizes (dynamic ones at their bound).
    pub dims: Vec<u64>,
}

impl ArrayShape {
    /// `f32[32768,70001]`: the shape without its layout, to match buffers.
    pub fn key(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(u64::to_string).collect();
        format!("{}[{}]", self.element_type.name(), dims.join(","))
    }

    pub fn is_f32(&self) -> bool {
        self.element_type == ElementType::F32
    }
}

/// Parses one array shape; `None` for tuples, shape lists, unbounded
/// dimensions and junk.
pub(crate) fn parse_array(shape: &str) -> Option<ArrayShape> {
    let Ok(Shape::Array(array)) = parse_shape(shape) else {
        return None;
    };
    let dims = array
        .dims
        .iter()
        .map(|d| u64::try_from(*d).ok())
        .collect::<Option<Vec<u64>>>()?;
    Some(ArrayShape {
        element_type: array.element_type,
        dims,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arrays_and_rejects_the_rest() {
        let s = parse_array("f32[32768,70001]{0,1:T(8,128)}").unwrap();
        assert!(s.is_f32());
        assert_eq!(s.dims, vec![32768, 70001]);
        assert_eq!(s.key(), "f32[32768,70001]");
        assert_eq!(
            parse_array("f32[]{:T(256)}").unwrap().dims,
            Vec::<u64>::new()
        );
        assert_eq!(parse_array("bf16[<=8,128]").unwrap().dims, vec![8, 128]);
        assert!(!parse_array("bf16[8]").unwrap().is_f32());
        assert!(parse_array("(f32[2], f32[3])").is_none());
        assert!(parse_array("bf16[1536,24576], f32[262144,1536]").is_none());
        assert!(parse_array("5×bf16[1,8,24576,12288]").is_none());
        assert!(parse_array("f32[a,b]").is_none());
        assert!(parse_array("").is_none());
    }
}
