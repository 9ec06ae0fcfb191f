//! Padding waste: what a layout's rounding costs, where, and how to get it back.

use crate::shape::{parse_shape, Shape, ShapeError};
use serde::{Deserialize, Serialize};

/// The sizes `oomscope size SHAPE` prints for one shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeInfo {
    /// The shape as XLA prints it (normalised by parsing and printing back).
    pub shape: String,
    pub padded_bytes: u64,
    pub unpadded_bytes: u64,
}

/// Sizes of one shape string, e.g. `f32[129,1024]{1,0:T(8,128)}`.
pub fn size_of(shape_text: &str) -> Result<SizeInfo, ShapeError> {
    let shape: Shape = parse_shape(shape_text)?;
    Ok(SizeInfo {
        shape: shape.to_string(),
        padded_bytes: shape.padded_bytes(),
        unpadded_bytes: shape.unpadded_bytes(),
    })
}
