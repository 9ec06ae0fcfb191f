//! Hostile shape text: nesting far past any real program, sizes past `u64`,
//! and very wide tuples. Each must give a clear error or a bounded answer,
//! never a stack overflow, panic or overflow.

use oomscope_layout::{parse_shape, size_of, Shape};

fn nested_tuple(depth: usize) -> String {
    format!("{}f32[2]{{0}}{}", "(".repeat(depth), ")".repeat(depth))
}

#[test]
fn tuples_nested_past_the_limit_are_an_error_naming_the_nesting() {
    assert!(parse_shape(&nested_tuple(64)).is_ok());
    let err = parse_shape(&nested_tuple(65)).unwrap_err();
    assert!(err.to_string().contains("nested deeper than 64"), "{err}");
    // A million open parentheses stop at the limit instead of recursing on.
    let err = parse_shape(&nested_tuple(1_000_000)).unwrap_err();
    assert!(err.to_string().contains("nested deeper than 64"), "{err}");
}

#[test]
fn physical_shapes_nested_in_layouts_count_towards_the_limit() {
    let depth = 10_000;
    let text = format!(
        "{}f32[2]{{0}}{}",
        "f32[2]{0:P(".repeat(depth),
        ")}".repeat(depth)
    );
    let err = parse_shape(&text).unwrap_err();
    assert!(err.to_string().contains("nested deeper than 64"), "{err}");
}

#[test]
fn sizes_past_u64_saturate() {
    let max = i64::MAX;
    let info = size_of(&format!("f32[{max},{max}]{{1,0:T(8,128)}}")).unwrap();
    assert_eq!(info.padded_bytes, u64::MAX);
    assert_eq!(info.unpadded_bytes, u64::MAX);
    let info = size_of(&format!("(f32[{max}], f32[{max}], s4[{max}])")).unwrap();
    assert_eq!(info.padded_bytes, u64::MAX);
}

#[test]
fn dimensions_beyond_u64_are_an_error() {
    let err = parse_shape("f32[99999999999999999999999]").unwrap_err();
    assert!(!err.to_string().is_empty());
}

#[test]
fn a_tuple_of_a_million_elements_parses_in_one_pass() {
    let n = 1_000_000;
    let text = format!("({})", vec!["f32[8,128]{1,0:T(8,128)}"; n].join(", "));
    let shape = parse_shape(&text).unwrap();
    let Shape::Tuple(elements) = &shape else {
        panic!("not a tuple: {shape:?}")
    };
    assert_eq!(elements.len(), n);
    // 4 KiB per element plus an 8-byte index table entry.
    assert_eq!(shape.padded_bytes(), n as u64 * (8 * 128 * 4 + 8));
}
