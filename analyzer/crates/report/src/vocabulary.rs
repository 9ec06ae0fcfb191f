//! The words the report uses for what a number is: which peak, where a
//! module analysis came from, which memory space. They are enums so that
//! code matches on them (and the compiler lists every case a `match`
//! forgets), and they serialize to exactly the JSON the report always had:
//! the named ones as their snake-case word, memory colours as XLA's integer.
//! A value this version does not know (from a newer writer, or an old link)
//! loads as `Other` and is written back unchanged.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An enum of known words plus `Other(String)`, serialized as the word.
macro_rules! words {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident = $word:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(from = "String", into = "String")]
        pub enum $name {
            $( $(#[$variant_meta])* $variant, )*
            /// A word this version does not know, kept as read (the
            /// default, empty, is what a report without the field had).
            Other(String),
        }

        impl $name {
            /// Every known word, in declaration order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),*];

            /// The word as it is written in the JSON report and in links.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $word, )*
                    $name::Other(word) => word,
                }
            }

            /// The value a word stands for; an unknown word is `Other`.
            pub fn parse(word: &str) -> Self {
                match word {
                    $( $word => $name::$variant, )*
                    other => $name::Other(other.to_string()),
                }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name::Other(String::new())
            }
        }

        impl From<String> for $name {
            fn from(word: String) -> Self {
                match $name::parse(&word) {
                    $name::Other(_) => $name::Other(word),
                    known => known,
                }
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                match value {
                    $name::Other(word) => word,
                    known => known.as_str().to_string(),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

words! {
    /// Which of a module's peaks `ModuleReport::peak_bytes` is: several
    /// exist for one program (DESIGN.md), and the page and CLI say which.
    pub enum PeakKind {
        /// XProf's Memory Viewer: the heap simulator's trace replayed,
        /// padded, whole-program allocations included.
        HeapSimulator = "heap_simulator",
        /// The dump's buffer assignment and live ranges, counted as the
        /// Memory Viewer counts them.
        BufferLiveness = "buffer_liveness",
        /// As `BufferLiveness`, with lifetimes inferred from the schedule
        /// (the dump has no live ranges).
        BufferLivenessEstimated = "buffer_liveness_estimated",
        /// The compiler's `-live-range.txt` peak: the sum of the values live
        /// at one point, unpadded.
        LiveRange = "live_range",
    }
}

words! {
    /// Which input a module analysis was made from.
    pub enum SourceKind {
        /// A serialized `xla.HloProto` (`*.hlo.pb`).
        HloProto = "hlo_proto",
        /// The HloProtos an XProf profile (`*.xplane.pb`) carries.
        Xplane = "xplane",
        /// The XLA dump's text files (buffer assignment, live ranges, HLO).
        XlaDumpText = "xla_dump_text",
    }
}

words! {
    /// The memory an error message says ran out, by the word it uses
    /// (lower case; TPU's `default` is `hbm`).
    pub enum MemorySpace {
        /// A TPU's high-bandwidth memory (the device memory).
        Hbm = "hbm",
        /// A TPU's on-chip vector memory.
        Vmem = "vmem",
        /// A TPU's on-chip scalar memory.
        Smem = "smem",
        /// A GPU's device memory.
        Gpu = "gpu",
        /// An Intel GPU's device memory (PyTorch's XPU).
        Xpu = "xpu",
        /// An Apple GPU's unified memory (PyTorch's MPS).
        Mps = "mps",
        /// An Ascend NPU's device memory (torch_npu).
        Npu = "npu",
        /// Host memory of a CPU device.
        Cpu = "cpu",
        /// Host memory a GPU runtime pins for transfers (TensorFlow/XLA's
        /// `cuda_host_bfc`/`gpu_host_bfc` allocators).
        Host = "host",
    }
}

impl MemorySpace {
    /// The XLA memory colour of a module analysis of this space, when
    /// there is one: HBM (or a message that names no space) is colour 0,
    /// VMEM colour 1.
    pub fn color(&self) -> Option<MemoryColor> {
        match self {
            MemorySpace::Hbm => Some(MemoryColor::Device),
            MemorySpace::Other(word) if word.is_empty() => Some(MemoryColor::Device),
            MemorySpace::Vmem => Some(MemoryColor::Vmem),
            _ => None,
        }
    }
}

/// XLA's memory-space colour of a buffer (the buffer assignment's `color`,
/// `S(n)` in a layout), written in the JSON as the integer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "i64", into = "i64")]
pub enum MemoryColor {
    /// Colour 0: the device's main memory (HBM on TPU).
    #[default]
    Device,
    /// Colour 1: on-chip vector memory (TPU VMEM).
    Vmem,
    /// Colour 5: host memory (`S(5)`, JAX's `pinned_host`).
    Host,
    /// Any other colour, kept as read.
    Other(i64),
}

impl PeakKind {
    /// Which peak this is, in words for people (the page, the CLI and the
    /// headline all say it this way).
    pub fn words(&self) -> &'static str {
        match self {
            PeakKind::HeapSimulator => {
                "heap-simulator peak (as XProf's Memory Viewer: padded, parameters included)"
            }
            PeakKind::BufferLiveness => {
                "peak of the compiler's buffer assignment (as XProf's Memory Viewer counts it)"
            }
            PeakKind::BufferLivenessEstimated => {
                "estimated peak (lifetimes inferred from the schedule: the dump has no live ranges)"
            }
            PeakKind::LiveRange => "live-range peak (the compiler's live values at its peak moment, unpadded, each buffer counted once; the compiler's own sum counts a while loop's tuple aliases once per alias)",
            PeakKind::Other(_) => "peak",
        }
    }
}

impl PeakKind {
    /// Which peak this is in a few words, for sentences that already say
    /// much (a headline); [`words`](Self::words) says how it is counted.
    pub fn short_words(&self) -> &'static str {
        match self {
            PeakKind::HeapSimulator => "heap-simulator peak",
            PeakKind::BufferLiveness => "buffer-assignment peak",
            PeakKind::BufferLivenessEstimated => "estimated peak",
            PeakKind::LiveRange => "live-range peak",
            PeakKind::Other(_) => "peak",
        }
    }
}

impl MemoryColor {
    /// The memory this colour is, in words for people (`0` → HBM).
    pub fn words(self) -> String {
        match self {
            MemoryColor::Device => "HBM (device memory)".to_string(),
            MemoryColor::Vmem => "VMEM (on-chip vector memory)".to_string(),
            MemoryColor::Host => "Host memory".to_string(),
            MemoryColor::Other(other) => {
                format!("Other on-chip memory (XLA memory colour {other})")
            }
        }
    }

    pub fn number(self) -> i64 {
        match self {
            MemoryColor::Device => 0,
            MemoryColor::Vmem => 1,
            MemoryColor::Host => 5,
            MemoryColor::Other(n) => n,
        }
    }
}

/// Colours sort by their number, as XLA numbers them.
impl Ord for MemoryColor {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.number().cmp(&other.number())
    }
}

impl PartialOrd for MemoryColor {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl From<i64> for MemoryColor {
    fn from(n: i64) -> Self {
        match n {
            0 => MemoryColor::Device,
            1 => MemoryColor::Vmem,
            5 => MemoryColor::Host,
            n => MemoryColor::Other(n),
        }
    }
}

impl From<MemoryColor> for i64 {
    fn from(color: MemoryColor) -> i64 {
        color.number()
    }
}

impl fmt::Display for MemoryColor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_and_unknown_ones_survive() {
        for kind in PeakKind::KNOWN {
            let json = serde_json::to_string(kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(&serde_json::from_str::<PeakKind>(&json).unwrap(), kind);
        }
        let future: PeakKind = serde_json::from_str("\"memory_analysis\"").unwrap();
        assert_eq!(future, PeakKind::Other("memory_analysis".into()));
        assert_eq!(
            serde_json::to_string(&future).unwrap(),
            "\"memory_analysis\""
        );
        assert_eq!(
            serde_json::to_string(&SourceKind::default()).unwrap(),
            "\"\""
        );
        assert_eq!(SourceKind::from("xplane".to_string()), SourceKind::Xplane);
        assert_eq!(MemorySpace::parse("vmem"), MemorySpace::Vmem);
        assert_eq!(String::from(MemorySpace::Other("sparse".into())), "sparse");
    }

    #[test]
    fn colours_are_integers() {
        for n in [0, 1, 2, 5, 7, -1] {
            let color = MemoryColor::from(n);
            assert_eq!(serde_json::to_string(&color).unwrap(), n.to_string());
            assert_eq!(
                serde_json::from_str::<MemoryColor>(&n.to_string()).unwrap(),
                color
            );
        }
        assert_eq!(MemoryColor::from(5), MemoryColor::Host);
        assert_eq!(MemorySpace::Hbm.color(), Some(MemoryColor::Device));
        assert_eq!(MemorySpace::default().color(), Some(MemoryColor::Device));
        assert_eq!(MemorySpace::Gpu.color(), None);
    }
}

words! {
    /// What sets a rank apart from the median rank (issue 26).
    pub enum RankFindingKind {
        /// Its memory grows per step (or per profile) while the others stay flat.
        Growth = "growth",
        /// It holds a constant amount more than the median rank.
        Excess = "excess",
        /// It ran out of memory first.
        OomFirst = "oom_first",
    }
}

words! {
    /// The unit a rank finding's growth is measured in.
    pub enum RankPer {
        /// Training steps, read from the step numbers in the file names.
        Step = "step",
        /// Successive profiles (the names give no step number).
        Profile = "profile",
    }
}

words! {
    /// How a rank was recognised, the strongest clue first.
    pub enum RankSource {
        /// A launcher's convention in a file or folder name (`rank3`,
        /// `local_rank_3`, `process_3`, `worker-3`, `host3`, `proc3`).
        Name = "name",
        /// A JAX device id in a device memory profile (CPU devices are
        /// numbered 2048 apart per process) or a profile's only device.
        DeviceId = "device_id",
        /// The CUDA device of a PyTorch snapshot (one GPU per process).
        SnapshotDevice = "snapshot_device",
        /// The `[rankN]:` prefix torchrun (or mpirun's `[job,N]<stderr>:`)
        /// writes before each line of a log.
        LogPrefix = "log_prefix",
        /// The host an XProf profile was taken on (`XSpace.hostnames`): a
        /// TPU VM's worker (`t1v-n-…-w-3`) or a numbered host.
        Hostname = "hostname",
        /// Set by the user on the page (`Report::rank_overrides`).
        User = "user",
    }
}
