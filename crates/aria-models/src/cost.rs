//! Prices, context windows and spending caps.
//!
//! [`Pricing`] knows USD per million input/output tokens for common cloud models (the vendors'
//! list prices; matched by the longest name prefix, so dated snapshots such as
//! `claude-sonnet-4-5-20250929` find their family) plus overrides from configuration, which win.
//! Models served on this machine (the embedded model, Ollama, an OpenAI-compatible server on
//! loopback) cost nothing; that decision belongs to the caller, which knows where a model runs.
//!
//! [`PeriodCaps`] judges a call against per-day and per-month caps: a call whose estimate would
//! take a period past its cap is refused (before any request is made), and one that brings a
//! period to 80 % of its cap or more comes with a warning.

use serde::Serialize;

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

impl Price {
    pub const FREE: Price = Price { input_per_mtok: 0.0, output_per_mtok: 0.0 };

    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input_per_mtok + output_tokens as f64 * self.output_per_mtok)
            / 1e6
    }

    fn max(self, other: Price) -> Price {
        Price {
            input_per_mtok: self.input_per_mtok.max(other.input_per_mtok),
            output_per_mtok: self.output_per_mtok.max(other.output_per_mtok),
        }
    }
}

/// What ARIA knows about a cloud model by default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct KnownModel {
    /// A name prefix.
    pub prefix: &'static str,
    pub price: Price,
    pub context_window: u64,
}

const fn known(prefix: &'static str, input: f64, output: f64, context_window: u64) -> KnownModel {
    KnownModel {
        prefix,
        price: Price { input_per_mtok: input, output_per_mtok: output },
        context_window,
    }
}

/// List prices (USD per million tokens) and context windows of common models.
pub const KNOWN_MODELS: &[KnownModel] = &[
    known("gpt-4o", 2.50, 10.00, 128_000),
    known("gpt-4o-mini", 0.15, 0.60, 128_000),
    known("gpt-4.1", 2.00, 8.00, 1_047_576),
    known("gpt-4.1-mini", 0.40, 1.60, 1_047_576),
    known("gpt-4.1-nano", 0.10, 0.40, 1_047_576),
    known("gpt-5", 1.25, 10.00, 400_000),
    known("gpt-5-mini", 0.25, 2.00, 400_000),
    known("gpt-5-nano", 0.05, 0.40, 400_000),
    known("o3", 2.00, 8.00, 200_000),
    known("o3-mini", 1.10, 4.40, 200_000),
    known("o4-mini", 1.10, 4.40, 200_000),
    known("claude-opus-4", 15.00, 75.00, 200_000),
    known("claude-opus-4-5", 5.00, 25.00, 200_000),
    known("claude-sonnet-4", 3.00, 15.00, 200_000),
    known("claude-3-7-sonnet", 3.00, 15.00, 200_000),
    known("claude-3-5-sonnet", 3.00, 15.00, 200_000),
    known("claude-haiku-4-5", 1.00, 5.00, 200_000),
    known("claude-3-5-haiku", 0.80, 4.00, 200_000),
    known("claude-3-haiku", 0.25, 1.25, 200_000),
];

/// The known model whose prefix is the longest match for `model`.
pub fn known_model(model: &str) -> Option<&'static KnownModel> {
    let model = model.rsplit('/').next().unwrap_or(model); // `openai/gpt-4o` style names
    KNOWN_MODELS.iter().filter(|m| model.starts_with(m.prefix)).max_by_key(|m| m.prefix.len())
}

/// Prices: configured overrides (exact model names) first, then [`KNOWN_MODELS`].
#[derive(Debug, Clone, Default)]
pub struct Pricing {
    overrides: Vec<(String, Price)>,
}

impl Pricing {
    pub fn new(overrides: Vec<(String, Price)>) -> Self {
        Pricing { overrides }
    }

    /// The price of a cloud model, if known.
    pub fn price(&self, model: &str) -> Option<Price> {
        self.overrides
            .iter()
            .find(|(name, _)| name == model)
            .map(|(_, p)| *p)
            .or_else(|| known_model(model).map(|m| m.price))
    }

    /// The highest input and output prices among `prices` (`None` entries are unknown and
    /// ignored): what a call through a fallback chain is charged at, so that spend is never
    /// under-counted whichever route answers.
    pub fn highest(prices: impl IntoIterator<Item = Price>) -> Option<Price> {
        prices.into_iter().reduce(Price::max)
    }
}

/// Caps beyond a single run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PeriodCaps {
    pub per_day: Option<f64>,
    pub per_month: Option<f64>,
}

/// USD already spent in the current periods.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PeriodSpend {
    pub today: f64,
    pub this_month: f64,
}

/// The judgement on one call.
#[derive(Debug, Clone, PartialEq)]
pub enum CapVerdict {
    Allow,
    /// Allowed, but a period reaches 80 % of its cap.
    Warn(String),
    /// Refused before any request; the message names the cap and how to raise it.
    Refuse(String),
}

impl PeriodCaps {
    /// Judges a call estimated at `estimate` USD. A call that costs nothing is always allowed.
    pub fn check(&self, spent: PeriodSpend, estimate: f64) -> CapVerdict {
        if estimate <= 0.0 {
            return CapVerdict::Allow;
        }
        let periods = [
            ("daily", "per_day_usd", "ARIA_MAX_DAILY_COST_USD", self.per_day, spent.today),
            (
                "monthly",
                "per_month_usd",
                "ARIA_MAX_MONTHLY_COST_USD",
                self.per_month,
                spent.this_month,
            ),
        ];
        let mut warning = None;
        for (name, key, var, cap, spent) in periods {
            let Some(cap) = cap else { continue };
            if spent + estimate > cap {
                return CapVerdict::Refuse(format!(
                    "the next model call (estimated USD {estimate:.4}) would take this {} spend past its cap of USD {cap:.2} (spent USD {spent:.4}); raise it with {var} or [limits] {key}, or wait for the next {}",
                    if name == "daily" { "day's" } else { "month's" },
                    if name == "daily" { "day (UTC)" } else { "month" },
                ));
            }
            if warning.is_none() && spent + estimate >= 0.8 * cap {
                warning = Some(format!(
                    "{name} model spend is at {:.0} % of its cap (USD {:.4} of {cap:.2}, this call included)",
                    100.0 * (spent + estimate) / cap,
                    spent + estimate
                ));
            }
        }
        warning.map_or(CapVerdict::Allow, CapVerdict::Warn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins_and_dated_snapshots_are_found() {
        let price =
            |m: &str| Pricing::default().price(m).map(|p| (p.input_per_mtok, p.output_per_mtok));
        assert_eq!(price("gpt-4o-mini-2024-07-18"), Some((0.15, 0.60)));
        assert_eq!(price("gpt-4o-2024-08-06"), Some((2.50, 10.00)));
        assert_eq!(price("claude-sonnet-4-5-20250929"), Some((3.0, 15.0)));
        assert_eq!(price("claude-opus-4-1-20250805"), Some((15.0, 75.0)));
        assert_eq!(price("claude-opus-4-5"), Some((5.0, 25.0)));
        assert_eq!(price("openai/gpt-4.1-mini"), Some((0.40, 1.60)));
        assert_eq!(price("llama3.2:3b"), None);
        assert_eq!(known_model("gpt-4.1-nano").map(|m| m.context_window), Some(1_047_576));
    }

    #[test]
    fn overrides_win_and_the_highest_price_covers_a_chain() {
        let pricing = Pricing::new(vec![(
            "gpt-4o".into(),
            Price { input_per_mtok: 1.0, output_per_mtok: 2.0 },
        )]);
        assert_eq!(
            pricing.price("gpt-4o"),
            Some(Price { input_per_mtok: 1.0, output_per_mtok: 2.0 })
        );
        assert_eq!(pricing.price("gpt-4o-mini").map(|p| p.input_per_mtok), Some(0.15));
        let high = Pricing::highest([
            Price::FREE,
            Price { input_per_mtok: 3.0, output_per_mtok: 1.0 },
            Price { input_per_mtok: 1.0, output_per_mtok: 15.0 },
        ]);
        assert_eq!(high, Some(Price { input_per_mtok: 3.0, output_per_mtok: 15.0 }));
        assert!(
            (Price { input_per_mtok: 2.5, output_per_mtok: 10.0 }.cost(1_000_000, 100_000) - 3.5)
                .abs()
                < 1e-12
        );
    }

    #[test]
    fn caps_refuse_past_the_cap_warn_at_80_percent_and_ignore_free_calls() {
        let caps = PeriodCaps { per_day: Some(1.0), per_month: Some(10.0) };
        let spent = |today, this_month| PeriodSpend { today, this_month };
        assert_eq!(caps.check(spent(0.1, 0.1), 0.1), CapVerdict::Allow);
        assert!(
            matches!(caps.check(spent(0.75, 0.75), 0.1), CapVerdict::Warn(m) if m.contains("daily") && m.contains("85 %"))
        );
        let CapVerdict::Refuse(message) = caps.check(spent(0.95, 0.95), 0.1) else { panic!() };
        assert!(
            message.contains("USD 1.00")
                && message.contains("ARIA_MAX_DAILY_COST_USD")
                && message.contains("per_day_usd"),
            "{message}"
        );
        let CapVerdict::Refuse(message) = caps.check(spent(0.0, 9.99), 0.1) else { panic!() };
        assert!(message.contains("month") && message.contains("per_month_usd"), "{message}");
        assert_eq!(caps.check(spent(5.0, 50.0), 0.0), CapVerdict::Allow);
        assert_eq!(PeriodCaps::default().check(spent(1e9, 1e9), 1.0), CapVerdict::Allow);
    }
}
