//! Shape strings as XLA prints them: parsing, printing back, sizes, and
//! hostile input (errors or saturation, never a panic).

use oomscope_layout::{parse_counted_shape, parse_shape, size_of, ElementType, Shape};

fn array_sizes(text: &str) -> (u64, u64) {
    let shape = parse_shape(text).unwrap();
    (shape.padded_bytes(), shape.unpadded_bytes())
}

#[test]
fn prints_back_what_it_parses() {
    for text in [
        "f32[129,1024]{1,0:T(8,128)}",
        "bf16[8,24576,6144]{2,1,0:T(8,128)(2,1)}",
        "(f32[2]{0}, s32[])",
        "u8[327680,327680]{1,0:T(8,128)(4,1)}",
        "f32[4]{0:T(256)S(1)}",
        "f32[<=10]",
        "f32[<=10,?]{1,0}",
        "pred[]",
        "((f32[2]{0}, (s32[], token[])), opaque[])",
        "()",
        "s4[512,1027]{0,1:T(8,128)(8,1)E(4)S(1)SC(0:520)}",
        "f32[]{:T(128)S(6)}",
        "u32[]{:S(2)}",
        "f32[100]{0:T(2,*)L(1024)#(u32)*(u64)M(8)}",
        "f32[10,10]{1,0:D(D,C)P(f32[10]{0})}",
        "f32[1,2,3,4,5,6]{5,4,3,2,1,0}",
        "(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[], f32[])",
    ] {
        let shape = parse_shape(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(shape.to_string(), text);
    }
    // Whitespace around and inside tuples is accepted; printing normalises it.
    assert_eq!(
        parse_shape("  ( f32[2]{0} ,s32[] )\n").unwrap().to_string(),
        "(f32[2]{0}, s32[])"
    );
}

#[test]
fn sizes_of_the_issue_examples() {
    // 129 rounds to 136 (8 rows), 1024 is a multiple of 128.
    assert_eq!(
        array_sizes("f32[129,1024]{1,0:T(8,128)}"),
        (136 * 1024 * 4, 129 * 1024 * 4)
    );
    // bf16: the (2,1) sub-tile packs pairs of rows and adds nothing here.
    assert_eq!(
        array_sizes("bf16[8,24576,6144]{2,1,0:T(8,128)(2,1)}"),
        (8 * 24576 * 6144 * 2, 8 * 24576 * 6144 * 2)
    );
    // A minor dimension of 10 pads to 128: 12.8 times.
    assert_eq!(
        array_sizes("s32[29360128,10]{1,0:T(8,128)}"),
        (29360128 * 128 * 4, 29360128 * 10 * 4)
    );
    // A scalar takes a whole 128-element tile.
    assert_eq!(array_sizes("f32[]{:T(128)}"), (512, 4));
    // Untiled: dense; sub-byte types take a byte each unless E(n) says otherwise.
    assert_eq!(array_sizes("s4[3]{0}"), (3, 3));
    assert_eq!(array_sizes("s4[3]{0:E(4)}"), (2, 2));
    assert_eq!(array_sizes("pred[7]"), (7, 7));
    // Dynamic dimensions count at their bound, unbounded ones as 0.
    assert_eq!(array_sizes("f32[<=10]"), (40, 40));
    assert_eq!(array_sizes("f32[?,4]"), (0, 0));
    // Tail padding alignment applies to tiled layouts; M(n) adds metadata bytes.
    assert_eq!(array_sizes("f32[100]{0:T(128)L(1024)}"), (4096, 400));
    assert_eq!(array_sizes("f32[100]{0:M(8)}"), (408, 400));
    // A tuple: 8-byte index table entries plus the elements.
    assert_eq!(array_sizes("(f32[2]{0}, s32[])"), (16 + 8 + 4, 16 + 8 + 4));
    assert_eq!(
        parse_shape("(f32[2]{0}, s32[])")
            .unwrap()
            .own_padded_bytes(),
        16
    );
}

#[test]
fn counted_shapes_of_memory_usage_reports() {
    let (count, shape) = parse_counted_shape("5×bf16[8,128]{1,0:T(8,128)(2,1)}").unwrap();
    assert_eq!((count, shape.padded_bytes()), (5, 8 * 128 * 2));
    let (count, _) = parse_counted_shape("12xf32[2]{0}").unwrap();
    assert_eq!(count, 12);
    assert_eq!(parse_counted_shape("f32[2]{0}").unwrap().0, 1);
    assert!(parse_counted_shape("5×").is_err());
    assert!(parse_counted_shape("99999999999999999999999×f32[]").is_err());
}

#[test]
fn size_info_serializes_as_the_cli_prints_it() {
    let info = size_of("f32[129,1024]{1,0:T(8,128)}").unwrap();
    let json = serde_json::to_value(&info).unwrap();
    assert_eq!(json["shape"], "f32[129,1024]{1,0:T(8,128)}");
    assert_eq!(json["padded_bytes"], 557056);
    assert_eq!(json["unpadded_bytes"], 528384);
}

#[test]
fn element_types_by_name() {
    assert_eq!(
        parse_shape("f8e4m3fn[2]")
            .unwrap()
            .as_array()
            .unwrap()
            .element_type,
        ElementType::F8E4M3FN
    );
    assert!(matches!(parse_shape("token[]").unwrap(), Shape::Token));
    assert!(parse_shape("tuple[]").is_err());
}

#[test]
fn hostile_input_errors_or_saturates_never_panics() {
    // Errors, each naming the problem.
    for text in [
        "",
        "f32",
        "f33[1]",
        "f32[1",
        "f32[-1]",
        "f32[99999999999999999999]",
        "f32[1]{0",
        "f32[1]{0:T(0)}",
        "f32[1]{0:T(-3)}",
        "f32[1]{0:E(4294967296)}",
        "f32[1]{0:Q}",
        "f32[3,5]{7,-1:T(8,128)}",
        "(f32[1]",
        "(f32[1],)",
        "f32[1] trailing",
        "f32[1]{0:P(",
        "\u{1F600}[1]",
    ] {
        let error = parse_shape(text).expect_err(text);
        assert!(!error.message.is_empty(), "{text}");
    }
    // Deep nesting is refused, not recursed into.
    let deep = "(".repeat(100_000) + &")".repeat(100_000);
    assert!(parse_shape(&deep).unwrap_err().message.contains("nested"));
    let deep_physical = "f32[1]{0:P(".repeat(1000);
    assert!(parse_shape(&deep_physical).is_err());
    // Sizes that overflow 64 bits saturate.
    let huge = "f32[9223372036854775807,9223372036854775807]{1,0:T(8,128)}";
    assert_eq!(array_sizes(huge), (u64::MAX, u64::MAX));
    assert_eq!(
        array_sizes("f32[9223372036854775807]{0:T(9223372036854775807)L(9223372036854775807)}").0,
        u64::MAX
    );
    // Nonsense layouts are sized without panicking.
    for text in [
        "f32[3,5]{7,1:T(8,128)}",
        "f32[3,5]{0,0:T(8,128)}",
        "f32[3]{0:T(1,2,3,4,5,6,7,8)}",
        "f32[3]{0:T(8)L(0)SC(5:1,2)SC(0:9,1)M(-4)}",
        "f32[]{:T(*,128)}",
    ] {
        let shape = parse_shape(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let _ = (
            shape.padded_bytes(),
            shape.unpadded_bytes(),
            shape.to_string(),
        );
        if let Some(array) = shape.as_array() {
            let _ = (
                oomscope_layout::dimension_breakdown(array),
                oomscope_layout::suggest_fix(array),
            );
        }
    }
    // A rank of a hundred thousand parses, sizes, and is not analysed.
    let rank = 100_000;
    let high_rank = format!(
        "f32[{}]{{{}:T(8,128)}}",
        vec!["3"; rank].join(","),
        (0..rank)
            .rev()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let shape = parse_shape(&high_rank).unwrap();
    assert_eq!(shape.padded_bytes(), u64::MAX);
    let array = shape.as_array().unwrap();
    assert!(oomscope_layout::dimension_breakdown(array).is_empty());
    assert!(oomscope_layout::suggest_fix(array).is_none());
    // A million tuple elements parse and size in linear time.
    let wide = format!("({})", vec!["f32[]{:T(128)}"; 1_000_000].join(", "));
    let shape = parse_shape(&wide).unwrap();
    assert_eq!(shape.padded_bytes(), 1_000_000 * (512 + 8));
    // Every prefix of a valid shape is handled.
    let valid = "(bf16[8,24576,6144]{2,1,0:T(8,128)(2,1)S(1)SC(0:4)}, f32[<=10]{0:L(2)E(32)M(4)})";
    for end in 0..valid.len() {
        let _ = parse_shape(&valid[..end]);
    }
}

#[test]
fn split_dimensions_count_at_their_largest_piece() {
    // libtpu v5p (padding zoo): 17 split at 16 → pieces of 16 and 1.
    let shape = parse_shape("u8[17,4099]{1,0:T(8,128)(4,1)S(1)SC(0:16)}").unwrap();
    assert_eq!(shape.as_array().unwrap().split_dims(), vec![16, 4099]);
    assert_eq!(shape.padded_bytes(), 16 * 4224);
    // A hostile split list on a high rank stays linear.
    let rank = 50_000;
    let text = format!(
        "f32[{}]{{{}:T(8,128)SC{}}}",
        vec!["3"; rank].join(","),
        (0..rank)
            .rev()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(","),
        (0..rank).map(|d| format!("({d}:1,2)")).collect::<String>()
    );
    let shape = parse_shape(&text).unwrap();
    assert!(shape
        .as_array()
        .unwrap()
        .split_dims()
        .iter()
        .all(|&d| d == 1));
    assert_eq!(shape.padded_bytes(), 8 * 128 * 4);
}
