//! Files that define what a command profile runs: a Makefile's recipes,
//! `package.json` scripts, Cargo build scripts and configuration, Python test configuration and
//! plugins. A profile run after the model changed one of these runs commands the model chose,
//! so the agent asks first ([`defines_commands`]).

use std::path::Path;

/// File names (compared without regard to case) that define commands or what a build or test
/// tool loads and runs.
const NAMES: &[&str] = &[
    // make
    "makefile",
    "gnumakefile",
    "makefile.am",
    "makefile.in",
    "configure",
    "configure.ac",
    // npm, yarn, pnpm (`.npmrc` can set `script-shell`, `.yarnrc.yml` a `yarnPath`)
    "package.json",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    "pnpm-workspace.yaml",
    // cargo (`rust-toolchain.toml` can name a toolchain by path)
    "cargo.toml",
    "build.rs",
    "rust-toolchain",
    "rust-toolchain.toml",
    // python: packaging, test runners and what pytest imports before the tests
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "tox.ini",
    "noxfile.py",
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "sitecustomize.py",
    "usercustomize.py",
    // other build tools
    "justfile",
    ".justfile",
    "cmakelists.txt",
    "meson.build",
    "meson_options.txt",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "gradlew",
    "pom.xml",
    "rakefile",
    "taskfile.yml",
    "taskfile.yaml",
];

/// Name endings (compared without regard to case) of included make and CMake files.
const SUFFIXES: &[&str] = &[".mk", ".mak", ".make", ".cmake"];

/// Whether `path` is a file that defines what a command profile (lint, build, test) runs:
/// `Makefile`, `*.mk`, `package.json`, `Cargo.toml`, `build.rs`, `.cargo/config.toml`,
/// `pyproject.toml`, `setup.py`, `conftest.py`, `tox.ini`, `justfile`, `CMakeLists.txt`, ...
pub fn defines_commands(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return false };
    let name = name.to_ascii_lowercase();
    if NAMES.contains(&name.as_str()) || SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return true;
    }
    // Cargo's configuration: runners, rustc wrappers and aliases.
    let in_cargo_dir =
        path.parent().and_then(Path::file_name).is_some_and(|d| d.eq_ignore_ascii_case(".cargo"));
    in_cargo_dir && matches!(name.as_str(), "config" | "config.toml")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_and_test_definitions_are_recognised_in_any_directory_and_case() {
        for p in [
            "Makefile",
            "sub/dir/GNUmakefile",
            "makefile",
            "rules/common.mk",
            "package.json",
            "web/.npmrc",
            "Cargo.toml",
            "crates/x/build.rs",
            ".cargo/config.toml",
            "crates/.cargo/config",
            "rust-toolchain.toml",
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "tox.ini",
            "noxfile.py",
            "tests/conftest.py",
            "pytest.ini",
            "justfile",
            "CMakeLists.txt",
            "cmake/Tools.cmake",
            "MAKEFILE",
        ] {
            assert!(defines_commands(Path::new(p)), "{p}");
        }
        for p in [
            "src/main.rs",
            "app.txt",
            "tests/test_app.py",
            "README.md",
            "Cargo.lock",
            "package-lock.json",
            "config.toml",
            "docs/makefile.md",
            ".cargo/credentials.toml",
            "",
        ] {
            assert!(!defines_commands(Path::new(p)), "{p}");
        }
    }
}
