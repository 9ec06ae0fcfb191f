//! How numbers are shown. Every byte quantity on the page is a [`Bytes`]
//! element: the human value (`17.60 GiB`) with the exact count in its
//! tooltip and in `data-bytes`, so that tests and users can check the exact
//! number the analyzer read.

use leptos::prelude::*;
use oomscope_report::units::format_bytes;

/// A byte quantity, e.g. `<Bytes value=n/>`.
#[component]
pub fn Bytes(value: u64) -> impl IntoView {
    view! {
        <span class="bytes" data-bytes=value.to_string() title=format!("{} bytes", group_digits(value))>
            {format_bytes(value)}
        </span>
    }
}

/// `part` as a percentage of `whole`, one decimal (`108.3%`); `None` when
/// `whole` is zero.
pub fn percent(part: u64, whole: u64) -> Option<String> {
    (whole > 0).then(|| format!("{:.1}%", part as f64 * 100.0 / whole as f64))
}

/// `123456789` → `123,456,789`.
pub fn group_digits(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The memory-space colour XLA uses, as a name (`0` → `HBM`).
pub fn memory_space_name(space: i64) -> String {
    match space {
        0 => "HBM / device (0)".to_string(),
        1 => "VMEM (1)".to_string(),
        5 => "Host (5)".to_string(),
        other => format!("space {other}"),
    }
}

/// A file name without the folders it came in.
pub fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_and_digit_groups() {
        assert_eq!(percent(17, 10), Some("170.0%".to_string()));
        assert_eq!(percent(1, 0), None);
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(16_911_433_728), "16,911,433,728");
        assert_eq!(base_name("dump/a/b.txt"), "b.txt");
    }
}
