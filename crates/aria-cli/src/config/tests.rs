use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::provider::{
    DEFAULT_ANTHROPIC_BASE_URL, DEFAULT_ANTHROPIC_MODEL, DEFAULT_LOCAL_MAX_TOOLS,
};
use super::*;

struct MapEnv(HashMap<&'static str, &'static str>);
impl Env for MapEnv {
    fn var(&self, key: &str) -> Option<String> {
        self.0.get(key).map(|v| v.to_string())
    }
}

fn env(pairs: &[(&'static str, &'static str)]) -> MapEnv {
    let mut map: HashMap<_, _> = pairs.iter().copied().collect();
    map.entry("HOME").or_insert("/home/u");
    MapEnv(map)
}

fn resolve_text(text: &str, e: &MapEnv, flags: &Overrides) -> Result<Config, ConfigError> {
    let raw = parse_raw(text, Path::new("/etc/aria.toml"))?;
    resolve(raw, ConfigSource::None(PathBuf::from("/x")), e, flags)
}

#[test]
fn defaults_are_the_documented_ones() {
    let in_dir = |cwd: &str| Overrides { cwd: Some(PathBuf::from(cwd)), ..Overrides::default() };
    // Started in a project: the project is the root.
    let c = resolve_text("", &env(&[]), &in_dir("/home/u/proj")).unwrap();
    assert_eq!(c.roots, vec![PathBuf::from("/home/u/proj")]);
    assert_eq!(c.roots_origin, RootsOrigin::CurrentDir);
    // Started in the home directory: the workspace, marked so that work there is refused.
    let c = resolve_text("", &env(&[]), &in_dir("/home/u")).unwrap();
    assert_eq!(c.data_dir, PathBuf::from("/home/u/.local/share/aria"));
    assert_eq!(c.roots, vec![PathBuf::from("/home/u/.local/share/aria/workspace")]);
    assert!(c.roots_origin.require_work_root().is_err());
    // Anything that names a root wins over the current directory.
    let c = resolve_text("", &env(&[("ARIA_ROOTS", "/srv/p")]), &in_dir("/home/u")).unwrap();
    assert_eq!((c.roots, c.roots_origin), (vec![PathBuf::from("/srv/p")], RootsOrigin::Env));
    let c =
        resolve_text("[scope]\nroots = [\"/srv/q\"]\n", &env(&[]), &in_dir("/home/u/p")).unwrap();
    assert_eq!((c.roots, c.roots_origin), (vec![PathBuf::from("/srv/q")], RootsOrigin::File));
    let flags = Overrides { roots: vec![PathBuf::from("/srv/r")], ..in_dir("/") };
    let c = resolve_text("", &env(&[]), &flags).unwrap();
    assert_eq!((c.roots, c.roots_origin), (vec![PathBuf::from("/srv/r")], RootsOrigin::Flag));
    assert_eq!(c.limits, Limits::default());
    assert_eq!(c.mode, ApprovalMode::Governed);
    assert_eq!(c.provider.base_url, DEFAULT_OPENAI_BASE_URL);
    assert_eq!(c.log_level, "warn");
}

#[test]
fn unknown_keys_are_named_with_the_file() {
    let err = resolve_text("[scope]\nrootz = [\"/tmp\"]\n", &env(&[]), &Overrides::default())
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("/etc/aria.toml") && msg.contains("rootz"), "{msg}");
    let err = resolve_text("colour = 1\n", &env(&[]), &Overrides::default()).unwrap_err();
    assert!(err.to_string().contains("colour"), "{err}");
}

#[test]
fn file_then_env_then_flags() {
    let text = "[provider]\nmodel = \"from-file\"\n[scope]\nroots = [\"~/notes\"]\n[limits]\nmax_iterations = 7\n";
    let c = resolve_text(text, &env(&[]), &Overrides::default()).unwrap();
    assert_eq!(c.provider.model, "from-file");
    assert_eq!(c.roots, vec![PathBuf::from("/home/u/notes")]);
    assert_eq!(c.limits.max_iterations, 7);

    let e = env(&[("ARIA_MODEL", "from-env"), ("ARIA_ROOTS", "/a:/b"), ("ARIA_HOME", "/data")]);
    let c = resolve_text(text, &e, &Overrides::default()).unwrap();
    assert_eq!(c.provider.model, "from-env");
    assert_eq!(c.roots, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
    assert_eq!(c.data_dir, PathBuf::from("/data"));

    let flags = Overrides {
        model: Some("from-flag".into()),
        roots: vec![PathBuf::from("/r")],
        ..Default::default()
    };
    let c = resolve_text(text, &e, &flags).unwrap();
    assert_eq!(c.provider.model, "from-flag");
    assert_eq!(c.roots, vec![PathBuf::from("/r")]);
}

#[test]
fn bad_values_say_what_to_do() {
    let e = env(&[("ARIA_MAX_COST_USD", "lots")]);
    assert!(
        resolve_text("", &e, &Overrides::default())
            .unwrap_err()
            .to_string()
            .contains("ARIA_MAX_COST_USD")
    );
    let e = env(&[("ARIA_MAX_COST_USD", "2.5")]);
    assert_eq!(resolve_text("", &e, &Overrides::default()).unwrap().limits.max_cost_usd, 2.5);
    let err =
        resolve_text("[policy]\nmode = \"yolo\"\n", &env(&[]), &Overrides::default()).unwrap_err();
    assert!(err.to_string().contains("governed, supervised or read_only"), "{err}");
    let err = resolve_text("[limits]\nmax_iterations = 0\n", &env(&[]), &Overrides::default())
        .unwrap_err();
    assert!(err.to_string().contains("greater than zero"), "{err}");
    let e = env(&[("OPENAI_BASE_URL", "localhost:11434")]);
    assert!(
        resolve_text("", &e, &Overrides::default()).unwrap_err().to_string().contains("http://")
    );
    let e = env(&[("ARIA_PROVIDER", "bard")]);
    assert!(
        resolve_text("", &e, &Overrides::default())
            .unwrap_err()
            .to_string()
            .contains("unknown provider")
    );
}

#[test]
fn config_file_location_order() {
    let e = env(&[("ARIA_CONFIG", "/env/aria.toml"), ("XDG_CONFIG_HOME", "/xdg")]);
    assert_eq!(locate(Some(Path::new("/flag.toml")), &e), ConfigSource::Flag("/flag.toml".into()));
    assert_eq!(locate(None, &e), ConfigSource::Env("/env/aria.toml".into()));
    let e = env(&[("XDG_CONFIG_HOME", "/nonexistent-xdg")]);
    assert_eq!(locate(None, &e), ConfigSource::None("/nonexistent-xdg/aria/aria.toml".into()));
}

#[test]
fn the_api_key_never_serialises() {
    let e = env(&[("OPENAI_API_KEY", "sk-live-abcdefghijklmnop")]);
    let c = resolve_text("", &e, &Overrides::default()).unwrap();
    let shown = serde_json::to_string(&c).unwrap();
    assert!(!shown.contains("sk-live"), "{shown}");
    assert!(shown.contains("[set, redacted]"));
}

#[test]
fn backends_router_pricing_and_caps_resolve_from_file_and_environment() {
    let text = "[provider]\nname = \"ollama\"\nkeep_alive = \"10m\"\n\n[router]\nattempts = 2\n\n\
                [[router.fallback]]\nbackend = \"anthropic\"\non_context_overflow = true\nabove_input_tokens = 9000\n\n\
                [limits]\nper_day_usd = 2.5\n\n[pricing.\"my-model\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n";
    let e = env(&[
        ("OLLAMA_HOST", "0.0.0.0:9999"),
        ("ANTHROPIC_API_KEY", "sk-ant-x"),
        ("ARIA_MAX_MONTHLY_COST_USD", "40"),
    ]);
    let c = resolve_text(text, &e, &Overrides::default()).unwrap();
    assert_eq!(c.provider.name, "ollama");
    assert_eq!(c.provider.model, DEFAULT_OLLAMA_MODEL);
    assert_eq!(c.provider.ollama_url, "http://127.0.0.1:9999");
    assert_eq!(c.provider.keep_alive.as_deref(), Some("10m"));
    assert_eq!(c.provider.anthropic_base_url, DEFAULT_ANTHROPIC_BASE_URL);
    assert_eq!(c.router.attempts, 2);
    assert_eq!(
        c.router.fallback,
        vec![FallbackConfig {
            backend: "anthropic".into(),
            model: DEFAULT_ANTHROPIC_MODEL.into(),
            on_error: false,
            on_context_overflow: true,
            above_input_tokens: Some(9000),
        }]
    );
    assert_eq!(c.caps, SpendCaps { per_day_usd: Some(2.5), per_month_usd: Some(40.0) });
    assert_eq!(c.pricing, vec![("my-model".to_string(), 1.0, 2.0)]);
    assert!(secret_values(&c).contains(&"sk-ant-x".to_string()));
    let shown = serde_json::to_string(&c).unwrap();
    assert!(!shown.contains("sk-ant-x"), "{shown}");
}

#[test]
fn bad_router_and_cap_values_are_named() {
    let e = env(&[]);
    for (text, needle) in [
        ("[[router.fallback]]\nbackend = \"nope\"\non_error = true\n", "unknown backend `nope`"),
        ("[[router.fallback]]\nbackend = \"ollama\"\n", "has no condition"),
        ("[router]\nattempts = 0\n", "attempts"),
        ("[limits]\nper_month_usd = -1\n", "per_month_usd"),
        ("[router]\nretries = 3\n", "retries"),
        ("[provider]\ntool_choice = \"always\"\n", "tool_choice"),
    ] {
        let err = resolve_text(text, &e, &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains(needle), "{text}: {err}");
    }
    let err = resolve_text("", &env(&[("ARIA_MAX_DAILY_COST_USD", "lots")]), &Overrides::default())
        .unwrap_err();
    assert!(err.to_string().contains("ARIA_MAX_DAILY_COST_USD"), "{err}");
}

#[test]
fn snapshot_settings_resolve_with_defaults_and_reject_bad_values() {
    let e = env(&[]);
    let c = resolve_text("", &e, &Overrides::default()).unwrap();
    assert_eq!(c.snapshots, SnapshotConfig { auto_init: true, prune_after_days: 30 });
    assert_eq!(c.snapshots.options().prune_after, std::time::Duration::from_secs(30 * 86_400));
    let c = resolve_text(
        "[snapshots]\nauto_init = false\nprune_after_days = 7\n",
        &e,
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.snapshots, SnapshotConfig { auto_init: false, prune_after_days: 7 });
    for (text, needle) in [
        ("[snapshots]\nprune_after_days = 0\n", "prune_after_days"),
        ("[snapshots]\nkeep_days = 3\n", "keep_days"),
    ] {
        let err = resolve_text(text, &e, &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains(needle), "{text}: {err}");
    }
}

#[test]
fn web_settings_default_to_public_only_and_reject_bad_hosts() {
    let e = env(&[]);
    let c = resolve_text("", &e, &Overrides::default()).unwrap();
    assert_eq!(c.web, WebConfig::default());
    assert!(!c.web.policy().unwrap().allows_local_network());
    let text = "[web]\nallowed_hosts = [\"nas.lan\", \"192.168.1.0/24\"]\n";
    let c = resolve_text(text, &e, &Overrides::default()).unwrap();
    assert_eq!(c.web.allowed_hosts, ["nas.lan", "192.168.1.0/24"]);
    assert!(c.web.policy().unwrap().allows_local_network());
    let c = resolve_text("[web]\nallow_private = true\n", &e, &Overrides::default()).unwrap();
    assert!(c.web.policy().unwrap().allows_local_network());
    for (text, needle) in [
        ("[web]\nallowed_hosts = [\"192.168.1.0/99\"]\n", "allowed_hosts"),
        ("[web]\nproxy = \"x\"\n", "proxy"),
    ] {
        let err = resolve_text(text, &e, &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains(needle), "{text}: {err}");
    }
}

#[test]
fn profiles_are_checked_when_the_config_is_read() {
    let e = env(&[]);
    let text = "[profiles.lint_project]\nprogram = \"/usr/bin/make\"\nargs = [\"lint\"]\ntimeout_secs = 20\n";
    let c = resolve_text(text, &e, &Overrides::default()).unwrap();
    assert_eq!(c.profiles["lint_project"].args, Some(vec!["lint".to_owned()]));
    for (text, needle) in [
        ("[profiles.lint_project]\nprogram = \"make\"\nshell = true\n", "shell"),
        ("[profiles.docs]\nargs = [\"x\"]\n", "has no program"),
        ("[profiles.docs]\nprogram = \"make\"\nargs = [\"{target}\"]\n", "is not defined"),
    ] {
        let err = resolve_text(text, &e, &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains(needle), "{text}: {err}");
    }
}

#[test]
fn the_embedded_model_sees_a_few_tools_others_see_all_unless_configured() {
    let max_tools = |text: &str| {
        resolve_text(text, &env(&[]), &Overrides::default()).unwrap().provider.max_tools
    };
    assert_eq!(max_tools("[provider]\nname = \"local\"\n"), Some(DEFAULT_LOCAL_MAX_TOOLS));
    assert_eq!(max_tools("[provider]\nname = \"local\"\nmax_tools = 0\n"), None);
    assert_eq!(max_tools("[provider]\nname = \"ollama\"\n"), None);
    assert_eq!(max_tools("[provider]\nname = \"ollama\"\nmax_tools = 6\n"), Some(6));
}

#[test]
fn dotenv_files_are_read_only_from_arias_own_directories() {
    let e = env(&[("ARIA_HOME", "/data"), ("XDG_CONFIG_HOME", "/xdg")]);
    assert_eq!(
        dotenv::dotenv_paths(&e),
        [PathBuf::from("/data/.env"), PathBuf::from("/xdg/aria/.env")],
        "never the working directory's"
    );
    let e = env(&[]);
    assert_eq!(
        dotenv::dotenv_paths(&e),
        [
            PathBuf::from("/home/u/.local/share/aria/.env"),
            PathBuf::from("/home/u/.config/aria/.env")
        ]
    );
    let c = resolve_text("", &env(&[("XDG_CONFIG_HOME", "/xdg")]), &Overrides::default()).unwrap();
    assert_eq!(c.config_dir, PathBuf::from("/xdg/aria"));
}

/// An environment that changes under the reader, as the process environment does when a
/// `.env` file is loaded.
struct Changing(std::sync::Mutex<HashMap<&'static str, &'static str>>);
impl Env for Changing {
    fn var(&self, key: &str) -> Option<String> {
        self.0.lock().unwrap().get(key).map(|v| v.to_string())
    }
}

#[test]
fn a_dotenv_cannot_move_the_configuration_or_the_data() {
    let live = Changing(std::sync::Mutex::new(
        [("HOME", "/home/u"), ("XDG_CONFIG_HOME", "/xdg")].into_iter().collect(),
    ));
    let pinned = dotenv::Pinned::capture(&live);
    // What a planted .env would set, after the capture.
    live.0.lock().unwrap().extend([
        ("ARIA_CONFIG", "./evil.toml"),
        ("ARIA_HOME", "/evil"),
        ("XDG_CONFIG_HOME", "/evil-xdg"),
        ("XDG_DATA_HOME", "/evil-data"),
        ("OPENAI_API_KEY", "sk-from-dotenv"),
    ]);
    assert_eq!(locate(None, &pinned), ConfigSource::None("/xdg/aria/aria.toml".into()));
    assert_eq!(data_dir(&pinned), PathBuf::from("/home/u/.local/share/aria"));
    assert_eq!(config_dir(&pinned), PathBuf::from("/xdg/aria"));
    // Everything else a .env sets is read as usual.
    assert_eq!(pinned.var("OPENAI_API_KEY").as_deref(), Some("sk-from-dotenv"));
    for key in ["ARIA_CONFIG", "ARIA_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "HOME"] {
        assert!(dotenv::LOCATING.contains(&key), "{key}");
    }
}

#[test]
fn the_locating_entries_of_a_dotenv_file_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".env");
    std::fs::write(&path, "OPENAI_API_KEY=sk-x\nARIA_CONFIG=./evil.toml\nexport ARIA_HOME=/x\n")
        .unwrap();
    assert_eq!(dotenv::locating_keys(&path).unwrap(), vec!["ARIA_CONFIG", "ARIA_HOME"]);
    std::fs::write(&path, "NOT VALID\n").unwrap();
    let err = dotenv::locating_keys(&path).unwrap_err().to_string();
    assert!(err.contains(".env"), "{err}");
}
