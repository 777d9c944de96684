//! Throughput of the guards: path checks per second, redactor and injection filter MB/s, and
//! the injection filter's detection and false-positive rates on public text.
//!
//! `cargo bench -p aria-tools --bench guards` (a plain binary: `harness = false`). Figures are
//! printed, never asserted (CONVENTIONS.md, "Tests").

// A bench binary reports on stdout; unwrap is fine for its own setup.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::hint::black_box;
use std::os::unix::fs::symlink;
use std::time::{Duration, Instant};

use aria_api::Redact;
use aria_tools::{InjectionFilter, PathGuard, SecretRedactor, SensitivePatterns};

mod injection_corpus;

fn time<F: FnMut() -> usize>(mut f: F) -> (Duration, usize) {
    let start = Instant::now();
    let n = f();
    (start.elapsed(), n)
}

fn bench_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("root");
    fs::create_dir_all(root.join("src/deep/er/still")).unwrap();
    fs::write(root.join("src/deep/er/still/main.rs"), "fn main() {}").unwrap();
    fs::write(root.join("README.md"), "hi").unwrap();
    fs::write(root.join(".env"), "X=1").unwrap();
    symlink("src", root.join("link")).unwrap();
    symlink("..", root.join("up")).unwrap();
    let guard = PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap();
    let abs = root.join("README.md").to_str().unwrap().to_owned();
    let inputs: Vec<&str> = vec![
        "README.md",                  // allowed, shallow
        "src/deep/er/still/main.rs",  // allowed, deep
        "link/deep/er/still/main.rs", // allowed, through a symlink
        &abs,                         // allowed, absolute
        "../../etc/passwd",           // refused: escape
        "up/x",                       // refused: symlink escape
        ".env",                       // refused: sensitive (before disk)
        "%2e%2e/x",                   // refused: lexical
        "src/missing.rs",             // not found
    ];
    let rounds = 20_000;
    let (elapsed, n) = time(|| {
        let mut n = 0;
        for _ in 0..rounds {
            for input in &inputs {
                black_box(guard.resolve_existing(black_box(input)).is_ok());
                n += 1;
            }
        }
        n
    });
    println!(
        "path guard: {n} resolve_existing calls (9-input mix) in {:.2?} = {:.0} checks/s ({:.1} µs each)",
        elapsed,
        n as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / n as f64
    );
    let (elapsed, n) = time(|| {
        for _ in 0..rounds * 5 {
            black_box(guard.resolve_existing(black_box(".env")).is_err());
        }
        rounds * 5
    });
    println!(
        "path guard: lexical/sensitive refusal only: {:.0} checks/s",
        n as f64 / elapsed.as_secs_f64()
    );
}

/// ~`target` bytes of text shaped like logs, code and tool output, with a secret every ~200 lines.
fn corpus(target: usize) -> Vec<String> {
    let samples = [
        "2026-05-01T12:00:00.123Z INFO aria_core::agent: session 550e8400-e29b-41d4-a716-446655440000 step=3 state=Executing tool=file_read",
        "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 Author: Dev <dev@example.com>",
        "    let token = get_token(&config)?; // refresh if expired",
        r#"{"model":"gpt-4o","usage":{"prompt_tokens":1520,"completion_tokens":88},"id":"chatcmpl-9x"}"#,
        "fn resolve(&self, input: &str, mode: Mode) -> Result<Resolved, PathError> {",
        "Größe: 12 KiB — déjà vu — 日本語のログ行 — ✓ done",
        "GET /api/v1/items?page=2&limit=50 HTTP/1.1 200 3.2ms",
        "   Compiling regex-automata v0.4.18",
        "warning: unused variable: `x` --> src/main.rs:10:9",
        "The quick brown fox jumps over the lazy dog while the password policy is explained.",
    ];
    let secrets = [
        "OPENAI_API_KEY=sk-proj-Ab3_dEf-9hIjKlMnOpQrStUvWxYz0123456789AbCdEf",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcDEF123_-xyz",
        "git clone https://ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8@github.com/o/r",
        "aws_access_key_id = AKIA2OGYBAH6TQ3LWXPZ",
        "DATABASE_URL=postgres://app:s3cr3t-Pa55@db.internal:5432/prod",
        "set-cookie: sid=q8Zt3LmX0vKp7RwB2nYc9HdJ4sFg6TaE1uQiW5oNzVkGxMbCy0rDhSlPjAeUf3Ik; HttpOnly",
    ];
    let mut lines = Vec::new();
    let mut size = 0;
    let mut i = 0usize;
    while size < target {
        let line = if i % 200 == 199 {
            secrets[(i / 200) % secrets.len()].to_owned()
        } else {
            format!("{} #{i}", samples[i % samples.len()])
        };
        size += line.len() + 1;
        lines.push(line);
        i += 1;
    }
    lines
}

fn bench_redactor() {
    let lines = corpus(10 * 1024 * 1024);
    let blob = lines.join("\n");
    let mb = blob.len() as f64 / (1024.0 * 1024.0);
    let known: Vec<String> =
        (0..6).map(|i| format!("configured-secret-value-{i}-xyzzy-plugh")).collect();
    for (label, redactor) in [
        ("patterns only", SecretRedactor::new(Vec::new())),
        ("patterns + 6 known values", SecretRedactor::new(known)),
    ] {
        // Warm up (lazy DFA caches).
        black_box(redactor.redact(&blob[..blob.len().min(1 << 20)]).len());
        let (elapsed, changed) = time(|| {
            lines
                .iter()
                .filter(|l| matches!(redactor.redact(l), std::borrow::Cow::Owned(_)))
                .count()
        });
        println!(
            "redactor ({label}), per line: {} lines, {mb:.1} MB in {elapsed:.2?} = {:.1} MB/s ({changed} lines changed)",
            lines.len(),
            mb / elapsed.as_secs_f64()
        );
        let (elapsed, len) = time(|| redactor.redact(black_box(&blob)).len());
        println!(
            "redactor ({label}), one 10 MB string: {elapsed:.2?} = {:.1} MB/s (output {len} bytes)",
            mb / elapsed.as_secs_f64()
        );
    }
    // Hidden characters: a zero-width space in every tenth line makes
    // the redactor judge the whole text a second time with them removed.
    let hidden: String = lines
        .iter()
        .enumerate()
        .map(|(i, l)| if i % 10 == 0 { format!("{l}\u{200B}") } else { l.clone() })
        .collect::<Vec<_>>()
        .join("\n");
    let redactor = SecretRedactor::new(Vec::new());
    let (elapsed, len) = time(|| redactor.redact(black_box(&hidden)).len());
    println!(
        "redactor, one 10 MB string with a zero-width space every 10 lines: {elapsed:.2?} = {:.1} MB/s (output {len} bytes)",
        hidden.len() as f64 / 1048576.0 / elapsed.as_secs_f64()
    );
    let clean: String = lines
        .iter()
        .filter(|l| {
            !l.contains("sk-")
                && !l.contains("AKIA")
                && !l.contains("ghp_")
                && !l.contains("Bearer")
                && !l.contains("DATABASE_URL")
                && !l.contains("set-cookie")
        })
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    let redactor = SecretRedactor::new(Vec::new());
    let (elapsed, borrowed) = time(|| {
        usize::from(matches!(redactor.redact(black_box(&clean)), std::borrow::Cow::Borrowed(_)))
    });
    println!(
        "redactor, clean text fast path: {:.1} MB in {elapsed:.2?} = {:.1} MB/s (borrowed: {})",
        clean.len() as f64 / 1048576.0,
        clean.len() as f64 / 1048576.0 / elapsed.as_secs_f64(),
        borrowed == 1
    );
}

fn bench_injection_speed() {
    let blob = corpus(10 * 1024 * 1024).join("\n");
    let mb = blob.len() as f64 / 1048576.0;
    for (label, filter) in [
        ("rules + classifier", InjectionFilter::new()),
        ("rules only", InjectionFilter::rules_only()),
    ] {
        black_box(filter.scan(&blob[..1 << 20]).findings.len());
        let (elapsed, n) = time(|| filter.scan(black_box(&blob)).findings.len());
        println!(
            "injection filter ({label}), 10 MB of logs and code: {elapsed:.2?} = {:.1} MB/s ({n} findings)",
            mb / elapsed.as_secs_f64()
        );
    }
    let Some(model) = aria_tools::guard::injection_model::Model::builtin() else { return };
    let (elapsed, n) = time(|| model.flagged(black_box(&blob)).len());
    println!(
        "injection classifier alone (every sentence), 10 MB: {elapsed:.2?} = {:.1} MB/s ({n} flagged)",
        mb / elapsed.as_secs_f64()
    );
}

fn main() {
    bench_paths();
    bench_redactor();
    bench_injection_speed();
    injection_corpus::bench_injection();
}
