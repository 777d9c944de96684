use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
    let c = resolve_text("", &env(&[]), &Overrides::default()).unwrap();
    assert_eq!(c.data_dir, PathBuf::from("/home/u/.local/share/aria"));
    assert_eq!(c.roots, vec![PathBuf::from("/home/u/.local/share/aria/workspace")]);
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
