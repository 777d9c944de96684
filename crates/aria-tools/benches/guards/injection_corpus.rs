//! Detection and false-positive rates of the injection filter on public text, and its speed.
//!
//! Corpora (all read from disk, nothing fetched):
//! - `benches/data/bastioncorpus-0.6.0-injections.jsonl`: the data file shipped in the PyPI
//!   package `bastioncorpus` 0.6.0 (MIT, © 2026 Stefano Rizzello; licence beside it), 181
//!   labelled rows: malicious prompt-injection payloads (direct, indirect, jailbreak, delimiter,
//!   obfuscation, exfiltration; `en`/`de`/`fr`/`es`/`it`) and benign false-positive traps.
//! - Ordinary documents: the `README.md` of every crate in the local Cargo registry cache
//!   (public crates.io READMEs: prose, code, install instructions) and this repository's own
//!   Rust sources, README and CHANGELOG (minus the injection rules and their tests, which quote
//!   attacks on purpose). A document counts as a false positive when anything in it is flagged.

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use aria_tools::InjectionFilter;

struct Row {
    malicious: bool,
    channel: String,
    category: String,
    text: String,
}

fn corpus_rows() -> Vec<Row> {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/benches/data/bastioncorpus-0.6.0-injections.jsonl");
    let text = fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap_or("").to_owned();
            Row {
                malicious: s("label") == "malicious",
                channel: s("channel"),
                category: s("category"),
                text: s("text"),
            }
        })
        .collect()
}

fn rate(hit: usize, total: usize) -> String {
    if total == 0 {
        return "n/a".into();
    }
    format!("{hit}/{total} = {:.1} %", 100.0 * hit as f64 / total as f64)
}

fn readmes() -> Vec<(PathBuf, String)> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let Some(src) = home.map(|h| h.join("registry/src")) else { return Vec::new() };
    let mut out = Vec::new();
    for index in fs::read_dir(&src).into_iter().flatten().flatten() {
        for krate in fs::read_dir(index.path()).into_iter().flatten().flatten() {
            let readme = krate.path().join("README.md");
            if let Ok(text) = fs::read_to_string(&readme) {
                out.push((readme, text));
            }
        }
    }
    out.sort();
    out
}

fn repo_docs() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for name in ["README.md", "CHANGELOG.md"] {
        if let Ok(t) = fs::read_to_string(root.join(name)) {
            out.push((root.join(name), t));
        }
    }
    let mut stack = vec![root.join("crates")];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if p.is_dir() {
                if !matches!(name, "target" | "tests" | "benches") {
                    stack.push(p);
                }
            } else if name.ends_with(".rs")
                && !name.starts_with("injection")
                && let Ok(t) = fs::read_to_string(&p)
            {
                out.push((p, t));
            }
        }
    }
    out.sort();
    out
}

fn document_fp(filter: &InjectionFilter, label: &str, docs: &[(PathBuf, String)]) {
    let mut flagged = Vec::new();
    let mut bytes = 0usize;
    let start = Instant::now();
    for (path, text) in docs {
        bytes += text.len();
        let scan = filter.scan(black_box(text));
        if !scan.findings.is_empty() {
            flagged.push((path.clone(), scan.reason()));
        }
    }
    let elapsed = start.elapsed();
    println!(
        "injection filter, {label}: {} documents flagged ({:.1} MB scanned at {:.1} MB/s)",
        rate(flagged.len(), docs.len()),
        bytes as f64 / 1048576.0,
        bytes as f64 / 1048576.0 / elapsed.as_secs_f64()
    );
    for (path, reason) in flagged.iter().take(12) {
        let short: String = reason.chars().take(160).collect();
        println!("    flagged {}: {short}", path.display());
    }
}

pub fn bench_injection() {
    let filter = InjectionFilter::new();
    let rows = corpus_rows();
    let flagged: Vec<bool> =
        rows.iter().map(|r| !filter.scan(&r.text).findings.is_empty()).collect();
    let count = |pred: &dyn Fn(&Row) -> bool, want_flagged: bool| {
        let total = rows.iter().filter(|r| pred(r)).count();
        let hit = rows.iter().zip(&flagged).filter(|(r, f)| pred(r) && **f == want_flagged).count();
        (hit, total)
    };
    println!("injection filter on bastioncorpus 0.6.0 (PyPI package data, {} rows):", rows.len());
    let (h, t) = count(&|r| r.malicious, true);
    println!("  detection rate, all malicious rows:          {}", rate(h, t));
    let (h, t) = count(&|r| r.malicious && r.channel == "tool_output", true);
    println!("  detection rate, malicious tool_output rows:  {}", rate(h, t));
    let (h, t) = count(&|r| r.malicious && r.channel != "tool_output", true);
    println!("  detection rate, malicious user_input rows:   {}", rate(h, t));
    let (h, t) = count(&|r| !r.malicious, true);
    println!("  false-positive rate, benign rows:            {}", rate(h, t));
    let mut categories: Vec<&str> = rows.iter().map(|r| r.category.as_str()).collect();
    categories.sort();
    categories.dedup();
    for c in categories {
        let malicious = rows.iter().any(|r| r.category == c && r.malicious);
        let (h, t) = count(&|r| r.category == c, true);
        let what = if malicious { "detected" } else { "flagged (false positive)" };
        println!("    {c:<22} {what}: {}", rate(h, t));
    }
    for (r, f) in rows.iter().zip(&flagged) {
        if !r.malicious && *f {
            println!("    benign row flagged: {:?}", r.text.chars().take(100).collect::<String>());
        }
    }
    document_fp(&filter, "crates.io READMEs in the local registry cache", &readmes());
    document_fp(&filter, "this repository's sources and docs", &repo_docs());
}
