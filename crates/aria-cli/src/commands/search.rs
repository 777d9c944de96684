//! `aria search QUERY` (the `web_search` tool, run by hand) and `aria search cache stats|clear`.

use std::sync::Arc;

use aria_api::ToolContext;
use aria_store::Store;
use serde_json::json;

use crate::app;
use crate::cli::{GlobalArgs, SearchArgs, SearchCommand};
use crate::exit::{CliError, CliResult, FAILED, OK};

pub fn search(global: &GlobalArgs, args: SearchArgs) -> CliResult<u8> {
    let config = app::load_config(global)?;
    let store = app::open_store(&config, app::redactor(&config))?;
    match args.command {
        Some(SearchCommand::Cache { action, json }) => cache(&store, &action, json),
        None => query(&config, &store, &args),
    }
}

fn cache(store: &Store, action: &str, json: bool) -> CliResult<u8> {
    if action == "clear" {
        let n = store.search_cache_clear()?;
        println!("Cleared the search cache ({n} entries).");
        return Ok(OK);
    }
    let now = aria_store::rfc3339_at(std::time::SystemTime::now());
    let stats = store.search_cache_stats(&now)?;
    let today = store.search_volume_since(&aria_store::day_start_utc())?;
    let month = store.search_volume_since(&aria_store::month_start_utc())?;
    if json {
        let value = json!({"cache": stats, "today": today, "this_month": month});
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(OK);
    }
    println!(
        "cache: {} entries ({} fresh), {:.1} KiB",
        stats.entries,
        stats.live,
        stats.bytes as f64 / 1024.0
    );
    for (label, v) in [("today", today), ("this month", month)] {
        println!(
            "{label}: {} searches, {} from the cache, USD {:.4}",
            v.searches, v.cached, v.cost_usd
        );
    }
    Ok(OK)
}

fn query(config: &crate::config::Config, store: &Arc<Store>, args: &SearchArgs) -> CliResult<u8> {
    let text = args.query.join(" ");
    if text.trim().is_empty() {
        return Err(CliError::config(anyhow::anyhow!(
            "say what to search for: aria search QUERY (or aria search cache stats)"
        )));
    }
    let Some(tool) = crate::search::tool(config, store) else {
        return Err(CliError::config(anyhow::anyhow!(
            "no search provider: set BRAVE_API_KEY (the Brave Search API) or SEARXNG_URL (a \
             SearXNG instance) in the environment or ARIA's .env"
        )));
    };
    let mut call = json!({"query": text, "count": args.count});
    if let Some(f) = &args.freshness {
        call["freshness"] = json!(f);
    }
    let ctx = ToolContext { session_id: "cli-search".into(), dry_run: false };
    let runtime = super::run::runtime()?;
    match runtime.block_on(tool.call(call, &ctx)) {
        Ok(out) if args.json => {
            println!(
                "{}",
                serde_json::to_string_pretty(
                    &json!({"text": out.content, "details": out.details})
                )?
            );
            Ok(OK)
        }
        Ok(out) => {
            print!("{}", out.content);
            Ok(OK)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(FAILED)
        }
    }
}
