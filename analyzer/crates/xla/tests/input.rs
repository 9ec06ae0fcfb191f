//! Reading XSpaces: lazy plane lookup over a random-access source (planes
//! that are not needed are never read), gzip streaming, `/host:CPU` on request,
//! and bad input answered with a clear error, never a panic or a huge allocation.

use oomscope_proto::prost::Message;
use oomscope_proto::tensorflow::profiler::{XEvent, XLine, XPlane, XSpace};
use oomscope_xla::{
    analyze_hlo_proto, analyze_xspace, read_plane, ReadAt, XlaErrorKind, HOST_CPU_PLANE,
};
use std::cell::Cell;
use std::io::Write;

fn corpus(path: &str) -> Vec<u8> {
    let full = oomscope_testdata::corpus().join("xla-runs").join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("cannot read {}: {e}", full.display()))
}

fn cpu_xplane() -> Vec<u8> {
    corpus("cpu-xplane/vm.xplane.pb")
}

fn tpu_hlo() -> Vec<u8> {
    corpus("new-libtpu-fits/module_0000.jit_f.cl_1014260217.after_optimizations.hlo.pb")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

/// A trace plane of about `bytes` bytes, as a serialized `XSpace` fragment
/// (concatenating XSpace messages appends their planes).
fn trace_plane(name: &str, bytes: usize) -> Vec<u8> {
    let events = (0..bytes / 12)
        .map(|i| XEvent {
            metadata_id: 1 + (i as i64 % 7),
            duration_ps: 1000,
            ..Default::default()
        })
        .collect();
    let line = XLine {
        id: 1,
        name: "XLA Ops".into(),
        events,
        ..Default::default()
    };
    XSpace {
        planes: vec![XPlane {
            id: 9,
            name: name.into(),
            lines: vec![line],
            ..Default::default()
        }],
        ..Default::default()
    }
    .encode_to_vec()
}

/// Counts the bytes a reader asks for.
struct CountingSource<'a> {
    bytes: &'a [u8],
    read: Cell<u64>,
}

impl ReadAt for CountingSource<'_> {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.read.set(self.read.get() + buf.len() as u64);
        self.bytes.read_at(offset, buf)
    }
}

#[test]
fn unneeded_planes_are_not_read() {
    let mut padded = trace_plane("/device:TPU:0", 8 << 20);
    padded.extend_from_slice(&cpu_xplane());
    padded.extend_from_slice(&trace_plane("/host:CPU", 4 << 20));
    let source = CountingSource {
        bytes: &padded,
        read: Cell::new(0),
    };
    let reports = analyze_xspace("padded.xplane.pb", &source, &mut |_, _| {}).expect("analysis");
    let plain =
        analyze_xspace("padded.xplane.pb", &cpu_xplane(), &mut |_, _| {}).expect("analysis");
    assert_eq!(reports, plain);
    let read = source.read.get();
    assert!(
        read < cpu_xplane().len() as u64 + 4096,
        "read {read} bytes of {}",
        padded.len()
    );
}

#[test]
fn gzipped_profile_gives_the_same_analysis() {
    let plain = analyze_xspace("vm.xplane.pb", &cpu_xplane(), &mut |_, _| {}).expect("analysis");
    let mut padded = trace_plane("/device:TPU:0", 1 << 20);
    padded.extend_from_slice(&cpu_xplane());
    let compressed = gzip(&padded);
    let mut last = (0, 0);
    let zipped = analyze_xspace("vm.xplane.pb", &compressed, &mut |done, total| {
        last = (done, total)
    })
    .expect("analysis");
    assert_eq!(zipped, plain);
    assert_eq!(last, (compressed.len() as u64, compressed.len() as u64));
    assert!(plain.iter().any(|r| r.display_name() == "jit_mlp(8)"));
}

#[test]
fn host_cpu_plane_on_request() {
    let bytes = corpus("tf-cpu-allocator/vm.xplane.pb");
    for input in [bytes.clone(), gzip(&bytes)] {
        let plane = read_plane("vm.xplane.pb", &input, HOST_CPU_PLANE)
            .expect("read")
            .expect("a /host:CPU plane");
        let allocation_events: usize = plane
            .lines
            .iter()
            .flat_map(|l| &l.events)
            .filter(|e| {
                plane
                    .event_metadata
                    .get(&e.metadata_id)
                    .is_some_and(|m| m.name == "MemoryAllocation" || m.name == "MemoryDeallocation")
            })
            .count();
        // corpus/xla-runs/README.md: 292 allocator events.
        assert_eq!(allocation_events, 292);
    }
    assert!(read_plane("vm.xplane.pb", &bytes, "/no:such plane")
        .expect("read")
        .is_none());
}

fn assert_error(
    result: Result<Vec<oomscope_report::ModuleReport>, oomscope_xla::XlaError>,
    input: &str,
    kinds: &[XlaErrorKind],
) {
    match result {
        Ok(r) => panic!("{input}: expected an error, got {} reports", r.len()),
        Err(e) => {
            assert_eq!(e.input, input);
            assert!(
                kinds.contains(&e.kind),
                "{input}: unexpected error kind {:?}: {e}",
                e.kind
            );
            assert!(e.to_string().starts_with(input), "{e}");
        }
    }
}

fn random_bytes(n: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

const BAD: &[XlaErrorKind] = &[XlaErrorKind::Truncated, XlaErrorKind::Malformed];

#[test]
fn truncated_inputs() {
    let hlo = tpu_hlo();
    for cut in [1, 17, hlo.len() / 3, hlo.len() - 1] {
        assert_error(
            analyze_hlo_proto("cut.hlo.pb", &hlo[..cut]),
            "cut.hlo.pb",
            &[
                XlaErrorKind::Truncated,
                XlaErrorKind::Malformed,
                XlaErrorKind::NoBufferAssignment,
            ],
        );
    }
    let xplane = cpu_xplane();
    for cut in [3, xplane.len() / 2, xplane.len() - 1] {
        assert_error(
            analyze_xspace("cut.xplane.pb", &&xplane[..cut], &mut |_, _| {}),
            "cut.xplane.pb",
            BAD,
        );
        let zipped = gzip(&xplane[..cut]);
        assert_error(
            analyze_xspace("cut.xplane.pb.gz", &zipped, &mut |_, _| {}),
            "cut.xplane.pb.gz",
            BAD,
        );
    }
    let zipped = gzip(&xplane);
    assert_error(
        analyze_xspace("cut.gz", &&zipped[..zipped.len() / 2], &mut |_, _| {}),
        "cut.gz",
        BAD,
    );
}

#[test]
fn random_binary() {
    for n in [0usize, 1, 100, 100_000] {
        let bytes = random_bytes(n);
        assert_error(
            analyze_hlo_proto("random.bin", &bytes),
            "random.bin",
            &[XlaErrorKind::Malformed],
        );
        assert_error(
            analyze_xspace("random.bin", &bytes, &mut |_, _| {}),
            "random.bin",
            &[
                XlaErrorKind::Truncated,
                XlaErrorKind::Malformed,
                XlaErrorKind::NoHlo,
            ],
        );
    }
}

#[test]
fn xplane_without_hlo() {
    let bytes = trace_plane("/host:CPU", 1000);
    let err = analyze_xspace("trace.xplane.pb", &bytes, &mut |_, _| {}).expect_err("no HLO");
    assert_eq!(err.kind, XlaErrorKind::NoHlo);
    assert!(err.message.contains("/host:metadata"), "{err}");
    // A metadata plane with events but no `Hlo Proto` stat.
    let empty_metadata = XSpace {
        planes: vec![XPlane {
            name: "/host:metadata".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let err = analyze_xspace(
        "meta.xplane.pb",
        &empty_metadata.encode_to_vec(),
        &mut |_, _| {},
    )
    .expect_err("no HLO");
    assert_eq!(err.kind, XlaErrorKind::NoHlo);
}

#[test]
fn wrong_message_type() {
    assert_error(
        analyze_hlo_proto("profile.hlo.pb", &cpu_xplane()),
        "profile.hlo.pb",
        &[XlaErrorKind::Malformed],
    );
    assert_error(
        analyze_xspace("module.xplane.pb", &tpu_hlo(), &mut |_, _| {}),
        "module.xplane.pb",
        &[
            XlaErrorKind::Malformed,
            XlaErrorKind::Truncated,
            XlaErrorKind::NoHlo,
        ],
    );
}

#[test]
fn gigantic_declared_length() {
    // Field 1, wire type LEN, length 2^63 - 1, then a few bytes.
    let mut bytes = vec![0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
    bytes.extend_from_slice(b"tiny");
    let err = analyze_xspace("huge.xplane.pb", &bytes, &mut |_, _| {}).expect_err("overrun");
    assert_eq!(err.kind, XlaErrorKind::Truncated);
    assert!(
        err.message
            .contains("declares 9223372036854775807 bytes but only 4 remain"),
        "{err}"
    );
    assert_error(
        analyze_xspace("huge.gz", &gzip(&bytes), &mut |_, _| {}),
        "huge.gz",
        BAD,
    );
    assert_error(
        analyze_hlo_proto("huge.hlo.pb", &bytes),
        "huge.hlo.pb",
        &[XlaErrorKind::Malformed],
    );
    // The same inside a plane: the plane's name field claims 1 TiB.
    let mut nested = vec![0x0a, 0x08, 0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20];
    nested.extend_from_slice(b"x");
    assert_error(
        analyze_xspace("nested.xplane.pb", &nested, &mut |_, _| {}),
        "nested.xplane.pb",
        BAD,
    );
    assert_error(
        analyze_xspace("nested.gz", &gzip(&nested), &mut |_, _| {}),
        "nested.gz",
        BAD,
    );
}

#[test]
fn one_pass_over_metadata_and_host_cpu() {
    let bytes = gzip(&cpu_xplane());
    let planes = oomscope_xla::read_planes(
        "vm.xplane.pb",
        &bytes,
        &|name| name == oomscope_xla::METADATA_PLANE || name == HOST_CPU_PLANE,
        &mut |_, _| {},
    )
    .expect("planes");
    assert!(planes.iter().any(|p| p.name == HOST_CPU_PLANE));
    let reports = oomscope_xla::analyze_planes("vm.xplane.pb", &planes).expect("analysis");
    assert_eq!(
        reports,
        analyze_xspace("vm.xplane.pb", &cpu_xplane(), &mut |_, _| {}).expect("analysis")
    );
}
