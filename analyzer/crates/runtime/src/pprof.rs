//! Decoding a pprof `profile.proto` as JAX writes it, and checking the
//! references inside it before anything trusts them.
//!
//! JAX (`jax.profiler.device_memory_profile()`, via xla's `PyClient::HeapProfile`)
//! writes sample types `[allocations/count, space/bytes]`, one sample per
//! (traceback, buffer size, device) with the number of buffers and their
//! total bytes, a `kind` label (`buffer` or `executable`) and, for buffers,
//! a `device` label: a string (`TPU_3(process=0,(1,0,0,1))`, `gpu:0`,
//! `TFRT_CPU_5`, `cpu:5`, as the device's `DebugString()`) in current
//! versions, a number (the device id) in early ones. Locations hold one line
//! each (a Python code object and line); functions hold the code's name and
//! file. The sample types are found by name, not position.

use crate::error::{RuntimeError, RuntimeErrorKind};
use crate::frames::{bounded_name, frame_kind};
use oomscope_proto::perftools::profiles as pb;
use oomscope_proto::prost::Message;
use oomscope_report::Frame;
use std::borrow::Cow;
use std::collections::HashMap;

/// What a sample's memory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SampleKind {
    /// A live device buffer (`kind=buffer`).
    Buffer,
    /// Compiled program code (`kind=executable`).
    Executable,
}

/// One sample with its references checked: `locations` index into
/// [`CheckedProfile::locations`], `device` into [`CheckedProfile::devices`].
#[derive(Debug, Clone)]
pub struct CheckedSample {
    pub locations: Vec<u32>,
    pub bytes: u64,
    pub count: u64,
    pub kind: SampleKind,
    pub device: Option<u32>,
    /// The runtime could not tell the size (an executable's code size of -1).
    pub size_unknown: bool,
}

/// A profile whose ids and string indices all resolve.
#[derive(Debug, Clone, Default)]
pub struct CheckedProfile {
    pub samples: Vec<CheckedSample>,
    /// Frames of each location, innermost (inlined) first.
    pub locations: Vec<Vec<Frame>>,
    /// Device names, in order of first appearance.
    pub devices: Vec<String>,
}

fn invalid(input: &str, message: String) -> RuntimeError {
    RuntimeError::new(input, RuntimeErrorKind::InvalidProfile, message)
}

/// Decode the (already gunzipped) protobuf bytes.
pub fn decode(input: &str, bytes: &[u8]) -> Result<pb::Profile, RuntimeError> {
    pb::Profile::decode(bytes).map_err(|e| {
        RuntimeError::new(
            input,
            RuntimeErrorKind::Protobuf,
            format!("not a pprof profile (profile.proto): {e}"),
        )
    })
}

struct Strings<'a> {
    input: &'a str,
    table: &'a [String],
}

impl<'a> Strings<'a> {
    /// String `index`; `what` names the referring field in the error (built
    /// only on error: this runs for every label of every sample).
    fn get(&self, index: i64, what: impl FnOnce() -> String) -> Result<&'a str, RuntimeError> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.table.get(i))
            .map(String::as_str)
            .ok_or_else(|| {
                invalid(
                    self.input,
                    format!(
                        "{} refers to string {index}, but the string table has {} entries",
                        what(),
                        self.table.len()
                    ),
                )
            })
    }
}

/// Index of the sample value of type `name` with unit `unit`.
fn value_index(
    strings: &Strings,
    types: &[pb::ValueType],
    name: &str,
    unit: &str,
) -> Result<Option<usize>, RuntimeError> {
    for (i, t) in types.iter().enumerate() {
        let ty = strings.get(t.r#type, || "a sample type".to_string())?;
        let un = strings.get(t.unit, || "a sample unit".to_string())?;
        if ty == name && un == unit {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Check every reference of `profile` and resolve its locations to frames.
pub fn check(input: &str, profile: &pb::Profile) -> Result<CheckedProfile, RuntimeError> {
    let strings = Strings {
        input,
        table: &profile.string_table,
    };
    let space = value_index(&strings, &profile.sample_type, "space", "bytes")?;
    let Some(space) = space else {
        let mut types = Vec::new();
        for t in &profile.sample_type {
            types.push(format!(
                "{}/{}",
                strings.get(t.r#type, || "a sample type".to_string())?,
                strings.get(t.unit, || "a sample unit".to_string())?
            ));
        }
        return Err(invalid(
            input,
            format!(
                "no space/bytes sample type, so this is not a device memory profile (sample types: [{}])",
                types.join(", ")
            ),
        ));
    };
    let allocations = value_index(&strings, &profile.sample_type, "allocations", "count")?;

    let mut functions: HashMap<u64, (&str, &str)> = HashMap::with_capacity(profile.function.len());
    for f in &profile.function {
        let name = strings.get(f.name, || format!("function {}'s name", f.id))?;
        let file = strings.get(f.filename, || format!("function {}'s file name", f.id))?;
        functions.entry(f.id).or_insert((name, file));
    }

    let mut location_index: HashMap<u64, u32> = HashMap::with_capacity(profile.location.len());
    let mut locations: Vec<Vec<Frame>> = Vec::with_capacity(profile.location.len());
    for loc in &profile.location {
        if location_index.contains_key(&loc.id) {
            continue;
        }
        let mut frames = Vec::with_capacity(loc.line.len());
        for line in &loc.line {
            let (name, file) = functions.get(&line.function_id).ok_or_else(|| {
                invalid(
                    input,
                    format!(
                        "location {} refers to function {}, which the profile does not define",
                        loc.id, line.function_id
                    ),
                )
            })?;
            frames.push(Frame {
                function: bounded_name(name),
                file: bounded_name(file),
                line: u32::try_from(line.line).unwrap_or(0),
                kind: frame_kind(file),
            });
        }
        location_index.insert(loc.id, locations.len() as u32);
        locations.push(frames);
    }

    let kind_key = "kind";
    let device_key = "device";
    let mut devices: Vec<String> = Vec::new();
    let mut device_index: HashMap<String, u32> = HashMap::new();
    let mut samples = Vec::with_capacity(profile.sample.len());
    for (i, s) in profile.sample.iter().enumerate() {
        if s.value.len() != profile.sample_type.len() {
            return Err(invalid(
                input,
                format!(
                    "sample {i} has {} values for {} sample types",
                    s.value.len(),
                    profile.sample_type.len()
                ),
            ));
        }
        let mut kind = None;
        let mut device = None;
        for label in &s.label {
            let key = strings.get(label.key, || format!("sample {i}'s label key"))?;
            if key == kind_key {
                let text = strings.get(label.str, || format!("sample {i}'s kind label"))?;
                kind = Some(if text == "executable" {
                    SampleKind::Executable
                } else {
                    SampleKind::Buffer
                });
            } else if key == device_key {
                // Early jaxlib wrote the device id as a number; later ones its DebugString.
                let name: Cow<str> = if label.str != 0 {
                    Cow::Borrowed(strings.get(label.str, || format!("sample {i}'s device label"))?)
                } else {
                    Cow::Owned(label.num.to_string())
                };
                let idx = match device_index.get(name.as_ref()) {
                    Some(&idx) => idx,
                    None => {
                        let idx = devices.len() as u32;
                        devices.push(bounded_name(&name));
                        device_index.insert(name.into_owned(), idx);
                        idx
                    }
                };
                device = Some(idx);
            }
        }
        let kind = kind.unwrap_or(if device.is_some() {
            SampleKind::Buffer
        } else {
            SampleKind::Executable
        });
        let value = |index: usize| s.value.get(index).copied().unwrap_or(0);
        let count = match allocations {
            Some(a) => u64::try_from(value(a)).map_err(|_| {
                invalid(
                    input,
                    format!(
                        "sample {i} has a negative allocations/count value ({})",
                        value(a)
                    ),
                )
            })?,
            None => 1,
        };
        // TPU runtimes report -1 as the code size of an executable they cannot
        // measure (xla's SizeOfGeneratedCodeInBytes); that is "unknown", not a
        // negative size. A negative buffer size is a broken profile.
        let (bytes, size_unknown) = match (u64::try_from(value(space)), kind) {
            (Ok(b), _) => (b, false),
            (Err(_), SampleKind::Executable) => (0, true),
            (Err(_), SampleKind::Buffer) => {
                return Err(invalid(
                    input,
                    format!(
                        "sample {i} has a negative space/bytes value ({})",
                        value(space)
                    ),
                ))
            }
        };
        let mut locs = Vec::with_capacity(s.location_id.len());
        for id in &s.location_id {
            let idx = location_index.get(id).ok_or_else(|| {
                invalid(
                    input,
                    format!(
                        "sample {i} refers to location {id}, which the profile does not define"
                    ),
                )
            })?;
            locs.push(*idx);
        }
        samples.push(CheckedSample {
            locations: locs,
            bytes,
            count,
            kind,
            device,
            size_unknown,
        });
    }
    Ok(CheckedProfile {
        samples,
        locations,
        devices,
    })
}
