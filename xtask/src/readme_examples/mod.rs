//! `cargo xtask readme-examples [--only PATH] [--keep]`: every Rust block of every published
//! crate's README, of the root README and of the pages in `docs/`, compiled and run as a user
//! outside this repository would.
//!
//! How a README is read:
//!
//! * Rust blocks are chosen and treated as rustdoc does: ```` ```rust ```` (or no info string in
//!   a library's README, which is its crate docs), `ignore` skipped, `no_run` compiled only,
//!   `should_panic` must panic, `compile_fail` must not compile; a block without `fn main` is
//!   wrapped in one.
//! * A block must read on GitHub as the plain Rust it is: a rustdoc hidden line (`# x`, `#`
//!   alone) or `##` escape is a problem (GitHub shows the `#`), and so is a block that relies on
//!   rustdoc's `Result` wrapping (no `fn main`, ending with `Ok::<…>(())`): pasted into
//!   `fn main` it does not compile. Such a block writes `fn main() -> Result<(), E> { … Ok(()) }`
//!   itself. The READMEs of unpublished packages are checked for this too, though their blocks
//!   are not built.
//! * Dependencies come from the README's ```` ```toml ```` snippets (`[dependencies]`: `name =
//!   "req"` or a one-line inline table with `version`, `features`, `default-features`) — what a
//!   user copies. A crate's README always gets its own crate. Workspace crates are used by
//!   `path`, registry crates by the snippet's version.
//! * A block that needs features says so in the snippet or in a comment on the line before it:
//!   `<!-- readme-examples: features = ["ndarray"] -->` (a feature of the README's crate) or
//!   `["wkw/ndarray"]` (any workspace crate; required in the root README). Each crate is built
//!   once, with the union of what its blocks ask for. In a crate's README, `cfg(feature = "x")`
//!   means that crate's feature, as in its doctests; in the root README, any crate's.
//!
//! All blocks become example targets of ONE Cargo project in a fresh temporary directory (with
//! its own `[workspace]` and the workspace's `Cargo.lock` as a starting point), built with a
//! single `cargo build --examples` (offline when the registry cache has everything), and each is
//! run **twice** in one fresh scratch directory of its own: an empty current directory (so
//! relative paths into this repository fail) and a temporary directory (`TMPDIR`, `TMP`, `TEMP`:
//! what `std::env::temp_dir()` and `tempfile` use). The second run finds what the first left
//! there, as a reader who pastes an example twice would; it must behave the same. A block that
//! leaves anything in its current directory fails: examples write under
//! `std::env::temp_dir()`, never into the directory (a checkout) they are run from. The build uses the workspace's target directory (`target/`, or
//! `CARGO_TARGET_DIR`): the project is a workspace of its own with its own feature resolution,
//! but a registry dependency it builds with the same features and profile as the workspace does
//! (no debuginfo, as `[profile.dev.package."*"]` gives them there) is the same artifact, so CI
//! compiles it once for both.

mod doctest;
mod markdown;
mod project;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use self::doctest::{Mode, Program};
use self::project::{BuildReport, Dep};
use crate::util::{cargo, project_root};

/// How long one example may run.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// A workspace package, from `cargo metadata`.
#[derive(Debug)]
struct Package {
    name: String,
    dir: PathBuf,
    features: BTreeMap<String, Vec<String>>,
    has_lib: bool,
    published: bool,
    edition: String,
}

/// A Rust block to check.
#[derive(Debug)]
struct Block {
    /// README path relative to the workspace root.
    readme: String,
    fence_line: usize,
    mode: Mode,
    /// Example target name.
    name: String,
    program: Program,
}

/// What the READMEs ask for.
#[derive(Debug, Default)]
struct Plan {
    blocks: Vec<Block>,
    /// Workspace crate → features asked for by block directives (a crate's own README adds
    /// the crate itself).
    crates: BTreeMap<String, BTreeSet<String>>,
    /// Registry dependencies.
    external: BTreeMap<String, Dep>,
    /// Problems found while reading (README:line: message); each is a failure.
    problems: Vec<String>,
    skipped: Vec<String>,
    /// (crate, feature) → where a README first asked for it (`README:line`).
    feature_origin: BTreeMap<(String, String), String>,
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut only: Option<String> = None;
    let mut keep = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--only" => only = Some(it.next().ok_or("--only needs a path")?.clone()),
            "--keep" => keep = true,
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    let root = project_root();
    let packages = workspace_packages()?;
    let plan = read_readmes(&root, &packages, only.as_deref())?;
    for s in &plan.skipped {
        eprintln!("skipped: {s}");
    }
    if plan.blocks.is_empty() && plan.problems.is_empty() {
        eprintln!("readme-examples: no Rust blocks found");
        return Ok(());
    }
    let edition = packages
        .iter()
        .find(|p| p.published)
        .map_or_else(|| "2021".to_owned(), |p| p.edition.clone());
    let (deps, mirror, mut problems) = dependencies(&plan, &packages);
    problems.extend(plan.problems.iter().cloned());
    problems.extend(unasked_features(&plan.blocks, &mirror));

    let dir = std::env::temp_dir().join(format!("scifmt-readme-examples-{}", std::process::id()));
    write_project(&root, &dir, &plan.blocks, &deps, &mirror, &edition)?;
    // The workspace's own target directory: the project's registry dependencies that have the
    // features and profile of the workspace's are reused instead of compiled again.
    let target_dir = crate::util::cargo_target_dir();
    let report = project::build(&dir, &target_dir)?;

    let results = check_blocks(&plan.blocks, &report);
    let failed: Vec<&String> = problems.iter().chain(results.iter().flatten()).collect();
    println!();
    for (block, result) in plan.blocks.iter().zip(&results) {
        let status = match (result, block.mode) {
            (Some(_), _) => "FAILED",
            (None, Mode::Skip(_)) => "skipped",
            (None, Mode::CompileOnly) => "compiles",
            (None, Mode::CompileFail) => "fails to compile, as marked",
            (None, Mode::ShouldPanic) => "panics, as marked",
            (None, Mode::Run) => "ok",
        };
        println!("{}:{}  {status}", block.readme, block.fence_line);
    }
    for e in &report.dependency_errors {
        println!("dependency failed to build: {e}");
    }
    if keep || !failed.is_empty() {
        println!("project kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let checked = plan
        .blocks
        .iter()
        .filter(|b| !matches!(b.mode, Mode::Skip(_)))
        .count();
    println!(
        "\n{} blocks: {} checked, {} skipped, {} failed",
        plan.blocks.len(),
        checked,
        plan.blocks.len() - checked,
        failed.len()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        println!("\nfailures:");
        for f in &failed {
            println!("{f}\n");
        }
        Err(format!("{} README example(s) failed", failed.len()))
    }
}

/// The workspace's packages (no dependencies resolved, so no network).
fn workspace_packages() -> Result<Vec<Package>, String> {
    let out = cargo()
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo metadata failed with {}", out.status));
    }
    let meta: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata output: {e}"))?;
    let mut packages = Vec::new();
    for p in meta["packages"].as_array().into_iter().flatten() {
        let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap_or_default());
        let features = p["features"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let list = v
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|s| s.as_str().map(str::to_owned))
                            .collect();
                        (k.clone(), list)
                    })
                    .collect()
            })
            .unwrap_or_default();
        packages.push(Package {
            name: p["name"].as_str().unwrap_or_default().to_owned(),
            dir: manifest
                .parent()
                .map_or_else(PathBuf::new, Path::to_path_buf),
            features,
            has_lib: p["targets"].as_array().into_iter().flatten().any(|t| {
                t["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == "lib"))
            }),
            // `publish = false` is an empty registry list
            published: !p["publish"].as_array().is_some_and(Vec::is_empty),
            edition: p["edition"].as_str().unwrap_or("2021").to_owned(),
        });
    }
    packages.sort_by(|a, b| a.dir.cmp(&b.dir));
    Ok(packages)
}

/// Reads the root README, the pages of `docs/` and every published crate's README.
fn read_readmes(root: &Path, packages: &[Package], only: Option<&str>) -> Result<Plan, String> {
    let mut plan = Plan::default();
    let mut readmes: Vec<(PathBuf, Option<&Package>)> = vec![(root.join("README.md"), None)];
    // The pages of `docs/`, read as the root README is (no package of their own).
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    pages.retain(|p| p.extension().is_some_and(|e| e == "md"));
    pages.sort();
    readmes.extend(pages.into_iter().map(|p| (p, None)));
    for p in packages {
        let readme = p.dir.join("README.md");
        if !readme.exists() {
            continue;
        }
        if p.published {
            readmes.push((readme, Some(p)));
        } else {
            let shown = rel(root, &readme);
            if only.is_some_and(|o| !shown.contains(o)) {
                continue;
            }
            let text = std::fs::read_to_string(&readme)
                .map_err(|e| format!("cannot read {shown}: {e}"))?;
            lint_readme(&shown, &text, p.has_lib, &mut plan.problems);
            plan.skipped.push(format!(
                "{shown} (package `{}` is not published: its blocks are not built, only checked \
                 to be plain Rust)",
                p.name
            ));
        }
    }
    for (path, package) in readmes {
        let shown = rel(root, &path);
        if only.is_some_and(|o| !shown.contains(o)) {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("cannot read {shown}: {e}"))?;
        read_readme(&shown, &text, package, &mut plan);
    }
    Ok(plan)
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

/// Problems (README:line: message) of one Rust block that does not read as the plain Rust it
/// is: rustdoc-only lines, and rustdoc's implicit `Result` wrapping.
fn not_plain_rust(shown: &str, fence: &markdown::Fence, program: &Program) -> Vec<String> {
    let mut out: Vec<String> = fence
        .lines
        .iter()
        .enumerate()
        .filter(|(_, l)| doctest::rustdoc_only(l))
        .map(|(i, l)| {
            format!(
                "{shown}:{}: `{}` is a rustdoc-only line, which GitHub shows as written: make \
                 the block plain Rust (its own `fn main`, visible set-up and clean-up)",
                fence.fence_line + 1 + i,
                l.trim()
            )
        })
        .collect();
    if let Some(line) = program.implicit_result {
        out.push(format!(
            "{shown}:{line}: the block ends with `Ok::<…>(())` and has no `fn main`: pasted into \
             `fn main` it does not compile; write `fn main() -> Result<(), E> {{ … Ok(()) }}`"
        ));
    }
    out
}

/// Checks the Rust blocks of a README whose blocks are not built (an unpublished package's) for
/// [`not_plain_rust`] problems.
fn lint_readme(shown: &str, text: &str, bare_is_rust: bool, problems: &mut Vec<String>) {
    let fences = match markdown::fences(text) {
        Ok(f) => f,
        Err(e) => {
            problems.push(format!("{shown}: {e}"));
            return;
        }
    };
    for fence in fences {
        if doctest::classify(&fence.info, bare_is_rust).is_some() {
            let program = doctest::program(&fence.lines, fence.fence_line + 1, "", None);
            problems.extend(not_plain_rust(shown, &fence, &program));
        }
    }
}

/// Adds one README's blocks and dependency requests to `plan`.
fn read_readme(shown: &str, text: &str, package: Option<&Package>, plan: &mut Plan) {
    let fences = match markdown::fences(text) {
        Ok(f) => f,
        Err(e) => {
            plan.problems.push(format!("{shown}: {e}"));
            return;
        }
    };
    let bare_is_rust = package.is_some_and(|p| p.has_lib);
    let mut has_blocks = false;
    for fence in fences {
        if fence.info.split([',', ' ']).next() == Some("toml") {
            match markdown::snippet_deps(&fence) {
                Ok(deps) => {
                    for d in deps {
                        request_snippet_dep(shown, d, plan);
                    }
                }
                Err(e) => plan.problems.push(format!("{shown}: {e}")),
            }
            continue;
        }
        let Some(mode) = doctest::classify(&fence.info, bare_is_rust) else {
            continue;
        };
        has_blocks = true;
        for f in &fence.features {
            let (krate, feature) = match (f.split_once('/'), package) {
                (Some((c, f)), _) => (c.to_owned(), f.to_owned()),
                (None, Some(p)) => (p.name.clone(), f.clone()),
                (None, None) => {
                    plan.problems.push(format!(
                        "{shown}:{}: name the crate of feature `{f}` (`crate/{f}`)",
                        fence.fence_line.saturating_sub(1)
                    ));
                    continue;
                }
            };
            plan.feature_origin
                .entry((krate.clone(), feature.clone()))
                .or_insert_with(|| format!("{shown}:{}", fence.fence_line.saturating_sub(1)));
            plan.crates.entry(krate).or_default().insert(feature);
        }
        let label = package.map_or("root", |p| {
            p.dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("crate")
        });
        let name = format!(
            "b{:03}_{}_l{}",
            plan.blocks.len(),
            label.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
            fence.fence_line
        );
        let header = format!("// {shown}, block at line {} ({mode:?})", fence.fence_line);
        let program = doctest::program(
            &fence.lines,
            fence.fence_line + 1,
            &header,
            package.map(|p| feature_prefix(&p.name)).as_deref(),
        );
        plan.problems
            .extend(not_plain_rust(shown, &fence, &program));
        plan.blocks.push(Block {
            readme: shown.to_owned(),
            fence_line: fence.fence_line,
            mode,
            name,
            program,
        });
    }
    if let Some(p) = package
        && has_blocks
        && p.has_lib
    {
        plan.crates.entry(p.name.clone()).or_default();
    }
}

fn request_snippet_dep(shown: &str, d: markdown::SnippetDep, plan: &mut Plan) {
    for f in &d.features {
        plan.feature_origin
            .entry((d.name.clone(), f.clone()))
            .or_insert_with(|| format!("{shown}:{}", d.line));
    }
    // Workspace crates are told apart from registry crates when the project is assembled; keep
    // both kinds here, keyed by name.
    let entry = plan.external.entry(d.name.clone()).or_insert_with(|| Dep {
        default_features: !d.no_default_features,
        ..Dep::default()
    });
    entry.default_features |= !d.no_default_features;
    entry.features.extend(d.features);
    match (&entry.version, d.version) {
        (None, v) => entry.version = v,
        (Some(a), Some(b)) if *a != b => plan.problems.push(format!(
            "{shown}:{}: `{}` is required as \"{b}\" here and as \"{a}\" in another README",
            d.line, d.name
        )),
        _ => {}
    }
}

/// The project's dependencies and mirrored feature names, plus problems (unknown features,
/// registry crates without a version).
fn dependencies(
    plan: &Plan,
    packages: &[Package],
) -> (BTreeMap<String, Dep>, BTreeSet<String>, Vec<String>) {
    let by_name: BTreeMap<&str, &Package> = packages.iter().map(|p| (p.name.as_str(), p)).collect();
    let mut deps = BTreeMap::new();
    let mut problems = Vec::new();
    // crate → (features, default on)
    let mut wanted: BTreeMap<String, (BTreeSet<String>, bool)> = BTreeMap::new();
    // Default features are on unless the READMEs' snippets for the crate all turn them off.
    for (name, features) in &plan.crates {
        let default_on = plan.external.get(name).is_none_or(|d| d.default_features);
        wanted.insert(name.clone(), (features.clone(), default_on));
    }
    for (name, d) in &plan.external {
        if by_name.contains_key(name.as_str()) {
            let w = wanted
                .entry(name.clone())
                .or_insert_with(|| (BTreeSet::new(), d.default_features));
            w.0.extend(d.features.iter().cloned());
        } else if d.version.is_none() {
            problems.push(format!("README snippet: `{name}` has no version"));
        } else {
            deps.insert(name.clone(), d.clone());
        }
    }
    let mut mirror = BTreeSet::new();
    for (name, (features, default_on)) in wanted {
        let Some(p) = by_name.get(name.as_str()) else {
            problems.push(format!("README: `{name}` is not a crate of this workspace"));
            continue;
        };
        if !p.has_lib || !p.published {
            problems.push(format!("README: `{name}` is not a published library"));
            continue;
        }
        let mut ok = BTreeSet::new();
        for f in features {
            if p.features.contains_key(&f) {
                ok.insert(f);
            } else {
                let at = plan
                    .feature_origin
                    .get(&(name.clone(), f.clone()))
                    .map_or("README", String::as_str);
                problems.push(format!("{at}: crate `{name}` has no feature `{f}`"));
            }
        }
        for f in enabled_features(p, &ok, default_on) {
            mirror.insert(format!("{}{f}", feature_prefix(&name)));
            mirror.insert(f);
        }
        deps.insert(
            name.clone(),
            Dep {
                path: Some(p.dir.clone()),
                version: None,
                features: ok,
                default_features: default_on,
            },
        );
    }
    // a mirrored feature must not collide with a dependency name
    mirror.retain(|f| !deps.contains_key(f));
    (deps, mirror, problems)
}

/// Blocks that test a feature (`cfg(feature = "x")`) nobody asked for: they would compile to
/// nothing and check nothing, and a user would not know to turn the feature on.
fn unasked_features(blocks: &[Block], mirror: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for b in blocks.iter().filter(|b| !matches!(b.mode, Mode::Skip(_))) {
        let mut seen = BTreeSet::new();
        for (name, line) in &b.program.cfg_features {
            if !mirror.contains(name) && seen.insert(name) {
                let (krate, feature) = name.split_once("__").unwrap_or(("", name));
                // crate READMEs name their own features plainly; the root README's blocks
                // test plain names, which belong to no crate in particular
                let directive = if krate.is_empty() {
                    format!("<crate>/{feature}")
                } else {
                    feature.to_owned()
                };
                out.push(format!(
                    "{}:{line}: the block tests feature `{feature}`{}, which the README does not \
                     ask for: name it in the ```toml snippet or put \
                     `<!-- readme-examples: features = [\"{directive}\"] -->` before the block",
                    b.readme,
                    if krate.is_empty() {
                        String::new()
                    } else {
                        format!(" of `{krate}`")
                    },
                ));
            }
        }
    }
    out
}

/// The generated project's name for feature `x` of `krate`: `<krate>__x`.
fn feature_prefix(krate: &str) -> String {
    format!("{krate}__")
}

/// The features of `p` that end up on: `requested`, `default` if on, and what they enable.
fn enabled_features(p: &Package, requested: &BTreeSet<String>, default_on: bool) -> Vec<String> {
    let mut on: BTreeSet<String> = requested.clone();
    if default_on && p.features.contains_key("default") {
        on.insert("default".to_owned());
    }
    let mut todo: Vec<String> = on.iter().cloned().collect();
    while let Some(f) = todo.pop() {
        for entry in p.features.get(&f).into_iter().flatten() {
            if p.features.contains_key(entry) && on.insert(entry.clone()) {
                todo.push(entry.clone());
            }
        }
    }
    on.remove("default");
    on.into_iter().collect()
}

fn write_project(
    root: &Path,
    dir: &Path,
    blocks: &[Block],
    deps: &BTreeMap<String, Dep>,
    mirror: &BTreeSet<String>,
    edition: &str,
) -> Result<(), String> {
    let io = |what: &Path, e: std::io::Error| format!("{}: {e}", what.display());
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| io(dir, e))?;
    }
    let examples = dir.join("examples");
    std::fs::create_dir_all(&examples).map_err(|e| io(&examples, e))?;
    let names: Vec<String> = blocks
        .iter()
        .filter(|b| !matches!(b.mode, Mode::Skip(_)))
        .map(|b| b.name.clone())
        .collect();
    let workspace_manifest = root.join("Cargo.toml");
    let levels = project::dev_opt_levels(
        &std::fs::read_to_string(&workspace_manifest).map_err(|e| io(&workspace_manifest, e))?,
    )?;
    let manifest = dir.join("Cargo.toml");
    std::fs::write(
        &manifest,
        project::manifest(deps, mirror, &names, edition, &levels),
    )
    .map_err(|e| io(&manifest, e))?;
    // The workspace's lock file pins the registry crates to versions already in the cache.
    let lock = root.join("Cargo.lock");
    if lock.exists() {
        std::fs::copy(&lock, dir.join("Cargo.lock")).map_err(|e| io(&lock, e))?;
    }
    for b in blocks.iter().filter(|b| !matches!(b.mode, Mode::Skip(_))) {
        let file = examples.join(format!("{}.rs", b.name));
        std::fs::write(&file, &b.program.source).map_err(|e| io(&file, e))?;
    }
    Ok(())
}

/// For each block, `None` when it behaved as marked, else the failure report.
fn check_blocks(blocks: &[Block], report: &BuildReport) -> Vec<Option<String>> {
    let broken_deps = !report.dependency_errors.is_empty();
    blocks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let at = format!("{}:{}", b.readme, b.fence_line);
            let errors = report.errors.get(&b.name);
            let exe = report.executables.get(&b.name);
            match b.mode {
                Mode::Skip(_) => None,
                Mode::CompileFail => match (errors, broken_deps) {
                    (Some(_), _) => None,
                    (None, true) => {
                        Some(format!("{at}: not checked: a dependency failed to build"))
                    }
                    (None, false) => Some(format!("{at}: marked compile_fail but it compiles")),
                },
                _ if errors.is_some() => Some(compile_failure(b, errors.into_iter().flatten())),
                _ if exe.is_none() => Some(format!(
                    "{at}: not built{}",
                    if broken_deps {
                        " (a dependency failed to build)"
                    } else {
                        ""
                    }
                )),
                Mode::CompileOnly => None,
                Mode::Run | Mode::ShouldPanic => exe.and_then(|exe| run_block(b, exe, i).err()),
            }
        })
        .collect()
}

/// A compile failure, located in the README.
fn compile_failure<'a>(b: &Block, errors: impl Iterator<Item = &'a project::Diagnostic>) -> String {
    let mut out = String::new();
    for d in errors {
        let readme_line = d
            .line
            .and_then(|l| b.program.origin.get(l.checked_sub(1)?).copied().flatten());
        let at = readme_line.map_or_else(
            || format!("{}:{} (block)", b.readme, b.fence_line),
            |l| format!("{}:{l}", b.readme),
        );
        let rendered: Vec<&str> = d.rendered.lines().take(25).collect();
        out.push_str(&format!(
            "{at}: does not compile\n    {}\n",
            rendered.join("\n    ")
        ));
    }
    out.trim_end().to_owned()
}

/// Runs a built block twice in a scratch directory of its own ([`run_twice`]), checking the
/// outcome its mode asks for.
fn run_block(b: &Block, exe: &Path, index: usize) -> Result<(), String> {
    let at = format!("{}:{}", b.readme, b.fence_line);
    let scratch =
        std::env::temp_dir().join(format!("scifmt-readme-run-{}-{index}", std::process::id()));
    let result = run_twice(exe, &[], &scratch, b.mode, &|l| locate(l, b));
    let _ = std::fs::remove_dir_all(&scratch);
    result.map_err(|e| format!("{at}: {e}"))
}

/// Runs `exe` with `args` twice, with `scratch/cwd` (created empty) as its current directory and
/// `scratch/tmp` as its temporary directory, both kept between the runs: each run must end as
/// `mode` asks, and neither may leave anything in the current directory. `locate` rewrites a
/// line of output (a panic location) for the report.
fn run_twice(
    exe: &Path,
    args: &[&str],
    scratch: &Path,
    mode: Mode,
    locate: &dyn Fn(&str) -> String,
) -> Result<(), String> {
    let cwd = scratch.join("cwd");
    let tmp = scratch.join("tmp");
    let _ = std::fs::remove_dir_all(scratch);
    for d in [&cwd, &tmp] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    for run in [
        "first run",
        "second run (the same scratch directory, as if pasted twice)",
    ] {
        let log = scratch.join("run.log");
        let result = run_in(exe, args, &cwd, &tmp, &log);
        let output = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        let shown = output
            .lines()
            .take(15)
            .map(locate)
            .collect::<Vec<_>>()
            .join("\n    ");
        match (result, mode) {
            (Err(e), _) => return Err(format!("{run}: {e}\n    {shown}")),
            (Ok(Some(0)), Mode::ShouldPanic) => {
                return Err(format!("{run}: marked should_panic but ran to completion"));
            }
            (Ok(Some(101)), Mode::ShouldPanic) | (Ok(Some(0)), _) => {}
            (Ok(code), _) => {
                return Err(format!(
                    "{run} failed (exit {})\n    {shown}",
                    code.map_or_else(|| "by signal".to_owned(), |c| c.to_string())
                ));
            }
        }
        let mut left: Vec<String> = std::fs::read_dir(&cwd)
            .map_err(|e| format!("cannot list {}: {e}", cwd.display()))?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        if !left.is_empty() {
            left.sort();
            return Err(format!(
                "{run} wrote into its current directory ({}): write scratch files under \
                 `std::env::temp_dir()`, never where the example is run from",
                left.join(", ")
            ));
        }
    }
    Ok(())
}

/// `examples/<block>.rs:L:C` in a panic message, rewritten to the README line it came from.
fn locate(line: &str, b: &Block) -> String {
    let file = format!("examples/{}.rs:", b.name);
    let Some(at) = line.find(&file) else {
        return line.to_owned();
    };
    let rest = &line[at + file.len()..];
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let readme_line = rest[..digits]
        .parse::<usize>()
        .ok()
        .and_then(|l| b.program.origin.get(l.checked_sub(1)?).copied().flatten());
    match readme_line {
        Some(l) => format!("{}{}:{l}{}", &line[..at], b.readme, &rest[digits..]),
        None => line.to_owned(),
    }
}

/// Runs `exe` with `args` in `cwd`, with `tmp` as its temporary directory and stdout and stderr
/// to `log`; the exit code (None: killed by a signal), or an error on timeout.
fn run_in(
    exe: &Path,
    args: &[&str],
    cwd: &Path,
    tmp: &Path,
    log: &Path,
) -> Result<Option<i32>, String> {
    let file =
        std::fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("cannot clone {}: {e}", log.display()))?;
    let mut child = Command::new(exe)
        .args(args)
        .current_dir(cwd)
        .env("RUST_BACKTRACE", "0")
        // `std::env::temp_dir()` on unix (TMPDIR) and Windows (TMP, TEMP)
        .env("TMPDIR", tmp)
        .env("TMP", tmp)
        .env("TEMP", tmp)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status.code()),
            Ok(None) if start.elapsed() > RUN_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "still running after {} s: killed",
                    RUN_TIMEOUT.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("cannot wait for {}: {e}", exe.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence(md: &str) -> markdown::Fence {
        markdown::fences(md).unwrap().remove(0)
    }

    #[test]
    fn rustdoc_only_lines_and_implicit_results_are_problems_with_their_line() {
        let md = "text\n```rust\nuse a::b;\n# fn hidden() {}\nlet x = b()?;\n#\nOk::<(), a::E>(())\n```\n";
        let f = fence(md);
        let program = doctest::program(&f.lines, f.fence_line + 1, "", None);
        let problems = not_plain_rust("crates/x/README.md", &f, &program);
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(problems[0].starts_with("crates/x/README.md:4: `# fn hidden() {}`"));
        assert!(problems[1].starts_with("crates/x/README.md:6: `#`"));
        assert!(problems[2].starts_with("crates/x/README.md:7: the block ends with `Ok::<…>(())`"));

        let plain = fence(
            "```rust\nuse a::b;\n\n#[derive(Debug)]\nstruct S;\n\nfn main() -> Result<(), a::E> {\n    b()?;\n    Ok(())\n}\n```\n",
        );
        let program = doctest::program(&plain.lines, plain.fence_line + 1, "", None);
        assert!(not_plain_rust("R", &plain, &program).is_empty());
    }

    #[test]
    fn readmes_that_are_not_built_are_still_checked_for_plain_rust() {
        let md = "```rust\n# #[tokio::main]\n# async fn main() {}\n```\n\n```python\n# a comment\n```\n\n```\n# bare\n```\n";
        let mut problems = Vec::new();
        lint_readme("crates/t/README.md", md, false, &mut problems);
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(problems[0].starts_with("crates/t/README.md:2:"));
        assert!(problems[1].starts_with("crates/t/README.md:3:"));
        // a library's README: a bare fence is Rust (its crate docs)
        let mut problems = Vec::new();
        lint_readme("crates/t/README.md", md, true, &mut problems);
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(problems[2].starts_with("crates/t/README.md:11:"));
    }

    /// A shell script as the example: `run_twice` runs any program.
    #[cfg(unix)]
    fn run_script(name: &str, script: &str, mode: Mode) -> Result<(), String> {
        let scratch =
            std::env::temp_dir().join(format!("scifmt-readme-test-{}-{name}", std::process::id()));
        let result = run_twice(
            Path::new("/bin/sh"),
            &["-c", script],
            &scratch,
            mode,
            &|l| l.to_owned(),
        );
        let _ = std::fs::remove_dir_all(&scratch);
        result
    }

    #[cfg(unix)]
    #[test]
    fn every_block_runs_twice_in_the_same_scratch_directory() {
        // Creates its scratch directory without removing a leftover: the second run fails.
        let once = "mkdir \"$TMPDIR/ds\" && echo made";
        let e = run_script("once", once, Mode::Run).unwrap_err();
        assert!(e.starts_with("second run"), "{e}");
        assert!(e.contains("exit 1"), "{e}");
        // Removes the leftover first: both runs succeed.
        let twice = "rm -rf \"$TMPDIR/ds\" && mkdir \"$TMPDIR/ds\"";
        run_script("twice", twice, Mode::Run).unwrap();
        // The temporary directory is the scratch one, not the machine's.
        let scratch_tmp = "case \"$TMPDIR\" in */scifmt-readme-test-*/tmp) ;; *) exit 3 ;; esac";
        run_script("tmp", scratch_tmp, Mode::Run).unwrap();
        // A failing first run is reported as such, with its output.
        let e = run_script("fails", "echo oops; exit 2", Mode::Run).unwrap_err();
        assert!(
            e.starts_with("first run failed (exit 2)") && e.contains("oops"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_block_that_writes_into_its_current_directory_fails() {
        let e = run_script("cwd", "echo x > out.bin && mkdir -p sub", Mode::Run).unwrap_err();
        assert!(
            e.starts_with("first run wrote into its current directory (out.bin, sub)"),
            "{e}"
        );
        // the current directory starts empty
        run_script("empty", "test -z \"$(ls -A)\"", Mode::Run).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn should_panic_blocks_must_panic_both_times() {
        run_script("panics", "exit 101", Mode::ShouldPanic).unwrap();
        let e = run_script("completes", "exit 0", Mode::ShouldPanic).unwrap_err();
        assert!(
            e.contains("marked should_panic but ran to completion"),
            "{e}"
        );
        // panics only when its leftover is there: the second run completes
        let flaky = "if [ -e \"$TMPDIR/m\" ]; then exit 0; fi; touch \"$TMPDIR/m\"; exit 101";
        let e = run_script("flaky", flaky, Mode::ShouldPanic).unwrap_err();
        assert!(e.starts_with("second run"), "{e}");
    }
}
