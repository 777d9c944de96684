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
    /// secret for its name (`secrets/secret_judge.rs`).
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

#[derive(Debug, Clone)]
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

mod vendor;
use vendor::VENDOR_RULES;

/// Every rule, in priority order (earlier wins when two start at the same place): the first
/// token formats and the forms around them, the other vendors' token formats
/// (`secret_rules/vendor.rs`), then the values next to secret-like names.
pub(crate) static RULES: std::sync::LazyLock<Vec<Rule>> =
    std::sync::LazyLock::new(|| [FIRST_RULES, VENDOR_RULES, NAMED_RULES].concat());

/// Private keys, the most common token formats, connection strings, cookies and credential
/// headers.
const FIRST_RULES: &[Rule] = &[
    Rule {
        // The whole block; a block cut off by truncation is removed to the end of the text.
        kind: "pem_private_key",
        // Any case, four to six dashes and doubled spaces too (copies and retyped headers).
        pattern: r"(?i:-{4,6} ?BEGIN[A-Z0-9 ]{0,40}PRIVATE {1,3}KEY(?: BLOCK)? ?-{4,6})(?s:.*?)(?:(?i:-{4,6} ?END[A-Z0-9 ]{0,40}PRIVATE {1,3}KEY(?: BLOCK)? ?-{4,6})|\z)",
        check: Check::None,
    },
    Rule {
        // Other armoured key material: OpenVPN static keys (`tls-auth`, `tls-crypt`) and NATS
        // nkey seeds in `.creds` files. The whole block, as for private keys.
        kind: "key_block",
        pattern: r"(?i:-{4,6} ?BEGIN (?:OpenVPN Static key V[0-9]|[A-Z]{1,12} NKEY SEED) ?-{4,6})(?s:.*?)(?:(?i:-{4,6} ?END (?:OpenVPN Static key V[0-9]|[A-Z]{1,12} NKEY SEED) ?-{4,6})|\z)",
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
];

/// The rules after the vendor formats: values next to a secret-like name, in every syntax.
const NAMED_RULES: &[Rule] = &[
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
        // More prose: `the password for the staging database is …`, `Password for bob: …`,
        // `Here's the Datadog API key: …`, `use this token: … for the deploy`, `username
        // admin, password …`, and Markdown labels (`**Password:** …`, `- **API key**: …`,
        // `| __Token__ | …`).
        kind: "prose_secret",
        pattern: concat!(
            r#"(?:(?-u:\b)(?P<NAME>(?i:pass(?:word|wd|phrase)|pwd|(?:[a-z0-9]+[ _-])?(?:key|token|secret)))[ \t]+(?i:for)[ \t]+(?:[^\s:]+[ \t]+){0,5}?(?:(?i:is|was)[ \t]*:?[ \t]+|[^\s:]+[ \t]*:[ \t]+)"#,
            r#"|(?-u:\b)(?i:here's|here[ \t]+is|use|with|new|your|my|the|this)[ \t]+(?:[A-Za-z0-9]+[ \t]+){0,2}?(?P<NAME>(?i:(?:api|access|auth|secret|bearer|bot|personal|app)[ _-]?(?:key|token)|token|password|passphrase|secret))[ \t]*:[ \t]+"#,
            r#"|(?-u:\b)(?i:user(?:name)?|login)[ \t]+[^\s,]+,?[ \t]+(?:(?i:and)[ \t]+)?(?P<NAME>(?i:password|passwd|pass|pw))[ \t]+"#,
            r#"|(?:\*\*|__)(?P<NAME>(?i:(?:[a-z0-9]+[ _-])?(?:key|token|secret)|pass(?:word|wd|phrase)|pwd))(?::(?:\*\*|__)|(?:\*\*|__)[ \t]*[:|]))"#,
            r#"[ \t]*["'`]?(?P<VALUE>[!#-&(-+\--:<-_a-~]+)(?:[\s.,;!?)"'`]|\z)"#
        ),
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
            r#"(?i:define|setenv|putenv|set|setdefault|setProperty|put|getenv|get|fetch|getProperty|env|add|append|header|setHeader|setRequestHeader|add_header)\([ \t]*["'](?P<NAME>"#,
            secret_name!(),
            r#")["'][ \t]*,[ \t]*["'](?P<VALUE>[^"'\n]+)["']"#
        ),
        check: Check::Named,
    },
    Rule {
        // Long and raw strings: `password = """…"""`, `API_TOKEN = '''…'''`, Go's
        // `Password: \`…\``; and values behind a YAML anchor or tag (`password: &pw …`,
        // `password: !!str …`, Ansible's `!unsafe '…'`).
        kind: "code_secret",
        pattern: concat!(
            r#"(?-u:\b)(?P<NAME>"#,
            secret_name!(),
            r#")["']?[ \t]*(?::=|[:=])[ \t]*(?:"""(?P<VALUE>[^"\n]+)"""|'''(?P<VALUE>[^'\n]+)'''|`(?P<VALUE>[^`\n]+)`|(?:[&!][!A-Za-z0-9_.-]*[ \t]+)+(?:"(?P<VALUE>[^"\n]+)"|'(?P<VALUE>[^'\n]+)'|(?P<VALUE>[^\s"'|>#][^\s]*)))"#
        ),
        check: Check::Named,
    },
    Rule {
        // Builder setters and wrappers: `.password("…")`, `.apiKey("…")`, `password =
        // SecretStr("…")`, `let password = String::from("…")`, `SecretString::new("….into())`,
        // and Rust's `env::var("API_TOKEN").unwrap_or("…")`.
        kind: "code_secret",
        pattern: concat!(
            r#"(?:\.(?P<NAME>(?i:(?:client|access|api|secret|auth|refresh|bearer|admin|db|user|app|private|master|root)_?(?:key|token|secret|password)|password|passwd|passphrase|secret|token))\([ \t]*"#,
            r#"|(?-u:\b)(?P<NAME>"#,
            secret_name!(),
            r#")[ \t]*(?::[ \t]*[A-Za-z_][A-Za-z0-9_<>]*[ \t]*)?=[ \t]*(?:SecretStr|SecretString|SecretBytes|SecretBox|Secret|SecureString|Zeroizing|String|str)(?:::(?:new|from))?\([ \t]*"#,
            r#"|(?i:var|getenv|env)\([ \t]*["'](?P<NAME>"#,
            secret_name!(),
            r#")["'][ \t]*\)\.unwrap_or(?:_else)?\([ \t]*(?:\|\|[ \t]*)?(?:String::from\([ \t]*)?)"#,
            r#"(?:"(?P<VALUE>[^"\n]+)"|'(?P<VALUE>[^'\n]+)')"#
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
        // A name field ending in a secret's name, then its value a few fields on: AWS SSM
        // parameters (`"Name": "/prod/db/password", "Type": "SecureString", "Value": …`).
        kind: "named_value",
        pattern: concat!(
            r#"["'](?i:name|key)["'][ \t]*:[ \t]*["'][^"'\n]*?(?P<NAME>"#,
            secret_name!(),
            r#")["'](?:[ \t]*,[ \t]*["'][A-Za-z_]+["'][ \t]*:[ \t]*(?:true|false|null|[0-9]+|"[^"\n]*"|'[^'\n]*'))*?[ \t]*,[ \t]*["'](?i:value)["'][ \t]*:[ \t]*["'](?P<VALUE>[^"'\n]+)["']"#
        ),
        check: Check::Named,
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
