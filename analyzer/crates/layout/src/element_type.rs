//! XLA primitive (element) types: the names XLA prints, the numbers
//! `xla_data.proto` gives them, and their storage sizes.
//!
//! The numbers are those of `enum PrimitiveType` in openxla/xla
//! `xla/xla_data.proto`; the names are `primitive_util::LowercasePrimitiveTypeName`.

use serde::{Deserialize, Serialize};

/// An XLA `PrimitiveType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElementType {
    Pred,
    S1,
    S2,
    S4,
    S8,
    S16,
    S32,
    S64,
    U1,
    U2,
    U4,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
    BF16,
    F8E5M2,
    F8E4M3,
    F8E4M3FN,
    F8E4M3B11FNUZ,
    F8E3M4,
    F8E5M2FNUZ,
    F8E4M3FNUZ,
    F4E2M1FN,
    F8E8M0FNU,
    C64,
    C128,
    Token,
    Tuple,
    OpaqueType,
    Buffer,
}

/// (type, printed name, `xla_data.proto` number, bit width).
/// Bit widths follow `primitive_util::BitWidth` (PRED is 1 bit wide but
/// stored in a byte); non-array types have width 0.
const TABLE: &[(ElementType, &str, i32, u32)] = &[
    (ElementType::Pred, "pred", 1, 1),
    (ElementType::S1, "s1", 30, 1),
    (ElementType::S2, "s2", 26, 2),
    (ElementType::S4, "s4", 21, 4),
    (ElementType::S8, "s8", 2, 8),
    (ElementType::S16, "s16", 3, 16),
    (ElementType::S32, "s32", 4, 32),
    (ElementType::S64, "s64", 5, 64),
    (ElementType::U1, "u1", 31, 1),
    (ElementType::U2, "u2", 27, 2),
    (ElementType::U4, "u4", 22, 4),
    (ElementType::U8, "u8", 6, 8),
    (ElementType::U16, "u16", 7, 16),
    (ElementType::U32, "u32", 8, 32),
    (ElementType::U64, "u64", 9, 64),
    (ElementType::F16, "f16", 10, 16),
    (ElementType::F32, "f32", 11, 32),
    (ElementType::F64, "f64", 12, 64),
    (ElementType::BF16, "bf16", 16, 16),
    (ElementType::F8E5M2, "f8e5m2", 19, 8),
    (ElementType::F8E4M3, "f8e4m3", 28, 8),
    (ElementType::F8E4M3FN, "f8e4m3fn", 20, 8),
    (ElementType::F8E4M3B11FNUZ, "f8e4m3b11fnuz", 23, 8),
    (ElementType::F8E3M4, "f8e3m4", 29, 8),
    (ElementType::F8E5M2FNUZ, "f8e5m2fnuz", 24, 8),
    (ElementType::F8E4M3FNUZ, "f8e4m3fnuz", 25, 8),
    (ElementType::F4E2M1FN, "f4e2m1fn", 32, 4),
    (ElementType::F8E8M0FNU, "f8e8m0fnu", 33, 8),
    (ElementType::C64, "c64", 15, 64),
    (ElementType::C128, "c128", 18, 128),
    (ElementType::Token, "token", 17, 0),
    (ElementType::Tuple, "tuple", 13, 0),
    (ElementType::OpaqueType, "opaque", 14, 0),
    (ElementType::Buffer, "buffer", 34, 0),
];

impl ElementType {
    fn entry(self) -> (ElementType, &'static str, i32, u32) {
        // Every variant has exactly one row; the fallback is never taken.
        TABLE
            .iter()
            .copied()
            .find(|row| row.0 == self)
            .unwrap_or((self, "invalid", 0, 0))
    }

    /// The type from its printed (lowercase) name, e.g. `f32`, `bf16`, `pred`, `s4`.
    pub fn from_name(name: &str) -> Option<Self> {
        TABLE
            .iter()
            .find(|row| row.1.eq_ignore_ascii_case(name))
            .map(|row| row.0)
    }

    /// The type from its `xla_data.proto` `PrimitiveType` number.
    pub fn from_primitive_type(number: i32) -> Option<Self> {
        TABLE.iter().find(|row| row.2 == number).map(|row| row.0)
    }

    /// The `xla_data.proto` `PrimitiveType` number.
    pub fn primitive_type(self) -> i32 {
        self.entry().2
    }

    /// The name XLA prints, e.g. `bf16`.
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// Bit width of one element (`primitive_util::BitWidth`): 4 for `s4`,
    /// 1 for `pred`, 0 for token, tuple and opaque.
    pub fn bits(self) -> u32 {
        self.entry().3
    }

    /// Bytes one element takes when the layout gives no element size
    /// (`ShapeUtil::ByteSizeOfPrimitiveType`): sub-byte types take a whole byte.
    pub fn default_storage_bytes(self) -> u64 {
        u64::from(self.bits().div_ceil(8))
    }

    /// Whether values of this type are arrays (not token, tuple, opaque, buffer).
    pub fn is_array(self) -> bool {
        self.bits() > 0
    }
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_round_trip() {
        for &(ty, name, number, _) in TABLE {
            assert_eq!(ElementType::from_name(name), Some(ty));
            assert_eq!(ElementType::from_primitive_type(number), Some(ty));
            assert_eq!(ty.name(), name);
            assert_eq!(ty.primitive_type(), number);
        }
        // Numbers are unique.
        let mut numbers: Vec<i32> = TABLE.iter().map(|r| r.2).collect();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len(), TABLE.len());
    }

    #[test]
    fn storage_sizes() {
        assert_eq!(ElementType::Pred.default_storage_bytes(), 1);
        assert_eq!(ElementType::S4.default_storage_bytes(), 1);
        assert_eq!(ElementType::BF16.default_storage_bytes(), 2);
        assert_eq!(ElementType::C128.default_storage_bytes(), 16);
        assert_eq!(ElementType::from_primitive_type(0), None);
        assert_eq!(ElementType::from_name("f33"), None);
    }
}
