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

/// A difference of bytes (B minus A), sign always written (`+1.00 GiB`,
/// `-3.20 GiB`), the exact signed count in `data-bytes`; `grew` or
/// `shrank` as a class.
#[component]
pub fn Difference(value: i64) -> impl IntoView {
    let class = match value.signum() {
        1 => "bytes difference grew",
        -1 => "bytes difference shrank",
        _ => "bytes difference",
    };
    let exact = if value < 0 {
        format!("-{}", group_digits(value.unsigned_abs()))
    } else {
        group_digits(value as u64)
    };
    view! {
        <span class=class data-bytes=value.to_string() title=format!("{exact} bytes")>
            {oomscope_report::units::format_byte_difference(value)}
        </span>
    }
}

/// `part` as a percentage of `whole`, one decimal (`108.3%`); `None` when
/// `whole` is zero.
pub fn percent(part: u64, whole: u64) -> Option<String> {
    (whole > 0).then(|| format!("{:.1}%", part as f64 * 100.0 / whole as f64))
}

/// `part` as a share of `whole` with the digits it needs, so that no
/// non-zero part reads as zero: one decimal from 1% up (`48.5%`), two
/// significant digits below (`0.39%`, `0.048%`), `<0.0001%` for less; `0%`
/// only for nothing. `None` when `whole` is zero.
pub fn share(part: u64, whole: u64) -> Option<String> {
    if whole == 0 {
        return None;
    }
    let pct = part as f64 * 100.0 / whole as f64;
    Some(if part == 0 {
        "0%".to_string()
    } else if pct >= 1.0 {
        format!("{pct:.1}%")
    } else if pct < 0.0001 {
        "<0.0001%".to_string()
    } else {
        // Two significant digits: 0.39 has one leading zero decimal place less than 0.039.
        let decimals = (-pct.log10()).floor() as usize + 2;
        format!("{pct:.decimals$}%")
    })
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

/// A decision-tree fact's key in words: `half_limit_bytes` → "Half the
/// limit", `excess_pct_of_limit` → "Excess, % of the limit". Keys without a
/// wording of their own lose their unit suffix and underscores.
pub fn fact_label(key: &str) -> String {
    let known = match key {
        "half_limit_bytes" => Some("Half the limit"),
        "slope_bytes_per_step" => Some("Growth per step"),
        "projected_limit_step" => Some("Step at which the limit is reached"),
        "sawtooth_period_steps" => Some("Sawtooth period (steps)"),
        "chips_to_fit" => Some("Chips needed to fit"),
        "used_without_largest_bytes" => Some("Used without the largest allocation"),
        "allocations_over_half" => Some("Allocations over half the limit"),
        "per_chip_sharded_bytes" => Some("Per chip, sharded"),
        "max_hbm_size_mib" => Some("Largest HBM size flag (MiB)"),
        "allocation_list" => Some("Allocations looked at"),
        "replicated_label" => Some("XLA label says replicated"),
        _ => None,
    };
    if let Some(text) = known {
        return text.to_string();
    }
    let (stem, of) = match key.split_once("_pct_of_") {
        Some((stem, whole)) => (stem, Some(whole)),
        None => (key, None),
    };
    let (stem, unit) = if let Some(s) = stem.strip_suffix("_bytes") {
        (s, "")
    } else if let Some(s) = stem.strip_suffix("_mib") {
        (s, " (MiB)")
    } else {
        (stem, "")
    };
    let words: Vec<String> = stem
        .split('_')
        .filter(|w| !w.is_empty())
        .map(|w| match w {
            "hbm" => "HBM".to_string(),
            "vmem" => "VMEM".to_string(),
            "tensorcore" => "TensorCore".to_string(),
            "sparsecore" => "SparseCore".to_string(),
            "pct" => "%".to_string(),
            other => other.to_string(),
        })
        .collect();
    let mut text = words.join(" ");
    if let Some(first) = text.get(..1) {
        text = first.to_uppercase() + &text[1..];
    }
    text.push_str(unit);
    if let Some(whole) = of {
        text.push_str(&format!(", % of the {}", whole.replace('_', " ")));
    }
    text
}

/// A fact's value in words, where the JSON holds a word for programs
/// (`module_peak`) or a flag (`false`); `None` to show it as it is.
pub fn fact_value_words(key: &str, value: &serde_json::Value) -> Option<String> {
    match (key, value) {
        (_, serde_json::Value::Bool(b)) => Some(if *b { "yes" } else { "no" }.to_string()),
        ("allocation_list", serde_json::Value::String(list)) => Some(
            match list.as_str() {
                "module_peak" => "every buffer live at the peak (module analysis)",
                "log_listing" => "the largest allocations the log lists",
                "single_request" => "the one allocation the error names",
                "none" => "none listed",
                other => other,
            }
            .to_string(),
        ),
        _ => None,
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
    fn shares_never_round_a_real_part_to_zero() {
        // A 16 MiB temporary of a 17 GiB peak: 0.09%, not 0.0%.
        assert_eq!(share(16 << 20, 17 << 30), Some("0.092%".to_string()));
        assert_eq!(share(1 << 30, 17 << 30), Some("5.9%".to_string()));
        assert_eq!(share(39, 10_000), Some("0.39%".to_string()));
        assert_eq!(share(1, 1 << 40), Some("<0.0001%".to_string()));
        assert_eq!(share(0, 10), Some("0%".to_string()));
        assert_eq!(share(1, 0), None);
        for part in [1u64, 7, 130, 4_096, 1 << 20] {
            let text = share(part, 17 << 30).unwrap();
            assert!(
                text.chars().any(|c| ('1'..='9').contains(&c)),
                "{part}: {text}"
            );
        }
    }

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

    #[test]
    fn fact_values_read_as_words() {
        // The compile tree's facts (issue 29: "Allocation list: module_peak",
        // "Replicated label: false").
        let words = |key: &str, v: serde_json::Value| fact_value_words(key, &v);
        assert_eq!(
            words("allocation_list", "module_peak".into()).as_deref(),
            Some("every buffer live at the peak (module analysis)")
        );
        assert_eq!(
            words("replicated_label", false.into()).as_deref(),
            Some("no")
        );
        assert_eq!(fact_label("replicated_label"), "XLA label says replicated");
        assert_eq!(words("device", "TPU_0".into()), None);
        assert_eq!(words("limit_bytes", 16.into()), None);
    }

    #[test]
    fn fact_keys_read_as_words() {
        assert_eq!(fact_label("half_limit_bytes"), "Half the limit");
        assert_eq!(fact_label("excess_pct_of_limit"), "Excess, % of the limit");
        assert_eq!(fact_label("tensorcore_bytes"), "TensorCore");
        assert_eq!(fact_label("limit_mib"), "Limit (MiB)");
        assert_eq!(
            fact_label("requested_pct_of_capacity"),
            "Requested, % of the capacity"
        );
        assert_eq!(fact_label("device"), "Device");
        for key in [
            "half_limit_bytes",
            "per_chip_bytes",
            "max_hbm_size_mib",
            "largest_pct_of_limit",
        ] {
            assert!(!fact_label(key).contains('_'), "{key}");
        }
        assert!(!oomscope_report::MemoryColor::from(6)
            .words()
            .starts_with("space"));
    }
}
