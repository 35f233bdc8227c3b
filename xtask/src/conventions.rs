//! `cargo xtask conventions`: the house rules of `CONTRIBUTING.md` that a program can check.
//!
//! * Every dependency of every member comes from `[workspace.dependencies]`
//!   (`name.workspace = true`, optionally with `features` / `optional`), so each version is
//!   pinned once; the one exception is a crate's dev-dependency on itself (`path = "."`, to
//!   switch on features for its own tests).
//! * One version in one place: the `version` requirement of an internal crate in
//!   `[workspace.dependencies]` is exactly that crate's own version (bumped together).
//! * Every `allow(unsafe_code)` / `expect(unsafe_code)` states its `reason`.
//! * In the library sources (`crates/*/src`): a public `with_*` function is a setter (takes
//!   `self`), never a constructor; every `pub enum Error` is `#[non_exhaustive]`; modules import
//!   the crate's `Error` / `Result` from `crate::error`, not through the root re-exports.
//! * No module cycles: the top-level modules of a crate's `src/` import each other without a
//!   circle (see [`crate::module_graph`]).
//! * No file refers to documents outside the repository (the shared notes, specs and test
//!   data beside a checkout): facts are spelled out or linked to public specifications.

use std::path::{Path, PathBuf};

/// Keys a `workspace = true` dependency entry may add.
const WORKSPACE_ENTRY_KEYS: &[&str] = &["workspace", "features", "optional"];

/// Text that names documents outside the repository.
/// (Spelled in two halves so that this file does not name them itself.)
const OUTSIDE_DOCS: &[&str] = &[
    concat!("shared", "/notes"),
    concat!("shared", "/specs"),
    concat!("shared", "/testdata"),
];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if let Some(extra) = args.first() {
        return Err(format!("unexpected argument `{extra}`"));
    }
    let root = crate::util::project_root();
    let mut problems = Vec::new();
    for manifest in member_manifests(&root)? {
        check_manifest(&root, &manifest, &mut problems)?;
    }
    check_internal_versions(&root, &mut problems)?;
    for file in tracked_files(&root)? {
        check_text(&root, &file, &mut problems);
    }
    for src in source_dirs(&root)? {
        let graph = crate::module_graph::crate_graph(&src)?;
        for cycle in crate::module_graph::cycles(&graph) {
            let rel = src.strip_prefix(&root).unwrap_or(&src);
            problems.push(format!(
                "{}: module cycle {} (top-level modules must not import each other in a circle)",
                rel.display(),
                cycle.join(" <-> ")
            ));
        }
    }
    if problems.is_empty() {
        println!("conventions: ok");
        return Ok(());
    }
    for p in &problems {
        eprintln!("{p}");
    }
    Err(format!("{} convention problem(s)", problems.len()))
}

/// `src/` of every member (the crates and xtask).
fn source_dirs(root: &Path) -> Result<Vec<PathBuf>, String> {
    Ok(member_manifests(root)?
        .into_iter()
        .filter_map(|m| m.parent().map(|d| d.join("src")))
        .filter(|d| d.is_dir())
        .collect())
}

fn member_manifests(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = vec![root.join("xtask/Cargo.toml")];
    let crates = root.join("crates");
    let entries = std::fs::read_dir(&crates).map_err(|e| format!("{}: {e}", crates.display()))?;
    for e in entries {
        let path = e.map_err(|e| e.to_string())?.path().join("Cargo.toml");
        if path.is_file() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn check_manifest(root: &Path, path: &Path, problems: &mut Vec<String>) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: toml::Table = text
        .parse()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let rel = path
        .strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string();
    let mut tables: Vec<(String, &toml::Table)> = Vec::new();
    for kind in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(t) = doc.get(kind).and_then(toml::Value::as_table) {
            tables.push((kind.to_owned(), t));
        }
    }
    if let Some(targets) = doc.get("target").and_then(toml::Value::as_table) {
        for (cfg, t) in targets {
            for kind in ["dependencies", "dev-dependencies", "build-dependencies"] {
                if let Some(deps) = t.get(kind).and_then(toml::Value::as_table) {
                    tables.push((format!("target.{cfg}.{kind}"), deps));
                }
            }
        }
    }
    for (kind, deps) in tables {
        for (name, spec) in deps {
            let ok = match spec {
                toml::Value::Table(t) => {
                    let from_workspace = t.get("workspace").and_then(toml::Value::as_bool)
                        == Some(true)
                        && t.keys().all(|k| WORKSPACE_ENTRY_KEYS.contains(&k.as_str()));
                    let itself = kind == "dev-dependencies"
                        && t.get("path").and_then(toml::Value::as_str) == Some(".");
                    from_workspace || itself
                }
                _ => false,
            };
            if !ok {
                problems.push(format!(
                    "{rel}: [{kind}] {name} = {spec}: take it from [workspace.dependencies] \
                     (`{name}.workspace = true`, optionally with features / optional)"
                ));
            }
        }
    }
    Ok(())
}

fn read_toml(path: &Path) -> Result<toml::Table, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.parse().map_err(|e| format!("{}: {e}", path.display()))
}

/// Every internal crate named with a `version` in `[workspace.dependencies]` must be named with
/// its own version, so that a release bumps one number and the requirement with it.
fn check_internal_versions(root: &Path, problems: &mut Vec<String>) -> Result<(), String> {
    let doc = read_toml(&root.join("Cargo.toml"))?;
    let workspace = doc.get("workspace").and_then(toml::Value::as_table);
    let shared_version = workspace
        .and_then(|w| w.get("package"))
        .and_then(|p| p.get("version"))
        .and_then(toml::Value::as_str);
    let deps = workspace
        .and_then(|w| w.get("dependencies"))
        .and_then(toml::Value::as_table);
    for (name, spec) in deps.into_iter().flatten() {
        let (Some(path), Some(wanted)) = (
            spec.get("path").and_then(toml::Value::as_str),
            spec.get("version").and_then(toml::Value::as_str),
        ) else {
            continue;
        };
        let manifest = read_toml(&root.join(path).join("Cargo.toml"))?;
        let package = manifest.get("package");
        let own = match package.and_then(|p| p.get("version")) {
            Some(toml::Value::String(v)) => Some(v.as_str()),
            Some(toml::Value::Table(t)) if t.get("workspace").is_some() => shared_version,
            _ => None,
        };
        if own != Some(wanted) {
            problems.push(format!(
                "Cargo.toml: [workspace.dependencies] {name} asks for version {wanted}, but \
                 {path}/Cargo.toml is version {}",
                own.unwrap_or("(none)")
            ));
        }
    }
    Ok(())
}

/// The files git tracks (and untracked ones it does not ignore), relative to `root`.
fn tracked_files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let out = std::process::Command::new("git")
        .args([
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "-z",
        ])
        .current_dir(root)
        .output()
        .map_err(|e| format!("git ls-files: {e}"))?;
    if !out.status.success() {
        return Err(format!("git ls-files failed: {}", out.status));
    }
    Ok(out
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .collect())
}

fn check_text(root: &Path, rel: &Path, problems: &mut Vec<String>) {
    let is_text = rel.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        matches!(
            e,
            "rs" | "md" | "py" | "toml" | "txt" | "json" | "sh" | "yml"
        )
    }) || rel.file_name().is_some_and(|n| n == "run");
    if !is_text {
        return;
    }
    let Ok(text) = std::fs::read_to_string(root.join(rel)) else {
        return;
    };
    if is_library_source(rel) {
        check_rust_source(rel, &text, problems);
    }
    for (n, line) in text.lines().enumerate() {
        if line.contains("allow(unsafe_code") || line.contains("expect(unsafe_code") {
            // The reason may follow on the attribute's next lines.
            let attr: String = text.lines().skip(n).take(4).collect::<Vec<_>>().join(" ");
            let end = attr.find(")]").unwrap_or(attr.len());
            if !attr[..end].contains("reason") {
                problems.push(format!(
                    "{}:{}: `{}` without a `reason = \"…\"`",
                    rel.display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
        if let Some(phrase) = OUTSIDE_DOCS.iter().find(|p| line.contains(*p)) {
            problems.push(format!(
                "{}:{}: refers to `{phrase}`, a document outside this repository: spell the fact \
                 out or link the public specification",
                rel.display(),
                n + 1
            ));
        }
    }
}

/// A Rust file of a library or binary crate's `src/` (not tests, benches, examples, xtask).
fn is_library_source(rel: &Path) -> bool {
    let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
    parts.len() >= 4
        && parts[0] == "crates"
        && parts[2] == "src"
        && rel.extension().is_some_and(|e| e == "rs")
}

/// The Rust house rules of `CONTRIBUTING.md` that a line scan can check.
fn check_rust_source(rel: &Path, text: &str, problems: &mut Vec<String>) {
    let lines: Vec<&str> = text.lines().collect();
    let is_root = rel
        .file_name()
        .is_some_and(|n| n == "lib.rs" || n == "main.rs")
        && rel.iter().count() == 4;
    for (n, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let at = || format!("{}:{}", rel.display(), n + 1);
        // `with_*` is a setter: it takes `self`.
        for sig in ["pub fn with_", "pub const fn with_"] {
            if let Some(rest) = t.strip_prefix(sig) {
                let hidden = lines[n.saturating_sub(3)..n]
                    .iter()
                    .any(|l| l.contains("doc(hidden)"));
                let params = rest.split_once('(').map_or("", |(_, p)| p).trim_start();
                let params = if params.is_empty() {
                    lines.get(n + 1).map_or("", |l| l.trim_start())
                } else {
                    params
                };
                let takes_self = ["self", "mut self", "&self", "&mut self"]
                    .iter()
                    .any(|p| params.starts_with(p));
                if !takes_self && !hidden {
                    problems.push(format!(
                        "{}: `{}` is named like a setter but takes no `self`: name a \
                         constructor `new` (or `from_*`), and make `with_*` a setter",
                        at(),
                        t.trim_end_matches('{').trim()
                    ));
                }
            }
        }
        if t.starts_with("pub enum Error") {
            let marked = lines[n.saturating_sub(4)..n]
                .iter()
                .any(|l| l.contains("non_exhaustive"));
            if !marked {
                problems.push(format!(
                    "{}: `pub enum Error` without `#[non_exhaustive]`",
                    at()
                ));
            }
        }
        if !is_root && t.starts_with("use crate::") {
            let stmt: String = lines[n..]
                .iter()
                .take(12)
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
            let stmt = stmt.split_once("use crate::").map_or("", |(_, r)| r);
            let stmt = stmt.split(';').next().unwrap_or("");
            if top_level_items(stmt)
                .iter()
                .any(|i| i == "Error" || i == "Result")
            {
                problems.push(format!(
                    "{}: imports `Error`/`Result` through the crate root: use \
                     `crate::error::{{Error, Result}}`",
                    at()
                ));
            }
        }
    }
}

/// The names a `use` tree imports at its top level: `{Error, io::Read, Result}` gives
/// `Error`, `io::Read`, `Result`; `Error` gives `Error`.
fn top_level_items(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(inner) = tree.strip_prefix('{').and_then(|t| t.strip_suffix('}')) else {
        return vec![tree.to_owned()];
    };
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for ch in inner.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(cur.trim().to_owned());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        items.push(cur.trim().to_owned());
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_rules_flag_each_violation_once() {
        let src = "use crate::{Error, io::Read};\n\
                   pub enum Error {}\n\
                   pub fn with_max(n: usize) -> Self {}\n\
                   pub const fn with_min(mut self, n: usize) -> Self {}\n\
                   #[non_exhaustive]\n\
                   pub enum Error {}\n\
                   use crate::error::{Error, Result};\n";
        let mut problems = Vec::new();
        check_rust_source(Path::new("crates/x/src/a.rs"), src, &mut problems);
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(problems[0].contains("a.rs:1:"), "{problems:#?}");
        assert!(problems[1].contains("a.rs:2:"), "{problems:#?}");
        assert!(problems[2].contains("a.rs:3:"), "{problems:#?}");
        assert_eq!(
            top_level_items("{a::{b, c}, Result}"),
            ["a::{b, c}", "Result"]
        );
    }
}
