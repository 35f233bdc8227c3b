//! The Cargo project outside the workspace that holds one example target per README block:
//! its manifest, the build (one `cargo build --examples`), and what the build said about each
//! target.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// A dependency of the generated project.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dep {
    /// `path = …` for a workspace crate.
    pub(crate) path: Option<PathBuf>,
    /// Version requirement for a registry crate.
    pub(crate) version: Option<String>,
    pub(crate) features: BTreeSet<String>,
    pub(crate) default_features: bool,
}

/// The manifest: a package with its own `[workspace]` (so no parent workspace adopts it),
/// `deps`, features named `mirror` (all on, empty — so a block's `cfg(feature = "…")` sees
/// what the crates have on), one `[[example]]` per name, and `dev_opt_levels` (package name,
/// opt-level: the workspace's own `[profile.dev.package.NAME]` overrides, see
/// [`dev_opt_levels`]).
pub(crate) fn manifest(
    deps: &BTreeMap<String, Dep>,
    mirror: &BTreeSet<String>,
    examples: &[String],
    edition: &str,
    dev_opt_levels: &[(String, i64)],
) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "[package]\nname = \"readme-examples\"\nversion = \"0.0.0\"\nedition = \"{edition}\"\n\
         publish = false\nautoexamples = false\nautobins = false\n\n[workspace]\n\n\
         # no debuginfo and the workspace's per-package opt-levels, as the scifmt workspace\n\
         # builds its dependencies: the two share the target directory, and a dependency with\n\
         # the same features is then compiled once\n\
         [profile.dev]\ndebug = false\n"
    );
    for (name, level) in dev_opt_levels {
        let _ = writeln!(
            m,
            "[profile.dev.package.{}]\nopt-level = {level}",
            toml_str(name)
        );
    }
    let _ = writeln!(m, "\n[dependencies]");
    for (name, d) in deps {
        let mut fields = Vec::new();
        if let Some(p) = &d.path {
            fields.push(format!("path = {}", toml_str(&p.to_string_lossy())));
        }
        if let Some(v) = &d.version {
            fields.push(format!("version = {}", toml_str(v)));
        }
        if !d.default_features {
            fields.push("default-features = false".to_owned());
        }
        if !d.features.is_empty() {
            let list: Vec<String> = d.features.iter().map(|f| toml_str(f)).collect();
            fields.push(format!("features = [{}]", list.join(", ")));
        }
        let _ = writeln!(m, "{} = {{ {} }}", toml_str(name), fields.join(", "));
    }
    let _ = writeln!(m, "\n[features]");
    let on: Vec<String> = mirror.iter().map(|f| toml_str(f)).collect();
    let _ = writeln!(m, "default = [{}]", on.join(", "));
    for f in mirror {
        let _ = writeln!(m, "{} = []", toml_str(f));
    }
    for e in examples {
        let _ = writeln!(
            m,
            "\n[[example]]\nname = {}\npath = {}",
            toml_str(e),
            toml_str(&format!("examples/{e}.rs"))
        );
    }
    m
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One error the compiler reported.
#[derive(Debug, Clone)]
pub(crate) struct Diagnostic {
    /// Line of the primary span in the generated file, if any.
    pub(crate) line: Option<usize>,
    /// The compiler's rendering.
    pub(crate) rendered: String,
}

/// What the build produced.
#[derive(Debug, Default)]
pub(crate) struct BuildReport {
    /// Example name → executable.
    pub(crate) executables: BTreeMap<String, PathBuf>,
    /// Example name → its errors.
    pub(crate) errors: BTreeMap<String, Vec<Diagnostic>>,
    /// Errors in other targets (the crates the examples depend on), as `package: message`.
    pub(crate) dependency_errors: Vec<String>,
}

/// `cargo build --examples --keep-going` in `project` with `target_dir`; `--offline` when every
/// dependency resolves from the local registry cache.
///
/// # Errors
/// When cargo cannot be started or fails before compiling anything (for example, a dependency
/// cannot be resolved).
pub(crate) fn build(project: &Path, target_dir: &Path) -> Result<BuildReport, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let offline = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .current_dir(project)
        .env("CARGO_TARGET_DIR", target_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let mut cmd = Command::new(&cargo);
    cmd.args([
        "build",
        "--examples",
        "--keep-going",
        "--message-format=json",
    ])
    .current_dir(project)
    .env("CARGO_TARGET_DIR", target_dir)
    .stderr(Stdio::inherit());
    if offline {
        cmd.arg("--offline");
    }
    eprintln!("$ {cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let mut report = BuildReport::default();
    let mut finished = false;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let target = msg["target"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let is_example = msg["target"]["kind"]
            .as_array()
            .is_some_and(|k| k.iter().any(|k| k == "example"));
        match msg["reason"].as_str() {
            Some("compiler-artifact") if is_example => {
                if let Some(exe) = msg["executable"].as_str() {
                    report.executables.insert(target, PathBuf::from(exe));
                }
            }
            Some("compiler-message") if msg["message"]["level"] == "error" => {
                let rendered = msg["message"]["rendered"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if is_example {
                    let line = msg["message"]["spans"]
                        .as_array()
                        .and_then(|spans| spans.iter().find(|s| s["is_primary"] == true))
                        .and_then(|s| s["line_start"].as_u64())
                        .and_then(|l| usize::try_from(l).ok());
                    report
                        .errors
                        .entry(target)
                        .or_default()
                        .push(Diagnostic { line, rendered });
                } else {
                    let package = msg["package_id"].as_str().unwrap_or("?");
                    report
                        .dependency_errors
                        .push(format!("{package}: {}", first_line(&rendered)));
                }
            }
            Some("build-finished") => finished = true,
            _ => {}
        }
    }
    if !finished {
        return Err(format!(
            "{cmd:?} stopped before building ({}); its messages are above",
            out.status
        ));
    }
    Ok(report)
}

/// The `opt-level` of each `[profile.dev.package.NAME]` in the workspace manifest `text` (not
/// `"*"`, which sets only `debug`), sorted by name.
///
/// # Errors
/// When `text` is not TOML.
pub(crate) fn dev_opt_levels(text: &str) -> Result<Vec<(String, i64)>, String> {
    let doc: toml::Table = text.parse().map_err(|e| format!("Cargo.toml: {e}"))?;
    let packages = doc
        .get("profile")
        .and_then(|p| p.get("dev"))
        .and_then(|d| d.get("package"))
        .and_then(|p| p.as_table());
    Ok(packages
        .into_iter()
        .flatten()
        .filter(|(name, _)| name.as_str() != "*")
        .filter_map(|(name, t)| Some((name.clone(), t.get("opt-level")?.as_integer()?)))
        .collect())
}

/// The first line of a message.
pub(crate) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_is_its_own_workspace_with_one_target_per_example() {
        let mut deps = BTreeMap::new();
        deps.insert(
            "wkw".to_owned(),
            Dep {
                path: Some(PathBuf::from("/w/crates/wkw")),
                features: ["ndarray".to_owned()].into(),
                default_features: true,
                ..Dep::default()
            },
        );
        deps.insert(
            "serde_json".to_owned(),
            Dep {
                version: Some("1".to_owned()),
                default_features: false,
                ..Dep::default()
            },
        );
        let mirror = ["ndarray".to_owned(), "parallel".to_owned()].into();
        let levels = [("zstd-sys".to_owned(), 3)];
        let m = manifest(&deps, &mirror, &["b001_wkw_l3".to_owned()], "2024", &levels);
        assert!(m.contains("[profile.dev.package.\"zstd-sys\"]\nopt-level = 3\n"));
        assert!(m.contains("\n[workspace]\n"));
        assert!(m.contains("\"wkw\" = { path = \"/w/crates/wkw\", features = [\"ndarray\"] }"));
        assert!(m.contains("\"serde_json\" = { version = \"1\", default-features = false }"));
        assert!(m.contains("default = [\"ndarray\", \"parallel\"]"));
        assert!(m.contains("name = \"b001_wkw_l3\"\npath = \"examples/b001_wkw_l3.rs\""));
    }

    #[test]
    fn dev_opt_levels_are_the_workspace_overrides_but_star() {
        let text = "[profile.dev]\ndebug = 1\n[profile.dev.package.\"*\"]\ndebug = false\n\
                    [profile.dev.package.md-5]\nopt-level = 3\n\
                    [profile.dev.package.blosc-chunk]\nopt-level = 1\n";
        let levels = dev_opt_levels(text).unwrap();
        assert_eq!(
            levels,
            [("blosc-chunk".to_owned(), 1), ("md-5".to_owned(), 3)]
        );
    }
}
