//! Lazy XSpace reading: find the planes that matter and skip the others
//! without materialising them.
//!
//! An `XSpace` is `repeated XPlane planes = 1` plus a few string lists. The
//! reader walks the top-level fields by hand (tag, length), reads only the
//! first fields of each plane to learn its name (`XPlane.name = 2`, written
//! right after `id = 1`), and decodes a plane with prost only when it is wanted.
//! Over a random-access source the skipped planes are never read at all.
//! Gzip is not random access: a gzipped XSpace is decoded as a stream and the
//! unwanted planes are decompressed and dropped as they pass.

use crate::error::{XlaError, XlaErrorKind};
use crate::source::{
    decode_varint, read_field_header, read_range, split_tag, ReadAt, SequentialReader, WireError,
    WireType,
};
use oomscope_proto::prost::Message;
use oomscope_proto::tensorflow::profiler::{x_stat, XPlane, XStat};
use std::io::{self, Read};

/// The plane holding one `XEventMetadata` per compiled module with its HloProto.
pub const METADATA_PLANE: &str = "/host:metadata";
/// The plane holding runtime allocator events (`MemoryAllocation`, ...).
pub const HOST_CPU_PLANE: &str = "/host:CPU";

const XSPACE_PLANES: u32 = 1;
/// `XSpace.hostnames`: the host the profile was taken on (XProf names the
/// file after it too: `<host>.xplane.pb`).
const XSPACE_HOSTNAMES: u32 = 4;
/// A hostname longer than this is not kept (a corrupt length).
const MAX_HOSTNAME_BYTES: u64 = 1024;
const XPLANE_NAME: u32 = 2;
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether the source starts with the gzip magic bytes.
pub fn is_gzip(src: &dyn ReadAt) -> bool {
    let mut magic = [0u8; 2];
    src.len() >= 2 && src.read_at(0, &mut magic).is_ok() && magic == GZIP_MAGIC
}

fn wire_error(input: &str, what: &str, e: WireError) -> XlaError {
    match e {
        WireError::Truncated(why) => XlaError::new(input, XlaErrorKind::Truncated, format!("{what} is truncated: {why}")),
        WireError::Overrun { field, declared, remaining } => XlaError::new(
            input,
            XlaErrorKind::Truncated,
            format!("{what} is truncated or corrupt: field {field} declares {declared} bytes but only {remaining} remain"),
        ),
        WireError::Malformed(why) => XlaError::new(input, XlaErrorKind::Malformed, format!("{what} is not a valid protobuf: {why}")),
        WireError::Io(e) => XlaError::new(input, XlaErrorKind::Io, format!("cannot read {what}: {e}")),
    }
}

/// Most bytes of one wanted plane kept in memory (see `read_into`).
const MAX_KEPT_BYTES: u64 = 1 << 30;

/// Reads every plane whose name `wanted` accepts, in file order.
/// `progress(done, total)` reports bytes of the source consumed.
pub fn read_planes(
    input: &str,
    src: &dyn ReadAt,
    wanted: &dyn Fn(&str) -> bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Vec<XPlane>, XlaError> {
    read_space(input, src, wanted, progress).map(|(planes, _)| planes)
}

/// [`read_planes`], and the space's hostnames, in one pass.
pub fn read_space(
    input: &str,
    src: &dyn ReadAt,
    wanted: &dyn Fn(&str) -> bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(Vec<XPlane>, Vec<String>), XlaError> {
    let mut hostnames = Vec::new();
    let planes = if is_gzip(src) {
        read_planes_gzip(input, src, wanted, progress, &mut hostnames)
    } else {
        read_planes_random_access(input, src, wanted, progress, &mut hostnames)
    }?;
    Ok((planes, hostnames))
}

/// Reads the first plane named `name` (e.g. [`HOST_CPU_PLANE`]), if any.
pub fn read_plane(input: &str, src: &dyn ReadAt, name: &str) -> Result<Option<XPlane>, XlaError> {
    let planes = read_planes(input, src, &|n| n == name, &mut |_, _| {})?;
    Ok(planes.into_iter().next())
}

fn decode_plane(input: &str, bytes: &[u8]) -> Result<XPlane, XlaError> {
    XPlane::decode(bytes).map_err(|e| {
        XlaError::new(
            input,
            XlaErrorKind::Malformed,
            format!("an XPlane cannot be decoded: {e}"),
        )
    })
}

fn read_planes_random_access(
    input: &str,
    src: &dyn ReadAt,
    wanted: &dyn Fn(&str) -> bool,
    progress: &mut dyn FnMut(u64, u64),
    hostnames: &mut Vec<String>,
) -> Result<Vec<XPlane>, XlaError> {
    let total = src.len();
    let mut planes = Vec::new();
    let mut pos = 0u64;
    while pos < total {
        let header =
            read_field_header(src, pos, total).map_err(|e| wire_error(input, "the XSpace", e))?;
        if header.field == XSPACE_PLANES && header.wire == WireType::Len {
            let name = peek_plane_name(src, header.payload_start, header.payload_end)
                .map_err(|e| wire_error(input, "an XPlane", e))?;
            if wanted(&name) {
                let bytes = read_range(src, header.payload_start, header.payload_end)
                    .map_err(|e| wire_error(input, "an XPlane", e))?;
                planes.push(decode_plane(input, &bytes)?);
            }
        } else if header.field == XSPACE_HOSTNAMES
            && header.wire == WireType::Len
            && header.payload_end - header.payload_start <= MAX_HOSTNAME_BYTES
        {
            let bytes = read_range(src, header.payload_start, header.payload_end)
                .map_err(|e| wire_error(input, "the XSpace", e))?;
            hostnames.push(String::from_utf8_lossy(&bytes).into_owned());
        } else if header.field <= 4 && header.wire != WireType::Len {
            return Err(XlaError::new(
                input,
                XlaErrorKind::Malformed,
                format!(
                    "not an XSpace: field {} has the wrong wire type",
                    header.field
                ),
            ));
        }
        pos = header.payload_end;
        progress(pos, total);
    }
    Ok(planes)
}

/// The plane's name, read from its first fields (empty when it has none).
fn peek_plane_name(src: &dyn ReadAt, start: u64, end: u64) -> Result<String, WireError> {
    let mut pos = start;
    while pos < end {
        let header = read_field_header(src, pos, end)?;
        if header.field == XPLANE_NAME && header.wire == WireType::Len {
            let bytes = read_range(src, header.payload_start, header.payload_end)?;
            return Ok(String::from_utf8_lossy(&bytes).into_owned());
        }
        pos = header.payload_end;
    }
    Ok(String::new())
}

/// A forward-only protobuf reader over the decompressed stream.
struct Stream<'a> {
    inner: flate2::read::MultiGzDecoder<SequentialReader<'a>>,
}

impl Stream<'_> {
    fn compressed_position(&self) -> u64 {
        self.inner.get_ref().position()
    }

    /// Reads a varint, appending its raw bytes to `raw` when given; `Ok(None)`
    /// at a clean end of stream before the first byte.
    fn varint(&mut self, mut raw: Option<&mut Vec<u8>>) -> Result<Option<u64>, WireError> {
        let mut bytes = [0u8; 10];
        for i in 0..bytes.len() {
            let mut byte = [0u8; 1];
            if self.inner.read(&mut byte).map_err(gzip_error)? == 0 {
                return if i == 0 {
                    Ok(None)
                } else {
                    Err(WireError::Truncated("the input ends inside a varint"))
                };
            }
            if let Some(slot) = bytes.get_mut(i) {
                *slot = byte[0];
            }
            if let Some(raw) = raw.as_deref_mut() {
                raw.push(byte[0]);
            }
            if byte[0] & 0x80 == 0 {
                let (value, _) = decode_varint(bytes.get(..=i).unwrap_or(&[]))?;
                return Ok(Some(value));
            }
        }
        Err(WireError::Malformed("varint longer than 10 bytes".into()))
    }

    fn required_varint(&mut self, raw: Option<&mut Vec<u8>>) -> Result<u64, WireError> {
        self.varint(raw)?
            .ok_or(WireError::Truncated("the input ends inside a field"))
    }

    /// Appends exactly `n` bytes to `out`; the vector grows as data arrives,
    /// so a lying length costs no more memory than the data really present.
    fn read_into(&mut self, n: u64, out: &mut Vec<u8>) -> Result<(), WireError> {
        // A kept plane (HloProtos, allocator events) of a real profile is far
        // below this; a gzip bomb declaring more must not exhaust the worker.
        if (out.len() as u64).saturating_add(n) > MAX_KEPT_BYTES {
            return Err(WireError::Malformed(format!(
                "a wanted plane is larger than {} MiB; oomscope reads at most that much of one plane",
                MAX_KEPT_BYTES >> 20
            )));
        }
        let got = (&mut self.inner)
            .take(n)
            .read_to_end(out)
            .map_err(gzip_error)?;
        if (got as u64) < n {
            return Err(WireError::Truncated("the input ends inside a field"));
        }
        Ok(())
    }

    fn skip(&mut self, n: u64) -> Result<(), WireError> {
        let got = io::copy(&mut (&mut self.inner).take(n), &mut io::sink()).map_err(gzip_error)?;
        if got < n {
            return Err(WireError::Truncated("the input ends inside a field"));
        }
        Ok(())
    }

    /// Skips (or appends to `keep`) the payload of a field of `wire` type.
    fn field_payload(
        &mut self,
        wire: WireType,
        keep: Option<&mut Vec<u8>>,
    ) -> Result<u64, WireError> {
        match wire {
            WireType::Varint => {
                let mut raw = Vec::new();
                self.required_varint(Some(&mut raw))?;
                let n = raw.len() as u64;
                if let Some(keep) = keep {
                    keep.extend_from_slice(&raw);
                }
                Ok(n)
            }
            WireType::Fixed64 | WireType::Fixed32 => {
                let n = if wire == WireType::Fixed64 { 8 } else { 4 };
                match keep {
                    Some(keep) => self.read_into(n, keep)?,
                    None => self.skip(n)?,
                }
                Ok(n)
            }
            WireType::Len => {
                let mut raw = Vec::new();
                let len = self.required_varint(Some(&mut raw))?;
                let header = raw.len() as u64;
                match keep {
                    Some(keep) => {
                        keep.extend_from_slice(&raw);
                        self.read_into(len, keep)?;
                    }
                    None => self.skip(len)?,
                }
                Ok(header.saturating_add(len))
            }
        }
    }
}

fn gzip_error(e: io::Error) -> WireError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        WireError::Truncated("the gzip stream ends early")
    } else {
        WireError::Malformed(format!("gzip: {e}"))
    }
}

fn read_planes_gzip(
    input: &str,
    src: &dyn ReadAt,
    wanted: &dyn Fn(&str) -> bool,
    progress: &mut dyn FnMut(u64, u64),
    hostnames: &mut Vec<String>,
) -> Result<Vec<XPlane>, XlaError> {
    let total = src.len();
    let mut stream = Stream {
        inner: flate2::read::MultiGzDecoder::new(SequentialReader::new(src)),
    };
    let mut planes = Vec::new();
    let err = |e| wire_error(input, "the gzipped XSpace", e);
    while let Some(tag) = stream.varint(None).map_err(err)? {
        let (field, wire) = split_tag(tag).map_err(err)?;
        if field == XSPACE_PLANES && wire == WireType::Len {
            let len = stream.required_varint(None).map_err(err)?;
            if let Some(plane) = stream_plane(input, &mut stream, len, wanted)? {
                planes.push(plane);
            }
        } else if field == XSPACE_HOSTNAMES && wire == WireType::Len {
            // Kept only when short: a corrupt length is skipped, not held.
            let len = stream.required_varint(None).map_err(err)?;
            if len <= MAX_HOSTNAME_BYTES {
                let mut name = Vec::new();
                stream.read_into(len, &mut name).map_err(err)?;
                hostnames.push(String::from_utf8_lossy(&name).into_owned());
            } else {
                stream.skip(len).map_err(err)?;
            }
        } else if field <= 4 && wire != WireType::Len {
            return Err(XlaError::new(
                input,
                XlaErrorKind::Malformed,
                format!("not an XSpace: field {field} has the wrong wire type"),
            ));
        } else {
            stream.field_payload(wire, None).map_err(err)?;
        }
        progress(stream.compressed_position(), total);
    }
    Ok(planes)
}

/// Reads one plane of `len` bytes from the stream: its fields are kept until
/// the name is known, then the rest is kept (wanted) or dropped.
fn stream_plane(
    input: &str,
    stream: &mut Stream<'_>,
    len: u64,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Option<XPlane>, XlaError> {
    let err = |e| wire_error(input, "an XPlane", e);
    let mut kept = Vec::new();
    let mut consumed = 0u64;
    while consumed < len {
        let before = kept.len();
        let tag = stream.required_varint(Some(&mut kept)).map_err(err)?;
        let (field, wire) = split_tag(tag).map_err(err)?;
        let tag_len = (kept.len() - before) as u64;
        let payload_start = kept.len();
        let payload = stream.field_payload(wire, Some(&mut kept)).map_err(err)?;
        consumed = consumed.saturating_add(tag_len).saturating_add(payload);
        if consumed > len {
            return Err(err(WireError::Overrun {
                field,
                declared: payload,
                remaining: len.saturating_sub(consumed - payload),
            }));
        }
        if field == XPLANE_NAME && wire == WireType::Len {
            let name_bytes = kept.get(payload_start..).unwrap_or(&[]);
            // Skip the length prefix of the name.
            let (_, prefix) = decode_varint(name_bytes).map_err(err)?;
            let name =
                String::from_utf8_lossy(name_bytes.get(prefix..).unwrap_or(&[])).into_owned();
            if !wanted(&name) {
                stream.skip(len - consumed).map_err(err)?;
                return Ok(None);
            }
            stream.read_into(len - consumed, &mut kept).map_err(err)?;
            return decode_plane(input, &kept).map(Some);
        }
    }
    Ok(None)
}

/// A stat's value as a string: `str_value`, or `ref_value` naming an
/// `XStatMetadata` whose name is the string.
pub fn stat_str<'a>(plane: &'a XPlane, stat: &'a XStat) -> Option<&'a str> {
    match stat.value.as_ref()? {
        x_stat::Value::StrValue(s) => Some(s.as_str()),
        x_stat::Value::RefValue(id) => {
            let id = i64::try_from(*id).ok()?;
            plane.stat_metadata.get(&id).map(|m| m.name.as_str())
        }
        _ => None,
    }
}

/// A stat's value as an integer (`int64_value` or `uint64_value`).
pub fn stat_int(stat: &XStat) -> Option<i64> {
    match stat.value.as_ref()? {
        x_stat::Value::Int64Value(v) => Some(*v),
        x_stat::Value::Uint64Value(v) => i64::try_from(*v).ok(),
        _ => None,
    }
}

/// The ids of the stat metadata named `name` (ASCII case-insensitive).
fn stat_ids_named(plane: &XPlane, name: &str) -> Vec<i64> {
    let mut ids: Vec<i64> = plane
        .stat_metadata
        .iter()
        .filter(|(_, m)| m.name.eq_ignore_ascii_case(name))
        .map(|(&id, _)| id)
        .collect();
    ids.sort_unstable();
    ids
}

/// One compiled module found in `/host:metadata`.
pub struct ProfiledModule<'a> {
    /// XProf's program id: the `program_id` stat, else the event metadata id.
    pub program_id: i64,
    pub hlo: crate::Hlo<'a>,
}

/// The HloProtos of a `/host:metadata` plane, by program id (first wins on
/// duplicates, like XProf), in program-id order. Stats that do not decode as
/// an HloProto are skipped, as XProf does.
pub fn hlo_protos_from_metadata_plane(plane: &XPlane) -> Vec<ProfiledModule<'_>> {
    let hlo_stat_ids = stat_ids_named(plane, "Hlo Proto");
    let program_id_stat_ids = stat_ids_named(plane, "program_id");
    let mut event_ids: Vec<i64> = plane.event_metadata.keys().copied().collect();
    event_ids.sort_unstable();
    let mut modules: Vec<ProfiledModule> = Vec::new();
    for event_id in event_ids {
        let Some(event) = plane.event_metadata.get(&event_id) else {
            continue;
        };
        let hlo_bytes = event
            .stats
            .iter()
            .filter(|s| hlo_stat_ids.contains(&s.metadata_id))
            .find_map(|s| match &s.value {
                Some(x_stat::Value::BytesValue(b)) => Some(b),
                _ => None,
            });
        let Some(hlo_bytes) = hlo_bytes else { continue };
        let Ok(hlo) = crate::hlo::decode(hlo_bytes.as_slice()) else {
            continue;
        };
        let program_id = event
            .stats
            .iter()
            .filter(|s| program_id_stat_ids.contains(&s.metadata_id))
            .find_map(stat_int)
            .unwrap_or(event.id);
        if modules.iter().any(|m| m.program_id == program_id) {
            continue;
        }
        modules.push(ProfiledModule { program_id, hlo });
    }
    modules.sort_by_key(|m| m.program_id);
    modules
}
