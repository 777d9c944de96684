//! The command line, continued: scheduled jobs, searching, agents, MCP servers and plugins.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// The next fire times of a cron expression (a pure calculator: no database, no daemon).
    Preview {
        /// Five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, …
        #[arg(long, value_name = "EXPR")]
        cron: String,
        /// An IANA time zone (default: the system's).
        #[arg(long, value_name = "ZONE")]
        tz: Option<String>,
        /// Fires strictly after this instant (RFC 3339; default: now).
        #[arg(long, value_name = "RFC3339")]
        after: Option<String>,
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        count: u32,
        /// `{"fires": [RFC 3339 instants with the zone's offset, …]}`.
        #[arg(long)]
        json: bool,
    },
    /// Add a job. It runs with the roots given with --root, else the configured ones.
    Add {
        name: String,
        #[arg(long, value_name = "EXPR")]
        cron: String,
        /// An IANA time zone (default: the system's).
        #[arg(long, value_name = "ZONE")]
        tz: Option<String>,
        #[command(flatten)]
        action: ScheduleAction,
        /// Add it disabled (enable it later with `aria schedule enable NAME`).
        #[arg(long)]
        disabled: bool,
    },
    /// Every job with its next run.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One job: schedule, action, roots, next runs and last runs.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Change a job's expression, zone or action (what is given; a new action replaces the
    /// old). Slots before the change are not caught up.
    Edit {
        name: String,
        #[arg(long, value_name = "EXPR")]
        cron: Option<String>,
        #[arg(long, value_name = "ZONE")]
        tz: Option<String>,
        #[command(flatten)]
        action: ScheduleAction,
    },
    /// Run a job now, once, whatever its schedule (recorded in its history and told like a
    /// scheduled run; its next slot still runs as planned).
    Run { name: String },
    /// Let a job run at its slots again (slots while it was disabled are not caught up).
    Enable { name: String },
    /// Stop a job from running (it stays, with its history).
    Disable { name: String },
    /// Delete a job and its history.
    Delete { name: String },
    /// A job's runs, newest first: slot, outcome, missed slots, detail.
    History {
        name: String,
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
}

/// What a job does (one of --prompt, --message, --profile, --digest, --heartbeat).
#[derive(Debug, Args, Default)]
pub struct ScheduleAction {
    /// Run this prompt as a task in a new conversation; its answer is the notification.
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["message", "profile", "digest", "heartbeat"])]
    pub prompt: Option<String>,
    /// The most one run of this job may spend on models, in US dollars (with --prompt). A run
    /// that the daily or monthly cap would not allow is skipped, and you are told.
    #[arg(long, value_name = "USD")]
    pub max_cost_usd: Option<f64>,
    /// Send this fixed message (a reminder).
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["profile", "digest", "heartbeat"])]
    pub message: Option<String>,
    /// Run this command profile (run_tests, lint_project, build_project, a [profiles.NAME]) in
    /// the job's directory (--path); its result is the notification.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["digest", "heartbeat"])]
    pub profile: Option<String>,
    /// Tell what changed in the job's directory (--path) since its last run: files modified
    /// and, in a git repository, commits.
    #[arg(long, conflicts_with = "heartbeat")]
    pub digest: bool,
    /// The heartbeat: operations, failures, jobs, snapshots, spend, uptime and the audit head.
    #[arg(long)]
    pub heartbeat: bool,
    /// The directory a --profile or --digest job works in (default: the first root).
    #[arg(long, value_name = "DIR")]
    pub path: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SearchArgs {
    #[command(subcommand)]
    pub command: Option<SearchCommand>,
    /// What to search for (the words are joined).
    pub query: Vec<String>,
    /// Only results from the last day, week, month or year.
    #[arg(long, value_parser = ["day", "week", "month", "year"])]
    pub freshness: Option<String>,
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=10))]
    pub count: u64,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum SearchCommand {
    /// The search cache: `stats` (entries, fresh ones, size, searches today and this month) or
    /// `clear`.
    Cache {
        #[arg(value_parser = ["stats", "clear"])]
        action: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// Every agent: name, where it is defined, description, tools, mode, models.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One agent in full, with the tools it would be offered here.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Make an agent, kept in ARIA's database (agents of aria.toml are edited in the file).
    Add {
        name: String,
        #[command(flatten)]
        fields: AgentFields,
    },
    /// Change an agent made with `aria agents add` (or the API or web UI): the fields given
    /// replace its own, --unset FIELD clears one.
    Edit {
        name: String,
        #[command(flatten)]
        fields: AgentFields,
        /// A field to clear: system_prompt, models, tools, mode, max_cost_usd, per_day_usd,
        /// temperature, memory, persona, planner, confirm_completion (repeatable).
        #[arg(long, value_name = "FIELD")]
        unset: Vec<String>,
    },
    /// Remove an agent made with `aria agents add`.
    Remove { name: String },
}

/// The fields of an agent, for `aria agents add|edit`.
#[derive(Debug, Clone, Default, Args)]
pub struct AgentFields {
    /// What it is for (shown in lists).
    #[arg(long)]
    pub description: Option<String>,
    /// Instructions added to ARIA's own system prompt.
    #[arg(long, conflicts_with = "prompt_file")]
    pub prompt: Option<String>,
    /// The instructions, read from a file.
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// The model chain, BACKEND/MODEL comma-separated: the first is the primary, the others
    /// the fallbacks in order (e.g. openai/gpt-4o-mini,local/qwen2.5-coder-1.5b-instruct).
    #[arg(long, value_delimiter = ',', value_name = "BACKEND/MODEL,...")]
    pub models: Option<Vec<String>>,
    /// The tools it may use, names and groups comma-separated (read, files, git, shell,
    /// profiles, web, memory, mcp, mcp:NAME, all).
    #[arg(long, value_delimiter = ',', value_name = "TOOL,...")]
    pub tools: Option<Vec<String>>,
    /// governed, supervised or read_only (applies only when stricter than aria.toml's).
    #[arg(long)]
    pub mode: Option<String>,
    /// Cost cap of one task, USD (applies only when lower than aria.toml's).
    #[arg(long, value_name = "USD")]
    pub max_cost_usd: Option<f64>,
    /// Cost cap per day, USD (applies only when lower than aria.toml's).
    #[arg(long, value_name = "USD")]
    pub per_day_usd: Option<f64>,
    #[arg(long)]
    pub temperature: Option<f32>,
    /// shared (everyone's memories) or own (only the memories this agent made).
    #[arg(long)]
    pub memory: Option<String>,
    /// A persona that rewords its answers: $ARIA_HOME/personas/NAME.toml.
    #[arg(long)]
    pub persona: Option<String>,
    /// A planner model, BACKEND/MODEL: it plans and judges, the agent's models do the steps.
    #[arg(long, value_name = "BACKEND/MODEL")]
    pub planner: Option<String>,
    /// A planned task ends only when you say yes (needs --planner).
    #[arg(long)]
    pub confirm_completion: bool,
    /// Print the agent as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// The configured servers: command, tier, network, and the tools listed last time.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Start the servers (or one), list their tools as the model sees them, keep the lists.
    Tools {
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Start one server, run the MCP handshake, list its tools and say how long it took.
    Test { name: String },
    /// A server's resources; with --read URI, one resource's text (to read it into a chat,
    /// `/resource NAME URI` in `aria chat`).
    Resources {
        name: String,
        #[arg(long, value_name = "URI")]
        read: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// A server's prompts; with --get PROMPT (and --arg KEY=VALUE), one prompt filled in (to send
    /// it in a chat, `/prompt NAME PROMPT KEY=VALUE…` in `aria chat`).
    Prompts {
        name: String,
        #[arg(long, value_name = "PROMPT")]
        get: Option<String>,
        /// A prompt argument (repeatable).
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        args: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Serve ARIA's tools to another agent or editor over stdio (newline-delimited JSON-RPC):
    /// files, search, git, restore points and rollback, memory and shell, under the roots
    /// (`--root`) and mode of this configuration. Writes that can be undone are snapshotted;
    /// what ARIA would ask about is refused here (no one can be asked on stdio): serve through
    /// the daemon's `/mcp` (`aria serve`) for approvals. Every call is audited.
    Serve,
    /// Add a stdio server to the configuration file: `aria mcp add NAME -- CMD ARGS…`. Its
    /// tools ask before each call until you set a tier (`tier = "read"`) in the entry.
    Add {
        name: String,
        /// The program and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
        /// Names of environment variables to pass (repeatable).
        #[arg(long = "env", value_name = "NAME")]
        env: Vec<String>,
        /// Paths the server may read besides the roots (where it is installed).
        #[arg(long = "read-path", value_name = "DIR")]
        read_paths: Vec<String>,
        /// Let the server use the network.
        #[arg(long)]
        network: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// The installed plugins and their tools (and any that do not load, with why).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Install the plugin in DIR (copied into $ARIA_HOME/plugins after its manifest checks).
    Add {
        dir: std::path::PathBuf,
        /// Replace an installed plugin of the same name.
        #[arg(long)]
        force: bool,
    },
    /// Uninstall a plugin.
    Remove { name: String },
    /// Run a plugin's tool once with its manifest's example (or --input) and show the answer.
    Test {
        name: String,
        /// Which tool (default: the first).
        #[arg(long)]
        tool: Option<String>,
        /// The arguments as JSON (default: the tool's `example`).
        #[arg(long, value_name = "JSON")]
        input: Option<String>,
    },
}
