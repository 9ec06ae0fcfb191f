//! Bad input gives a clear error naming the file (and the offset where one
//! applies), never a panic, a hang or memory out of proportion to the input.

use oomscope_proto::perftools::profiles as pb;
use oomscope_proto::prost::Message;
use oomscope_runtime::{
    read_device_memory_profile, read_kineto_trace, read_memory_timeline, RuntimeErrorKind,
};
use std::io::Write;

/// A well-formed JAX-style profile: strings, one function, one location,
/// one buffer sample on `gpu:0`.
fn profile() -> pb::Profile {
    let strings = [
        "",
        "allocations",
        "count",
        "space",
        "bytes",
        "kind",
        "buffer",
        "device",
        "gpu:0",
        "f",
        "train.py",
    ];
    pb::Profile {
        sample_type: vec![
            pb::ValueType { r#type: 1, unit: 2 },
            pb::ValueType { r#type: 3, unit: 4 },
        ],
        sample: vec![pb::Sample {
            location_id: vec![1],
            value: vec![2, 4096],
            label: vec![
                pb::Label {
                    key: 5,
                    str: 6,
                    ..Default::default()
                },
                pb::Label {
                    key: 7,
                    str: 8,
                    ..Default::default()
                },
            ],
        }],
        location: vec![pb::Location {
            id: 1,
            line: vec![pb::Line {
                function_id: 1,
                line: 12,
            }],
            ..Default::default()
        }],
        function: vec![pb::Function {
            id: 1,
            name: 9,
            system_name: 9,
            filename: 10,
            start_line: 1,
        }],
        string_table: strings.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn error_of(p: pb::Profile) -> oomscope_runtime::RuntimeError {
    read_device_memory_profile("bad.prof", &gz(&p.encode_to_vec())).unwrap_err()
}

#[test]
fn the_base_profile_is_good() {
    let d = read_device_memory_profile("good.prof", &gz(&profile().encode_to_vec())).unwrap();
    assert_eq!(d.profile.buffer_bytes, 4096);
    assert_eq!(d.profile.top_lines[0].frame.line, 12);
}

#[test]
fn truncated_gzip_names_the_file() {
    let mut data = gz(&profile().encode_to_vec());
    data.truncate(data.len() / 2);
    let e = read_device_memory_profile("memory.prof", &data).unwrap_err();
    assert_eq!(e.kind, RuntimeErrorKind::Gzip);
    assert!(
        e.to_string()
            .starts_with("memory.prof: truncated or corrupt gzip"),
        "{e}"
    );
}

#[test]
fn dangling_location_and_function_ids_are_named() {
    let mut p = profile();
    p.sample[0].location_id = vec![99];
    let e = error_of(p);
    assert_eq!(e.kind, RuntimeErrorKind::InvalidProfile);
    assert!(
        e.to_string().contains("sample 0 refers to location 99"),
        "{e}"
    );

    let mut p = profile();
    p.location[0].line[0].function_id = 7;
    assert!(error_of(p)
        .to_string()
        .contains("location 1 refers to function 7"));
}

#[test]
fn string_indices_out_of_range_are_named() {
    let mut p = profile();
    p.function[0].filename = 1_000_000;
    let e = error_of(p);
    assert!(
        e.to_string()
            .contains("refers to string 1000000, but the string table has 11 entries"),
        "{e}"
    );
    let mut p = profile();
    p.sample[0].label[1].key = -3;
    assert!(error_of(p).to_string().contains("string -3"));
}

#[test]
fn negative_buffer_sizes_and_counts_are_errors() {
    let mut p = profile();
    p.sample[0].value = vec![1, -4096];
    assert!(error_of(p)
        .to_string()
        .contains("sample 0 has a negative space/bytes value (-4096)"));
    let mut p = profile();
    p.sample[0].value = vec![-1, 4096];
    assert!(error_of(p)
        .to_string()
        .contains("negative allocations/count"));
    let mut p = profile();
    p.sample[0].value = vec![1];
    assert!(error_of(p)
        .to_string()
        .contains("sample 0 has 1 values for 2 sample types"));
}

#[test]
fn a_cpu_profile_is_not_a_memory_profile() {
    let mut p = profile();
    p.string_table[3] = "cpu".into();
    p.string_table[4] = "nanoseconds".into();
    let e = error_of(p);
    assert!(e.to_string().contains("no space/bytes sample type"), "{e}");
    assert!(e.to_string().contains("cpu/nanoseconds"), "{e}");
}

#[test]
fn garbage_is_a_protobuf_error_not_a_panic() {
    for seed in 0u64..200 {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let data: Vec<u8> = (0..(seed as usize * 7 % 300))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let _ = read_device_memory_profile("garbage.prof", &data);
        let _ = read_memory_timeline("garbage.raw.json", &data);
        let _ = read_kineto_trace("garbage.pt.trace.json", &data);
    }
    let e = read_device_memory_profile("x.prof", b"\x0a\xff\xff\xff\xff\x0f").unwrap_err();
    assert_eq!(e.kind, RuntimeErrorKind::Protobuf);
    assert!(
        e.to_string().starts_with("x.prof: not a pprof profile"),
        "{e}"
    );
}

#[test]
fn deep_stacks_and_long_names_are_bounded() {
    // 1 MiB of function name, referenced by 100 000 frames of one stack: the
    // report keeps 256 frames of at most 1 KiB names.
    let mut p = profile();
    p.string_table[9] = "f".repeat(1 << 20);
    p.sample[0].location_id = vec![1; 100_000];
    let d = read_device_memory_profile("deep.prof", &p.encode_to_vec()).unwrap();
    let frames = &d.profile.top_stacks[0].frames;
    assert_eq!(frames.len(), 256);
    assert!(frames.iter().all(|f| f.function.len() <= 1024 + 3));
}

#[test]
fn truncated_and_malformed_timelines_name_the_file_and_offset() {
    let e = read_memory_timeline("t.raw.json", b"[[-1, 1, 512, 0], [5000, 2, 64").unwrap_err();
    assert_eq!(e.kind, RuntimeErrorKind::Json);
    assert!(e.to_string().starts_with("t.raw.json: "), "{e}");
    assert!(e.offset.is_some(), "{e}");

    let e = read_memory_timeline("t.raw.json", b"[[-1, 1, 512, 9]]").unwrap_err();
    assert!(
        e.to_string()
            .contains("event 0 has unknown category 9 (at byte 1)"),
        "{e}"
    );
    let e = read_memory_timeline("t.raw.json", b"[[-1, 7, 512, 0]]").unwrap_err();
    assert!(e.to_string().contains("unknown action 7"), "{e}");
    let e = read_memory_timeline("t.json", b"[[1, 2, 3], [[0,0,0,0,0,0,0,0,1]]]").unwrap_err();
    assert!(e.to_string().contains("different lengths"), "{e}");

    let mut data = gz(b"[[-1, 1, 512, 0], [5000, 2, 64, 4]]");
    data.truncate(data.len() - 6);
    assert_eq!(
        read_memory_timeline("t.raw.json.gz", &data)
            .unwrap_err()
            .kind,
        RuntimeErrorKind::Gzip
    );
}

#[test]
fn deeply_nested_json_does_not_overflow_the_stack() {
    let deep = format!(
        "{{\"traceEvents\": [{}{}]}}",
        "[".repeat(500_000),
        "]".repeat(500_000)
    );
    let e = read_kineto_trace("deep.pt.trace.json", deep.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("no [memory] events"), "{e}");
    let deep_memory = format!(
        "{{\"traceEvents\": [{{\"name\": \"[memory]\", \"args\": {}1{}}}]}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let e = read_kineto_trace("deep.pt.trace.json", deep_memory.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("unreadable trace event"), "{e}");
    let e = read_memory_timeline(
        "deep.raw.json",
        format!("[{}]", "[".repeat(200_000)).as_bytes(),
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("deep.raw.json: "), "{e}");
}
