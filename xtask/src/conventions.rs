//! `cargo xtask conventions`: the house rules of `CONTRIBUTING.md` that a program can check.
//!
//! * Every dependency of every member comes from `[workspace.dependencies]`
//!   (`name.workspace = true`, optionally with `features` / `optional`), so each version is
//!   pinned once; the one exception is a crate's dev-dependency on itself (`path = "."`, to
//!   switch on features for its own tests).
//! * Every `allow(unsafe_code)` / `expect(unsafe_code)` states its `reason`.
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
    for file in tracked_files(&root)? {
        check_text(&root, &file, &mut problems);
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
