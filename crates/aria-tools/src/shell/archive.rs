//! Archives and compressors: `tar`, `zip`, `unzip`, `gzip` and friends. They write files (a
//! recoverable write inside the roots), but several options run other programs (`tar
//! --to-command`, `-I`, `--checkpoint-action=exec`, `zip -TT`), reach another machine (`tar -f
//! host:file`) or write outside the working directory (`tar -P`, `unzip -:`): those are
//! irreversible. Listing and printing to standard output only read.

use aria_api::Tier;

use super::ast::Word;
use super::judge::{Call, Verdict};

/// One `tar` option: its name (`-x`, `--extract`) and value.
struct Opt<'a> {
    name: String,
    value: Option<&'a str>,
}

/// Short `tar` options that take a value.
const TAR_SHORT_VALUES: &str = "fCIFTXKNgLbHV";
/// Long `tar` options that take a value (abbreviations are resolved against this list).
const TAR_LONG_VALUES: &[&str] = &[
    "--file",
    "--directory",
    "--use-compress-program",
    "--to-command",
    "--checkpoint-action",
    "--info-script",
    "--new-volume-script",
    "--rsh-command",
    "--rmt-command",
    "--files-from",
    "--exclude",
    "--exclude-from",
    "--transform",
    "--xform",
    "--owner",
    "--group",
    "--mode",
    "--mtime",
    "--newer",
    "--newer-mtime",
    "--after-date",
    "--label",
    "--format",
    "--blocking-factor",
    "--tape-length",
    "--suffix",
    "--index-file",
    "--listed-incremental",
    "--volno-file",
    "--strip-components",
    "--starting-file",
    "--record-size",
    "--sort",
    "--exclude-tag",
    "--exclude-tag-under",
    "--exclude-tag-all",
    "--occurrence",
    "--pax-option",
    "--quoting-style",
    "--owner-map",
    "--group-map",
];

fn tar_long(name: &str) -> String {
    if TAR_LONG_VALUES.contains(&name) {
        return name.to_owned();
    }
    let mut matches = TAR_LONG_VALUES.iter().filter(|k| k.starts_with(name) && name.len() > 3);
    match (matches.next(), matches.next()) {
        (Some(only), None) => (*only).to_owned(),
        _ => name.to_owned(),
    }
}

fn tar_options<'a>(args: &'a [Word]) -> (Vec<Opt<'a>>, Vec<&'a Word>) {
    let mut opts = Vec::new();
    let mut operands = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let t = args[i].text();
        i += 1;
        if let Some(name) = pending.first().cloned() {
            pending.remove(0);
            opts.push(Opt { name, value: Some(t) });
            continue;
        }
        if only_operands {
            operands.push(&args[i - 1]);
        } else if t == "--" {
            only_operands = true;
        } else if let Some(long) = t.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (tar_long(&format!("--{n}")), Some(v)),
                None => (tar_long(t), None),
            };
            if inline.is_none() && TAR_LONG_VALUES.contains(&name.as_str()) {
                pending.push(name);
            } else {
                opts.push(Opt { name, value: inline });
            }
        } else if t.len() > 1 && (t.starts_with('-') || i == 1) {
            // `tar xzf a.tar`: a first word without a dash is a cluster of option letters
            // whose values follow in order.
            let old_style = !t.starts_with('-');
            let letters = t.trim_start_matches('-');
            for (at, c) in letters.char_indices() {
                let name = format!("-{c}");
                if TAR_SHORT_VALUES.contains(c) {
                    let rest = &letters[at + 1..];
                    if old_style {
                        pending.push(name);
                        continue;
                    }
                    if rest.is_empty() {
                        pending.push(name);
                    } else {
                        opts.push(Opt { name, value: Some(rest) });
                    }
                    break;
                }
                opts.push(Opt { name, value: None });
            }
        } else {
            operands.push(&args[i - 1]);
        }
    }
    for name in pending {
        opts.push(Opt { name, value: None });
    }
    (opts, operands)
}

/// Whether a path leaves the working directory (absolute, `..`, `~`, a variable).
fn leaves_cwd(path: &str) -> bool {
    path.starts_with(['/', '~', '$']) || path.split('/').any(|p| p == "..")
}

/// `tar`.
pub(crate) fn tar(call: &Call<'_>) -> Verdict {
    let (opts, operands) = tar_options(call.args);
    let shown = &call.shown;
    let has = |names: &[&str]| opts.iter().any(|o| names.contains(&o.name.as_str()));
    let listing = has(&["-t", "--list", "-d", "--diff", "--compare", "--test-label"])
        || (has(&["-x", "--extract", "--get"]) && has(&["-O", "--to-stdout"]));
    let extracting = has(&["-x", "--extract", "--get"]);
    let writes_archive =
        has(&["-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate"])
            || has(&["--concatenate", "--delete"]);
    let mut v = if listing {
        Verdict::new(Tier::Read, format!("{shown}: lists or prints an archive"))
    } else if has(&["--help", "--version", "--usage", "--show-defaults"]) && !extracting {
        Verdict::new(Tier::Read, format!("{shown}: prints information"))
    } else {
        Verdict::new(Tier::RecoverableWrite, format!("{shown}: {}", call.entry.does))
    };
    let force_local = has(&["--force-local"]);
    for o in &opts {
        let value = o.value.unwrap_or("");
        let name = o.name.as_str();
        let runs = match name {
            "--to-command" | "-I" | "--use-compress-program" | "-F" | "--info-script" => true,
            "--new-volume-script" | "--rsh-command" | "--rmt-command" => true,
            "--checkpoint-action" => value.contains("exec") || value.contains("shell"),
            _ => false,
        };
        if runs {
            v.raise(Tier::Irreversible, || {
                format!("{shown} {name} {value}: runs another program; it needs approval")
            });
        }
        match name {
            "-P" | "--absolute-names" => v.raise(Tier::Irreversible, || {
                format!("{shown} {name}: keeps absolute member names, writing outside the root")
            }),
            "--remove-files" => v.raise(Tier::Irreversible, || {
                format!("{shown} --remove-files: deletes the files it archives")
            }),
            "-f" | "--file" => {
                let remote = value.split_once(':').is_some_and(|(host, _)| !host.contains('/'));
                if remote && !force_local {
                    v.raise(Tier::Irreversible, || {
                        format!("{shown} -f {value}: reaches another machine through rsh")
                    });
                } else if writes_archive && value != "-" {
                    v.write_text(shown, value);
                }
            }
            "-C" | "--directory" if extracting && !listing => {
                if leaves_cwd(value) {
                    v.raise(Tier::Irreversible, || {
                        format!("{shown} -C {value}: extracts outside the working directory")
                    });
                }
                v.write_text(shown, value);
            }
            "-g" | "--listed-incremental" | "--index-file" | "--volno-file" => {
                v.write_text(&format!("{shown} {name}"), value);
            }
            _ => {}
        }
    }
    if extracting && !listing && has(&["-P", "--absolute-names"]) {
        for m in operands.iter().filter(|w| leaves_cwd(w.text())) {
            v.write(shown, m);
        }
    }
    v
}

/// `zip ARCHIVE FILES…`: writes the archive; `-T`/`-TT` run an unzip program.
pub(crate) fn zip(call: &Call<'_>) -> Verdict {
    let shown = &call.shown;
    let mut v = Verdict::new(Tier::RecoverableWrite, format!("{shown}: {}", call.entry.does));
    let args = call.args;
    let mut archive: Option<&Word> = None;
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text();
        i += 1;
        match t {
            "-T" | "--test" => v.raise(Tier::Irreversible, || {
                format!("{shown} {t}: runs unzip to test the archive")
            }),
            "-TT" | "--unzip-command" => v.raise(Tier::Irreversible, || {
                format!("{shown} {t}: runs the given command to test the archive")
            }),
            "-m" | "--move" => {
                v.raise(Tier::Irreversible, || format!("{shown} {t}: deletes the files it adds"))
            }
            "-O" | "--output-file" => {
                if let Some(out) = args.get(i) {
                    v.write(shown, out);
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        if t.starts_with("--unzip-command=") {
            v.raise(Tier::Irreversible, || format!("{shown} {t}: runs the given command"));
        }
        if matches!(t, "-b" | "-n" | "-t" | "-tt" | "-P" | "-Z" | "-s" | "-sp" | "-TT") {
            i += 1;
        } else if archive.is_none() && (!t.starts_with('-') || t == "-") {
            archive = Some(&args[i - 1]);
        } else if t == "-x" || t == "-i" {
            // Patterns follow until the end; nothing more to learn.
            break;
        }
    }
    if let Some(a) = archive.filter(|a| a.text() != "-") {
        v.write(shown, a);
    }
    v
}

/// `unzip`: lists, tests or prints with `-l`/`-t`/`-p`; otherwise extracts (into `-d DIR`).
pub(crate) fn unzip(call: &Call<'_>) -> Verdict {
    let shown = &call.shown;
    let args = call.args;
    let mut v = Verdict::new(Tier::RecoverableWrite, format!("{shown}: {}", call.entry.does));
    let mut read_only = false;
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text();
        i += 1;
        if t == "-d" {
            let dir = args.get(i).map_or("", Word::text);
            if leaves_cwd(dir) {
                v.raise(Tier::Irreversible, || {
                    format!("{shown} -d {dir}: extracts outside the working directory")
                });
            }
            v.write_text(shown, dir);
            i += 1;
            continue;
        }
        if matches!(t, "-P" | "-O" | "-I") {
            i += 1;
            continue;
        }
        if t == "-x" {
            break;
        }
        let Some(letters) = t.strip_prefix('-') else { continue };
        if letters.contains(':') {
            v.raise(Tier::Irreversible, || {
                format!("{shown} {t}: -: lets members with ../ write outside the working directory")
            });
        }
        if letters.starts_with('Z') || letters.contains(['l', 'v', 't', 'p', 'c', 'z']) {
            read_only = true;
        }
    }
    if read_only && v.tier == Tier::RecoverableWrite && v.writes.is_empty() {
        return Verdict::new(Tier::Read, format!("{shown}: lists, tests or prints an archive"));
    }
    v
}

/// `gzip`, `xz`, `zstd`, …: replace files with their (de)compressed form; read with `-c`,
/// `-l`, `-t`, or when they only filter standard input.
pub(crate) fn compressor(call: &Call<'_>) -> Verdict {
    let shown = &call.shown;
    let args = call.args;
    let mut stdout = false;
    let mut files: Vec<&Word> = Vec::new();
    let mut out: Option<&str> = None;
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let t = args[i].text();
        i += 1;
        if only_operands || !t.starts_with('-') || t == "-" {
            if t != "-" {
                files.push(&args[i - 1]);
            }
            continue;
        }
        if t == "--" {
            only_operands = true;
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or("");
            stdout |= matches!(
                name,
                "stdout" | "to-stdout" | "list" | "test" | "help" | "version" | "license"
            );
            if name == "output" || name == "suffix" || name == "threads" {
                let value = long.split_once('=').map(|(_, v)| v);
                let value = value.or_else(|| {
                    i += 1;
                    args.get(i - 1).map(Word::text)
                });
                if name == "output" {
                    out = value;
                }
            }
            continue;
        }
        for (at, c) in t[1..].char_indices() {
            if "STDMo".contains(c) {
                let rest = &t[1 + at + 1..];
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).map_or("", Word::text)
                } else {
                    rest
                };
                if c == 'o' {
                    out = Some(value);
                }
                break;
            }
            stdout |= matches!(c, 'c' | 'l' | 't' | 'h' | 'V' | 'L');
        }
    }
    let mut v = Verdict::new(Tier::Read, format!("{shown}: writes to standard output only"));
    if let Some(path) = out {
        v.write_text(shown, path);
    } else if !stdout {
        for f in files {
            v.write(shown, f);
        }
    }
    v
}
