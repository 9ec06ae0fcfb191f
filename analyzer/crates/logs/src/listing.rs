//! One entry of an allocation listing, as the TPU compiler ("Largest
//! program allocations") and XLA on GPU ("Peak buffers") print it: `Key:
//! value` lines (`Size:`, `Operator:`, `Shape:`, `Unpadded size:`, `Extra
//! memory due to padding:`, `XLA label:`, `Allocation type:`).

use crate::event::parse_size;
use crate::site::{cap_size, lazy_regex};
use oomscope_report::TopAllocation;

lazy_regex!(re_op_name, r#"op_name="([^"]*)""#);
lazy_regex!(re_source, r#"source_file="([^"]*)"\s+source_line=(\d+)"#);
lazy_regex!(re_padding, r"^Extra memory due to padding:\s*SIZE");

/// One `Key: value` line of a listing entry; false when it is none.
pub(crate) fn read_entry_field(p: &str, e: &mut TopAllocation) -> bool {
    if let Some(v) = p.strip_prefix("Operator:") {
        e.op_name = re_op_name().captures(v).map(|c| c[1].to_string());
        e.source = re_source()
            .captures(v)
            .map(|c| format!("{}:{}", &c[1], &c[2]));
    } else if let Some(v) = p
        .strip_prefix("Shape:")
        .or_else(|| p.strip_prefix("Entry Parameter Subshape:"))
    {
        e.shape = v.trim().to_string();
    } else if let Some(v) = p.strip_prefix("Unpadded size:") {
        e.unpadded_bytes = parse_size(v, false).map(|s| s.bytes);
    } else if let Some(c) = re_padding().captures(p) {
        e.padding_bytes = cap_size(&c, 1).map(|s| s.bytes);
    } else if let Some(v) = p
        .strip_prefix("XLA label:")
        .or_else(|| p.strip_prefix("XLA Label:"))
    {
        e.xla_label = Some(v.trim().to_string());
    } else if let Some(v) = p.strip_prefix("Allocation type:") {
        e.allocation_type = Some(v.trim().to_string());
    } else if let Some(v) = p.strip_prefix("Size:") {
        // XLA GPU "Peak buffers" entries give the size on its own line.
        e.size_bytes = parse_size(v, false).map_or(e.size_bytes, |s| s.bytes);
    } else {
        return false;
    }
    true
}
