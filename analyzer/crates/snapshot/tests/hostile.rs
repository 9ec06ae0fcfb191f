//! Bad input: every failure is an error naming the file, the problem and the
//! byte offset; nothing panics, recurses on input depth, allocates beyond
//! the input, or runs code. Small pickles below were written by CPython's
//! `pickle.dumps` (shown in comments) or built opcode by opcode.

use std::path::PathBuf;

use oomscope_snapshot::{analyze, read_snapshot, Problem, SnapshotError};

fn corpus(name: &str) -> PathBuf {
    oomscope_testdata::corpus().join("snapshots").join(name)
}

fn read(bytes: &[u8]) -> Result<oomscope_snapshot::Snapshot, SnapshotError> {
    read_snapshot("bad.pickle", bytes, bytes.len() as u64)
}

fn err(bytes: &[u8]) -> SnapshotError {
    match read(bytes) {
        Ok(_) => panic!("{bytes:?} decoded"),
        Err(e) => {
            assert!(e.to_string().starts_with("bad.pickle: "), "{e}");
            e
        }
    }
}

#[test]
fn truncated_at_every_offset_of_a_real_snapshot() {
    for name in [
        "angelolmn__HitsBE__my_snapshot.pickle",
        "albi2__thesis-text-to-SQL__dump_snapshot.pickle@b4c280ec",
    ] {
        let data = std::fs::read(corpus(name)).unwrap();
        assert!(analyze(name, &data[..], data.len() as u64).is_ok());
        for cut in 0..data.len() {
            let e = read_snapshot(name, &data[..cut], cut as u64)
                .err()
                .unwrap_or_else(|| panic!("{name} cut at {cut} decoded"));
            assert!(e.to_string().starts_with(name), "{e}");
            // The offset is inside the prefix (or the prefix is empty).
            if let Some(at) = e.offset {
                assert!(at <= cut as u64, "{e}");
            }
            assert!(
                matches!(
                    e.problem,
                    Problem::Truncated | Problem::NotAPickle | Problem::LengthBeyondInput { .. }
                ),
                "cut at {cut}: {e}"
            );
        }
    }
}

#[test]
fn unknown_opcode_names_byte_and_offset() {
    let e = err(b"\x80\x04\xff.");
    assert_eq!(
        (e.offset, e.problem.clone()),
        (Some(2), Problem::UnknownOpcode(0xff))
    );
    assert_eq!(
        e.to_string(),
        "bad.pickle: at byte 2: unknown pickle opcode 0xff"
    );
}

#[test]
fn class_references_and_calls_are_refused_not_run() {
    // pickle.dumps(os.system, 2)-like: GLOBAL 'os system'.
    let e = err(b"\x80\x02cos\nsystem\nq\x00.");
    assert_eq!(
        (e.offset, e.problem),
        (Some(2), Problem::NotPlainData("GLOBAL"))
    );
    // Protocol 4 STACK_GLOBAL after two strings, then REDUCE.
    let e = err(b"\x80\x04\x8c\x02os\x8c\x06system\x93\x8c\x02ls\x85R.");
    assert_eq!(
        (e.offset, e.problem),
        (Some(14), Problem::NotPlainData("STACK_GLOBAL"))
    );
    for (op, name) in [
        (b'R', "REDUCE"),
        (b'b', "BUILD"),
        (b'o', "OBJ"),
        (0x81, "NEWOBJ"),
        (0x92, "NEWOBJ_EX"),
        (0x82, "EXT1"),
        (b'Q', "BINPERSID"),
    ] {
        let e = err(&[0x80, 4, b'N', b'N', op, b'.']);
        assert_eq!(
            (e.offset, e.problem),
            (Some(4), Problem::NotPlainData(name))
        );
    }
}

#[test]
fn nesting_bombs_are_refused_without_recursion() {
    // 200 000 nested lists: ] × n then APPEND × (n - 1).
    let n = 200_000;
    let mut p = vec![0x80, 4];
    p.extend(std::iter::repeat_n(b']', n));
    p.extend(std::iter::repeat_n(b'a', n - 1));
    p.push(b'.');
    assert_eq!(err(&p).problem, Problem::TooDeep(64));
    // A million MARKs: bounded by the input, ends as truncated.
    let mut p = vec![0x80, 4];
    p.extend(std::iter::repeat_n(b'(', 1_000_000));
    assert_eq!(err(&p).problem, Problem::Truncated);
    // A list appended into itself (through the memo) is refused.
    assert!(matches!(
        err(b"\x80\x04]\x94h\x00a.").problem,
        Problem::Malformed(_)
    ));
    // A container changed after being nested (the only way to a cycle or to
    // grow depth unseen) is refused.
    assert!(matches!(
        err(b"\x80\x04]\x94]\x94h\x01a0h\x01h\x00a.").problem,
        Problem::Malformed(_)
    ));
}

#[test]
fn huge_lengths_are_errors_not_allocations() {
    // BINUNICODE8 claiming 10 GB in a 20-byte file.
    let mut p = vec![0x80, 4, 0x8d];
    p.extend((10u64 << 30).to_le_bytes());
    p.extend(b"abc.");
    let e = err(&p);
    assert_eq!(e.offset, Some(11));
    assert!(
        matches!(e.problem, Problem::LengthBeyondInput { claimed, remaining: 4 } if claimed == 10 << 30),
        "{e}"
    );
    // LONG4 claiming 1 GB of digits.
    let e = err(b"\x80\x04\x8b\x00\x00\x00\x40\x00.");
    assert!(
        matches!(
            e.problem,
            Problem::LengthBeyondInput {
                claimed: 0x4000_0000,
                ..
            }
        ),
        "{e}"
    );
    // FRAME claiming more than the input.
    let e = err(b"\x80\x04\x95\xff\xff\xff\xff\x00\x00\x00\x00N.");
    assert!(
        matches!(e.problem, Problem::LengthBeyondInput { .. }),
        "{e}"
    );
    // A sparse memo index far beyond the input.
    assert!(matches!(
        err(b"\x80\x04Nr\xff\xff\xff\x7f.").problem,
        Problem::Malformed(_)
    ));
}

#[test]
fn pickles_that_multiply_themselves_in_memory_are_stopped() {
    // 8 MB of `]a` (an empty list appended to a list, over and over): each
    // 2-byte pair would cost about 80 bytes decoded.
    let mut p = vec![0x80, 4, b']'];
    for _ in 0..4_000_000 {
        p.extend(b"]a");
    }
    p.push(b'.');
    assert!(matches!(err(&p).problem, Problem::TooLarge { .. }));
    // 8 MB of MEMOIZE after one value: 16 bytes of memo per input byte.
    let mut p = vec![0x80, 4, b'N'];
    p.extend(std::iter::repeat_n(0x94, 8_000_000));
    p.push(b'.');
    assert!(matches!(err(&p).problem, Problem::TooLarge { .. }));
    // 16 MB of BINGET (the decoder's fast path for runs of GETs): 8 bytes
    // of stack per input byte.
    let mut p = vec![0x80, 4, b'N', 0x94];
    for _ in 0..8_000_000 {
        p.extend(b"h\x00");
    }
    p.push(b'.');
    assert!(matches!(err(&p).problem, Problem::TooLarge { .. }));
}

#[test]
fn a_missing_memo_entry_in_a_run_of_gets_names_its_opcode() {
    let e = err(b"\x80\x04N\x94h\x00h\x00j\x07\x00\x00\x00.");
    assert_eq!((e.offset, e.problem), (Some(8), Problem::MemoMissing(7)));
    // A GET cut by the end of the input: the offset where its argument is missing.
    let e = err(b"\x80\x04N\x94h\x00j\x00\x00");
    assert_eq!((e.offset, e.problem), (Some(7), Problem::Truncated));
}

#[test]
fn huge_integers_decode_but_are_not_sizes() {
    // A 100-byte integer is a value (saturated to "oversized"), so a dict
    // holding one still decodes; as a trace entry's size it is an error.
    let mut p = b"\x80\x04}\x94(\x8c\x08segments\x94]\x94\x8c\rdevice_traces\x94]\x94]\x94(}\x94(\x8c\x06action\x94\x8c\x05alloc\x94\x8c\x04size\x94\x8b\x64\x00\x00\x00".to_vec();
    p.extend([0x11; 100]);
    p.extend(b"ueau.");
    let e = err(&p);
    assert!(
        matches!(&e.problem, Problem::BadField(m) if m.contains("'size'")),
        "{e}"
    );
}

#[test]
fn other_pickles_say_they_are_not_snapshots() {
    // pickle.dumps({'a': 1}, protocol=4)
    let e = err(b"\x80\x04\x95\n\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01a\x94K\x01s.");
    assert_eq!(e.offset, None);
    assert_eq!(e.to_string(), "bad.pickle: a Python pickle, but not a PyTorch memory snapshot: a dict with keys [\"a\"] and no 'segments'");
    assert!(matches!(
        err(b"\x80\x04K\x01.").problem,
        Problem::NotASnapshot(_)
    ));
    assert!(matches!(
        err(b"\x80\x04]\x94.").problem,
        Problem::NotASnapshot(_)
    ));
    assert!(matches!(
        err(b"\x80\x01N.").problem,
        Problem::UnsupportedProtocol(1)
    ));
    assert!(matches!(err(b"{\"json\": 1}").problem, Problem::NotAPickle));
    assert!(matches!(
        err(b"\x80\x04h\x05.").problem,
        Problem::MemoMissing(5)
    ));
}

#[test]
fn pytorch_2_0_blocks_with_history() {
    // pickle.dumps({'segments': [{'device': 0, 'address': 1000, 'total_size': 2097152, 'stream': 0,
    //   'blocks': [{'size': 1024, 'state': 'active_allocated', 'history': [{'addr': 1000,
    //   'real_size': 1000, 'frames': [{'filename': 'train.py', 'line': 7, 'name': 'step'}]}]},
    //   {'size': 2096128, 'state': 'inactive'}]}], 'device_traces': [[]]}, protocol=2)
    let p = b"\x80\x02}q\x00(X\x08\x00\x00\x00segmentsq\x01]q\x02}q\x03(X\x06\x00\x00\x00deviceq\x04K\x00X\x07\x00\x00\x00addressq\x05M\xe8\x03X\n\x00\x00\x00total_sizeq\x06J\x00\x00 \x00X\x06\x00\x00\x00streamq\x07K\x00X\x06\x00\x00\x00blocksq\x08]q\t(}q\n(X\x04\x00\x00\x00sizeq\x0bM\x00\x04X\x05\x00\x00\x00stateq\x0cX\x10\x00\x00\x00active_allocatedq\rX\x07\x00\x00\x00historyq\x0e]q\x0f}q\x10(X\x04\x00\x00\x00addrq\x11M\xe8\x03X\t\x00\x00\x00real_sizeq\x12M\xe8\x03X\x06\x00\x00\x00framesq\x13]q\x14}q\x15(X\x08\x00\x00\x00filenameq\x16X\x08\x00\x00\x00train.pyq\x17X\x04\x00\x00\x00lineq\x18K\x07X\x04\x00\x00\x00nameq\x19X\x04\x00\x00\x00stepq\x1auauau}q\x1b(h\x0bJ\x00\xfc\x1f\x00h\x0cX\x08\x00\x00\x00inactiveq\x1cueuaX\r\x00\x00\x00device_tracesq\x1d]q\x1e]q\x1fau.";
    let r = analyze("h.pickle", &p[..], p.len() as u64).unwrap();
    assert_eq!(r.len(), 1);
    let d = &r[0];
    assert_eq!(d.format, oomscope_report::SnapshotFormat::BlocksWithHistory);
    // The block is live from the start with its history's real size.
    assert_eq!(
        (
            d.initial_allocated_bytes,
            d.peak_allocated_bytes,
            d.allocated_requested_bytes
        ),
        (1000, 1000, 1000)
    );
    assert_eq!(
        (
            d.free_internal_bytes,
            d.free_external_bytes,
            d.reserved_bytes
        ),
        (24, 2096128, 2097152)
    );
    assert_eq!(d.live_at_peak[0].frame, "step train.py:7");
}

#[test]
fn bare_list_of_segments() {
    // pickle.dumps([{'device': 0, 'address': 4096, 'total_size': 2097152, 'stream': 0,
    //   'segment_type': 'small', 'blocks': [{'size': 512, 'requested_size': 500,
    //   'state': 'active_allocated', 'frames': []}, {'size': 2096640, 'requested_size': 0,
    //   'state': 'inactive', 'frames': []}]}], protocol=3)
    let p = b"\x80\x03]q\x00}q\x01(X\x06\x00\x00\x00deviceq\x02K\x00X\x07\x00\x00\x00addressq\x03M\x00\x10X\n\x00\x00\x00total_sizeq\x04J\x00\x00 \x00X\x06\x00\x00\x00streamq\x05K\x00X\x0c\x00\x00\x00segment_typeq\x06X\x05\x00\x00\x00smallq\x07X\x06\x00\x00\x00blocksq\x08]q\t(}q\n(X\x04\x00\x00\x00sizeq\x0bM\x00\x02X\x0e\x00\x00\x00requested_sizeq\x0cM\xf4\x01X\x05\x00\x00\x00stateq\rX\x10\x00\x00\x00active_allocatedq\x0eX\x06\x00\x00\x00framesq\x0f]q\x10u}q\x11(h\x0bJ\x00\xfe\x1f\x00h\x0cK\x00h\rX\x08\x00\x00\x00inactiveq\x12h\x0f]q\x13ueua.";
    let r = analyze("bare.pickle", &p[..], p.len() as u64).unwrap();
    assert_eq!(
        r[0].format,
        oomscope_report::SnapshotFormat::BareSegmentList
    );
    assert_eq!(
        (
            r[0].peak_allocated_bytes,
            r[0].peak_event_index,
            r[0].trace_events
        ),
        (500, None, 0)
    );
    assert_eq!(
        (
            r[0].active_allocated_bytes,
            r[0].inactive_bytes,
            r[0].reserved_bytes
        ),
        (512, 2096640, 2097152)
    );
}
