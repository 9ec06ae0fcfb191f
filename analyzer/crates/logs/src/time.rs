//! The time a logger printed at the start of a line (after a launcher's
//! rank tag, see [`crate::rank`]), so that the ranks of a job can be put in
//! the order they failed. The writers, and what they print:
//! - glog and absl (`LogMessage::Init`; XLA, TensorFlow's C++ with glog):
//!   `E1121 12:52:43.843812 6049 file.cc:3582] …`, severity, month and day
//!   (two digits each), microseconds;
//! - PyTorch's own C++ logging (`c10/util/Logging.cpp`, no glog):
//!   `[W320 01:57:14.472868074 ProcessGroupNCCL.cpp:1553] …`, the month
//!   not padded (`E615` is June 15), nanoseconds, in brackets;
//! - TensorFlow / TSL's default logger (`tsl/platform/default/logging.cc`):
//!   `2025-01-05 09:48:28.754214: W external/…`;
//! - Python's `logging` default `asctime` (`%Y-%m-%d %H:%M:%S,mmm`), bare
//!   or in brackets as DeepSpeed and torchrun's launcher print it:
//!   `[2026-06-16 23:42:11,933] [INFO] …`; ISO 8601 with a `T`;
//! - vLLM (`vllm/logger.py`, `%(levelname)s %(asctime)s` with the date
//!   format `%m-%d %H:%M:%S`, later with `.%f`): `ERROR 04-30 16:21:27 […]`;
//! - Ascend CANN (torch_npu's errors): `[ERROR] 2026-01-07-02:38:42 (PID:…`.
//!
//! The time is written back in one shape, `[YYYY-]MM-DD HH:MM:SS.fffffffff`
//! (the fraction always nine digits, zeros past what the logger printed),
//! so that two times of one log compare as text
//! (`oomscope_report::RankTime::earlier_than`).

use crate::site::lazy_regex;

lazy_regex!(
    re_glog,
    r"^\[?[IWEFDV](\d{1,2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?[ \]]"
);
lazy_regex!(
    re_dated,
    r"^\[?(?:(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\]? +)?(\d{4})-(\d{2})-(\d{2})[ T-](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"
);
lazy_regex!(
    re_vllm,
    r"^(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL) +(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))? "
);

/// A logger's time of day, with the date as far as the logger prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogTime {
    pub year: Option<u16>,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
    pub nanos: u32,
}

impl LogTime {
    /// `[YYYY-]MM-DD HH:MM:SS.fffffffff`.
    pub fn text(&self) -> String {
        let year = self.year.map_or(String::new(), |y| format!("{y:04}-"));
        format!(
            "{year}{:02}-{:02} {:02}:{:02}:{:02}.{:09}",
            self.month, self.day, self.hour, self.minute, self.second, self.nanos
        )
    }
}

/// The time at the start of `line`, after a rank tag, if a logger wrote one.
pub fn of_line(line: &str) -> Option<LogTime> {
    let s = after_tags(line);
    let (year, groups) = if let Some(c) = re_glog().captures(s) {
        (None, c)
    } else if let Some(c) = re_dated().captures(s) {
        let year = c.get(1)?.as_str().parse().ok();
        return build(year, &c, 2);
    } else {
        (None, re_vllm().captures(s)?)
    };
    build(year, &groups, 1)
}

/// The time from capture groups `first..first + 6` (month, day, hour,
/// minute, second, fraction); `None` when a number is out of range.
fn build(year: Option<u16>, c: &regex::Captures, first: usize) -> Option<LogTime> {
    let n = |i: usize| -> Option<u8> { c.get(first + i)?.as_str().parse().ok() };
    let fraction = c.get(first + 5).map_or("", |m| m.as_str());
    let nanos = format!("{fraction:0<9}").parse().ok()?;
    let t = LogTime {
        year,
        month: n(0)?,
        day: n(1)?,
        hour: n(2)?,
        minute: n(3)?,
        second: n(4)?,
        nanos,
    };
    let valid = (1..=12).contains(&t.month)
        && (1..=31).contains(&t.day)
        && t.hour < 24
        && t.minute < 60
        && t.second <= 60;
    valid.then_some(t)
}

/// `line` after the launcher's rank tags (`[rank3]:`, `[1,3]<stderr>:`,
/// `(VllmWorker rank=3 pid=254) `, also nested) and blanks.
fn after_tags(line: &str) -> &str {
    let mut s = line.trim_start();
    for _ in 0..4 {
        let b = s.as_bytes();
        let rest = match b.first() {
            Some(b'[') => {
                let Some(close) = memchr::memchr(b']', &b[..b.len().min(32)]) else {
                    break;
                };
                let after = &s[close + 1..];
                match after.strip_prefix(':').or_else(|| {
                    after
                        .strip_prefix("<stderr>:")
                        .or_else(|| after.strip_prefix("<stdout>:"))
                }) {
                    Some(rest) => rest,
                    None => break,
                }
            }
            Some(b'(') => {
                let Some(close) = memchr::memchr(b')', &b[..b.len().min(80)]) else {
                    break;
                };
                if !s[..close].contains("pid=") && !s[..close].contains("rank=") {
                    break;
                }
                &s[close + 1..]
            }
            _ => break,
        };
        s = rest.trim_start();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::of_line;

    fn text(line: &str) -> Option<String> {
        of_line(line).map(|t| t.text())
    }

    #[test]
    fn every_writer_s_time_is_read() {
        // glog / absl.
        assert_eq!(
            text("E1121 12:52:43.843812 6049 tpu_compiler.cc:3582] Ran out"),
            Some("11-21 12:52:43.843812000".into())
        );
        // PyTorch's c10 logging behind torchrun's tag; the month unpadded.
        assert_eq!(
            text("[rank1]:[E615 21:49:22.056172510 compiler_depend.ts:444] NPU out"),
            Some("06-15 21:49:22.056172510".into())
        );
        assert_eq!(
            text("[rank4]:[W710 14:49:34.202436919 TCPStore.cpp:125] [c10d]"),
            Some("07-10 14:49:34.202436919".into())
        );
        // TSL's default logger.
        assert_eq!(
            text("2025-01-05 09:48:28.754214: W external/xla/xla/tsl/framework/bfc_allocator.cc:501] Allocator"),
            Some("2025-01-05 09:48:28.754214000".into())
        );
        // Python logging, bare and in DeepSpeed's brackets; ISO 8601.
        assert_eq!(
            text("2024-01-02 03:04:05,678 - ERROR - CUDA out of memory"),
            Some("2024-01-02 03:04:05.678000000".into())
        );
        assert_eq!(
            text("[2026-06-16 23:42:11,933] [INFO] [launch.py:335:sigkill_handler] Killing"),
            Some("2026-06-16 23:42:11.933000000".into())
        );
        assert_eq!(
            text("[default0]:2024-03-04T05:06:07.5Z x"),
            Some("2024-03-04 05:06:07.500000000".into())
        );
        // vLLM's workers, with and without a fraction.
        assert_eq!(
            text("(VllmWorker rank=1 pid=12171) ERROR 04-30 16:21:27 [multiproc_executor.py:380] Traceback"),
            Some("04-30 16:21:27.000000000".into())
        );
        assert_eq!(
            text("(Worker pid=1234) ERROR 08-09 05:21:00.000000 [engine] CUDA out of memory."),
            Some("08-09 05:21:00.000000000".into())
        );
        // CANN.
        assert_eq!(
            text("[ERROR] 2026-01-07-02:38:42 (PID:1692557, Device:0, RankID:-1) ERR00006"),
            Some("2026-01-07 02:38:42.000000000".into())
        );
    }

    #[test]
    fn lines_without_a_logger_time_have_none() {
        assert_eq!(
            text("[rank3]: torch.OutOfMemoryError: CUDA out of memory."),
            None
        );
        assert_eq!(text("Step    0 | Loss: 11.0838 | Time: 1.626s"), None);
        assert_eq!(text("I9999 12:00:00.1 x"), None);
        assert_eq!(text("E1121 25:00:00.000000 1 x.cc:1] y"), None);
        assert_eq!(text("[1,16,4,128] f32"), None);
    }

    #[test]
    fn times_compare_in_order_with_or_without_a_year() {
        let t = |l: &str| oomscope_report::RankTime {
            time: of_line(l).unwrap().text(),
            ..Default::default()
        };
        let a = t("[rank1]:[E615 21:49:22.056172510 a.cc:1] x");
        let b = t("[rank2]:[E615 21:49:22.125325668 a.cc:1] x");
        assert!(a.earlier_than(&b) && !b.earlier_than(&a));
        let c = t("2026-06-15 21:49:23,000 x");
        assert!(b.earlier_than(&c) && !c.earlier_than(&b));
        assert!(t("2025-12-31 23:59:59,000 x").earlier_than(&t("2026-01-01 00:00:00,000 x")));
    }
}
