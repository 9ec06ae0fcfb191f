//! The walls of ARCHITECTURE.md, checked (in the spirit of Perfetto's
//! `tools/check_imports`): a rule that only lives in a document drifts.
//!
//! - format crates don't know each other: `logs`, `dump`, `xla`, `steps`,
//!   `snapshot`, `runtime` depend on no other format crate, only the facade
//!   combines them;
//! - cross-input analyses over summaries (`ranks`) depend on no format
//!   crate: they read the `Report` the readers already built;
//! - the analyzer knows nothing of the browser: no analyzer crate depends on
//!   `web-sys`, `js-sys`, `wasm-bindgen*`, `leptos*` or `gloo*`;
//! - views never call each other: a file under `app/src/views/` names no
//!   other view module; views meet in `app/src/state.rs`, `model/`, `draw/`
//!   and `widgets/`, none of which is under `views/`.
//!
//! Manifests are read with the small parser below (section headers and the
//! keys of dependency tables are all these rules need), so the test needs no
//! `cargo metadata` run and no TOML crate.

use std::path::{Path, PathBuf};

/// Crates that each own one family of inputs (package names).
const FORMAT_CRATES: &[&str] = &[
    "oomscope-logs",
    "oomscope-dump",
    "oomscope-xla",
    "oomscope-steps",
    "oomscope-snapshot",
    "oomscope-runtime",
];

/// Crates that analyse already-built per-input summaries (a `Report`) and
/// must never reach back into a reader.
const SUMMARY_CRATES: &[&str] = &["oomscope-ranks"];

/// Crates that exist only for the browser (names, or prefixes ending in `*`).
const BROWSER_CRATES: &[&str] = &["web-sys", "js-sys", "wasm-bindgen*", "leptos*", "gloo*"];

/// Files of `app/src/views/` that compose the page out of the views (they
/// mount views, as `main.rs` does) rather than being one.
const VIEW_COMPOSERS: &[&str] = &["mod.rs"];

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// One manifest: its package name and every dependency it declares (normal,
/// dev, build, target-specific), under the name of the package depended on.
#[derive(Debug, PartialEq)]
struct Manifest {
    package: String,
    dependencies: Vec<String>,
}

/// Reads the parts of a `Cargo.toml` these rules need: `[package] name`, and
/// the keys of every `[*dependencies]` table (`name = ...`, `name.workspace =
/// true`, or a `[dependencies.name]` header), with `package = "..."` renames
/// resolved when they are written inline.
fn parse_manifest(text: &str) -> Manifest {
    let mut package = String::new();
    let mut dependencies = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = header.trim_matches(|c| c == '[' || c == ']').to_string();
            // `[dependencies.serde]`, `[target.'cfg(..)'.dev-dependencies.clap]`.
            if let Some((table, name)) = section.rsplit_once('.') {
                if table.ends_with("dependencies") {
                    dependencies.push(name.trim_matches('"').to_string());
                }
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if section == "package" && key == "name" {
            package = value.trim().trim_matches('"').to_string();
        } else if section.ends_with("dependencies") {
            let name = key.split('.').next().unwrap_or(key).trim_matches('"');
            let renamed = value
                .split_once("package")
                .and_then(|(_, rest)| rest.split('"').nth(1));
            dependencies.push(renamed.unwrap_or(name).to_string());
        }
    }
    Manifest {
        package,
        dependencies,
    }
}

fn is_browser_crate(name: &str) -> bool {
    BROWSER_CRATES
        .iter()
        .any(|rule| match rule.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *rule,
        })
}

/// Every broken crate rule of these manifests, one line each.
fn crate_wall_violations(manifests: &[(PathBuf, Manifest)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, manifest) in manifests {
        for dependency in &manifest.dependencies {
            if FORMAT_CRATES.contains(&manifest.package.as_str())
                && FORMAT_CRATES.contains(&dependency.as_str())
                && *dependency != manifest.package
            {
                out.push(format!(
                    "{}: format crate {} depends on format crate {dependency}",
                    path.display(),
                    manifest.package
                ));
            }
            if SUMMARY_CRATES.contains(&manifest.package.as_str())
                && FORMAT_CRATES.contains(&dependency.as_str())
            {
                out.push(format!(
                    "{}: {} reads summaries, yet depends on format crate {dependency}",
                    path.display(),
                    manifest.package
                ));
            }
            if is_browser_crate(dependency) {
                out.push(format!(
                    "{}: analyzer crate {} depends on browser crate {dependency}",
                    path.display(),
                    manifest.package
                ));
            }
        }
    }
    out
}

/// The analyzer's manifests: the facade and every crate under `analyzer/crates/`.
fn analyzer_manifests() -> Vec<(PathBuf, Manifest)> {
    let root = repo().join("analyzer");
    let mut paths = vec![root.join("Cargo.toml")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .expect("analyzer/crates")
        .filter_map(|e| e.ok().map(|e| e.path().join("Cargo.toml")))
        .filter(|p| p.is_file())
        .collect();
    crates.sort();
    paths.extend(crates);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let manifest = parse_manifest(&text);
            (path, manifest)
        })
        .collect()
}

#[test]
fn format_crates_know_no_other_format_crate_and_no_crate_knows_the_browser() {
    let manifests = analyzer_manifests();
    let packages: Vec<&str> = manifests.iter().map(|(_, m)| m.package.as_str()).collect();
    // The rule must look at the crates it is about.
    for expected in [
        "oomscope-analyzer",
        "oomscope-logs",
        "oomscope-xla",
        "oomscope-steps",
        "oomscope-ranks",
    ] {
        assert!(
            packages.contains(&expected),
            "{expected} not found in {packages:?}"
        );
    }
    let violations = crate_wall_violations(&manifests);
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// Crates that analyse a program the decoders built and must not know any
/// format: they take `report` types (and `layout`'s shapes) only.
const FORMAT_FREE_CRATES: &[&str] = &["oomscope-whatif"];

#[test]
fn the_what_if_engine_knows_no_format_crate() {
    let manifests = analyzer_manifests();
    let mut checked = 0;
    for (path, manifest) in &manifests {
        if !FORMAT_FREE_CRATES.contains(&manifest.package.as_str()) {
            continue;
        }
        checked += 1;
        // Its tests may read real inputs through a decoder; its library may not.
        let text = std::fs::read_to_string(path).unwrap();
        let library = text.split("[dev-dependencies]").next().unwrap_or("");
        let runtime = parse_manifest(library);
        for dependency in &runtime.dependencies {
            assert!(
                !FORMAT_CRATES.contains(&dependency.as_str()),
                "{}: {} depends on format crate {dependency}",
                path.display(),
                manifest.package
            );
        }
    }
    assert_eq!(
        checked,
        FORMAT_FREE_CRATES.len(),
        "every format-free crate is found"
    );
}

#[test]
fn the_manifest_rules_catch_what_they_forbid() {
    let steps = parse_manifest(
        "[package]\nname = \"oomscope-steps\" # the step reader\n\n[dependencies]\n\
         oomscope-report.workspace = true\noomscope-xla = { path = \"../xla\" }\n\
         [target.'cfg(target_arch = \"wasm32\")'.dependencies]\nweb = { package = \"web-sys\", version = \"0.3\" }\n\
         [dev-dependencies.gloo-timers]\nversion = \"0.3\"\n",
    );
    assert_eq!(steps.package, "oomscope-steps");
    assert_eq!(
        steps.dependencies,
        ["oomscope-report", "oomscope-xla", "web-sys", "gloo-timers"]
    );
    let violations = crate_wall_violations(&[(PathBuf::from("steps/Cargo.toml"), steps)]);
    assert_eq!(violations.len(), 3, "{violations:?}");
    let ranks = parse_manifest(
        "[package]\nname = \"oomscope-ranks\"\n[dependencies]\noomscope-report.workspace = true\noomscope-runtime.workspace = true\n",
    );
    assert_eq!(
        crate_wall_violations(&[(PathBuf::from("ranks/Cargo.toml"), ranks)]).len(),
        1
    );
    let layout = parse_manifest(
        "[package]\nname = \"oomscope-layout\"\n[dependencies]\noomscope-report.workspace = true\n",
    );
    assert!(crate_wall_violations(&[(PathBuf::from("layout/Cargo.toml"), layout)]).is_empty());
}

/// The view a file under `views/` belongs to (`padding` for
/// `views/padding.rs` and `views/padding/bars.rs`); `None` for composers.
fn owning_view(relative: &Path) -> Option<String> {
    let first = relative
        .components()
        .next()?
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    if relative.components().count() == 1 && VIEW_COMPOSERS.contains(&first.as_str()) {
        return None;
    }
    Some(first.trim_end_matches(".rs").to_string())
}

/// The view modules a source file names (`crate::views::x`, `views::x`, and
/// `super::x` in a file directly under `views/`).
fn named_view_modules(source: &str, directly_under_views: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut prefixes = vec!["views::"];
    if directly_under_views {
        prefixes.push("super::");
    }
    for prefix in prefixes {
        for (at, _) in source.match_indices(prefix) {
            let rest = &source[at + prefix.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
            // `use crate::views::{a, b}`.
            if let Some(list) = rest.strip_prefix('{').and_then(|r| r.split('}').next()) {
                out.extend(
                    list.split(',')
                        .map(|n| n.trim().split("::").next().unwrap_or("").to_string())
                        .filter(|n| !n.is_empty()),
                );
            }
        }
    }
    out
}

fn rust_files(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn view_import_violations(views: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(views, &mut files);
    let mut out = Vec::new();
    for file in files {
        let relative = file.strip_prefix(views).unwrap_or(&file);
        let Some(view) = owning_view(relative) else {
            continue;
        };
        let source = std::fs::read_to_string(&file).unwrap_or_default();
        let directly_under = relative.components().count() == 1;
        let mut named = named_view_modules(&source, directly_under);
        named.sort();
        named.dedup();
        for other in named {
            // `super::*` in a file's own test module, `super::x` naming an item.
            let is_view =
                views.join(format!("{other}.rs")).is_file() || views.join(&other).is_dir();
            if other != view && is_view {
                out.push(format!(
                    "views/{}: the {view} view uses the {other} view",
                    relative.display()
                ));
            }
        }
    }
    out
}

#[test]
fn views_never_import_each_other() {
    let views = repo().join("app/src/views");
    assert!(views.is_dir(), "{}", views.display());
    let violations = view_import_violations(&views);
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn the_view_rule_catches_a_view_naming_another() {
    let dir = std::env::temp_dir().join(format!("oomscope-views-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("padding")).unwrap();
    std::fs::write(dir.join("table.rs"), "pub fn head() {}").unwrap();
    std::fs::write(dir.join("steps.rs"), "pub fn paint() {}").unwrap();
    std::fs::write(dir.join("mod.rs"), "use crate::views::{padding, steps};").unwrap();
    std::fs::write(
        dir.join("padding.rs"),
        "use crate::views::table::head;\nmod bars;",
    )
    .unwrap();
    std::fs::write(
        dir.join("padding/bars.rs"),
        "use crate::views::steps::paint;\nuse super::Bar;",
    )
    .unwrap();
    std::fs::write(
        dir.join("diagnosis.rs"),
        "fn f() { super::padding::lists(); }\n#[cfg(test)] mod t { use super::*; }",
    )
    .unwrap();
    let violations = view_import_violations(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        violations,
        [
            "views/diagnosis.rs: the diagnosis view uses the padding view",
            "views/padding/bars.rs: the padding view uses the steps view",
            "views/padding.rs: the padding view uses the table view",
        ]
    );
}

/// The modules directly under one crate's `src/` (a file `x.rs`, or a folder
/// `x/` with its `mod.rs`), each with the other modules of the crate it
/// names as `crate::other` outside its `#[cfg(test)]` part.
fn module_imports(src: &Path) -> Vec<(String, Vec<String>)> {
    let mut modules: Vec<(String, String)> = Vec::new();
    let Ok(entries) = std::fs::read_dir(src) else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let (name, files) = if path.is_dir() {
            let mut files = Vec::new();
            rust_files(&path, &mut files);
            (
                path.file_name().unwrap().to_string_lossy().to_string(),
                files,
            )
        } else if path.extension().is_some_and(|e| e == "rs") {
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            if stem == "lib" || stem == "main" {
                continue;
            }
            (stem, vec![path])
        } else {
            continue;
        };
        let text: String = files
            .iter()
            .map(|f| {
                let t = std::fs::read_to_string(f).unwrap_or_default();
                // Unit tests may call the crate's entry points.
                t.split("#[cfg(test)]").next().unwrap_or("").to_string()
            })
            .collect();
        modules.push((name, text));
    }
    let names: Vec<String> = modules.iter().map(|(n, _)| n.clone()).collect();
    modules
        .iter()
        .map(|(name, text)| {
            let used = names
                .iter()
                .filter(|other| *other != name && text.contains(&format!("crate::{other}::")))
                .cloned()
                .collect();
            (name.clone(), used)
        })
        .collect()
}

/// A cycle of module imports, if any, as the modules along it.
fn import_cycle(graph: &[(String, Vec<String>)]) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &[(String, Vec<String>)],
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            return Some(path[i..].to_vec());
        }
        if done.iter().any(|d| d == node) {
            return None;
        }
        path.push(node.to_string());
        let next = graph
            .iter()
            .find(|(n, _)| n == node)
            .map(|(_, e)| e.clone());
        for n in next.unwrap_or_default() {
            if let Some(c) = visit(&n, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.push(node.to_string());
        None
    }
    let mut done = Vec::new();
    graph
        .iter()
        .find_map(|(n, _)| visit(n, graph, &mut Vec::new(), &mut done))
}

/// Inside the readers whose circles issue 28 removed, modules import each
/// other one way only: what two modules share lives in a module below both
/// (`logs`: `keywords.rs`, `listing.rs`, `event.rs`; `permalink`:
/// `bounds.rs`).
#[test]
fn reader_modules_import_each_other_one_way() {
    for krate in ["logs", "permalink"] {
        let src = repo().join("analyzer/crates").join(krate).join("src");
        let graph = module_imports(&src);
        assert!(
            graph.len() >= 3,
            "{krate}: modules not found in {}",
            src.display()
        );
        assert_eq!(import_cycle(&graph), None, "{krate}: {graph:?}");
    }
    // The check sees a circle.
    let circle = vec![
        ("a".to_string(), vec!["b".to_string()]),
        ("b".to_string(), vec!["c".to_string()]),
        ("c".to_string(), vec!["a".to_string()]),
    ];
    assert_eq!(import_cycle(&circle).map(|c| c.len()), Some(3));
}

/// The reader modules a reader's source names through `super::` or
/// `readers::` (single paths and `{...}` lists), outside its tests.
fn readers_named(source: &str, readers: &[String]) -> Vec<String> {
    let source = source.split("#[cfg(test)]").next().unwrap_or("");
    let mut named = Vec::new();
    for prefix in ["super::", "readers::"] {
        for (at, _) in source.match_indices(prefix) {
            let rest = &source[at + prefix.len()..];
            let names = match rest.strip_prefix('{') {
                Some(list) => &list[..list.find('}').unwrap_or(list.len())],
                None => {
                    let end = rest
                        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    &rest[..end]
                }
            };
            for name in names
                .split(',')
                .map(|n| n.trim().split("::").next().unwrap_or(""))
            {
                if readers.iter().any(|r| r == name) && !named.iter().any(|n| n == name) {
                    named.push(name.to_string());
                }
            }
        }
    }
    named
}

/// The facade's readers (`analyzer/src/readers/`, one module per format)
/// never name each other: what several share lives in `readers/mod.rs`,
/// so a reader is added, changed or removed alone.
#[test]
fn readers_never_name_each_other() {
    let dir = repo().join("analyzer/src/readers");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let readers: Vec<String> = files
        .iter()
        .filter_map(|f| f.file_stem().map(|s| s.to_string_lossy().to_string()))
        .filter(|s| s != "mod")
        .collect();
    assert!(readers.len() >= 8, "readers not found in {}", dir.display());
    let mut violations = Vec::new();
    for f in &files {
        let own = f.file_stem().unwrap().to_string_lossy().to_string();
        if own == "mod" {
            continue;
        }
        let source = std::fs::read_to_string(f).unwrap();
        for other in readers_named(&source, &readers) {
            if other != own {
                violations.push(format!("readers/{own}.rs names readers/{other}.rs"));
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
    // The check sees a reader named either way.
    let names = ["text".to_string(), "dump".to_string()];
    assert_eq!(
        readers_named(
            "use super::{dump::X, Out};\nfn f() { super::text::g() }",
            &names
        ),
        ["dump", "text"]
    );
    assert!(readers_named("use super::{Offer, Out, Reader};", &names).is_empty());
}
