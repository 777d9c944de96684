//! Plugins: manifests (the shipped example and broken ones, each error naming its field), and
//! calls through the sandbox — a good answer, schema violations both ways, an error answer, a
//! crash, a timeout, and a read tool that may not write.

use std::path::{Path, PathBuf};

use aria_api::ToolContext;
use pretty_assertions::assert_eq;

use super::*;
use crate::guard::path::PathGuard;
use crate::guard::sensitive::SensitivePatterns;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/wordcount")
}

struct Rig {
    _dir: tempfile::TempDir,
    root: PathBuf,
    plugins: PathBuf,
    guard: Arc<PathGuard>,
}

fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&plugins).unwrap();
    let root = root.canonicalize().unwrap();
    let guard = Arc::new(
        PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap(),
    );
    Rig { _dir: dir, root, plugins, guard }
}

/// A plugin directory named `name` with `manifest` and a Python `script`.
fn plugin(rig: &Rig, name: &str, manifest: &str, script: &str) -> PathBuf {
    let dir = rig.plugins.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(MANIFEST), manifest).unwrap();
    std::fs::write(dir.join("main.py"), script).unwrap();
    dir
}

const OBJECT: &str =
    r#"{ type = "object", properties = { n = { type = "integer" } }, required = ["n"] }"#;

fn manifest(tier: &str, timeout: u64) -> String {
    format!(
        "name = \"t\"\nversion = \"0.1\"\ndescription = \"test\"\ncommand = \"python3\"\n\
         args = [\"-I\", \"main.py\"]\n[[tools]]\nname = \"twice\"\ndescription = \"doubles\"\n\
         tier = \"{tier}\"\ntimeout_secs = {timeout}\ninput_schema = {OBJECT}\n\
         output_schema = {OBJECT}\n"
    )
}

fn call(tool: &Arc<dyn Tool>, args: Value) -> Result<ToolOutput, ToolError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let ctx = ToolContext { session_id: "s".into(), dry_run: false };
    rt.block_on(tool.call(args, &ctx))
}

#[test]
fn the_example_plugin_loads_and_counts_words_in_the_sandbox() {
    let rig = rig();
    std::fs::write(rig.root.join("notes.md"), "one two three\nfour\n").unwrap();
    let plugin = Plugin::load(&example()).unwrap();
    assert_eq!((plugin.name.as_str(), plugin.tools.len()), ("wordcount", 1));
    let tool = &plugin.tools(&rig.guard)[0];
    assert_eq!(tool.spec().name, "word_count");
    assert_eq!(tool.tier(&json!({})), Tier::Read);
    let out = call(tool, json!({"path": "notes.md"})).unwrap();
    let counted: Value = serde_json::from_str(&out.content).unwrap();
    assert_eq!(counted, json!({"path": "notes.md", "lines": 2, "words": 4, "characters": 19}));
    // Outside the roots: the plugin's own error, passed on as a failure.
    let err = call(tool, json!({"path": "/etc/passwd"})).unwrap_err();
    assert!(err.to_string().contains("outside the roots"), "{err}");
}

#[test]
fn broken_manifests_are_refused_naming_the_field() {
    let rig = rig();
    let cases: Vec<(&str, String, &str)> = vec![
        ("syntax", "name = ".into(), "plugin.toml"),
        ("badname", manifest("read", 5).replace("name = \"t\"", "name = \"Bad Name\""), "name"),
        ("tier", manifest("sometimes", 5), "tools.twice.tier"),
        ("timeout", manifest("read", 0), "tools.twice.timeout_secs"),
        (
            "schema",
            manifest("read", 5)
                .replace(&format!("output_schema = {OBJECT}"), "output_schema = { type = 12 }"),
            "tools.twice.output_schema",
        ),
        (
            "program",
            manifest("read", 5).replace("command = \"python3\"", "command = \"no-such-program-x\""),
            "command",
        ),
        ("unknown", format!("{}color = \"red\"\n", manifest("read", 5)), "color"),
        (
            "escape",
            manifest("read", 5)
                .replace(&format!("output_schema = {OBJECT}"), "output_schema = \"../x.json\""),
            "tools.twice.output_schema",
        ),
    ];
    for (name, text, field) in cases {
        let dir = plugin(&rig, name, &text, "");
        let err = Plugin::load(&dir).unwrap_err().to_string();
        assert!(err.contains(field), "{name}: {err}");
    }
    let (loaded, errors) = Plugin::load_all(&rig.plugins);
    assert!(loaded.is_empty());
    assert_eq!(errors.len(), 8);
}

const TWICE: &str = "import json, sys\nr = json.loads(sys.stdin.readline())\n\
                     print(json.dumps({'result': {'n': r['arguments']['n'] * 2}}))\n";

#[test]
fn answers_are_checked_against_the_output_schema() {
    let rig = rig();
    let good = Plugin::load(&plugin(&rig, "good", &manifest("read", 5), TWICE)).unwrap();
    let out = call(&good.tools(&rig.guard)[0], json!({"n": 21})).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&out.content).unwrap(), json!({"n": 42}));

    let liar = "import json\nprint(json.dumps({'result': {'n': 'many'}}))\n";
    let liar = Plugin::load(&plugin(&rig, "liar", &manifest("read", 5), liar)).unwrap();
    let err = call(&liar.tools(&rig.guard)[0], json!({"n": 1})).unwrap_err().to_string();
    assert!(err.contains("output schema does not allow"), "{err}");

    let refuses = "import json\nprint(json.dumps({'error': 'n is too big'}))\n";
    let refuses = Plugin::load(&plugin(&rig, "refuses", &manifest("read", 5), refuses)).unwrap();
    let err = call(&refuses.tools(&rig.guard)[0], json!({"n": 1})).unwrap_err().to_string();
    assert!(err.ends_with("n is too big"), "{err}");

    let crash = "import sys\nsys.stderr.write('boom: it broke\\n')\nsys.exit(3)\n";
    let crash = Plugin::load(&plugin(&rig, "crash", &manifest("read", 5), crash)).unwrap();
    let err = call(&crash.tools(&rig.guard)[0], json!({"n": 1})).unwrap_err().to_string();
    assert!(err.contains("exited with 3") && err.contains("boom: it broke"), "{err}");

    let shout = "print('x' * 2_000_000)\n";
    let shout = Plugin::load(&plugin(&rig, "shout", &manifest("read", 5), shout)).unwrap();
    let err = call(&shout.tools(&rig.guard)[0], json!({"n": 1})).unwrap_err().to_string();
    assert!(err.contains("more than"), "{err}");
}

#[test]
fn a_plugin_that_hangs_is_stopped_at_its_timeout() {
    let rig = rig();
    let hang = "import time\ntime.sleep(60)\n";
    let hang = Plugin::load(&plugin(&rig, "hang", &manifest("read", 1), hang)).unwrap();
    let started = std::time::Instant::now();
    let err = call(&hang.tools(&rig.guard)[0], json!({"n": 1})).unwrap_err().to_string();
    assert!(err.contains("did not answer within 1 s"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_read_tool_cannot_write_in_the_roots_and_a_write_tool_can() {
    let rig = rig();
    let write = |dir: &Path| {
        format!(
            "import json, sys\nr = json.loads(sys.stdin.readline())\n\
             open({:?} + '/made.txt', 'w').write('x')\n\
             print(json.dumps({{'result': {{'n': 1}}}}))\n",
            dir.display().to_string()
        )
    };
    let script = write(&rig.root);
    let reader = Plugin::load(&plugin(&rig, "reader", &manifest("read", 5), &script)).unwrap();
    let err = call(&reader.tools(&rig.guard)[0], json!({"n": 1})).unwrap_err().to_string();
    assert!(!rig.root.join("made.txt").exists(), "a read plugin wrote into the root: {err}");
    let writer =
        Plugin::load(&plugin(&rig, "writer", &manifest("recoverable-write", 5), &script)).unwrap();
    call(&writer.tools(&rig.guard)[0], json!({"n": 1})).unwrap();
    assert!(rig.root.join("made.txt").exists());
}

/// Tries this machine two ways: a direct connection to `127.0.0.1:{port}`, and a `CONNECT`
/// through the egress proxy the sandbox names in `HTTPS_PROXY`. Answers `n`: 1 when the direct
/// connection opened, 2 when the proxy agreed.
const PROBE: &str = "import json, os, socket, sys\n\
r = json.loads(sys.stdin.readline())\nport = r['arguments']['n']\nn = 0\n\
try:\n socket.create_connection(('127.0.0.1', port), 2); n |= 1\nexcept OSError:\n pass\n\
host, pport = os.environ['HTTPS_PROXY'][len('http://'):].rsplit(':', 1)\n\
s = socket.create_connection((host, int(pport)), 2)\n\
s.sendall(('CONNECT 127.0.0.1:%d HTTP/1.1\\r\\n\\r\\n' % port).encode())\n\
if s.recv(100).startswith(b'HTTP/1.1 200'): n |= 2\n\
print(json.dumps({'result': {'n': n}}))\n";

#[test]
fn a_plugin_granted_the_network_cannot_reach_this_machine() {
    let rig = rig();
    let daemon = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = daemon.local_addr().unwrap().port();
    daemon.set_nonblocking(true).unwrap();
    let text = manifest("read", 10).replace("input_schema", "network = true\ninput_schema");
    let probe = Plugin::load(&plugin(&rig, "probe", &text, PROBE)).unwrap();
    assert!(probe.tools[0].network && probe.tools[0].network_hosts.is_none());
    let out = call(&probe.tools(&rig.guard)[0], json!({"n": port})).unwrap();
    let answer: Value = serde_json::from_str(&out.content).unwrap();
    assert_eq!(answer, json!({"n": 0}), "the plugin reached this machine");
    assert!(daemon.accept().is_err(), "the daemon stand-in was reached");
    // The refused destination is in the call's audit details.
    let egress = &out.details["egress"];
    assert_eq!(egress.as_array().map(Vec::len), Some(1), "{}", out.details);
    assert_eq!(egress[0]["host"], "127.0.0.1");
    assert_eq!(egress[0]["port"], port);
    assert_eq!(egress[0]["allowed"], false);
}

#[test]
fn a_network_grant_may_name_its_hosts() {
    let rig = rig();
    let hosts = r#"network = ["pypi.org", "*.pythonhosted.org"]"#;
    let text = manifest("read", 10).replace("input_schema", &format!("{hosts}\ninput_schema"));
    let listed = Plugin::load(&plugin(&rig, "listed", &text, TWICE)).unwrap();
    assert!(listed.tools[0].network);
    assert_eq!(
        listed.tools[0].network_hosts,
        Some(vec!["pypi.org".to_owned(), "*.pythonhosted.org".to_owned()])
    );
    let off = manifest("read", 10).replace("input_schema", "network = false\ninput_schema");
    let off = Plugin::load(&plugin(&rig, "off", &off, TWICE)).unwrap();
    assert!(!off.tools[0].network && off.tools[0].network_hosts.is_none());
    for (name, grant) in [("empty", "network = []"), ("url", r#"network = ["http://x.org"]"#)] {
        let text = manifest("read", 10).replace("input_schema", &format!("{grant}\ninput_schema"));
        let err = Plugin::load(&plugin(&rig, name, &text, TWICE)).unwrap_err().to_string();
        assert!(err.contains("tools.twice.network"), "{name}: {err}");
    }
}
