//! The `aria` binary: parses the command line and hands each command to its module. Concrete
//! types from every crate meet in [`app`], and nowhere else.

// This crate is the CLI layer: the one place where output goes to stdout/stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod agents;
mod agents_book;
mod anchor;
mod app;
mod cli;
mod commands;
mod config;
mod daemon_client;
#[cfg(feature = "local")]
mod default_model;
mod embedder;
mod exit;
#[cfg(feature = "local")]
mod local;
mod logging;
mod mcp;
mod memory;
mod notes;
mod overview;
mod persona;
mod planned;
mod progress;
mod providers;
mod render;
mod retention;
mod scheduled;
mod search;
use aria_store::runlock;
#[cfg(feature = "local")]
mod speed;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Chat(args) => commands::chat::chat(&cli.global, args),
        Command::Run(args) => commands::run::run(&cli.global, args),
        Command::Tools(c) => commands::inspect::tools(&cli.global, c),
        Command::Conversations(c) => commands::inspect::conversations(&cli.global, c),
        Command::Sessions(c) => commands::inspect::sessions(&cli.global, c),
        Command::Audit(c) => commands::audit::audit(&cli.global, c),
        Command::Config(c) => commands::inspect::config(&cli.global, c),
        Command::Model(c) => commands::model::model(&cli.global, c),
        Command::Models(c) => commands::models::models(&cli.global, c),
        Command::Cost(args) => commands::models::cost(&cli.global, args),
        Command::Check(c) => commands::check::check(&cli.global, c),
        Command::Doctor(args) => commands::doctor::doctor(&cli.global, args),
        Command::Snapshots(c) => commands::snapshots::snapshots(&cli.global, c),
        Command::Rollback(args) => commands::rollback::rollback(&cli.global, args),
        Command::Memories(c) => commands::memories::memories(&cli.global, c),
        Command::Serve(args) => commands::serve::serve(&cli.global, args),
        Command::Ui(args) => commands::tokens::ui(&cli.global, args),
        Command::Setup(args) => commands::setup::setup(&cli.global, args),
        Command::Tokens(c) => commands::tokens::tokens(&cli.global, c),
        Command::Telegram(c) => commands::telegram::telegram(&cli.global, c),
        Command::Schedule(c) => commands::schedule::schedule(&cli.global, c),
        Command::Mcp(c) => commands::mcp::mcp(&cli.global, c),
        Command::Agents(c) => commands::agents::agents(&cli.global, c),
        Command::Plugins(c) => commands::plugins::plugins(&cli.global, c),
        Command::Search(args) => commands::search::search(&cli.global, args),
        Command::Traces(c) => commands::traces::traces(&cli.global, c),
        Command::Stats(args) => commands::traces::stats(&cli.global, args),
        Command::Logs(args) => commands::logs::logs(&cli.global, args),
    };
    match result {
        Ok(code) => exit::code(code),
        Err(e) => {
            eprintln!("error: {:#}", e.error);
            exit::code(e.code)
        }
    }
}

/// A reader that stops early (`aria config path | grep -q x`, `aria audit list | head`) closes
/// the pipe; Rust ignores SIGPIPE, so the next `println!` panics with "Broken pipe". That is a
/// normal end for a command-line tool: exit 0 silently instead of printing a panic.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.contains("Broken pipe") || message.contains("os error 32") {
            std::process::exit(0);
        }
        default(info);
    }));
}
