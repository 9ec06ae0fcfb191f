//! Ranks and steps from how jobs name their files.
//!
//! Launchers and scripts write one file (or folder) per process:
//! - torchrun: `RANK`/`LOCAL_RANK` in the names scripts choose (`rank3.pickle`,
//!   `snapshot_rank_3.pickle`, `local_rank-3/`), and `--log-dir`'s
//!   `<run>/attempt_<n>/<local_rank>/stdout.log`;
//! - JAX: `jax.process_index()` (`process_3`, `proc3`), TPU VM hosts
//!   (`host3`, `worker3`, `worker-3`);
//! - `oomscope run`: one folder per process, `rank0/`, `rank1/`, ...
//!
//! A step number in the file's own name (`step020`, `step_40`, `-step-60`,
//! or a zero-padded counter `_000040`) orders one rank's files in steps.

/// A rank read from a name, and where in the name it was (so that the
/// run's name template can blank it out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameRank {
    pub rank: u32,
    /// Byte range of the digits in the full name.
    pub digits: (usize, usize),
}

/// Words that name a process, longest first so `local_rank` wins over `rank`.
const RANK_WORDS: [&str; 6] = ["local_rank", "process", "worker", "rank", "host", "proc"];

/// The rank a path names: the file name first, then its folders from the
/// innermost out. `None` when no part follows a convention.
pub fn rank_of(name: &str) -> Option<NameRank> {
    let parts = components(name);
    for &(start, end) in parts.iter().rev() {
        let part = &name[start..end];
        if let Some((rank, (a, b))) = rank_in_component(part) {
            return Some(NameRank {
                rank,
                digits: (start + a, start + b),
            });
        }
    }
    // torchrun --log-dir: `attempt_0/3/stdout.log`, the local rank as a bare folder.
    for w in parts.windows(2) {
        let (parent, child) = (&name[w[0].0..w[0].1], &name[w[1].0..w[1].1]);
        let is_attempt = parent
            .strip_prefix("attempt_")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
        if is_attempt
            && !child.is_empty()
            && child.len() <= 6
            && child.bytes().all(|c| c.is_ascii_digit())
        {
            let rank = child.parse().ok()?;
            return Some(NameRank { rank, digits: w[1] });
        }
    }
    None
}

/// Byte ranges of the `/`-separated parts of a name.
fn components(name: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in name.char_indices() {
        if c == '/' || c == '\\' {
            if i > start {
                out.push((start, i));
            }
            start = i + 1;
        }
    }
    if name.len() > start {
        out.push((start, name.len()));
    }
    out
}

/// `rank3`, `rank_3`, `rank-3`, `Rank3`, `local_rank3`, `process_3`, … in one
/// part of a path: the word must not continue a longer word (`frank3`,
/// `preprocess_3`), and the digits must end there (`rank3x` is no rank).
fn rank_in_component(part: &str) -> Option<(u32, (usize, usize))> {
    let lower = part.to_ascii_lowercase();
    let b = lower.as_bytes();
    for word in RANK_WORDS {
        let mut from = 0;
        while let Some(at) = lower[from..].find(word).map(|i| i + from) {
            from = at + 1;
            let before_ok = at == 0 || !b[at - 1].is_ascii_alphabetic();
            // `local_rank` is matched as a whole; plain `rank` inside it is skipped.
            let inside_local = word == "rank" && lower[..at].ends_with("local_");
            if !before_ok || inside_local {
                continue;
            }
            let mut i = at + word.len();
            if matches!(b.get(i), Some(b'_' | b'-' | b'=' | b'.')) {
                i += 1;
            }
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let end = i;
            if end == start
                || end - start > 6
                || b.get(end).is_some_and(|c| c.is_ascii_alphabetic())
            {
                continue;
            }
            if let Ok(rank) = lower[start..end].parse() {
                return Some((rank, (start, end)));
            }
        }
    }
    None
}

/// The rank a host's name gives: a Cloud TPU VM's worker index
/// (`t1v-n-8c2f3a1e-w-3`, the `-w-N` its name ends with), else a numbered
/// host as a file name would give it (`host3`, `worker-3`).
pub fn rank_of_host(host: &str) -> Option<u32> {
    let lower = host.trim().to_ascii_lowercase();
    // Only the host's own label, not its domain.
    let label = lower.split('.').next().unwrap_or("");
    if let Some(at) = label.rfind("-w-") {
        let digits = &label[at + 3..];
        if !digits.is_empty() && digits.len() <= 6 && digits.bytes().all(|b| b.is_ascii_digit()) {
            return digits.parse().ok();
        }
    }
    rank_in_component(label).map(|(rank, _)| rank)
}

/// The step a file's own name gives: `step020`, `step_40`, `-step-60`,
/// `global_step100`, or a zero-padded counter (`_000040`, three digits at
/// least, starting with 0). Digits of the rank are never a step.
pub fn step_of(name: &str, rank: Option<NameRank>) -> Option<u64> {
    let base_start = name.rfind(['/', '\\']).map_or(0, |i| i + 1);
    let base = &name[base_start..];
    let lower = base.to_ascii_lowercase();
    let b = lower.as_bytes();
    let is_rank_digits =
        |s: usize, e: usize| rank.is_some_and(|r| r.digits == (base_start + s, base_start + e));
    let mut from = 0;
    while let Some(at) = lower[from..].find("step").map(|i| i + from) {
        from = at + 1;
        let mut i = at + 4;
        if matches!(b.get(i), Some(b'_' | b'-' | b'=')) {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i > start && i - start <= 12 {
            return lower[start..i].parse().ok();
        }
    }
    // A zero-padded counter after `_` or `-`.
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && i > 0 && matches!(b[i - 1], b'_' | b'-') {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let padded = i - start >= 3 && b[start] == b'0' && i - start <= 12;
            if padded && !is_rank_digits(start, i) {
                return lower[start..i].parse().ok();
            }
            continue;
        }
        i += 1;
    }
    None
}

/// The name with its rank's digits and every other digit run blanked
/// (`balanced/rank#/memory_step#.prof`): files of one run share it, files
/// of another run or another kind do not.
pub fn template(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_digits = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(name: &str) -> Option<u32> {
        rank_of(name).map(|r| r.rank)
    }

    #[test]
    fn launcher_conventions_give_the_rank() {
        assert_eq!(rank("rank3.pickle"), Some(3));
        assert_eq!(rank("snapshot_rank_3.pickle"), Some(3));
        assert_eq!(rank("mem-rank-12.pickle"), Some(12));
        assert_eq!(rank("local_rank3/oom.pickle"), Some(3));
        assert_eq!(rank("LOCAL_RANK_5.log"), Some(5));
        assert_eq!(rank("worker3.xplane.pb"), Some(3));
        assert_eq!(rank_of_host("t1v-n-8c2f3a1e-w-3"), Some(3));
        assert_eq!(rank_of_host("t1v-n-8c2f3a1e-w-12.us-central2-b.c.proj.internal"), Some(12));
        assert_eq!(rank_of_host("worker-7"), Some(7));
        assert_eq!(rank_of_host("vm"), None);
        assert_eq!(rank_of_host("gke-tpu-8c2f3a1e"), None);
        assert_eq!(rank("process_3/memory.prof"), Some(3));
        assert_eq!(rank("host7.prof"), Some(7));
        assert_eq!(rank("proc2.prof"), Some(2));
        assert_eq!(rank("run/rank0/step_10.prof"), Some(0));
        assert_eq!(rank("logs/run1/attempt_0/3/stderr.log"), Some(3));
        // The file's own name wins over its folder.
        assert_eq!(rank("rank1/profile_rank2.prof"), Some(2));
        // Not ranks: a longer word, digits running into letters, no digits.
        assert_eq!(rank("frank3.pickle"), None);
        assert_eq!(rank("preprocess_3.prof"), None);
        assert_eq!(rank("rank3x.pickle"), None);
        assert_eq!(rank("ranking.txt"), None);
        assert_eq!(rank("memory_step_20.prof"), None);
        assert_eq!(rank("profile-13148.prof"), None);
    }

    #[test]
    fn steps_come_from_the_file_name() {
        let step = |n: &str| step_of(n, rank_of(n));
        assert_eq!(step("rank0/memory_step020.prof"), Some(20));
        assert_eq!(step("process_2_step_000040.prof"), Some(40));
        assert_eq!(step("host1-step-60.prof"), Some(60));
        assert_eq!(step("ckpt_000040.pickle"), Some(40));
        assert_eq!(step("global_step100/rank0.pickle"), None);
        // A rank's zero-padded digits are not a step; a pid is not a step.
        assert_eq!(step("rank_003.pickle"), None);
        assert_eq!(step("profile-13148.prof"), None);
        assert_eq!(step("step/rank3.prof"), None);
    }

    #[test]
    fn one_run_shares_one_template() {
        assert_eq!(
            template("leak/process_2_step_000040.prof"),
            "leak/process_#_step_#.prof"
        );
        assert_eq!(
            template("leak/process_0_step_000020.prof"),
            template("leak/process_3_step_000060.prof")
        );
        assert_ne!(template("a/rank0.pickle"), template("b/rank0.pickle"));
    }
}
