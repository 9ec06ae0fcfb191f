//! The bounds both halves of a link share (the report's and the run-time
//! sections'): text shortened to a length, a series downsampled with its
//! peak kept, a list refused past the decoder's item limit, an enum carried
//! as its word and refused when unknown.

use crate::LinkError;

/// Enums travel as their JSON names, so the link schema never needs renumbering.
pub(crate) fn enum_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

pub(crate) fn enum_parse<T: serde::de::DeserializeOwned>(
    what: &str,
    s: &str,
) -> Result<T, LinkError> {
    serde_json::from_value(serde_json::Value::String(s.to_string()))
        .map_err(|_| LinkError::Invalid(format!("unknown {what} {:?}", truncate(s, 40))))
}

/// Largest number of items in any list of a valid link.
const MAX_ITEMS: usize = 100_000;

/// Shortens `s` to at most `max_chars` characters, the last one `…`.
pub(crate) fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max_chars.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

pub(crate) use oomscope_report::series::downsample_indices;

/// Refuses a list longer than a link may carry.
pub(crate) fn check_len<T>(what: &str, v: &[T]) -> Result<(), LinkError> {
    if v.len() > MAX_ITEMS {
        return Err(LinkError::Invalid(format!("{what} has {} items", v.len())));
    }
    Ok(())
}
