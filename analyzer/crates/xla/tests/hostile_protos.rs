//! Hostile protobuf input: shapes nested past prost's recursion limit, a
//! million empty planes, and a gzip stream that inflates far past its size.
//! Each gives a clear error (or a bounded answer), never a stack overflow.

use oomscope_xla::{analyze_hlo_proto, analyze_xspace, XlaErrorKind};
use std::io::Write;

fn varint(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A length-delimited field `field` holding `payload`.
fn message_field(field: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(field << 3 | 2, &mut out);
    varint(payload.len() as u64, &mut out);
    out.extend_from_slice(payload);
    out
}

/// An `xla.HloProto` whose one instruction has a `ShapeProto` of `depth`
/// tuples nested in one another (`tuple_shapes` is field 4).
fn hlo_proto_with_nested_shape(depth: usize) -> Vec<u8> {
    let mut shape = Vec::new();
    for _ in 0..depth {
        shape = message_field(4, &shape);
    }
    let instruction = message_field(3, &shape); // HloInstructionProto.shape
    let computation = message_field(2, &instruction); // HloComputationProto.instructions
    let module = message_field(3, &computation); // HloModuleProto.computations
    message_field(1, &module) // HloProto.hlo_module
}

#[test]
fn shapes_nested_past_prosts_recursion_limit_are_malformed() {
    // prost stops at 100 nested messages; 4 of them are the wrappers above.
    let err = analyze_hlo_proto("deep.hlo.pb", &hlo_proto_with_nested_shape(100)).unwrap_err();
    assert_eq!(err.kind, XlaErrorKind::Malformed);
    assert!(err.message.contains("recursion limit"), "{err}");
    // A hundred thousand levels (300 KB) stop at the same limit.
    let err =
        analyze_hlo_proto("deeper.hlo.pb", &hlo_proto_with_nested_shape(100_000)).unwrap_err();
    assert!(err.message.contains("recursion limit"), "{err}");
    // Just inside the limit it decodes; the analysis then finds no buffer assignment.
    let err = analyze_hlo_proto("ok.hlo.pb", &hlo_proto_with_nested_shape(90)).unwrap_err();
    assert_ne!(err.kind, XlaErrorKind::Malformed, "{err}");
}

#[test]
fn a_million_empty_planes_are_no_profile() {
    let bytes: Vec<u8> = std::iter::repeat_n([0x0a, 0x00], 1_000_000)
        .flatten()
        .collect();
    let err = analyze_xspace("planes.xplane.pb", &bytes, &mut |_, _| {}).unwrap_err();
    assert_eq!(err.kind, XlaErrorKind::NoHlo, "{err}");
}

#[test]
fn a_gzip_bomb_of_skipped_planes_streams_in_bounded_memory() {
    // 256 MiB of zeros in one unwanted plane: skipped while inflating, never
    // held (the gzip is 250 KB).
    let junk = 256usize << 20;
    let mut plane_head = message_field(2, b"/device:TPU:0");
    plane_head.push(15 << 3 | 2); // an unknown field holding the junk
    varint(junk as u64, &mut plane_head);
    let mut head = Vec::new();
    varint(1 << 3 | 2, &mut head); // XSpace.planes
    varint((plane_head.len() + junk) as u64, &mut head);
    head.extend_from_slice(&plane_head);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&head).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..(junk >> 20) {
        gz.write_all(&zeros).unwrap();
    }
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 1 << 20, "{}", bomb.len());
    let err = analyze_xspace("bomb.xplane.pb.gz", &bomb, &mut |_, _| {}).unwrap_err();
    assert_eq!(err.kind, XlaErrorKind::NoHlo, "{err}");
}
