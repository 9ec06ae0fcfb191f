//! The rank a launcher writes before each line of a process's output, so
//! that the same error printed by N ranks is one error with its ranks.
//!
//! - torchrun (PyTorch ≥ 2.3 with `--local-ranks-filter`/default tee):
//!   `[rank3]: ...`, also followed by a glog-style header
//!   (`[rank0]:[W320 01:57:14.472868074 ProcessGroupNCCL.cpp:1553] ...`);
//! - torchrun's older `--tee` prefix `[{role}{local_rank}]:`, with the
//!   default role: `[default3]: ...`;
//! - mpirun / horovodrun `--tag-output`: `[1,3]<stderr>: ...` (job, rank);
//! - Ray / vLLM workers: `(VllmWorker rank=3 pid=254) ...`.

/// The rank tagging `line`, if its first characters are one of the tags above.
pub fn of_line(line: &str) -> Option<u32> {
    let s = line.trim_start();
    let b = s.as_bytes();
    match b.first()? {
        b'[' => {
            let close = memchr::memchr(b']', &b[..b.len().min(32)])?;
            let inner = &s[1..close];
            let rest = &s[close + 1..];
            if !(rest.starts_with(':') || rest.starts_with("<std")) {
                return None;
            }
            if let Some(n) = inner
                .strip_prefix("rank")
                .or_else(|| inner.strip_prefix("default"))
            {
                return number(n);
            }
            // mpirun: `[job,rank]<stderr>:`.
            let (job, rank) = inner.split_once(',')?;
            number(job)?;
            number(rank)
        }
        b'(' => {
            let close = memchr::memchr(b')', &b[..b.len().min(80)])?;
            let inner = &s[1..close];
            let at = inner.find("rank=")?;
            let digits: &str = inner[at + 5..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?;
            number(digits)
        }
        _ => None,
    }
}

fn number(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 7 || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::of_line;

    #[test]
    fn launcher_prefixes_give_the_rank() {
        assert_eq!(of_line("[rank3]: torch.OutOfMemoryError: CUDA"), Some(3));
        assert_eq!(
            of_line("[rank0]:[W320 01:57:14.472868074 x.cpp:1] w"),
            Some(0)
        );
        assert_eq!(of_line("[default12]: Traceback"), Some(12));
        assert_eq!(of_line("[1,5]<stderr>: RuntimeError"), Some(5));
        assert_eq!(of_line("(VllmWorker rank=2 pid=254) ERROR"), Some(2));
        // Not rank tags: shapes, other brackets, pids without a rank.
        assert_eq!(of_line("[1,16,4,128] f32"), None);
        assert_eq!(of_line("[rank]: x"), None);
        assert_eq!(of_line("[2026-06-16 23:42:11,933] [INFO]"), None);
        assert_eq!(of_line("(worker pid=12) x"), None);
        assert_eq!(of_line("rank3: x"), None);
    }
}
