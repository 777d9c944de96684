//! `aria config show`: the effective configuration written back as an `aria.toml` that
//! `aria config check` accepts — the [`RawConfig`] that would produce it. Secrets are never in
//! it: they come only from the environment or ARIA's `.env` files, so the file holds none.

use super::*;

impl Config {
    /// The file form of this configuration: every resolved value, under the keys the file uses.
    pub fn to_raw(&self) -> RawConfig {
        let p = &self.provider;
        let path = |p: &Path| p.to_string_lossy().into_owned();
        let (embedder, embedding_model, embedding_base_url, embedding_dims) =
            match &self.memory.embedder {
                EmbedderConfig::None => ("none", None, None, None),
                EmbedderConfig::Local { model } => ("local", Some(model.clone()), None, None),
                EmbedderConfig::Ollama { base_url, model, dims } => {
                    ("ollama", Some(model.clone()), Some(base_url.clone()), Some(*dims))
                }
                EmbedderConfig::OpenAi { base_url, model, dims } => {
                    ("openai", Some(model.clone()), Some(base_url.clone()), Some(*dims))
                }
            };
        RawConfig {
            provider: Some(RawProvider {
                name: Some(p.name.clone()),
                model: Some(p.model.clone()),
                base_url: Some(p.base_url.clone()),
                temperature: p.temperature,
                max_output_tokens: p.max_output_tokens,
                input_price_per_mtok: p.price.map(|(i, _)| i),
                output_price_per_mtok: p.price.map(|(_, o)| o),
                models_dir: Some(path(&p.models_dir)),
                keep_alive: p.keep_alive.clone(),
                num_ctx: p.num_ctx,
                context_window: p.context_window,
                tool_choice: p.tool_choice.clone(),
                parallel_tool_calls: p.parallel_tool_calls,
                max_tools: Some(p.max_tools.unwrap_or(0)),
            }),
            scope: Some(RawScope {
                roots: Some(self.roots.iter().map(|r| path(r)).collect()),
                sensitive: self.sensitive.clone(),
            }),
            limits: Some(RawLimits {
                max_iterations: Some(self.limits.max_iterations),
                max_tokens: Some(self.limits.max_tokens),
                tool_timeout_secs: Some(self.limits.tool_timeout.as_secs()),
                session_timeout_secs: Some(self.limits.session_timeout.as_secs()),
                max_tool_output_chars: Some(self.limits.max_tool_output_chars),
                max_cost_usd: Some(self.limits.max_cost_usd),
                per_day_usd: self.caps.per_day_usd,
                per_month_usd: self.caps.per_month_usd,
            }),
            policy: Some(RawPolicy {
                mode: Some(self.mode.as_str().to_owned()),
                approval_timeout_secs: Some(self.approval_timeout.as_secs()),
                workflow: Some(self.governed_workflow),
                allow: Some(self.allow.clone()),
            }),
            logging: Some(RawLogging {
                level: Some(self.log_level.clone()),
                file: Some(self.log_file),
                max_file_mb: Some(self.log_limits.max_file_mb),
                max_total_mb: Some(self.log_limits.max_total_mb),
            }),
            traces: Some(self.traces.to_raw()),
            router: Some(RawRouter {
                attempts: Some(self.router.attempts),
                fallback: Some(
                    self.router
                        .fallback
                        .iter()
                        .map(|f| RawFallback {
                            backend: f.backend.clone(),
                            model: Some(f.model.clone()),
                            on_error: Some(f.on_error),
                            on_context_overflow: Some(f.on_context_overflow),
                            above_input_tokens: f.above_input_tokens,
                        })
                        .collect(),
                ),
            }),
            pricing: Some(
                self.pricing
                    .iter()
                    .map(|(model, i, o)| {
                        (model.clone(), RawPrice { input_per_mtok: *i, output_per_mtok: *o })
                    })
                    .collect(),
            ),
            profiles: Some(self.profiles.clone()),
            snapshots: Some(RawSnapshots {
                auto_init: Some(self.snapshots.auto_init),
                prune_after_days: Some(self.snapshots.prune_after_days),
            }),
            memory: Some(RawMemory {
                embedder: Some(embedder.to_owned()),
                embedding_model,
                embedding_base_url,
                embedding_dims,
                embedding_batch: Some(self.memory.batch),
                extract: Some(self.memory.extract),
                vectors: Some(
                    match self.memory.vectors {
                        VectorResidence::Ram => "ram",
                        VectorResidence::Sqlite => "sqlite",
                    }
                    .to_owned(),
                ),
                recall_limit: Some(self.memory.recall_limit),
                recall_min_similarity: Some(self.memory.recall_min_similarity),
            }),
            web: Some(RawWeb {
                allow_private: Some(self.web.allow_private),
                allowed_hosts: Some(self.web.allowed_hosts.clone()),
            }),
            server: Some(self.server.to_raw()),
            telegram: Some(self.telegram.to_raw()),
            schedule: Some(self.schedule.to_raw()),
            notify: Some(self.notify.to_raw()),
            search: Some(self.search.to_raw()),
            mcp: Some(self.mcp_raw.clone()),
            agents: (!self.agents.is_empty())
                .then(|| self.agents.iter().map(|a| (a.name.clone(), agents::to_raw(a))).collect()),
        }
    }
}
