//! Environment variables before a command: which only change how output looks, and which
//! make programs run or load other code.

use aria_api::Tier;

const I: Tier = Tier::Irreversible;

/// Environment variables known to change only how output looks (language, time zone, colours,
/// terminal size, logging).
const HARMLESS_ENV: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "FORCE_COLOR",
    "COLORTERM",
    "GREP_COLOR",
    "GREP_COLORS",
    "LS_COLORS",
    "TIME_STYLE",
    "QUOTING_STYLE",
    "BLOCK_SIZE",
    "BLOCKSIZE",
    "DF_BLOCK_SIZE",
    "DU_BLOCK_SIZE",
    "LS_BLOCK_SIZE",
    "POSIXLY_CORRECT",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "NODE_ENV",
    "CI",
    "DEBUG",
    "VERBOSE",
];

/// Variables that make programs run or load other code.
const HOOKS: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "IFS",
    "SHELL",
    "PATH",
    "HOME",
    "PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "BROWSER",
    "SSH_ASKPASS",
    "LESS",
    "LESSOPEN",
    "LESSCLOSE",
    "LESSKEY",
    "NODE_OPTIONS",
    "NODE_PATH",
    "RIPGREP_CONFIG_PATH",
    "TAR_OPTIONS",
    "UNZIP",
    "UNZIPOPT",
    "ZIPOPT",
    "GZIP",
    "XZ_OPT",
    "BZIP2",
    "AWKPATH",
    "AWKLIBPATH",
    "RUSTC_WRAPPER",
    "RUSTC",
    "RUSTFLAGS",
];

/// Prefixes of such variables (`GIT_*`, `PYTHON*`, `LD_*`, …).
const HOOK_PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "GIT_",
    "PYTHON",
    "PERL",
    "RUBY",
    "NODE_",
    "NPM_CONFIG_",
    "CARGO_",
    "BASH_FUNC_",
    "XDG_",
    "BAT_",
    "ACK",
    "DOCKER_",
    "KUBE",
    "SSH_",
];

/// Environment variables that change what a program runs or loads. Only variables known to be
/// harmless are allowed before a command that reads; any other could change what it does.
pub(crate) fn env_rule(name: &str, value: &str) -> Option<(Tier, &'static str)> {
    // A PATH of system program directories only changes nothing that matters.
    if name == "PATH" && value.split(':').all(|d| super::judge::BIN_DIRS.contains(&d)) {
        return None;
    }
    // `PAGER=cat git log`: the pager is cat itself.
    if (name == "PAGER" || name.ends_with("_PAGER")) && matches!(value, "" | "cat") {
        return None;
    }
    if name.starts_with("LD_") || name.starts_with("DYLD_") {
        return Some((I, "makes programs load arbitrary code"));
    }
    let upper = name.to_ascii_uppercase();
    if HOOKS.contains(&name)
        || HOOK_PREFIXES.iter().any(|p| upper.starts_with(p))
        || name.ends_with("_PAGER")
        || name.ends_with("_EDITOR")
    {
        return Some((I, "can make programs run other code"));
    }
    if HARMLESS_ENV.contains(&name) || name.starts_with("LC_") {
        return None;
    }
    Some((I, "ARIA does not know how this variable changes what programs do; it needs approval"))
}
