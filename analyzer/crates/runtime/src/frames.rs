//! Telling the user's own Python frames from framework internals, so stacks
//! and source lines point at the user's line rather than at `jax/_src`.

use oomscope_report::FrameKind;

/// Longest function or file name kept in a frame (the rest is cut); a
/// hostile profile can make every frame carry a megabyte-long string.
pub const MAX_NAME_BYTES: usize = 1024;

/// The kind of a frame, from its source file path.
pub fn frame_kind(file: &str) -> FrameKind {
    let path = file.replace('\\', "/");
    let lower = path.to_ascii_lowercase();
    if [".so", ".cc", ".cpp", ".cu", ".h", ".c"]
        .iter()
        .any(|ext| lower.ends_with(ext))
    {
        return FrameKind::Native;
    }
    if let Some(pseudo) = lower.strip_prefix('<') {
        // `<stdin>`, `<string>`, `<ipython-input-3-…>` are code the user typed;
        // `<frozen runpy>` and friends are the interpreter's own.
        let typed = ["stdin", "string", "ipython-input", "console"]
            .iter()
            .any(|p| pseudo.starts_with(p));
        return if typed {
            FrameKind::Python
        } else {
            FrameKind::Framework
        };
    }
    const FRAMEWORK_DIRS: [&str; 12] = [
        "site-packages/",
        "dist-packages/",
        "/jax/",
        "/jaxlib/",
        "/flax/",
        "/optax/",
        "/equinox/",
        "/haiku/",
        "/orbax/",
        "/torch/",
        "/numpy/",
        "/lib/python3",
    ];
    if FRAMEWORK_DIRS.iter().any(|dir| lower.contains(dir)) || lower.starts_with("jax/") {
        return FrameKind::Framework;
    }
    FrameKind::Python
}

/// `s` cut to at most [`MAX_NAME_BYTES`] on a character boundary.
pub fn bounded_name(s: &str) -> String {
    if s.len() <= MAX_NAME_BYTES {
        return s.to_string();
    }
    let mut end = MAX_NAME_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jax_internals_are_framework_and_scripts_are_user_code() {
        assert_eq!(
            frame_kind("/usr/local/lib/python3.11/site-packages/jax/_src/numpy/lax_numpy.py"),
            FrameKind::Framework
        );
        assert_eq!(
            frame_kind("/home/me/jax/jax/_src/api.py"),
            FrameKind::Framework
        );
        assert_eq!(frame_kind("<frozen runpy>"), FrameKind::Framework);
        assert_eq!(frame_kind("/home/me/train.py"), FrameKind::Python);
        assert_eq!(frame_kind("<ipython-input-4-2b1e>"), FrameKind::Python);
        assert_eq!(
            frame_kind("external/xla/xla/pjrt/pjrt_client.cc"),
            FrameKind::Native
        );
    }

    #[test]
    fn long_names_are_cut_on_a_char_boundary() {
        let long = "é".repeat(MAX_NAME_BYTES);
        let cut = bounded_name(&long);
        assert!(cut.len() <= MAX_NAME_BYTES + "…".len());
        assert!(cut.ends_with('…'));
    }
}
