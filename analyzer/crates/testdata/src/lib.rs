//! Where tests and benchmarks find real inputs, in one place:
//!
//! - [`corpus()`]: the shared corpus of real inputs (`../shared/corpus`
//!   beside the checkout, read in place, never copied into the project),
//!   or the folder `OOMSCOPE_CORPUS` names;
//! - [`fixtures()`]: the project's own generated fixtures (`fixtures/`).
//!
//! A missing folder panics with its path and how to provide it, so a test
//! run without the corpus says why instead of failing on some file.
//! Benchmarks, which skip what is absent, ask [`corpus_if_present`].

use std::path::{Path, PathBuf};

/// The environment variable that points at the shared corpus elsewhere.
pub const CORPUS_ENV: &str = "OOMSCOPE_CORPUS";

/// The repository's root (this crate is `analyzer/crates/testdata`).
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// Where the corpus is expected: `OOMSCOPE_CORPUS`, else `../shared/corpus`
/// beside the repository.
pub fn corpus_location() -> PathBuf {
    match std::env::var_os(CORPUS_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repository().join("../shared/corpus"),
    }
}

/// The shared corpus; panics naming the path when it is not there.
pub fn corpus() -> PathBuf {
    let dir = corpus_location();
    if !dir.is_dir() {
        panic!(
            "the shared corpus is not at {}: check out `shared/` beside the repository, \
             or set {CORPUS_ENV} to the corpus folder",
            dir.display()
        );
    }
    dir
}

/// The shared corpus when it is there (benchmarks skip what is absent).
pub fn corpus_if_present() -> Option<PathBuf> {
    Some(corpus_location()).filter(|d| d.is_dir())
}

/// The project's generated fixtures (`fixtures/`, made by `tools/fixtures/`).
pub fn fixtures() -> PathBuf {
    let dir = repository().join("fixtures");
    if !dir.is_dir() {
        panic!(
            "the fixtures are not at {}: regenerate them with `python3 tools/fixtures/generate.py`",
            dir.display()
        );
    }
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_override_wins_and_a_missing_corpus_names_its_path() {
        // One test touches the variable, so no other test sees it change.
        let missing = std::env::temp_dir().join("oomscope-no-corpus-here");
        std::env::set_var(CORPUS_ENV, &missing);
        assert_eq!(corpus_location(), missing);
        assert_eq!(corpus_if_present(), None);
        let message = std::panic::catch_unwind(corpus).unwrap_err();
        let text = message.downcast_ref::<String>().unwrap();
        assert!(
            text.contains(&missing.display().to_string()) && text.contains(CORPUS_ENV),
            "{text}"
        );
        std::env::remove_var(CORPUS_ENV);
        assert!(corpus_location().ends_with("shared/corpus"));
        assert!(fixtures().join("INDEX.md").is_file());
    }
}

/// The optimized HloProto (`*.after_optimizations.hlo.pb`) a folder of an
/// XLA dump holds, if any (the first, should it hold several).
pub fn hlo_proto_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".after_optimizations.hlo.pb"))
        .collect();
    found.sort();
    found.into_iter().next()
}

