//! Secrets in tools' structured output, in tables, and in the configuration files of daemons and
//! clients: forms where the value sits a few fields or lines from its name, or has no name at
//! all but a place that says what it is. Each rule is its own regex behind a keyword gate of its
//! own: it runs only on a text that contains one of its keywords (ASCII case-insensitive), so
//! ordinary text and code pay one keyword scan for all of them rather than a larger automaton
//! per line. A keyword is a rare literal the form has; a text without one is not searched for
//! that form. They come before the name-based rules in [`super::RULES`], so at the same place
//! their more specific reading wins (`SecretID: <uuid>` is a token, not a hash after a name).

use super::{Check, Rule};

/// A rule and the keywords that gate it.
pub(crate) struct Gated {
    pub(crate) rule: Rule,
    pub(crate) gate: &'static [&'static str],
}

pub(super) const GATED_RULES: &[Gated] = &[
    Gated {
        // A secret's name, then an object whose `value` field holds it, other scalar fields
        // first: Terraform's `output -json` (`"db_password": {"sensitive": true, "value": …}`),
        // Azure ARM parameter files.
        rule: Rule {
            kind: "named_value",
            pattern: concat!(
                r#"["'](?P<NAME>"#,
                secret_name!(),
                r#")["'][ \t]*:[ \t]*\{(?:\s*["'][A-Za-z_]+["'][ \t]*:[ \t]*(?:true|false|null|[0-9]+|"[^"\n]*"|'[^'\n]*')[ \t]*,)*\s*["'](?i:value)["'][ \t]*:[ \t]*["'](?P<VALUE>[^"'\n]+)["']"#
            ),
            check: Check::Nearby,
        },
        gate: &["\"value\"", "'value'"],
    },
    Gated {
        // A name field ending in a secret's name, then its value a few fields on: AWS SSM
        // parameters (`"Name": "/prod/db/password", "Type": "SecureString", "Value": …`).
        rule: Rule {
            kind: "named_value",
            pattern: concat!(
                r#"["'](?i:name|key)["'][ \t]*:[ \t]*["'][^"'\n]*?(?P<NAME>"#,
                secret_name!(),
                r#")["'](?:[ \t]*,[ \t]*["'][A-Za-z_]+["'][ \t]*:[ \t]*(?:true|false|null|[0-9]+|"[^"\n]*"|'[^'\n]*'))*?[ \t]*,[ \t]*["'](?i:value)["'][ \t]*:[ \t]*["'](?P<VALUE>[^"'\n]+)["']"#
            ),
            check: Check::Named,
        },
        gate: &["\"value\"", "'value'"],
    },
    Gated {
        // Session cookies as name and value fields (HAR files, browser exports).
        rule: Rule {
            kind: "cookie",
            pattern: r#"["'](?i:name)["'][ \t]*:[ \t]*["'](?i:[a-z0-9_.]*sess(?:ion)?(?:[_.]?id)?|sid|connect\.sid|[a-z0-9]*_session|phpsessid|jsessionid)["'][ \t]*,[ \t]*["'](?i:value)["'][ \t]*:[ \t]*["'](?P<VALUE>[^"'\n]{16,})["']"#,
            check: Check::Cookie,
        },
        gate: &["sess", "\"sid\"", "'sid'"],
    },
    Gated {
        // A default in a declaration: Terraform `variable "db_password" { … default = "…" }`,
        // Jenkins `string(name: 'API_TOKEN', defaultValue: '…')`, and YAML inputs and
        // parameters (`api_token:` then `default: …` a few lines down; CloudFormation).
        rule: Rule {
            kind: "code_secret",
            pattern: concat!(
                r#"(?-u:\b)variable[ \t]+"(?P<NAME>"#,
                secret_name!(),
                r#")"[ \t]*\{[^{}]*?(?-u:\b)default[ \t]*=[ \t]*"(?P<VALUE>[^"\n]+)""#,
                r#"|(?-u:\b)name:[ \t]*["'](?P<NAME>"#,
                secret_name!(),
                r#")["'][ \t]*,[ \t]*defaultValue:[ \t]*["'](?P<VALUE>[^"'\n]+)["']"#,
                r#"|(?m:^)[ \t]*(?P<NAME>"#,
                secret_name!(),
                r#"):[ \t]*\r?\n(?:[ \t]+[A-Za-z_]+:[^\n]*\r?\n){0,5}?[ \t]+(?i:default):[ \t]*["']?(?P<VALUE>[^\s"']+)"#
            ),
            check: Check::Nearby,
        },
        gate: &["default"],
    },
    Gated {
        // Table cells: Markdown `| DB_PASSWORD | … |`, HTML `<td>Password</td><td>…</td>`.
        // Judged as prose: 8 characters or more, with a letter and a digit.
        rule: Rule {
            kind: "table_secret",
            pattern: concat!(
                r#"\|[ \t]*`?(?P<NAME>"#,
                secret_name!(),
                r#")`?[ \t]*\|[ \t]*`?(?P<VALUE>[^\s|`]+)`?[ \t]*\|"#,
                r#"|<td>[ \t]*(?P<NAME>[A-Za-z_ ]*(?i:password|passphrase|key|token|secret)[A-Za-z_ ]*)[ \t]*</td>\s*<td>[ \t]*(?P<VALUE>[^<\s]+)[ \t]*</td>"#
            ),
            check: Check::Prose,
        },
        gate: &["|", "<td>"],
    },
    Gated {
        // A CSV `NAME,value` line whose name ends in a secret's name (`STRIPE_SECRET,…`).
        rule: Rule {
            kind: "table_secret",
            pattern: concat!(
                r#"(?m:^)(?P<NAME>"#,
                secret_name!(),
                r#"),(?P<VALUE>[^\s,"']+)[ \t]*(?m:$)"#
            ),
            check: Check::Prose,
        },
        gate: &[
            "key,",
            "token,",
            "secret,",
            "password,",
            "passwd,",
            "passphrase,",
            "pass,",
            "pwd,",
            "credential,",
            "auth,",
        ],
    },
    Gated {
        // Vault's `operator init` output.
        rule: Rule {
            kind: "vault_unseal_key",
            pattern: r"(?i:unseal key|recovery key)[ \t]+[0-9]+:[ \t]+(?P<VALUE>[A-Za-z0-9+/=]{20,})",
            check: Check::Token,
        },
        gate: &["unseal key", "recovery key"],
    },
    Gated {
        // Consul's and Nomad's ACL tokens (`SecretID: <uuid>`, `Secret ID = <uuid>`).
        rule: Rule {
            kind: "acl_token",
            pattern: r"(?-u:\b)(?i:secret[ _]?id)[ \t]*[:=][ \t]*(?P<VALUE>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
            check: Check::Token,
        },
        gate: &["secretid", "secret id", "secret_id"],
    },
    Gated {
        // Password settings spelt as one word, in daemons' files: sssd `ldap_default_authtok`,
        // OpenLDAP `olcRootPW`, LDIF `userPassword`, offlineimap `remotepass`.
        rule: Rule {
            kind: "config_password",
            pattern: r"(?m:^)[ \t]*(?P<NAME>(?i:[a-z_]*authtok|olcRootPW|userPassword|remotepass))[ \t]*(?:::?|=)[ \t]*(?P<VALUE>[^\s]+)",
            check: Check::Prose,
        },
        gate: &["authtok", "olcrootpw", "userpassword", "remotepass"],
    },
    Gated {
        // Passwords whose place says what they are: Redis ACL `user app on >…` (and `ACL
        // SETUSER`), HAProxy `stats auth user:…` and `insecure-password …`, strongSwan `: PSK
        // "…"`.
        rule: Rule {
            kind: "config_password",
            pattern: concat!(
                r#"(?:(?m:^)[ \t]*(?:ACL[ \t]+SETUSER|user)[ \t]+[^\s]+(?:[ \t]+[^\s>#]+)*?[ \t]+>"#,
                r#"|(?-u:\b)stats[ \t]+auth[ \t]+[^\s:]+:"#,
                r#"|(?-u:\b)insecure-password[ \t]+"#,
                r#"|(?m:^)[^\n:"]*:[ \t]*(?:PSK|EAP|XAUTH)[ \t]+")"#,
                r#"(?P<VALUE>[^\s"'\\]+)"#
            ),
            check: Check::Nearby,
        },
        gate: &[
            "acl setuser",
            " on >",
            "stats auth",
            "insecure-password",
            ": psk",
            ":psk",
            ": eap",
            ":eap",
            ": xauth",
            ":xauth",
        ],
    },
    Gated {
        // Clients' passwords: fetchmail `user "bob" password "…"`, Squid `login=user:…`, curl's
        // config `user = "bob:…"`, Yarn `npmAuthIdent: "user:…"`, `poetry config
        // http-basic.NAME user …`, and an `expect` script's `send` after a password prompt.
        rule: Rule {
            kind: "config_password",
            pattern: concat!(
                r#"(?:(?-u:\b)user[ \t]+"[^"\n]+"[ \t]+(?:(?:there|with|is)[ \t]+)*password[ \t]+""#,
                r#"|(?-u:\b)login=[^\s:]+:"#,
                r#"|(?m:^)[ \t]*(?:user|proxy-user)[ \t]*[=:][ \t]*"[^"\n:]+:"#,
                r#"|(?-u:\b)(?i:npmAuthIdent|_authIdent)["']?[ \t]*:[ \t]*["']?[^\s:"']+:"#,
                r#"|(?-u:\b)poetry[ \t]+config[ \t]+http-basic\.[^\s]+[ \t]+[^\s-][^\s]*[ \t]+["']?"#,
                r#"|(?-u:\b)expect[ \t]+(?:-[a-z]+[ \t]+)*"[^"\n]*(?i:password|passphrase)[^"\n]*"[ \t]*(?:\r?\n[ \t]*)+send[ \t]+(?:--[ \t]+)?")"#,
                r#"(?P<VALUE>[^\s"'\\]+)"#
            ),
            check: Check::Nearby,
        },
        gate: &[
            "user \"",
            "login=",
            "user = \"",
            "user=\"",
            "user: \"",
            "proxy-user",
            "authident",
            "http-basic",
            "send \"",
            "send -- \"",
        ],
    },
    Gated {
        // Maven's encrypted master password and Composer's bearer tokens.
        rule: Rule {
            kind: "config_secret",
            pattern: r#"<master>\{(?P<VALUE>[^}\n]+)\}</master>|["']bearer["'][ \t]*:[ \t]*\{[ \t]*["'][^"'\n]+["'][ \t]*:[ \t]*["'](?P<VALUE>[^"'\n]+)["']"#,
            check: Check::Token,
        },
        gate: &["<master>", "\"bearer\"", "'bearer'"],
    },
];
