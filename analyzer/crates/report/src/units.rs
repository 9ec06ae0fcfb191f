//! Byte units as the tools print them.
//!
//! TPU/XLA messages write `B`, `K`, `M`, `G`, `T`, `P`, `E` for binary
//! multiples (G = 2^30); PyTorch writes `KiB`/`MiB`/`GiB`. A rounded value is
//! converted exactly as printed: `17.67G` = round(17.67 × 2^30).

/// Multiplier of a unit suffix; `None` for an unknown suffix.
/// Both SI-looking (`GB`) and IEC (`GiB`) spellings are binary here, because
/// that is what XLA and PyTorch mean by them. Use [`decimal_multiplier`] for
/// sources known to print decimal gigabytes.
pub fn binary_multiplier(unit: &str) -> Option<u64> {
    let u = unit.trim();
    let exp = match u {
        "" | "B" | "b" | "bytes" | "Bytes" | "byte" => 0,
        "K" | "KB" | "KiB" | "k" | "kB" | "kiB" => 1,
        "M" | "MB" | "MiB" => 2,
        "G" | "GB" | "GiB" => 3,
        "T" | "TB" | "TiB" => 4,
        "P" | "PB" | "PiB" => 5,
        "E" | "EB" | "EiB" => 6,
        _ => return None,
    };
    Some(1u64 << (10 * exp))
}

/// Decimal (SI) multiplier: `GB` = 10^9.
pub fn decimal_multiplier(unit: &str) -> Option<u64> {
    let exp = match unit.trim() {
        "" | "B" | "bytes" => 0,
        "K" | "KB" | "kB" => 1,
        "M" | "MB" => 2,
        "G" | "GB" => 3,
        "T" | "TB" => 4,
        "P" | "PB" => 5,
        "E" | "EB" => 6,
        _ => return None,
    };
    Some(10u64.pow(exp * 3))
}

/// `value × multiplier`, rounded to the nearest byte, saturating.
pub fn scale(value: f64, multiplier: u64) -> u64 {
    let v = value * multiplier as f64;
    if !v.is_finite() || v <= 0.0 {
        0
    } else if v >= u64::MAX as f64 {
        u64::MAX
    } else {
        v.round() as u64
    }
}

/// Parse `25.64G`, `512.00M`, `3.47E`, `17.69GiB`, `980.0K`, `12B`, `1.5 GiB`
/// as binary multiples. Returns `None` when it is not a size.
pub fn parse_binary_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return None;
    }
    let value: f64 = num.parse().ok()?;
    let mult = binary_multiplier(unit.trim())?;
    Some(scale(value, mult))
}

/// Human-readable binary size, e.g. `15.75 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64;
    let mut i = 0;
    // Compare the value as printed (two decimals): 1023.999 KiB prints as
    // 1.00 MiB, never as 1024.00 KiB.
    while (v * 100.0).round() >= 1024.0 * 100.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.2} {}", UNITS[i])
}

/// Like [`format_bytes`] for signed quantities (savings, deltas).
pub fn format_signed_bytes(bytes: i64) -> String {
    if bytes < 0 {
        format!("-{}", format_bytes(bytes.unsigned_abs()))
    } else {
        format_bytes(bytes as u64)
    }
}

/// A difference of bytes with its sign always written: `+1.00 GiB`,
/// `-512.00 MiB`, `0 B` (comparisons: B minus A).
pub fn format_byte_difference(bytes: i64) -> String {
    if bytes > 0 {
        format!("+{}", format_bytes(bytes as u64))
    } else {
        format_signed_bytes(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatted_values_never_reach_the_next_unit() {
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1024), "1.00 KiB");
        // 1023.999 KiB and 1023.996 MiB round up to the next unit.
        assert_eq!(format_bytes(1_048_575), "1.00 MiB");
        assert_eq!(format_bytes((1u64 << 30) - 4096), "1.00 GiB");
        // Just below the rounding edge the unit stays.
        assert_eq!(format_bytes(1_048_570), "1023.99 KiB");
        assert_eq!(format_bytes(16_911_433_728), "15.75 GiB");
        assert_eq!(format_bytes(u64::MAX), "16.00 EiB");
    }

    #[test]
    fn tpu_units_are_binary_and_rounded_as_printed() {
        assert_eq!(
            parse_binary_size("17.67G"),
            Some((17.67f64 * (1u64 << 30) as f64).round() as u64)
        );
        assert_eq!(parse_binary_size("15.75G"), Some(16_911_433_728));
        assert_eq!(parse_binary_size("512.00M"), Some(512 << 20));
        assert_eq!(parse_binary_size("980.0K"), Some(980 * 1024));
        assert_eq!(parse_binary_size("12B"), Some(12));
        assert_eq!(parse_binary_size("2.99GiB"), Some(scale(2.99, 1 << 30)));
        assert_eq!(parse_binary_size("1.5 GiB"), Some(3 << 29));
        assert_eq!(parse_binary_size("hbm"), None);
        assert_eq!(parse_binary_size("3.47Q"), None);
    }

    #[test]
    fn formats() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(16_911_433_728), "15.75 GiB");
        assert_eq!(format_signed_bytes(-2048), "-2.00 KiB");
    }
}
