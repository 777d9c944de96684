//! The built-in secret patterns, in priority order (earlier wins when two start at the same
//! place). Kept apart from the matching code so the list can be read and reviewed on its own.
//!
//! Conventions inside a pattern:
//! - `(?P<VALUE>…)` marks the part to replace; without one the whole match is replaced. Several
//!   `VALUE` groups are alternatives; for [`Check::EnvValue`] the last one is the unquoted form.
//! - `(?P<KEYQ>…)` and `(?P<SEP>…)` expose the closing quote of a key and the separator to the
//!   `.env` check.
//! - Word boundaries are ASCII (`(?-u:\b)`) so the lazy DFA never falls back to a slower engine
//!   on non-ASCII text, and classes are spelled out (`[0-9]`, not `\d`).

/// A second look, in code, at a match (the regex crate has no look-around).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// Nothing to judge (a private key block).
    None,
    /// A token format: the value must not be a placeholder (`xxxx`, `EXAMPLE`, `AIzaaaa…`).
    Token,
    /// A token format that must also contain an ASCII digit (real keys do;
    /// `sk-some-hyphenated-words` does not).
    HasDigit,
    /// The password in `scheme://user:password@`: not a placeholder, a well-known default or
    /// the user name again (`postgres:postgres`).
    UrlPassword,
    /// `.env`-style assignment: the value must look like a literal, not like code, and be a
    /// secret for its name (`secret_judge.rs`).
    EnvValue,
    /// A value next to a secret-like name in another syntax on one line (an XML element, a
    /// command-line flag, `define(...)`): judged by its `NAME` like [`Check::EnvValue`].
    Named,
    /// Like [`Check::Named`] for forms that span lines or have no keyword (`.netrc`,
    /// `mysql -pVALUE`); without a `NAME` group the value is judged as a password.
    Nearby,
    /// A value in prose or after a space (`the password is …`, a `.properties` line `db.password
    /// …`): judged like [`Check::Nearby`], and it must also be 8 characters or more with a
    /// letter and a digit (`the password is incorrect` is not one).
    Prose,
    /// A cookie header's values: not a placeholder, and not a JWT, which its own rule names
    /// (the cookies after it go in the next round).
    Cookie,
}

impl Check {
    /// Whether every match of a rule with this check lies on one line and contains one of
    /// [`ENV_KEYWORDS`], so the keyword prefilter may choose the lines its regex runs on.
    pub(crate) fn keyworded(self) -> bool {
        matches!(self, Check::EnvValue | Check::Named)
    }
}

#[derive(Debug)]
pub(crate) struct Rule {
    /// Goes into `[REDACTED:kind]`.
    pub(crate) kind: &'static str,
    pub(crate) pattern: &'static str,
    pub(crate) check: Check,
}

/// Every match of a [`Check::EnvValue`] rule lies on one line and its name contains one of
/// these, ASCII case-insensitively (or a non-ASCII case variant of `k`/`s`, `K` and `ſ`, which the
/// redactor checks for separately). The redactor runs the rule's regex only on lines that
/// contain one: keep this list in step with the names in the `env_secret` pattern.
pub(crate) const ENV_KEYWORDS: &[&str] =
    &["key", "token", "secret", "pass", "pw", "credential", "auth", "pat", "psk"];

/// A secret-like name (the `NAME` part of the assignment rules), in one place so that every
/// rule spells it the same way. Keep in step with [`ENV_KEYWORDS`].
macro_rules! secret_name {
    () => {
        r"(?i:[A-Za-z0-9_.-]*(?:key|token|secret|password|passwd|passphrase|credential)[A-Za-z0-9_.-]*|(?:[A-Za-z0-9_.-]*[_.-])?(?:pass|pwd|pw|pat|psk)(?:[_.-][A-Za-z0-9_.-]*)?|(?:[A-Za-z0-9_.-]*[_.-])?auth)"
    };
}

pub(crate) const RULES: &[Rule] = &[
    Rule {
        // The whole block; a block cut off by truncation is removed to the end of the text.
        kind: "pem_private_key",
        // Any case, four to six dashes and doubled spaces too (copies and retyped headers).
        pattern: r"(?i:-{4,6}BEGIN[A-Z0-9 ]{0,40}PRIVATE {1,3}KEY(?: BLOCK)?-{4,6})(?s:.*?)(?:(?i:-{4,6}END[A-Z0-9 ]{0,40}PRIVATE {1,3}KEY(?: BLOCK)?-{4,6})|\z)",
        check: Check::None,
    },
    Rule {
        // Distinctive prefixes match glued to the text before them too (`Bearersk-ant-…`).
        kind: "anthropic_key",
        pattern: r"sk-ant-[A-Za-z0-9_-]{20,}",
        check: Check::HasDigit,
    },
    Rule {
        // Legacy `sk-…`, project `sk-proj-…`, service-account and admin keys.
        kind: "openai_key",
        // A legacy `sk-` key needs a word boundary before it (`disk-usage-…` is not one).
        pattern: r"(?:sk-(?:proj|svcacct|admin)-|(?-u:\b)sk-)[A-Za-z0-9_-]{20,}",
        check: Check::HasDigit,
    },
    Rule {
        kind: "github_token",
        pattern: r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        check: Check::Token,
    },
    Rule {
        kind: "gitlab_token",
        pattern: r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}",
        check: Check::Token,
    },
    Rule {
        kind: "slack_token",
        pattern: r"xox[abprs]-[0-9]{6,}-[A-Za-z0-9-]{10,}|(?-u:\b)xox[abprs]-[A-Za-z0-9-]{10,}",
        check: Check::Token,
    },
    Rule {
        // Incoming webhooks: the URL itself is the credential.
        kind: "slack_webhook",
        pattern: r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}",
        check: Check::Token,
    },
    Rule {
        kind: "stripe_key",
        pattern: r"(?-u:\b)[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",
        check: Check::Token,
    },
    Rule {
        kind: "aws_access_key_id",
        pattern: r"(?:AKIA|(?-u:\b)ASIA)[A-Z0-9]{16}(?-u:\b)",
        check: Check::Token,
    },
    Rule {
        kind: "aws_secret_access_key",
        // `aws_secret_access_key = …` (credentials file, env) and `"SecretAccessKey": "…"` (JSON
        // from `aws sts`).
        // `aws configure set aws_secret_access_key …` and the prompt `AWS Secret Access Key
        // [None]: …` too.
        pattern: r#"(?i:(?:aws[_ ]?)?secret[_ ]?access[_ ]?key)["']?(?:[ \t]*\[[^\]\n]{0,16}\])?(?:[ \t]*[:=][ \t]*|[ \t]+)["']?(?P<VALUE>[A-Za-z0-9/+=]{40})"#,
        check: Check::Token,
    },
    Rule {
        kind: "google_api_key",
        pattern: r"(?-u:\b)AIza[0-9A-Za-z_-]{35,}",
        check: Check::Token,
    },
    Rule {
        kind: "google_oauth_token",
        pattern: r"(?-u:\b)ya29\.[0-9A-Za-z_-]{20,}",
        check: Check::Token,
    },
    Rule {
        kind: "npm_token",
        pattern: r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
        check: Check::Token,
    },
    Rule {
        kind: "huggingface_token",
        pattern: r"(?-u:\b)hf_[A-Za-z0-9]{34,}(?-u:\b)",
        check: Check::Token,
    },
    Rule {
        // `123456789:AA…` (35 characters after the colon, starting `AA`); also inside
        // `/bot<token>/` URLs, where no word boundary precedes the digits. Two hex digests
        // around a colon are not a token (found by a property test).
        kind: "telegram_bot_token",
        pattern: r"(?:bot|(?-u:\b))(?P<VALUE>[0-9]{8,10}:AA[A-Za-z0-9_-]{33,})",
        check: Check::Token,
    },
    Rule {
        // header.payload.signature; the signature may be empty (`alg: none`).
        kind: "jwt",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
        check: Check::Token,
    },
    Rule {
        // scheme://user:password@host: only the password goes. A user alone (`git@…`,
        // `https://bob@…`) and `host:port` are not credentials. The second form takes a
        // password holding `/`, `?`, `#` or `[` up to the first `@` (`host:8080/path/@x`, a
        // port, is refused by the check).
        kind: "url_credentials",
        pattern: r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{1,20}://(?P<NAME>[^\s:/?#@\[\]"'<>]{0,128}):(?:(?P<VALUE>[^\s/?#\[\]"'<>]{1,256})@|(?P<VALUE>[^\s@"'<>]{1,256})@)"#,
        check: Check::UrlPassword,
    },
    Rule {
        // A key as the whole user part: Sentry DSNs (`https://<key>@o1.ingest.sentry.io/1`),
        // tokens given as a git user name.
        kind: "url_credentials",
        pattern: r"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{1,20}://(?P<VALUE>[A-Za-z0-9]{24,256})@",
        check: Check::HasDigit,
    },
    Rule {
        // A cookie header: from the first value of 16 characters or more to the end of the
        // header (session cookies are credentials; `theme=dark; lang=en` stays).
        kind: "cookie",
        pattern: r#"(?i:(?-u:\b)(?:set-)?cookie)[ \t]*:[ \t]*(?:[^\r\n=;"']+=[^\r\n;"']*;[ \t]*)*?[^\s=;"'\[]+=(?P<VALUE>[^\s;,"'\[<>{$][^\s;,"']{15,}[^\r\n"']*)"#,
        check: Check::Cookie,
    },
    Rule {
        // `Authorization: Bearer …` (also Basic/token/Bot), header or JSON; the scheme is kept.
        kind: "bearer_token",
        pattern: r#"(?i:authorization)["']?[ \t]*[:=][ \t]*["']?(?i:bearer|basic|token|bot|apikey|api-key|ssws|key)[ \t]*(?:\r?\n)?[ \t]+(?P<VALUE>[A-Za-z0-9._~+/=%-]+)"#,
        check: Check::Token,
    },
    Rule {
        // A bearer token without its header (`… bearer <token>` in logs and token responses).
        kind: "bearer_token",
        pattern: r"(?-u:\b)(?i:bearer)[ \t]+(?P<VALUE>[A-Za-z0-9._~+/=-]{20,})",
        check: Check::HasDigit,
    },
    Rule {
        // A password piped to a program that reads it: `echo '…' | sudo -S`, `| docker login
        // --password-stdin`, `| chpasswd` (`user:password`).
        kind: "cli_password",
        pattern: r#"(?-u:\b)echo[ \t]+(?:-n[ \t]+)?(?:'(?P<VALUE>[^'\n]+)'|"(?P<VALUE>[^"\n$]+)"|(?P<VALUE>[^\s|'"$]+))[ \t]*\|[ \t]*(?:sudo[ \t]+(?:[^\n|]*[ \t])?-S|[^\n|]*--password-stdin|(?:sudo[ \t]+)?chpasswd)"#,
        check: Check::Prose,
    },
    Rule {
        // Basic credentials without their header (`proxy_set_header Authorization "Basic …"`).
        kind: "bearer_token",
        pattern: r"(?-u:\b)Basic[ \t]+(?P<VALUE>[A-Za-z0-9+/]{16,}={0,2})",
        check: Check::HasDigit,
    },
    Rule {
        kind: "tavily_key",
        pattern: r"(?-u:\b)tvly-[A-Za-z0-9_-]{30,}",
        check: Check::HasDigit,
    },
    Rule {
        kind: "tailscale_key",
        pattern: r"(?-u:\b)tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{20,}",
        check: Check::Token,
    },
    Rule {
        // Redis `AUTH [user] password` on a line of its own.
        kind: "cli_password",
        pattern: r"(?m:^)[ \t]*AUTH[ \t]+(?:[^\s]+[ \t]+)?(?P<VALUE>[^\s]+)[ \t]*(?m:$)",
        check: Check::Prose,
    },
    Rule {
        // The signing key given to a JWT library: `jwt.encode(payload, '…', …)`.
        kind: "code_secret",
        pattern: r#"(?-u:\b)jwt\.(?:encode|decode)\([^,\n]+,[ \t]*b?(?:"(?P<VALUE>[^"\n]+)"|'(?P<VALUE>[^'\n]+)')"#,
        check: Check::Prose,
    },
    Rule {
        // `Authorization: <key>` with no scheme (20 characters or more, with a digit).
        kind: "bearer_token",
        pattern: r#"(?i:authorization)["']?[ \t]*[:=][ \t]*["']?(?P<VALUE>[A-Za-z0-9._~+/=%-]{20,})"#,
        check: Check::HasDigit,
    },
    Rule {
        kind: "gitlab_token",
        pattern: r"(?-u:\b)(?:gl(?:dt|rt|ptt|cbt|oas|soat|ft|imt|agent|ffct)-[A-Za-z0-9_-]{20,}|GR1348941[A-Za-z0-9_-]{20,})",
        check: Check::Token,
    },
    Rule {
        kind: "bitbucket_token",
        pattern: r"(?-u:\b)ATBB[A-Za-z0-9_=.-]{32,}",
        check: Check::Token,
    },
    Rule {
        kind: "atlassian_token",
        pattern: r"(?-u:\b)AT[AC]TT3[A-Za-z0-9_=-]{50,}",
        check: Check::Token,
    },
    Rule {
        kind: "slack_token",
        pattern: r"(?-u:\b)(?:xapp-[0-9]-[A-Za-z0-9-]{30,}|xoxe(?:\.xox[bp])?-[0-9]-[A-Za-z0-9-]{40,})",
        check: Check::Token,
    },
    Rule {
        kind: "discord_token",
        pattern: r"(?-u:\b)[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}",
        check: Check::Token,
    },
    Rule {
        kind: "discord_webhook",
        pattern: r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_-]{60,68}",
        check: Check::Token,
    },
    Rule {
        kind: "teams_webhook",
        pattern: r"https://[A-Za-z0-9.-]*(?:webhook\.office\.com/webhookb2|outlook\.office\.com/webhook)/[A-Za-z0-9@/-]{60,}",
        check: Check::Token,
    },
    Rule { kind: "twilio_key", pattern: r"(?-u:\b)SK[0-9a-fA-F]{32}(?-u:\b)", check: Check::Token },
    Rule {
        kind: "sendgrid_key",
        pattern: r"(?-u:\b)SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        check: Check::Token,
    },
    Rule { kind: "mailgun_key", pattern: r"(?-u:\b)key-[0-9a-f]{32}(?-u:\b)", check: Check::Token },
    Rule {
        kind: "mailchimp_key",
        pattern: r"(?-u:\b)[0-9a-f]{32}-us[0-9]{1,2}(?-u:\b)",
        check: Check::Token,
    },
    Rule {
        kind: "brevo_key",
        pattern: r"(?-u:\b)x(?:keysib|smtpsib)-[0-9a-f]{64}-[A-Za-z0-9]{16}",
        check: Check::Token,
    },
    Rule {
        kind: "stripe_webhook_secret",
        pattern: r"(?-u:\b)whsec_[A-Za-z0-9]{32,}",
        check: Check::Token,
    },
    Rule {
        kind: "square_token",
        pattern: r"(?-u:\b)(?:EAAA[A-Za-z0-9_-]{60}|sq0(?:atp|csp|idp)-[A-Za-z0-9_-]{22,43})",
        check: Check::Token,
    },
    Rule {
        kind: "braintree_token",
        pattern: r"access_token\$production\$[0-9a-z]{16}\$[0-9a-f]{32}",
        check: Check::Token,
    },
    Rule {
        kind: "shopify_token",
        pattern: r"(?-u:\b)shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",
        check: Check::Token,
    },
    Rule {
        kind: "flutterwave_key",
        pattern: r"(?-u:\b)FLWSECK(?:_TEST)?-[0-9a-f]{32}-X",
        check: Check::Token,
    },
    Rule {
        kind: "shippo_token",
        pattern: r"(?-u:\b)shippo_(?:live|test)_[0-9a-f]{40}",
        check: Check::Token,
    },
    Rule { kind: "easypost_key", pattern: r"(?-u:\b)EZ[AT]K[A-Za-z0-9]{54}", check: Check::Token },
    Rule {
        kind: "duffel_token",
        pattern: r"(?-u:\b)duffel_(?:live|test)_[A-Za-z0-9_-]{43}",
        check: Check::Token,
    },
    Rule { kind: "groq_key", pattern: r"(?-u:\b)gsk_[A-Za-z0-9]{52}", check: Check::Token },
    Rule {
        kind: "replicate_token",
        pattern: r"(?-u:\b)r8_[A-Za-z0-9]{37}(?-u:\b)",
        check: Check::Token,
    },
    Rule { kind: "perplexity_key", pattern: r"(?-u:\b)pplx-[A-Za-z0-9]{48}", check: Check::Token },
    Rule { kind: "xai_key", pattern: r"(?-u:\b)xai-[A-Za-z0-9]{80}", check: Check::Token },
    Rule {
        kind: "elevenlabs_key",
        pattern: r"(?-u:\b)sk_[0-9a-f]{48}(?-u:\b)",
        check: Check::Token,
    },
    Rule { kind: "pinecone_key", pattern: r"(?-u:\b)pcsk_[A-Za-z0-9_]{50,}", check: Check::Token },
    Rule {
        kind: "langsmith_key",
        pattern: r"(?-u:\b)lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}",
        check: Check::Token,
    },
    Rule {
        kind: "huggingface_token",
        pattern: r"(?-u:\b)api_org_[A-Za-z0-9]{34}",
        check: Check::Token,
    },
    Rule {
        kind: "google_oauth_secret",
        pattern: r"(?-u:\b)GOCSPX-[A-Za-z0-9_-]{28}",
        check: Check::Token,
    },
    Rule {
        kind: "firebase_key",
        pattern: r"(?-u:\b)AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}",
        check: Check::Token,
    },
    Rule {
        kind: "azure_client_secret",
        pattern: r"(?-u:\b)[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}",
        check: Check::Token,
    },
    Rule {
        kind: "alibaba_key",
        pattern: r"(?-u:\b)LTAI[A-Za-z0-9]{20}(?-u:\b)",
        check: Check::Token,
    },
    Rule {
        kind: "tencent_key",
        pattern: r"(?-u:\b)AKID[A-Za-z0-9]{32}(?-u:\b)",
        check: Check::Token,
    },
    Rule {
        kind: "digitalocean_token",
        pattern: r"(?-u:\b)do[opr]_v1_[a-f0-9]{64}",
        check: Check::Token,
    },
    Rule {
        kind: "heroku_token",
        pattern: r"(?-u:\b)HRKU-AA[A-Za-z0-9_-]{58}",
        check: Check::Token,
    },
    Rule { kind: "netlify_token", pattern: r"(?-u:\b)nfp_[A-Za-z0-9]{36}", check: Check::Token },
    Rule {
        kind: "flyio_token",
        pattern: r"(?-u:\b)(?:fo1_[A-Za-z0-9_-]{43}|fm[12][ar]?_[A-Za-z0-9+/=_-]{100,})",
        check: Check::Token,
    },
    Rule { kind: "render_key", pattern: r"(?-u:\b)rnd_[A-Za-z0-9]{32}", check: Check::Token },
    Rule { kind: "supabase_token", pattern: r"(?-u:\b)sbp_[a-f0-9]{40}", check: Check::Token },
    Rule {
        kind: "planetscale_token",
        pattern: r"(?-u:\b)pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,64}",
        check: Check::Token,
    },
    Rule {
        kind: "databricks_token",
        pattern: r"(?-u:\b)dapi[a-f0-9]{32}(?:-[0-9])?(?-u:\b)",
        check: Check::Token,
    },
    Rule {
        kind: "newrelic_key",
        pattern: r"(?-u:\b)(?:NRAK-[A-Z0-9]{27}|NRI[IQ]-[A-Za-z0-9_-]{32}|NRJS-[a-f0-9]{19}|[a-f0-9]{36}NRAL)(?-u:\b)",
        check: Check::Token,
    },
    Rule {
        kind: "sentry_token",
        pattern: r"(?-u:\b)sntry[su]_[A-Za-z0-9_=+/-]{60,}",
        check: Check::Token,
    },
    Rule {
        kind: "grafana_token",
        pattern: r"(?-u:\b)(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/=_-]{32,})",
        check: Check::Token,
    },
    Rule {
        kind: "dynatrace_token",
        pattern: r"(?-u:\b)dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}",
        check: Check::Token,
    },
    Rule {
        kind: "launchdarkly_key",
        pattern: r"(?-u:\b)(?:sdk|api|mob)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        check: Check::Token,
    },
    Rule {
        kind: "intercom_token",
        pattern: r"(?-u:\b)dG9rOj[A-Za-z0-9_=-]{40,}",
        check: Check::Token,
    },
    Rule {
        kind: "hubspot_token",
        pattern: r"(?-u:\b)pat-(?:na|eu|ap)[0-9]-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        check: Check::Token,
    },
    Rule {
        kind: "salesforce_token",
        pattern: r"(?-u:\b)00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{80,}",
        check: Check::Token,
    },
    Rule {
        kind: "twitter_bearer",
        pattern: r"(?-u:\b)A{20,22}[A-Za-z0-9%]{60,}",
        check: Check::Token,
    },
    Rule {
        kind: "dropbox_token",
        pattern: r"(?-u:\b)sl\.[A-Za-z0-9_-]{130,}",
        check: Check::Token,
    },
    Rule {
        kind: "notion_token",
        pattern: r"(?-u:\b)(?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}(?-u:\b))",
        check: Check::Token,
    },
    Rule {
        kind: "airtable_token",
        pattern: r"(?-u:\b)pat[A-Za-z0-9]{14}\.[a-f0-9]{64}",
        check: Check::Token,
    },
    Rule {
        kind: "asana_token",
        pattern: r"(?-u:\b)[0-9]/[0-9]{16}(?:/[0-9]{16})?:[a-f0-9]{32}",
        check: Check::Token,
    },
    Rule {
        kind: "linear_key",
        pattern: r"(?-u:\b)lin_(?:api|oauth)_[A-Za-z0-9]{40}",
        check: Check::Token,
    },
    Rule { kind: "figma_token", pattern: r"(?-u:\b)figd_[A-Za-z0-9_-]{40}", check: Check::Token },
    Rule {
        kind: "contentful_token",
        pattern: r"(?-u:\b)CFPAT-[A-Za-z0-9_-]{43}",
        check: Check::Token,
    },
    Rule {
        kind: "typeform_token",
        pattern: r"(?-u:\b)tfp_[A-Za-z0-9_-]{40,}",
        check: Check::Token,
    },
    Rule {
        kind: "mapbox_token",
        pattern: r"(?-u:\b)sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}",
        check: Check::Token,
    },
    Rule {
        kind: "postman_key",
        pattern: r"(?-u:\b)PMAK-[a-f0-9]{24}-[a-f0-9]{34}",
        check: Check::Token,
    },
    Rule {
        kind: "doppler_token",
        pattern: r"(?-u:\b)dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}",
        check: Check::Token,
    },
    Rule {
        kind: "vault_token",
        pattern: r"(?-u:\b)hv[sbr]\.[A-Za-z0-9_-]{24,}",
        check: Check::Token,
    },
    Rule {
        kind: "terraform_token",
        pattern: r"(?-u:\b)[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}",
        check: Check::Token,
    },
    Rule { kind: "pulumi_token", pattern: r"(?-u:\b)pul-[a-f0-9]{40}", check: Check::Token },
    Rule {
        kind: "onepassword_token",
        pattern: r"(?-u:\b)ops_eyJ[A-Za-z0-9+/=_-]{100,}",
        check: Check::Token,
    },
    Rule {
        kind: "age_secret_key",
        pattern: r"(?-u:\b)AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        check: Check::Token,
    },
    Rule {
        kind: "circleci_token",
        pattern: r"(?-u:\b)CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}",
        check: Check::Token,
    },
    Rule { kind: "buildkite_token", pattern: r"(?-u:\b)bkua_[a-f0-9]{40}", check: Check::Token },
    Rule { kind: "sonarqube_token", pattern: r"(?-u:\b)sq[upa]_[a-f0-9]{40}", check: Check::Token },
    Rule {
        kind: "docker_token",
        pattern: r"(?-u:\b)dckr_pat_[A-Za-z0-9_-]{27}",
        check: Check::Token,
    },
    Rule {
        kind: "jfrog_token",
        pattern: r"(?-u:\b)(?:AKCp[A-Za-z0-9]{69}|cmVmdGtuOjAxOj[A-Za-z0-9]{40,})",
        check: Check::Token,
    },
    Rule {
        kind: "pypi_token",
        pattern: r"(?-u:\b)pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        check: Check::Token,
    },
    Rule { kind: "rubygems_key", pattern: r"(?-u:\b)rubygems_[a-f0-9]{48}", check: Check::Token },
    Rule { kind: "nuget_key", pattern: r"(?-u:\b)oy2[a-z0-9]{43}(?-u:\b)", check: Check::Token },
    Rule {
        kind: "crates_token",
        pattern: r"(?-u:\b)cio[A-Za-z0-9]{32}(?-u:\b)",
        check: Check::HasDigit,
    },
    Rule { kind: "clojars_token", pattern: r"(?-u:\b)CLOJARS_[a-f0-9]{60}", check: Check::Token },
    Rule { kind: "prefect_key", pattern: r"(?-u:\b)pnu_[A-Za-z0-9]{36}", check: Check::Token },
    Rule { kind: "readme_key", pattern: r"(?-u:\b)rdme_[a-f0-9]{70}", check: Check::Token },
    Rule {
        kind: "scalingo_token",
        pattern: r"(?-u:\b)tk-us-[A-Za-z0-9_-]{48}",
        check: Check::Token,
    },
    Rule { kind: "infracost_key", pattern: r"(?-u:\b)ico-[A-Za-z0-9]{32}", check: Check::Token },
    Rule {
        kind: "frameio_token",
        pattern: r"(?-u:\b)fio-u-[A-Za-z0-9_=-]{64}",
        check: Check::Token,
    },
    Rule { kind: "adafruit_key", pattern: r"(?-u:\b)aio_[A-Za-z0-9]{28}", check: Check::Token },
    Rule {
        kind: "mandrill_key",
        pattern: r"(?-u:\b)md-[A-Za-z0-9_-]{22}(?-u:\b)",
        check: Check::HasDigit,
    },
    Rule {
        kind: "fireworks_key",
        pattern: r"(?-u:\b)fw_[A-Za-z0-9]{24}(?-u:\b)",
        check: Check::HasDigit,
    },
    Rule {
        kind: "facebook_token",
        pattern: r"(?-u:\b)EAA[A-Za-z0-9]{90,}",
        check: Check::HasDigit,
    },
    Rule {
        kind: "azure_storage_key",
        pattern: r"(?i:AccountKey)=(?P<VALUE>[A-Za-z0-9+/]{86}==)",
        check: Check::Token,
    },
    Rule {
        // An API key header: `X-API-Key: …`, `PRIVATE-TOKEN: …`, in a request dump or `curl -H`.
        kind: "api_key_header",
        pattern: r#"(?i:x-api-key|api-key|apikey|x-auth-token|x-access-token|private-token|x-goog-api-key|ocp-apim-subscription-key)["']?[ \t]*:[ \t]*(?P<VALUE>[A-Za-z0-9._~+/=-]{16,})"#,
        check: Check::Token,
    },
    Rule {
        // Kubernetes and compose `env` lists: `- name: API_TOKEN` then `value: "…"`.
        kind: "named_value",
        pattern: concat!(
            r#"(?-u:\b)name:[ \t]*["']?(?P<NAME>"#,
            secret_name!(),
            r#")["']?(?:[ \t]*\r?\n)+[ \t]*value:[ \t]*["']?(?P<VALUE>[^"'\s]+)"#
        ),
        check: Check::Nearby,
    },
    Rule {
        // The same in flow style, `{name: DB_PASSWORD, value: …}`, or with the value first.
        kind: "named_value",
        pattern: concat!(
            r#"(?-u:\b)name:[ \t]*["']?(?P<NAME>"#,
            secret_name!(),
            r#")["']?[ \t]*,[ \t]*value:[ \t]*(?:"(?P<VALUE>[^"\n]+)"|'(?P<VALUE>[^'\n]+)'|(?P<VALUE>[^"'\s,}\]]+))|(?-u:\b)value:[ \t]*(?:"(?P<VALUE>[^"\n]+)"|'(?P<VALUE>[^'\n]+)'|(?P<VALUE>[^"'\s,}\]]+))[ \t]*(?:,|\r?\n[ \t]*-?)[ \t]*name:[ \t]*["']?(?P<NAME>"#,
            secret_name!(),
            r#")["']?(?-u:\b)"#
        ),
        check: Check::Nearby,
    },
    Rule {
        // `.netrc`: `machine host login user password VALUE`, on one line or several.
        kind: "netrc_password",
        pattern: r"(?-u:\b)login[ \t]+[^\s]+[ \t]*\r?\n?[ \t]*passw(?:or)?d[ \t]+(?P<VALUE>[^\s]+)",
        check: Check::Nearby,
    },
    Rule {
        // Prose and logs: `the password is …`, `my OpenAI key was …`. The value is printable
        // ASCII up to a blank, punctuation or the end: a key cut by a hidden character is left
        // to the second look, which sees it whole and names its format.
        kind: "prose_secret",
        pattern: r#"(?-u:\b)(?P<NAME>(?i:pass(?:word|wd|phrase)|pwd|(?:[a-z0-9]+[ _-])?(?:key|token|secret)))[ \t]+(?i:is|was)[ \t]*:?[ \t]+["'`]?(?P<VALUE>[!#-&(-+\--:<-_a-~]+)(?:[\s.,;!?)"'`]|\z)"#,
        check: Check::Prose,
    },
    Rule {
        // A config line with a space for a separator: Java `.properties` (`db.password …`),
        // Redis (`requirepass …`, `masterauth …`), nslcd (`bindpw …`), Gradle (`storePassword
        // '…'`), Apache (`AuthLDAPBindPassword "…"`).
        kind: "env_secret",
        pattern: r#"(?m:^)[ \t]*(?P<NAME>[A-Za-z0-9_.-]*(?i:pass(?:word|wd|phrase)?|pw|secret|token|auth)[A-Za-z0-9_.-]*)[ \t]+(?:"(?P<VALUE>[^"\n]+)"|'(?P<VALUE>[^'\n]+)'|(?P<VALUE>[!#-&(-9;-<>-~][!-~]*))[ \t]*;?[ \t]*(?m:$)"#,
        check: Check::Prose,
    },
    Rule {
        // A `.env` line whose value holds `;`, `&` or `,` (which end a value elsewhere): the
        // assignment alone on its line takes the rest of the line.
        kind: "env_secret",
        pattern: concat!(
            r#"(?m:^)[ \t]*(?:export[ \t]+)?(?P<NAME>"#,
            secret_name!(),
            r#")[ \t]*=[ \t]*(?P<VALUE>[^\s"'$<%(\[{;&,][^\s()\[\]{}"'`;&,]*[;&,][^\s()\[\]{}"'`]*[^\s;()\[\]{}"'`])[ \t]*(?m:$)"#
        ),
        check: Check::Prose,
    },
    Rule {
        // A `.pgpass` line: `host:port:database:user:password` (`\:` escapes a colon; a line
        // of more fields, an IPv6 address, is not one).
        kind: "pgpass_password",
        pattern: r"(?m:^)[A-Za-z0-9_.*-]+:(?:[0-9]{1,5}|\*):[^:\s]+:[^:\s]+:(?P<VALUE>(?:[^\s:\\]|\\[^\s])+)(?m:$)",
        check: Check::Nearby,
    },
    Rule {
        // SQL: `IDENTIFIED BY 'x'` (Oracle, MySQL), `WITH [ENCRYPTED] PASSWORD 'x'` (PostgreSQL).
        kind: "sql_password",
        pattern: r#"(?i:identified[ \t]+by|with[ \t]+(?:encrypted[ \t]+)?password)[ \t]+(?:'(?P<VALUE>[^'\n]+)'|"(?P<VALUE>[^"\n]+)"|(?P<VALUE>[^\s;'"]+))"#,
        check: Check::Nearby,
    },
    Rule {
        // Programs that take a password as an argument: `redis-cli -a`, `mongosh -p`, `sqlcmd
        // -P`, `ldapsearch -w`, `zip -P`, `7z -p…`, `smbclient -U user%…`.
        kind: "cli_password",
        pattern: r#"(?-u:\b)(?:(?:redis-cli|mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)(?:[ \t][^\n]*?)?[ \t](?:-a|-p|--pass|--password|--authpass)[ \t=]+|(?:sqlcmd|bcp|isql)(?:[ \t][^\n]*?)?[ \t]-P[ \t]*|ldap[a-z]+(?:[ \t][^\n]*?)?[ \t]-w[ \t]+|zip(?:[ \t][^\n]*?)?[ \t](?:-P|--password)[ \t]+|7za?(?:[ \t][^\n]*?)?[ \t]-p|smbclient(?:[ \t][^\n]*?)?[ \t]-U[ \t]*[^\s%]+%|openssl(?:[ \t][^\n]*?)?[ \t]-k[ \t]+|(?:keytool|jarsigner|redis-server|redis-sentinel)(?:[ \t][^\n]*?)?[ \t]-?-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass|requirepass|masterauth)[ \t]+|ssh-keygen(?:[ \t][^\n]*?)?[ \t]-N[ \t]+|net[ \t]+user[ \t]+[^\s/]+[ \t]+|az[ \t]+login(?:[ \t][^\n]*?)?[ \t](?:-p|--password)[ \t=]+|lftp(?:[ \t][^\n]*?)?[ \t]-u[ \t]+[^\s,]+,|net[ \t]+use(?:[ \t][^\n]*?)?[ \t]/user:[^\s]+[ \t]+|htpasswd(?:[ \t]+-[A-Za-z]+)*[ \t]+-[A-Za-z]*b[A-Za-z]*(?:[ \t]+-[A-Za-z]+)*[ \t]+[^\s-][^\s]*[ \t]+[^\s-][^\s]*[ \t]+|gh[ \t]+secret[ \t]+set[ \t]+[^\s]+(?:[ \t][^\n]*?)?[ \t](?:--body|-b)[ \t=]+)["']?(?P<VALUE>[^\s'"$</-][^\s'"]*)"#,
        check: Check::Nearby,
    },
    Rule {
        // OpenSSL's `-passin pass:…` / `-passout pass:…`.
        kind: "cli_password",
        pattern: r#"-pass(?:in|out)[ \t]+["']?pass:(?P<VALUE>[^\s'"]+)"#,
        check: Check::Nearby,
    },
    Rule {
        // Assignments without `=`: Dockerfile `ENV NAME value`, fish `set -x NAME value`, csh
        // `setenv NAME value`.
        kind: "env_secret",
        pattern: concat!(
            r#"(?m:^)[ \t]*(?:ENV|set[ \t]+-[gxUl]+|setenv)[ \t]+(?P<NAME>"#,
            secret_name!(),
            r#")[ \t]+["']?(?P<VALUE>[^\s"'=$][^\s"']*)"#
        ),
        check: Check::Nearby,
    },
    Rule {
        // Setters: `ds.setPassword("…")`, `setApiKey('…')`.
        kind: "code_secret",
        pattern: r#"(?-u:\b)set(?P<NAME>(?:Db|Database|Admin|User)?(?:Password|Passwd|Passphrase|Secret|ClientSecret|Token|AccessToken|ApiKey|AccessKey|SecretKey))\([ \t]*(?:"(?P<VALUE>[^"\n]+)"|'(?P<VALUE>[^'\n]+)')[ \t]*\)"#,
        check: Check::Nearby,
    },
    Rule {
        // A YAML value on the line after its name: `password:\n  …`, `password: |\n  …`.
        kind: "env_secret",
        pattern: concat!(
            r#"(?m:^)[ \t]*-?[ \t]*(?P<NAME>"#,
            secret_name!(),
            r#")[ \t]*:[ \t]*(?:[|>][-+]?)?[ \t]*\r?\n[ \t]+["']?(?P<VALUE>[^\s"'#:]+)["']?[ \t]*(?:#[^\n]*)?(?m:$)"#
        ),
        check: Check::Nearby,
    },
    Rule {
        // Oracle `user/password@db` (sqlplus and friends, JDBC thin), ODBC `Pwd={…}`.
        kind: "db_password",
        pattern: r#"(?:(?-u:\b)(?:sqlplus|rman|expdp|impdp|sqlldr|exp|imp)[ \t]+(?:-[A-Za-z]+[ \t]+)*|jdbc:oracle:thin:)[^\s/@"']+/(?P<VALUE>[^\s@/"']+)@|(?i:pwd|password)=\{(?P<VALUE>[^}\n]+)\}"#,
        check: Check::Nearby,
    },
    Rule {
        // `curl -u user:password`, `--user`, `--proxy-user`, HTTPie's `http -a user:password`:
        // basic credentials on a command line.
        kind: "cli_password",
        pattern: r#"(?-u:\b)(?:(?:curl|wget)(?:[ \t][^\n]*?)?[ \t](?:-u|--user|--proxy-user|-U)|https?(?:[ \t][^\n]*?)?[ \t](?:-a|--auth))[ \t=]*["']?[^\s:'"]+:(?P<VALUE>[^\s'"]+)"#,
        check: Check::Nearby,
    },
    Rule {
        // `sshpass -p VALUE`, `docker login -p VALUE`, `smbclient -U user%VALUE`.
        kind: "cli_password",
        pattern: r#"(?-u:\b)(?:sshpass[ \t]+-p|(?:docker|podman|helm|oras)[ \t]+(?:registry[ \t]+)?login(?:[ \t][^\n]*?)?[ \t](?:-p|--password))[ \t=]*["']?(?P<VALUE>[^\s'"$<-][^\s'"]*)"#,
        check: Check::Nearby,
    },
    Rule {
        // `mysql -pVALUE` (the password glued to the flag).
        kind: "cli_password",
        pattern: r#"(?-u:\b)mysql(?:dump|admin|sh|import|slap|check)?(?:[ \t][^\n]*?)?[ \t]-p(?:'(?P<VALUE>[^'\n]+)'|"(?P<VALUE>[^"\n]+)"|(?P<VALUE>[^\s'"$<-][^\s'"]*))"#,
        check: Check::Nearby,
    },
    Rule {
        // XML elements: `<apiKey>…</apiKey>`, `<password>…</password>`.
        kind: "xml_secret",
        pattern: concat!(
            r"<(?P<NAME>",
            secret_name!(),
            r")(?:[ \t][^<>\n]*)?>(?P<VALUE>[^<>\s]+)</"
        ),
        check: Check::Named,
    },
    Rule {
        // The same with spaces, lines or a CDATA section around the value.
        kind: "xml_secret",
        pattern: concat!(
            r"<(?P<NAME>",
            secret_name!(),
            r")(?:[ \t][^<>\n]*)?>[ \t\r\n]*(?:<!\[CDATA\[(?P<VALUE>[^\]\n]+)\]\]>|(?P<VALUE>[^<>\s]+))[ \t\r\n]*</"
        ),
        check: Check::Nearby,
    },
    Rule {
        // .NET appSettings and Java properties in XML: `<add key="ApiKey" value="…"/>`.
        kind: "xml_secret",
        pattern: concat!(
            r#"(?i:key|name)[ \t]*=[ \t]*["'](?P<NAME>"#,
            secret_name!(),
            r#")["'][ \t]+(?i:value)[ \t]*=[ \t]*["'](?P<VALUE>[^"'\n]*)["']"#
        ),
        check: Check::Named,
    },
    Rule {
        // The same with the value first: `<add value="…" key="DbPassword"/>`.
        kind: "xml_secret",
        pattern: concat!(
            r#"(?i:value)[ \t]*=[ \t]*["'](?P<VALUE>[^"'\n]*)["'][ \t]+(?i:key|name)[ \t]*=[ \t]*["'](?P<NAME>"#,
            secret_name!(),
            r#")["']"#
        ),
        check: Check::Named,
    },
    Rule {
        // Command-line flags with the value after a space: `--api-key VALUE`, `--password "…"`.
        kind: "cli_secret",
        pattern: concat!(
            r#"(?:(?m:^)|[ \t"'])--?(?P<NAME>"#,
            secret_name!(),
            r#")[ \t]+(?:"(?P<VALUE>[^"\n]+)"|'(?P<VALUE>[^'\n]+)'|(?P<VALUE>[^\s"'<>$`-][^\s"'<>`]*))"#
        ),
        check: Check::Named,
    },
    Rule {
        // PHP `define('API_KEY', '…')` and calls shaped like it (`setenv("TOKEN", "…")`, and
        // defaults of lookups: `os.getenv("DB_PASSWORD", "…")`, `ENV.fetch("TOKEN", "…")`).
        kind: "code_secret",
        pattern: concat!(
            r#"(?i:define|setenv|putenv|set|setdefault|setProperty|put|getenv|get|fetch|getProperty|env)\([ \t]*["'](?P<NAME>"#,
            secret_name!(),
            r#")["'][ \t]*,[ \t]*["'](?P<VALUE>[^"'\n]+)["']"#
        ),
        check: Check::Named,
    },
    Rule {
        // Typed declarations: `const API_KEY: &str = "…"`, `apiKey: string = "…"`.
        kind: "code_secret",
        pattern: concat!(
            r#"(?-u:\b)(?P<NAME>"#,
            secret_name!(),
            r#")[ \t]*:[ \t]*&?(?:'static[ \t]+)?[A-Za-z_][A-Za-z0-9_<>\[\]]{0,30}\??[ \t]*=[ \t]*(?:"(?P<VALUE>[^"\n]*)"|'(?P<VALUE>[^'\n]*)')"#
        ),
        check: Check::Named,
    },
    Rule {
        // JSON inside a JSON string, as logs write request bodies: `"{\"password\":\"…\"}"`.
        kind: "env_secret",
        pattern: concat!(
            r#"\\["'](?P<NAME>"#,
            secret_name!(),
            r#")\\["'][ \t]*:[ \t]*\\["'](?P<VALUE>[^"'\\\n]+)\\["']"#
        ),
        check: Check::Named,
    },
    Rule {
        // Fallbacks after an environment lookup: `process.env.DB_PASSWORD || '…'`, `?? '…'`,
        // `os.environ.get("API_KEY") or "…"` (a shell `${VAR:-…}` has its own rule).
        kind: "code_secret",
        pattern: concat!(
            r#"(?-u:\b)(?P<NAME>"#,
            secret_name!(),
            r#")["']?\]?\)?[ \t]*(?:\|\||\?\?|(?-u:\b)or(?-u:\b))[ \t]*(?:"(?P<VALUE>[^"\n]+)"|'(?P<VALUE>[^'\n]+)')"#
        ),
        check: Check::Named,
    },
    Rule {
        // A shell default: `${PGPASS:-…}`, `${API_TOKEN-…}`.
        kind: "code_secret",
        pattern: r#"\$\{(?P<NAME>[A-Za-z0-9_]*(?i:pass|pw|key|token|secret|auth)[A-Za-z0-9_]*):?-(?P<VALUE>[^}\s"'$]+)\}"#,
        check: Check::Prose,
    },
    Rule {
        // A name and its value in separate fields: Postman environments, HAR headers, ECS and
        // Kubernetes-in-JSON env lists (`{"name": "DB_PASSWORD", "value": "…"}`).
        kind: "named_value",
        pattern: concat!(
            r#"["'](?i:key|name)["'][ \t]*:[ \t]*["'](?P<NAME>"#,
            secret_name!(),
            r#")["'][ \t]*,[ \t]*["'](?i:value)["'][ \t]*:[ \t]*["'](?P<VALUE>[^"'\n]+)["']"#
        ),
        check: Check::Named,
    },
    Rule {
        // Argv arrays: `["--password", "…"]`, `"--requirepass", "…"`.
        kind: "cli_secret",
        pattern: concat!(
            r#"["']--?(?P<NAME>"#,
            secret_name!(),
            r#"|requirepass|storepass|keypass|masterauth)["'][ \t]*,[ \t]*["'](?P<VALUE>[^"'\n-][^"'\n]*)["']"#
        ),
        check: Check::Named,
    },
    Rule {
        // More credential headers: `Fastly-Key: …`, `Access-Token: …`, `Api-Token: …`.
        kind: "api_key_header",
        pattern: r#"(?-u:\b)(?P<NAME>(?i:(?:[a-z0-9]+-)*(?:api|access|auth|session|private|secret|fastly|client)-(?:key|token|secret)))["']?[ \t]*:[ \t]*(?P<VALUE>[A-Za-z0-9._~+/=-]{16,})"#,
        check: Check::Named,
    },
    Rule {
        // Credential headers by name: `X-Auth-Key: …`, `X-Api-Token: …`, `X-Figma-Token: …`.
        kind: "api_key_header",
        pattern: r#"(?-u:\b)(?P<NAME>(?i:x-[a-z0-9-]*(?:key|token|secret|auth)[a-z0-9-]*))["']?[ \t]*:[ \t]*(?P<VALUE>[A-Za-z0-9._~+/=-]{16,})"#,
        check: Check::Named,
    },
    Rule {
        // NAME=value, NAME: value, "name": "value" where NAME mentions a key, token, secret,
        // password or credential, or has `pass`/`pwd` as a whole part (`DB_PASS`, `MYSQL_PWD`,
        // not `compass`), or ends in `auth` (`_auth`, Docker's `"auth"`). `:=` (Go) and `=>`
        // (Ruby, PHP) are separators too, and `ENV["API_KEY"] = …` assigns by index. Only the
        // value is replaced.
        kind: "env_secret",
        pattern: concat!(
            r#"(?-u:\b)(?P<NAME>"#,
            secret_name!(),
            r#")(?P<KEYQ>["']?)\]?[ \t]*(?P<SEP>:=|=>|[:=])[ \t]*(?:b?"(?P<VALUE>(?:[^"\\\n]|\\[^\n])*)"|b?"(?P<VALUE>[^"\n]*)"|b?'(?P<VALUE>[^'\n]*)'|(?P<VALUE>[^\s"',;&(){}\[\]<>]+))"#
        ),
        check: Check::EnvValue,
    },
];
