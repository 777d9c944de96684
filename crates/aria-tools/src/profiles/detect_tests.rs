//! The detection table and the argument rules of the built-in profiles.

use std::collections::BTreeMap;
use std::fs;

use super::detect::{ProjectKind, builtin, detect, detect_in, ripgrep};
use super::*;
use crate::guard::sensitive::SensitivePatterns;

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let p = dir.path().join(name);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    dir
}

fn line(name: &str, kind: ProjectKind, dir: &std::path::Path) -> Result<String, String> {
    builtin(name, kind, dir).map(|s| s.command_line(&BTreeMap::new()))
}

/// Marker files, the kind they make, and the lint/build/test command lines.
type Row<'a> = (&'a [(&'a str, &'a str)], ProjectKind, [&'a str; 3]);

#[test]
fn the_detection_table() {
    let npm = r#"{"scripts": {"lint": "eslint .", "build": "tsc", "test": "jest"}}"#;
    let make = "all:\n\tcc x.c\nlint: all\n\tcheck\ntest:\n\t./run\nX := 1\n";
    let rows: &[Row<'_>] = &[
        (
            &[("Cargo.toml", "[package]"), ("Makefile", "all:")],
            ProjectKind::Cargo,
            ["cargo clippy --all-targets -- -D warnings", "cargo build", "cargo test"],
        ),
        (&[("package.json", npm)], ProjectKind::Npm, ["npm run lint", "npm run build", "npm test"]),
        (&[("pyproject.toml", "")], ProjectKind::Python, ["ruff check", "", "pytest -q"]),
        (&[("pytest.ini", "")], ProjectKind::Python, ["ruff check", "", "pytest -q"]),
        (&[("Makefile", make)], ProjectKind::Make, ["make lint", "make", "make test"]),
    ];
    for (files, kind, [lint, build, test]) in rows {
        let dir = project(files);
        assert_eq!(detect_in(dir.path()), Some(*kind), "{files:?}");
        assert_eq!(line(LINT_PROJECT, *kind, dir.path()).as_deref(), Ok(*lint), "{files:?}");
        assert_eq!(line(RUN_TESTS, *kind, dir.path()).as_deref(), Ok(*test), "{files:?}");
        match line(BUILD_PROJECT, *kind, dir.path()) {
            Ok(b) => assert_eq!(b, *build, "{files:?}"),
            Err(why) => assert!(build.is_empty() && why.contains("without a build step"), "{why}"),
        }
    }
    assert_eq!(detect_in(project(&[("README.md", "")]).path()), None);
}

#[test]
fn missing_scripts_and_targets_say_so() {
    let dir = project(&[("package.json", r#"{"scripts": {"test": "jest"}}"#)]);
    let why = line(LINT_PROJECT, ProjectKind::Npm, dir.path()).unwrap_err();
    assert!(why.contains("no \"lint\" script"), "{why}");
    let dir = project(&[("Makefile", "all:\n\tx\n")]);
    let why = line(RUN_TESTS, ProjectKind::Make, dir.path()).unwrap_err();
    assert!(why.contains("no \"test\" target"), "{why}");
}

#[test]
fn the_nearest_project_wins_and_the_walk_stops_at_the_root() {
    let dir = project(&[("Cargo.toml", ""), ("web/package.json", "{}"), ("web/src/x.js", "")]);
    let root = dir.path();
    let (kind, at) = detect(&root.join("web/src"), root).unwrap();
    assert_eq!((kind, at), (ProjectKind::Npm, root.join("web")));
    let (kind, at) =
        detect(&root.join("web/../"), root).unwrap_or((ProjectKind::Make, root.into()));
    assert_eq!(kind, ProjectKind::Cargo, "{}", at.display());
    let inner = project(&[("sub/readme", "")]);
    let above = inner.path().join("sub");
    assert_eq!(detect(&above, &above), None, "nothing above the root is looked at");
}

#[test]
fn ripgrep_passes_values_as_single_elements_and_skips_secrets_files() {
    let spec = ripgrep(&SensitivePatterns::default());
    let values: BTreeMap<String, String> =
        [("pattern".to_owned(), "-rf /; echo".to_owned()), ("type".to_owned(), "rust".to_owned())]
            .into();
    let argv = spec.expand(&values);
    assert!(argv.contains(&"--regexp=-rf /; echo".to_owned()), "{argv:?}");
    assert!(argv.contains(&"--type=rust".to_owned()), "{argv:?}");
    assert!(!argv.iter().any(|a| a.starts_with("--glob={")), "absent optional dropped: {argv:?}");
    assert!(argv.contains(&"--glob=!.env*".to_owned()), "{argv:?}");
    assert_eq!(argv.last().map(String::as_str), Some("."));
}

#[test]
fn configured_profiles_are_validated() {
    let ok = ProfileConfig {
        program: Some("/usr/bin/make".into()),
        args: Some(vec!["-C".into(), "{dir}".into()]),
        arguments: Some(
            [("dir".to_owned(), ArgConfig { pattern: "[a-z]+".into(), ..ArgConfig::default() })]
                .into(),
        ),
        ..ProfileConfig::default()
    };
    let spec = ProfileSpec::from_config("docs_build", &ok).unwrap();
    assert_eq!(spec.tier, Tier::Irreversible, "a new profile fails safe");
    assert_eq!(spec.output_cap, PROFILE_OUTPUT_CAP);
    assert!(!spec.network);
    let lint = ProfileSpec::from_config(LINT_PROJECT, &ok).unwrap();
    assert_eq!(lint.tier, Tier::Read, "an override keeps the built-in's tier");
    assert_eq!(lint.timeout, std::time::Duration::from_secs(60));

    let bad = |f: &dyn Fn(&mut ProfileConfig)| {
        let mut c = ok.clone();
        f(&mut c);
        ProfileSpec::from_config("x", &c).unwrap_err().to_string()
    };
    assert!(bad(&|c| c.program = None).contains("has no program"));
    assert!(bad(&|c| c.program = Some("bin/make".into())).contains("absolute path"));
    assert!(bad(&|c| c.args = Some(vec!["{nope}".into()])).contains("is not defined"));
    assert!(bad(&|c| c.tier = Some("yolo".into())).contains("tier"));
    assert!(bad(&|c| c.output_cap_bytes = Some(10_000_000)).contains("output_cap_bytes"));
    assert!(bad(&|c| c.timeout_secs = Some(0)).contains("timeout_secs"));
    let broken = ArgConfig { pattern: "(".into(), ..ArgConfig::default() };
    assert!(
        bad(&|c| c.arguments = Some([("dir".to_owned(), broken.clone())].into()))
            .contains("invalid")
    );
    assert!(ProfileSpec::from_config("Bad-Name", &ok).is_err());
    let toml_err = toml_like_unknown_key();
    assert!(toml_err.contains("unknown field"), "{toml_err}");
}

/// Unknown keys are rejected by the raw struct (checked through serde_json: same derive).
fn toml_like_unknown_key() -> String {
    serde_json::from_str::<ProfileConfig>(r#"{"program": "make", "shell": true}"#)
        .unwrap_err()
        .to_string()
}

#[test]
fn the_budget_allows_five_runs_per_session() {
    let budget = ProfileBudget::default();
    for n in 1..=MAX_PROFILE_RUNS {
        assert_eq!(budget.take("s1"), Ok(n));
    }
    let err = budget.take("s1").unwrap_err();
    assert!(err.starts_with("Profile execution limit reached"), "{err}");
    assert_eq!(budget.take("s2"), Ok(1), "another run has its own allowance");
}
