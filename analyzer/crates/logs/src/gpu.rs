//! XLA on GPU: "Out of memory while trying to allocate N bytes" with its
//! BufferAssignment stats and "Peak buffers" listing, the BFC allocator's
//! "ran out of memory trying to allocate" with its dump (bins, chunks,
//! `Stats:`), "Failed to allocate request for", and the cuda_malloc_async
//! allocator's "cuMemAllocAsync failed to allocate"; TensorFlow's "OOM when
//! allocating tensor with shape[...] and type T" (same BFC allocator).

use crate::event::{Expected, Field, Raw, Size};
use crate::lines::{payload, Cursor};
use crate::site::{cap_bytes, cap_size, lazy_regex, Glue, Outcome, Site};
use oomscope_report::{MemorySpace, OomKind, TopAllocation};

lazy_regex!(
    re_xla_oom,
    r"Out of memory (?:while trying to allocate|allocating) (?:(\d+) bytes|SIZE)"
);
lazy_regex!(
    re_bfc,
    r"(?:Allocator \(([^)]*)\) ran|Ran) out of memory trying to allocate SIZE(?:\s*\(rounded to (\d+)\))?"
);
lazy_regex!(
    re_failed_request,
    r"Failed to allocate request for SIZE(?:\s*\((\d+)B\))?"
);
lazy_regex!(re_cu_async, r"cuMemAllocAsync failed to allocate (\d+)");
lazy_regex!(re_free_total, r"Free memory/Total memory: (\d+)/(\d+)");
lazy_regex!(
    re_stat,
    r"^(Limit|InUse|MaxInUse|NumAllocs|MaxAllocSize|Reserved|PeakReserved|LargestFreeBlock|PoolBytes|PeakPoolBytes):\s*(\d+)"
);
lazy_regex!(
    re_bin,
    r"^Bin \((\d+)\):\s*Total Chunks: (\d+), Chunks in use: (\d+)\.? SIZE allocated for chunks\.(?: \S+ client-requested for chunks\.)? SIZE in use in bin"
);
lazy_regex!(
    re_chunk,
    r"^(InUse|Free)\s+at\s+\S+\s+(?:next\s+-?\d+\s+)?of size (\d+)"
);
// TF ≤ 1.0 listed every chunk, in use or not, as `Chunk at P of size N`.
lazy_regex!(re_any_chunk, r"^Chunk at \S+ of size \d+$");
lazy_regex!(re_sum_in_use, r"^Sum Total of in-use chunks: SIZE");
lazy_regex!(
    re_pool,
    r"^Total bytes in pool: (\d+)\s+memory_limit_: (\d+)\s+available bytes: (\d+)"
);
lazy_regex!(re_region, r"^Next region of size (\d+)");
lazy_regex!(
    re_assignment_stat,
    r"^([a-z_ ]+) (allocation|fragmentation):\s*SIZE"
);
lazy_regex!(re_buffer, r"^Buffer (\d+):");
lazy_regex!(
    re_tf_oom,
    r"OOM when allocating tensor (?:with|of) shape\s*\[([\d,\s]*)\](?:\s*and type (\w+))?(?:\s*on (\S+))?"
);

/// `... Out of memory while trying to allocate 4000000000 bytes.` (+ BufferAssignment report;
/// `TfAllocatorAdapter`), and PJRT's GPU buffer allocation, `RESOURCE_EXHAUSTED: Out of
/// memory allocating N bytes.` (read only behind its status code: other programs print the
/// same words).
pub fn xla_oom(site: &Site) -> Outcome {
    let Some((text, end)) = site.headline(|t| re_xla_oom().is_match(t)) else {
        return Outcome::NoMatch;
    };
    let head = text.as_str();
    let Some(c) = re_xla_oom().captures(head) else {
        return Outcome::NoMatch;
    };
    let pjrt = c
        .get(0)
        .is_some_and(|m| m.as_str().contains(" allocating "));
    if pjrt && !(head.contains("RESOURCE_EXHAUSTED") || head.contains("Resource exhausted")) {
        return Outcome::NoMatch;
    }
    let mut raw = Raw::new(OomKind::XlaGpu, MemorySpace::Gpu, "xla_gpu_oom", head);
    raw.set(
        Field::Requested,
        cap_bytes(&c, 1).or_else(|| cap_size(&c, 2)),
    );
    let end = read_block(site, end, &mut raw);
    Outcome::Event(Box::new(raw), end)
}

/// `Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.72GiB (rounded to 4000000000)` + dump,
/// in every TensorFlow generation: TF ≤ 1.0 `Ran out of memory trying to allocate X. See logs
/// for memory state.` (no allocator name), TF 1.1 – 1.x `... allocate X.  Current allocation
/// summary follows.` (no rounding; bins print `client-requested for chunks`), then `(rounded
/// to N)requested by op`. The same warning with "The caller indicates that this is not a
/// failure" (TF 2.x: after `with freed_by_count=N.`) is no error.
pub fn bfc(site: &Site) -> Outcome {
    // TF's retry warning (`... with freed_by_count=N.`) adds "The caller
    // indicates that this is not a failure" when the caller will cope; a
    // wrap can put that sentence on the next line.
    let head = site.head();
    let warning = if head.contains("freed_by_count=") && !head.contains("not a failure") {
        site.joined_to(1, Glue::HardWrap)
    } else {
        (head.to_string(), site.next_line())
    };
    if warning.0.contains("not a failure") {
        return Outcome::Ignore(warning.1.max(site.next_line()));
    }
    // `(rounded to N)` is always printed: a wrap can cut the number.
    let complete = |t: &str| re_bfc().captures(t).is_some_and(|c| c.get(3).is_some());
    let found = site
        .headline(complete)
        .or_else(|| site.headline(|t| re_bfc().is_match(t)));
    let Some((text, end)) = found else {
        return Outcome::NoMatch;
    };
    if text.contains("not a failure") {
        return Outcome::Ignore(end);
    }
    let head = text.as_str();
    let Some(c) = re_bfc().captures(head) else {
        return Outcome::NoMatch;
    };
    // The allocator's name says whose memory ran out: `GPU_0_bfc` is the
    // device's, `cuda_host_bfc`/`gpu_host_bfc` the pinned host memory.
    let space = match c.get(1) {
        Some(name) if name.as_str().to_ascii_lowercase().contains("host") => MemorySpace::Host,
        _ => MemorySpace::Gpu,
    };
    let mut raw = Raw::new(OomKind::XlaGpu, space, "bfc_ran_out", head);
    raw.set(Field::Requested, cap_size(&c, 2));
    raw.set_extra("rounded_request_bytes", cap_bytes(&c, 3));
    let end = read_block(site, end, &mut raw);
    Outcome::Event(Box::new(raw), end)
}

/// `Failed to allocate request for 2.99GiB (3206250496B) on device ordinal 0`.
pub fn failed_request(site: &Site) -> Outcome {
    let Some((text, end)) = site.headline(|t| re_failed_request().is_match(t)) else {
        return Outcome::NoMatch;
    };
    let head = text.as_str();
    let Some(c) = re_failed_request().captures(head) else {
        return Outcome::NoMatch;
    };
    let mut raw = Raw::new(
        OomKind::XlaGpu,
        MemorySpace::Gpu,
        "xla_failed_request",
        head,
    );
    raw.set(Field::Requested, cap_size(&c, 1));
    raw.set(Field::Requested, cap_bytes(&c, 2));
    Outcome::Event(Box::new(raw), end)
}

/// `cuMemAllocAsync failed to allocate N bytes: ...` then
/// `Reported by CUDA: Free memory/Total memory: F/T` and `Stats:`.
pub fn cu_mem_alloc_async(site: &Site) -> Outcome {
    let Some((text, end)) = site.headline(|t| re_cu_async().is_match(t)) else {
        return Outcome::NoMatch;
    };
    let head = text.as_str();
    let Some(c) = re_cu_async().captures(head) else {
        return Outcome::NoMatch;
    };
    let mut raw = Raw::new(OomKind::XlaGpu, MemorySpace::Gpu, "cuda_malloc_async", head);
    raw.set(Field::Requested, cap_bytes(&c, 1));
    read_free_total(head, &mut raw);
    let end = read_block(site, end, &mut raw);
    Outcome::Event(Box::new(raw), end)
}

/// TensorFlow: `OOM when allocating tensor with shape[64,2016,9,9] and type
/// float on /job:localhost/.../device:GPU:0 by allocator GPU_0_bfc`. The
/// request is the tensor's size (elements × element size), computed exactly.
pub fn tf_oom(site: &Site) -> Outcome {
    // A wrap can cut the type name: read on until it is a known one.
    let complete = |t: &str| {
        re_tf_oom()
            .captures(t)
            .and_then(|c| c.get(2))
            .is_some_and(|d| element_bytes(d.as_str()).is_some())
    };
    let found = site
        .headline(complete)
        .or_else(|| site.headline(|t| re_tf_oom().is_match(t)));
    let Some((text, end)) = found else {
        return Outcome::NoMatch;
    };
    let head = text.as_str();
    let Some(c) = re_tf_oom().captures(head) else {
        return Outcome::NoMatch;
    };
    let dims: Vec<u64> = c[1]
        .split(',')
        .filter_map(|d| d.trim().parse().ok())
        .collect();
    let dtype = c.get(2).map_or("", |m| m.as_str());
    let device = c.get(3).map_or("", |m| m.as_str()).to_ascii_lowercase();
    let space = if device.contains("device:cpu") {
        MemorySpace::Cpu
    } else {
        MemorySpace::Gpu
    };
    let mut raw = Raw::new(OomKind::XlaGpu, space, "tf_oom_tensor", head);
    let elements = dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
    let bytes = elements
        .zip(element_bytes(dtype))
        .and_then(|(n, b)| n.checked_mul(b));
    raw.set(Field::Requested, bytes.map(Size::exact));
    raw.expect(&[Expected::Field(Field::Requested)]);
    let dims_text: Vec<String> = dims.iter().map(u64::to_string).collect();
    raw.top.push(TopAllocation {
        rank: 1,
        size_bytes: bytes.unwrap_or(0),
        shape: format!("{dtype}[{}]", dims_text.join(",")),
        ..Default::default()
    });
    Outcome::Event(Box::new(raw), end)
}

/// Bytes per element of a TensorFlow dtype name as printed in OOM messages.
fn element_bytes(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "bool" | "int8" | "uint8" | "qint8" | "quint8" => 1,
        "half" | "bfloat16" | "int16" | "uint16" | "qint16" | "quint16" => 2,
        "float" | "int32" | "uint32" | "qint32" => 4,
        "double" | "int64" | "uint64" | "complex64" => 8,
        "complex128" => 16,
        _ => return None,
    })
}

fn read_free_total(p: &str, raw: &mut Raw) {
    if let Some(c) = re_free_total().captures(p) {
        raw.set(Field::Free, cap_bytes(&c, 1));
        raw.set(Field::TotalCapacity, cap_bytes(&c, 2));
    }
}

/// Blank lines tolerated inside a dump.
const MAX_BLANKS: usize = 2;
/// Non-empty bins kept in `extra`.
const MAX_BINS: usize = 32;
/// Peak buffers kept.
const MAX_BUFFERS: usize = 1000;

/// Chunk totals of a BFC dump.
#[derive(Default)]
struct Chunks {
    in_use: u64,
    in_use_bytes: u64,
    free: u64,
    free_bytes: u64,
    largest_free: u64,
}

/// Reads the allocator dump or BufferAssignment report after the headline.
fn read_block(site: &Site, from: usize, raw: &mut Raw) -> usize {
    let mut cur = Cursor::new(site.text, from);
    let mut end = cur.pos();
    let mut blanks = 0;
    let mut chunks = Chunks::default();
    let mut entry: Option<TopAllocation> = None;
    let mut bins = 0usize;
    // The headline's last line may itself have been cut.
    let mut prev_cut = crate::site::may_be_cut(crate::lines::line_before(site.text, from));
    let mut continuations = 0usize;
    while let Some(line) = cur.next_line() {
        let p = payload(line);
        if p.is_empty() {
            blanks += 1;
            if blanks > MAX_BLANKS {
                break;
            }
            continue;
        }
        blanks = 0;
        // Another message (the next rank's copy, a restatement) ends the dump.
        if crate::keywords::starts_new_message(p) {
            break;
        }
        let cut_before = prev_cut;
        prev_cut = crate::site::may_be_cut(line);
        // A bare byte count on a last line with no newline may be cut short.
        let last_cut = cur.pos() == site.text.len() && !site.text.ends_with('\n');
        if !read_line(last_cut, p, raw, &mut chunks, &mut entry, &mut bins) {
            // The rest of a long line a terminal cut (an operator, a label).
            if cut_before
                && continuations < crate::site::MAX_CONTINUATIONS
                && crate::site::is_continuation(line)
            {
                continuations += 1;
                end = cur.pos();
                continue;
            }
            break;
        }
        continuations = 0;
        end = cur.pos();
    }
    push_buffer(raw, &mut entry);
    if chunks.in_use + chunks.free > 0 {
        let exact = |bytes| Some(Size::exact(bytes));
        raw.set_extra("in_use_chunks", exact(chunks.in_use));
        raw.set_extra("in_use_chunks_bytes", exact(chunks.in_use_bytes));
        raw.set_extra("free_chunks", exact(chunks.free));
        raw.set_extra("free_chunks_bytes", exact(chunks.free_bytes));
        raw.set_extra("largest_free_chunk_bytes", exact(chunks.largest_free));
    }
    end
}

fn read_line(
    last_cut: bool,
    p: &str,
    raw: &mut Raw,
    chunks: &mut Chunks,
    entry: &mut Option<TopAllocation>,
    bins: &mut usize,
) -> bool {
    if let Some(rest) = p.strip_prefix("Stats:") {
        // The stats may start on the `Stats:` line itself.
        let rest = rest.trim();
        return rest.is_empty() || read_line(last_cut, rest, raw, chunks, entry, bins);
    }
    if let Some(c) = re_chunk().captures(p) {
        let size = c[2].parse::<u64>().unwrap_or(0);
        if &c[1] == "InUse" {
            chunks.in_use += 1;
            chunks.in_use_bytes = chunks.in_use_bytes.saturating_add(size);
        } else {
            chunks.free += 1;
            chunks.free_bytes = chunks.free_bytes.saturating_add(size);
            chunks.largest_free = chunks.largest_free.max(size);
        }
        return true;
    }
    if re_any_chunk().is_match(p) {
        return true;
    }
    if let Some(c) = re_bin().captures(p) {
        if &c[2] != "0" && *bins < MAX_BINS {
            *bins += 1;
            raw.set_extra(&format!("bin_{}_allocated_bytes", &c[1]), cap_size(&c, 4));
            raw.set_extra(&format!("bin_{}_in_use_bytes", &c[1]), cap_size(&c, 5));
        }
        return true;
    }
    if let Some(c) = re_stat().captures(p).filter(|_| !last_cut) {
        let v = cap_bytes(&c, 2);
        match &c[1] {
            "Limit" => raw.set(Field::Limit, v),
            "InUse" => raw.set(Field::Used, v),
            "Reserved" => raw.set(Field::Reserved, v),
            "NumAllocs" => raw.set_extra("num_allocs", v),
            "MaxInUse" => raw.set_extra("max_in_use_bytes", v),
            "MaxAllocSize" => raw.set_extra("max_alloc_size_bytes", v),
            "PeakReserved" => raw.set_extra("peak_reserved_bytes", v),
            "LargestFreeBlock" => raw.set_extra("largest_free_block_bytes", v),
            "PoolBytes" => raw.set_extra("pool_bytes", v),
            _ => raw.set_extra("peak_pool_bytes", v),
        }
        return true;
    }
    if let Some(c) = re_buffer().captures(p) {
        push_buffer(raw, entry);
        *entry = Some(TopAllocation {
            rank: c[1].parse().unwrap_or(0),
            ..Default::default()
        });
        return true;
    }
    if let Some(e) = entry.as_mut() {
        if crate::listing::read_entry_field(p, e) {
            return true;
        }
    }
    if p.starts_with("=====") {
        push_buffer(raw, entry);
        return true;
    }
    if let Some(c) = re_assignment_stat().captures(p) {
        let name = c[1].trim().replace(' ', "_");
        let v = cap_size(&c, 3);
        raw.set_extra(&format!("{name}_{}_bytes", &c[2]), v);
        // The buffer assignment's categories are the report's fields.
        match (name.as_str(), &c[2]) {
            ("parameter", "allocation") => raw.set(Field::Arguments, v),
            ("maybe_live_out", "allocation") => raw.set(Field::Output, v),
            ("preallocated_temp", "allocation") => raw.set(Field::HloTemp, v),
            ("total", "fragmentation") => raw.set(Field::Fragmentation, v),
            _ => {}
        }
        return true;
    }
    if let Some(c) = re_sum_in_use().captures(p) {
        raw.set_extra("sum_in_use_chunks_bytes", cap_size(&c, 1));
        return true;
    }
    if let Some(c) = re_pool().captures(p) {
        raw.set_extra("pool_bytes", cap_bytes(&c, 1));
        raw.set(Field::Limit, cap_bytes(&c, 2));
        raw.set_extra("pool_available_bytes", cap_bytes(&c, 3));
        return true;
    }
    if let Some(c) = re_region().captures(p) {
        let region = cap_bytes(&c, 1).map_or(0, |s| s.bytes);
        let total = raw
            .extra
            .get("regions_bytes")
            .map_or(0, |s| s.bytes)
            .saturating_add(region);
        raw.extra
            .insert("regions_bytes".to_string(), Size::exact(total));
        return true;
    }
    if re_free_total().is_match(p) {
        read_free_total(p, raw);
        return true;
    }
    const KNOWN: [&str; 7] = [
        "BFCAllocator dump for",
        "Bin for ",
        "Summary of in-use Chunks",
        "BufferAssignment OOM Debugging",
        "BufferAssignment stats:",
        "Peak buffers:",
        "Reported by CUDA",
    ];
    KNOWN.iter().any(|k| p.starts_with(k))
        || p.contains("| Requested Size:")
        || p.contains(" Chunks of size ")
        || p.bytes().all(|b| b == b'*' || b == b'_')
}

fn push_buffer(raw: &mut Raw, entry: &mut Option<TopAllocation>) {
    if let Some(e) = entry.take() {
        if raw.top.len() < MAX_BUFFERS {
            raw.top.push(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::parse_oom_log;

    /// TF 1.15 printed a chunk's `next` before its size; the two lines are
    /// real (tensorflow/tensorflow#36780), the headline is the corpus's.
    #[test]
    fn chunks_with_next_before_size() {
        let text = "Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.72GiB (rounded to 4000000000)requested by op \n\
            2020-02-15 17:58:43.772727: I tensorflow/core/common_runtime/bfc_allocator.cc:905] Free  at 00000007F7BC7D00 next 1305 of size 1605632\n\
            2020-02-15 17:58:43.775573: I tensorflow/core/common_runtime/bfc_allocator.cc:905] InUse at 00000007F7D4FD00 next 1940 of size 1605632\n";
        let e = &parse_oom_log("36780", text)[0];
        assert_eq!(e.extra["in_use_chunks"], 1);
        assert_eq!(e.extra["free_chunks"], 1);
        assert_eq!(e.extra["free_chunks_bytes"], 1_605_632);
    }
}
