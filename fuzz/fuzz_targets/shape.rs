//! XLA shape text (`f32[8,128]{1,0:T(8,128)}`, tuples) → parsing and sizes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(shape) = oomscope_layout::parse_shape(&text) {
        let _ = shape.to_string();
        let _ = (shape.padded_bytes(), shape.unpadded_bytes());
    }
    let _ = oomscope_layout::size_of(&text);
    let _ = oomscope_layout::parse_shape_prefix(&text);
    let _ = oomscope_layout::parse_counted_shape(&text);
});
