//! The devices a user can pick when no input gives a memory limit (a lone
//! HloProto, an XProf profile or dump that fits, a step log): one list, for
//! the page's picker, the CLI and the decision tree
//! (`oomscope_diagnosis::diagnose_with`).
//!
//! Each limit is the memory a job can actually use, as the tools print it,
//! not the capacity on the box:
//! - TPUs: the HBM limit of a compile-time OOM message ("Used X of **Y** hbm").
//!   v5e, v5p and v6e are what libtpu 0.0.52 names for a one-chip compile-only
//!   topology (`tools/fixtures/device_limits.py`; v5e and v6e are also the
//!   limits of the fixtures' real OOMs). v4 is 30.75G, what real v4 chips
//!   print; libtpu's compile-only `v4` topology models one TensorCore and
//!   prints 15.25G.
//! - GPUs: PyTorch's "GPU 0 has a total capacity of X" (what
//!   `torch.cuda.get_device_properties().total_memory` reports; a little
//!   below the marketed size, and a few MiB apart between drivers).

use crate::DeviceLimit;

/// One device of the list: a name the user recognises and its limit, in
/// hundredths of a GiB as printed (`15.75G` is 1575).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownDevice {
    pub name: &'static str,
    pub limit_centi_gib: u64,
}

impl KnownDevice {
    /// The limit in bytes (a printed `15.75G` is 15.75 × 2^30).
    pub const fn limit_bytes(&self) -> u64 {
        self.limit_centi_gib * (1 << 30) / 100
    }

    pub fn limit(&self) -> DeviceLimit {
        DeviceLimit {
            name: self.name.to_string(),
            limit_bytes: self.limit_bytes(),
        }
    }
}

/// The list, TPUs first, each family by memory.
pub const KNOWN_DEVICES: &[KnownDevice] = &[
    KnownDevice {
        name: "TPU v5e",
        limit_centi_gib: 1575,
    },
    KnownDevice {
        name: "TPU v4",
        limit_centi_gib: 3075,
    },
    KnownDevice {
        name: "TPU v6e",
        limit_centi_gib: 3124,
    },
    KnownDevice {
        name: "TPU v5p",
        limit_centi_gib: 9573,
    },
    KnownDevice {
        name: "NVIDIA T4 16GB",
        limit_centi_gib: 1475,
    },
    KnownDevice {
        name: "NVIDIA V100 16GB",
        limit_centi_gib: 1578,
    },
    KnownDevice {
        name: "NVIDIA RTX 4090 24GB",
        limit_centi_gib: 2365,
    },
    KnownDevice {
        name: "NVIDIA A100 40GB",
        limit_centi_gib: 3939,
    },
    KnownDevice {
        name: "NVIDIA H100 80GB",
        limit_centi_gib: 7911,
    },
    KnownDevice {
        name: "NVIDIA A100 80GB",
        limit_centi_gib: 7915,
    },
    KnownDevice {
        name: "NVIDIA H200 141GB",
        limit_centi_gib: 13980,
    },
];

/// The device of the list called `name`, if any.
pub fn known_device(name: &str) -> Option<&'static KnownDevice> {
    KNOWN_DEVICES.iter().find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_the_printed_figures_in_bytes() {
        let v5e = known_device("TPU v5e").unwrap();
        assert_eq!(v5e.limit_bytes(), 16_911_433_728); // 15.75 × 2^30
        assert_eq!(
            v5e.limit(),
            DeviceLimit {
                name: "TPU v5e".into(),
                limit_bytes: 16_911_433_728
            }
        );
        assert!(known_device("TPU v9").is_none());
        let mut names: Vec<_> = KNOWN_DEVICES.iter().map(|d| d.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), KNOWN_DEVICES.len(), "names are unique");
    }
}
