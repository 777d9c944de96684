//! Plugins: tools that live in a directory with a `plugin.toml` manifest
//! and run as a subprocess in the sandbox.
//!
//! A manifest names the plugin, its executable and arguments, and each tool it offers with an
//! input JSON Schema, an output JSON Schema, a tier, a timeout and whether it needs the network:
//!
//! ```toml
//! name = "wordcount"
//! version = "1.0.0"
//! description = "Counts words in text files."
//! command = "python3"              # a program on the safe PATH, or ./file inside the plugin
//! args = ["wordcount.py"]          # relative paths are the plugin's own files
//!
//! [[tools]]
//! name = "word_count"
//! description = "Words, lines and characters of a text file inside the roots."
//! tier = "read"                    # read | recoverable-write | irreversible
//! timeout_secs = 10                # default 30, at most 600
//! network = false                  # true, or only these hosts: ["pypi.org", "*.example.com"]
//! input_schema = { type = "object", properties = { path = { type = "string" } }, required = ["path"] }
//! output_schema = "word_count.output.json"   # a table, or a JSON file in the plugin
//! example = { path = "README.md" }           # what `aria plugins test` sends
//! ```
//!
//! One call is one process: ARIA writes one JSON request on its stdin,
//! `{"tool": NAME, "arguments": {…}, "roots": [DIR…]}`, and reads one JSON object from its
//! stdout, `{"result": …}` (checked against the output schema) or `{"error": "message"}`.
//! The arguments were checked against the input schema before (by the agent loop, like every
//! tool's). The process sees the roots (read-only for a `read` tool), its own directory
//! read-only, the system's programs and libraries, no network unless the tool asks for it,
//! and no secrets from ARIA's environment; it is killed at its timeout. A tool granted the
//! network reaches public addresses only (never this machine, loopback or a private range),
//! through the sandbox's egress proxy, which records every destination.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use aria_sandbox::{EgressPolicy, EgressRecord, Input, NetworkGrant, Sandbox};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::guard::path::PathGuard;

/// The manifest's file name.
pub const MANIFEST: &str = "plugin.toml";

/// The longest a plugin's answer may be (stdout), in bytes.
const OUTPUT_CAP: usize = 1 << 20;

/// Why a plugin cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PluginError {
    #[error("{path}: {message}")]
    Manifest { path: String, message: String },
}

fn bad(dir: &Path, message: impl Into<String>) -> PluginError {
    PluginError::Manifest {
        path: dir.join(MANIFEST).display().to_string(),
        message: message.into(),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    name: String,
    version: String,
    description: String,
    command: String,
    #[serde(default)]
    args: Vec<String>,
    tools: Vec<RawTool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    description: String,
    tier: String,
    timeout_secs: Option<u64>,
    #[serde(default)]
    network: NetworkGrant,
    input_schema: toml::Value,
    output_schema: toml::Value,
    example: Option<toml::Value>,
}

/// A plugin whose manifest parsed and whose schemas compile.
#[derive(Debug, Clone)]
pub struct Plugin {
    pub name: String,
    pub version: String,
    pub description: String,
    /// The plugin's directory (canonical).
    pub dir: PathBuf,
    /// The program to run (absolute) and its arguments (plugin files made absolute).
    pub argv: Vec<String>,
    pub tools: Vec<PluginToolSpec>,
}

/// One tool of a plugin.
#[derive(Debug, Clone)]
pub struct PluginToolSpec {
    pub name: String,
    pub description: String,
    pub tier: Tier,
    pub timeout: Duration,
    /// Whether the tool may reach the network (public addresses only, through the egress
    /// proxy).
    pub network: bool,
    /// The hosts its network grant is limited to; `None`: any public host.
    pub network_hosts: Option<Vec<String>>,
    pub input_schema: Value,
    pub output_schema: Value,
    /// The output schema, compiled.
    pub output: Arc<jsonschema::Validator>,
    pub example: Option<Value>,
}

fn name_ok(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn json_of(value: toml::Value) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|e| e.to_string())
}

/// A schema given inline, or as a JSON file inside the plugin.
fn schema(
    dir: &Path,
    tool: &str,
    field: &str,
    value: toml::Value,
) -> Result<(Value, jsonschema::Validator), PluginError> {
    let schema = match value {
        toml::Value::String(file) => {
            let path = inside(dir, &file).ok_or_else(|| {
                bad(dir, format!("tools.{tool}.{field}: {file} is not a file inside the plugin"))
            })?;
            let text = std::fs::read_to_string(&path)
                .map_err(|e| bad(dir, format!("tools.{tool}.{field}: cannot read {file}: {e}")))?;
            serde_json::from_str(&text)
                .map_err(|e| bad(dir, format!("tools.{tool}.{field}: {file} is not JSON: {e}")))?
        }
        table @ toml::Value::Table(_) => {
            json_of(table).map_err(|e| bad(dir, format!("tools.{tool}.{field}: {e}")))?
        }
        _ => {
            return Err(bad(
                dir,
                format!("tools.{tool}.{field}: give a table (the JSON Schema) or a JSON file name"),
            ));
        }
    };
    let validator = jsonschema::validator_for(&schema)
        .map_err(|e| bad(dir, format!("tools.{tool}.{field} is not a valid JSON Schema: {e}")))?;
    Ok((schema, validator))
}

/// `file` resolved inside `dir` (no `..` out, no symlink out), if it exists.
fn inside(dir: &Path, file: &str) -> Option<PathBuf> {
    let path = dir.join(file).canonicalize().ok()?;
    path.starts_with(dir).then_some(path)
}

fn tier(text: &str) -> Option<Tier> {
    match text {
        "read" => Some(Tier::Read),
        "recoverable-write" | "recoverable_write" => Some(Tier::RecoverableWrite),
        "irreversible" => Some(Tier::Irreversible),
        _ => None,
    }
}

impl Plugin {
    /// Reads and checks the plugin in `dir`. Every error names the field and what to write.
    pub fn load(dir: &Path) -> Result<Plugin, PluginError> {
        let dir = dir
            .canonicalize()
            .map_err(|e| bad(dir, format!("the plugin directory cannot be read: {e}")))?;
        let text = std::fs::read_to_string(dir.join(MANIFEST))
            .map_err(|e| bad(&dir, format!("cannot read it: {e}")))?;
        let raw: RawManifest = toml::from_str(&text).map_err(|e| bad(&dir, e.to_string()))?;
        if !name_ok(&raw.name, 32) {
            return Err(bad(
                &dir,
                format!(
                    "name = {:?}: use lowercase letters, digits, - or _, starting with a letter, \
                     at most 32",
                    raw.name
                ),
            ));
        }
        if raw.tools.is_empty() {
            return Err(bad(&dir, "tools: a plugin offers at least one [[tools]] entry"));
        }
        let program = if raw.command.starts_with("./") {
            inside(&dir, &raw.command).filter(|p| p.is_file()).ok_or_else(|| {
                bad(&dir, format!("command = {:?}: no such file in the plugin", raw.command))
            })?
        } else if raw.command.contains('/') {
            return Err(bad(
                &dir,
                format!(
                    "command = {:?}: name a program (python3, node, …) or a file of the plugin \
                     as ./file",
                    raw.command
                ),
            ));
        } else {
            crate::profiles::find_program(&raw.command).ok_or_else(|| {
                bad(&dir, format!("command = {:?}: the program is not installed", raw.command))
            })?
        };
        let mut argv = vec![program.to_string_lossy().into_owned()];
        for arg in &raw.args {
            // An argument naming one of the plugin's files is passed as its absolute path.
            match inside(&dir, arg).filter(|p| p.is_file() && !arg.starts_with('-')) {
                Some(path) => argv.push(path.to_string_lossy().into_owned()),
                None => argv.push(arg.clone()),
            }
        }
        let mut tools = Vec::with_capacity(raw.tools.len());
        for t in raw.tools {
            if !name_ok(&t.name, 64) {
                return Err(bad(
                    &dir,
                    format!("tools.name = {:?}: lowercase letters, digits, - or _", t.name),
                ));
            }
            if tools.iter().any(|x: &PluginToolSpec| x.name == t.name) {
                return Err(bad(&dir, format!("tools.name = {:?} appears twice", t.name)));
            }
            let tier_value = tier(&t.tier).ok_or_else(|| {
                bad(
                    &dir,
                    format!(
                        "tools.{}.tier = {:?}: read, recoverable-write or irreversible",
                        t.name, t.tier
                    ),
                )
            })?;
            let timeout = t.timeout_secs.unwrap_or(30);
            if !(1..=600).contains(&timeout) {
                return Err(bad(
                    &dir,
                    format!("tools.{}.timeout_secs = {timeout}: 1 to 600", t.name),
                ));
            }
            t.network.validate().map_err(|e| bad(&dir, format!("tools.{}.{e}", t.name)))?;
            let (input_schema, _) = schema(&dir, &t.name, "input_schema", t.input_schema)?;
            if input_schema["type"] != "object" {
                return Err(bad(
                    &dir,
                    format!(
                        "tools.{}.input_schema: the arguments are an object (type = \"object\")",
                        t.name
                    ),
                ));
            }
            let (output_schema, output) = schema(&dir, &t.name, "output_schema", t.output_schema)?;
            let example = t
                .example
                .map(json_of)
                .transpose()
                .map_err(|e| bad(&dir, format!("tools.{}.example: {e}", t.name)))?;
            tools.push(PluginToolSpec {
                name: t.name,
                description: t.description,
                tier: tier_value,
                timeout: Duration::from_secs(timeout),
                network: t.network.granted(),
                network_hosts: t.network.hosts(),
                input_schema,
                output_schema,
                output: Arc::new(output),
                example,
            });
        }
        Ok(Plugin {
            name: raw.name,
            version: raw.version,
            description: raw.description,
            dir,
            argv,
            tools,
        })
    }

    /// The plugins installed under `dir` (one directory each), and the ones that did not load
    /// with why.
    pub fn load_all(dir: &Path) -> (Vec<Plugin>, Vec<PluginError>) {
        let mut plugins = Vec::new();
        let mut errors = Vec::new();
        let Ok(entries) = std::fs::read_dir(dir) else { return (plugins, errors) };
        let mut dirs: Vec<PathBuf> =
            entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()).collect();
        dirs.sort();
        for path in dirs {
            match Plugin::load(&path) {
                Ok(p) => plugins.push(p),
                Err(e) => errors.push(e),
            }
        }
        (plugins, errors)
    }

    /// One tool per entry of the manifest, running in the sandbox over `guard`'s roots.
    pub fn tools(&self, guard: &Arc<PathGuard>) -> Vec<Arc<dyn Tool>> {
        let plugin = Arc::new(self.clone());
        self.tools
            .iter()
            .map(|t| {
                Arc::new(PluginTool::new(plugin.clone(), t.clone(), guard.clone())) as Arc<dyn Tool>
            })
            .collect()
    }
}

/// One tool of a plugin, as the model sees it.
#[derive(Debug, Clone)]
pub struct PluginTool {
    plugin: Arc<Plugin>,
    tool: PluginToolSpec,
    guard: Arc<PathGuard>,
    spec: ToolSpec,
}

impl PluginTool {
    fn new(plugin: Arc<Plugin>, tool: PluginToolSpec, guard: Arc<PathGuard>) -> Self {
        // A plugin's texts are a third party's: redacted, marked and capped before a model
        // reads them with every request.
        let described =
            crate::describe_outside(&tool.description, crate::MAX_TOOL_DESCRIPTION_CHARS);
        let mut parameters = tool.input_schema.clone();
        crate::describe_schema_outside(&mut parameters);
        let spec = ToolSpec {
            name: tool.name.clone(),
            description: format!("{} (plugin {} {})", described.text, plugin.name, plugin.version),
            parameters,
        };
        PluginTool { plugin, tool, guard, spec }
    }

    /// Runs the plugin once with `arguments` and checks its answer.
    pub fn invoke(&self, arguments: &Value) -> Result<Value, ToolError> {
        self.invoke_recorded(arguments).map(|(value, _)| value)
    }

    /// [`Self::invoke`], with the destinations a network grant reached or was refused.
    pub fn invoke_recorded(
        &self,
        arguments: &Value,
    ) -> Result<(Value, Vec<EgressRecord>), ToolError> {
        let name = &self.tool.name;
        let roots: Vec<String> =
            self.guard.roots().iter().map(|r| r.display().to_string()).collect();
        let request = json!({"tool": name, "arguments": arguments, "roots": roots});
        let cwd = self.guard.roots().first().cloned().unwrap_or_else(|| self.plugin.dir.clone());
        let mut spec = crate::confine::spawn_spec(
            &self.guard,
            self.plugin.argv.clone(),
            cwd,
            crate::confine::Access::Execute,
        )
        .map_err(|e| ToolError::failed(format!("plugin {}: {e}", self.plugin.name)))?;
        if self.tool.tier == Tier::Read {
            spec.root_access = aria_sandbox::RootAccess::ReadOnly;
        }
        spec.extra_read.push(self.plugin.dir.clone());
        spec.timeout = self.tool.timeout;
        spec.output_cap = OUTPUT_CAP;
        spec.network = self.tool.network;
        spec.egress = EgressPolicy { hosts: self.tool.network_hosts.clone(), ..spec.egress };
        spec.stdin = Input::Bytes(format!("{request}\n").into_bytes());
        let out = Sandbox::run(spec).map_err(|e| {
            ToolError::failed(format!("plugin {}: could not start: {e}", self.plugin.name))
        })?;
        let stderr = out.stderr.text();
        let tail = stderr
            .lines()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        if out.timed_out {
            return Err(ToolError::failed(format!(
                "{name} (plugin {}) did not answer within {} s and was stopped",
                self.plugin.name,
                self.tool.timeout.as_secs()
            )));
        }
        if out.stdout.truncated {
            return Err(ToolError::failed(format!(
                "{name} (plugin {}) answered more than {} bytes; its answer was dropped",
                self.plugin.name, OUTPUT_CAP
            )));
        }
        let text = out.stdout.text();
        let answer: Value = serde_json::from_str(text.trim()).map_err(|e| {
            let status = out
                .exit
                .code
                .map_or_else(|| "was killed".to_owned(), |c| format!("exited with {c}"));
            ToolError::failed(format!(
                "{name} (plugin {}) {status} without a JSON answer ({e}){}",
                self.plugin.name,
                if tail.is_empty() { String::new() } else { format!(": {tail}") }
            ))
        })?;
        if let Some(message) = answer.get("error") {
            let message = message.as_str().map_or_else(|| message.to_string(), str::to_owned);
            return Err(ToolError::failed(format!("{name}: {message}")));
        }
        let Some(result) = answer.get("result") else {
            return Err(ToolError::failed(format!(
                "{name} (plugin {}) answered without \"result\" or \"error\"",
                self.plugin.name
            )));
        };
        if let Some(first) = self.tool.output.iter_errors(result).next() {
            return Err(ToolError::failed(format!(
                "{name} (plugin {}) answered something its output schema does not allow ({first} \
                 at {}); the answer was dropped",
                self.plugin.name,
                first.instance_path()
            )));
        }
        Ok((result.clone(), out.egress))
    }
}

impl Tool for PluginTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        self.tool.tier
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.tool.timeout)
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            if ctx.dry_run {
                return Ok(ToolOutput::text(format!(
                    "dry run: would run {} of plugin {} with {args}",
                    self.tool.name, self.plugin.name
                )));
            }
            let this = self.clone();
            let (result, egress) =
                crate::tools::blocking(&self.tool.name, move || this.invoke_recorded(&args))
                    .await?;
            let content = serde_json::to_string_pretty(&result).unwrap_or_default();
            let mut details = json!({
                "plugin": self.plugin.name,
                "version": self.plugin.version,
            });
            if !egress.is_empty() {
                details["egress"] = json!(egress);
            }
            Ok(ToolOutput::text(content).with_details(details))
        })
    }
}

#[cfg(test)]
mod tests;
