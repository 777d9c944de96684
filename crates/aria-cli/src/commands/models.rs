//! `aria models list|test|unload` (model backends) and `aria cost` (spend against the caps).

use std::sync::Arc;

use anyhow::anyhow;
use aria_store::SpendGroup;
use serde_json::json;

use super::run::{Context, runtime};
use crate::app;
use crate::cli::{CostArgs, GlobalArgs, ModelsCommand};
use crate::config::{self, Config};
use crate::exit::{CliError, CliResult, FAILED, OK};
use crate::providers::{self, Backend};

pub fn models(global: &GlobalArgs, command: ModelsCommand) -> CliResult<u8> {
    let config = app::load_config(global)?;
    let rt = runtime()?;
    match command {
        ModelsCommand::List { json } => rt.block_on(list(&config, json)),
        ModelsCommand::Test { json } => rt.block_on(test(&config, global.backend.is_some(), json)),
        ModelsCommand::Unload { model } => rt.block_on(unload(&config, model)),
    }
}

/// The backends worth listing: the chain, then other backends whose credentials are set.
fn configured(config: &Config) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> =
        providers::chain(config).into_iter().map(|(b, m, _)| (b, m)).collect();
    for extra in ["anthropic", "openai", "ollama"] {
        let set = match extra {
            "anthropic" => config.provider.anthropic_api_key.is_some(),
            "openai" => providers::unavailable(config, "openai").is_none(),
            _ => config.provider.ollama_url != config::DEFAULT_OLLAMA_URL,
        };
        if set && !out.iter().any(|(b, _)| b == extra) {
            out.push((extra.to_owned(), config::default_model(extra).to_owned()));
        }
    }
    out
}

async fn list(config: &Config, as_json: bool) -> CliResult<u8> {
    let mut report = Vec::new();
    let mut failed = false;
    for (name, model) in configured(config) {
        if name == config::LOCAL_PROVIDER {
            report.push(json!({"backend": name, "model": model, "note": "embedded models: see `aria model list`"}));
            continue;
        }
        let entry = match providers::backend(config, &name, &model) {
            Err(e) => json!({"backend": name, "error": format!("{:#}", e.error)}),
            Ok(backend) => match backend.list_models().await {
                Ok(models) => json!({"backend": name, "model": model, "models": models}),
                Err(e) => {
                    failed = true;
                    json!({"backend": name, "model": model, "error": e.to_string(), "kind": e.kind()})
                }
            },
        };
        report.push(entry);
    }
    for f in &config.router.fallback {
        if let Some(why) = providers::unavailable(config, &f.backend) {
            report.push(json!({"backend": f.backend, "model": f.model, "note": format!("fallback off: {why}")}));
        }
    }
    if as_json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for entry in &report {
            let backend = entry["backend"].as_str().unwrap_or_default();
            if let Some(models) = entry["models"].as_array() {
                println!(
                    "{backend} ({} models; configured: {})",
                    models.len(),
                    entry["model"].as_str().unwrap_or_default()
                );
                for m in models {
                    println!("  {}", m.as_str().unwrap_or_default());
                }
            } else if let Some(error) = entry["error"].as_str() {
                println!("{backend}: unreachable: {error}");
            } else {
                println!("{backend}: {}", entry["note"].as_str().unwrap_or_default());
            }
        }
    }
    Ok(if failed { FAILED } else { OK })
}

async fn test(config: &Config, only_primary: bool, as_json: bool) -> CliResult<u8> {
    let mut chain = providers::chain(config);
    if only_primary {
        chain.truncate(1);
    }
    let mut all_ok = true;
    let mut report = Vec::new();
    for (name, model, _) in chain {
        let result = match providers::backend(config, &name, &model) {
            Err(e) => Err(format!("{:#}", e.error)),
            Ok(backend) => {
                providers::probe(backend.provider(), &model).await.map_err(|e| e.to_string())
            }
        };
        match result {
            Ok((first, total, text)) => {
                report.push(json!({"backend": name, "model": model, "ok": true,
                    "first_event_ms": first.as_millis() as u64, "total_ms": total.as_millis() as u64, "reply": text.trim()}));
            }
            Err(error) => {
                all_ok = false;
                report.push(json!({"backend": name, "model": model, "ok": false, "error": error}));
            }
        }
    }
    if as_json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for r in &report {
            let (b, m) = (
                r["backend"].as_str().unwrap_or_default(),
                r["model"].as_str().unwrap_or_default(),
            );
            if r["ok"] == true {
                println!(
                    "ok    {b} {m}: first token {} ms, whole answer {} ms",
                    r["first_event_ms"], r["total_ms"]
                );
            } else {
                println!("FAIL  {b} {m}: {}", r["error"].as_str().unwrap_or_default());
            }
        }
    }
    Ok(if all_ok { OK } else { FAILED })
}

async fn unload(config: &Config, model: Option<String>) -> CliResult<u8> {
    let model = model.unwrap_or_else(|| {
        if config.provider.name == "ollama" {
            config.provider.model.clone()
        } else {
            config::DEFAULT_OLLAMA_MODEL.to_owned()
        }
    });
    let Backend::Ollama(ollama) = providers::backend(config, "ollama", &model)? else {
        return Err(CliError::failed(anyhow!("the ollama backend could not be built")));
    };
    ollama.unload(&model).await.map_err(|e| {
        CliError::failed(anyhow!(
            "cannot unload `{model}` from Ollama at {}: {e}",
            ollama.base_url()
        ))
    })?;
    println!("unloaded {model} from Ollama at {}", ollama.base_url());
    Ok(OK)
}

pub fn cost(global: &GlobalArgs, args: CostArgs) -> CliResult<u8> {
    let ctx = Context::load(global)?;
    let store = Arc::clone(&ctx.store);
    let guard = providers::StoreSpendGuard {
        store: Arc::clone(&store),
        caps: aria_models::PeriodCaps {
            per_day: ctx.config.caps.per_day_usd,
            per_month: ctx.config.caps.per_month_usd,
        },
    };
    let spent = guard.spent()?;
    // `--days 0` and `--days 1` both mean today.
    let args = CostArgs { days: args.days.max(1), ..args };
    let since = days_ago(args.days);
    let days = store.spend_report(SpendGroup::Day, Some(&since), args.days as usize)?;
    let models = store.spend_report(SpendGroup::Model, Some(&since), 50)?;
    let sessions = store.spend_report(SpendGroup::Session, Some(&since), args.sessions)?;
    let searches_today = store.search_volume_since(&aria_store::day_start_utc())?;
    let searches_month = store.search_volume_since(&aria_store::month_start_utc())?;
    if args.json {
        let out = json!({
            "web_search": {"today": searches_today, "this_month": searches_month},
            "today_usd": spent.today, "this_month_usd": spent.this_month,
            "caps": {"per_task_usd": ctx.config.limits.max_cost_usd, "per_day_usd": ctx.config.caps.per_day_usd, "per_month_usd": ctx.config.caps.per_month_usd},
            "since": since, "by_day": days, "by_model": models, "by_session": sessions,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(OK);
    }
    let cap = |c: Option<f64>| c.map_or("no cap".to_owned(), |c| format!("cap USD {c:.2}"));
    println!("today (UTC):  USD {:.4}  ({})", spent.today, cap(ctx.config.caps.per_day_usd));
    println!("this month:   USD {:.4}  ({})", spent.this_month, cap(ctx.config.caps.per_month_usd));
    println!("per task:     cap USD {:.2}", ctx.config.limits.max_cost_usd);
    if searches_month.searches > 0 {
        println!(
            "web search:   {} today (USD {:.4}), {} this month (USD {:.4}); {} from the cache",
            searches_today.searches,
            searches_today.cost_usd,
            searches_month.searches,
            searches_month.cost_usd,
            searches_month.cached
        );
    }
    let table = |title: &str, rows: &[aria_store::SpendRow]| {
        println!("\n{title}");
        if rows.is_empty() {
            println!("  (no model calls)");
        }
        for r in rows {
            let label = r.label.as_deref().map(|l| format!("  {l}")).unwrap_or_default();
            println!(
                "  {:<36} {:>4} calls {:>9} in {:>8} out  USD {:>9.4}{label}",
                r.key, r.calls, r.input_tokens, r.output_tokens, r.cost_usd
            );
        }
    };
    let title = match args.days {
        1 => "by day (today)".to_owned(),
        n => format!("by day (last {n} days)"),
    };
    table(&title, &days);
    table("by model", &models);
    table("by session", &sessions);
    Ok(OK)
}

/// The start of the UTC day `days - 1` days ago (so `--days 1` is today).
fn days_ago(days: u32) -> String {
    aria_store::day_start_utc_days_ago(days.saturating_sub(1))
}
