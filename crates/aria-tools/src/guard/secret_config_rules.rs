//! Secrets in tools' structured output, in tables, and in the configuration files of daemons and
//! clients: forms where the value sits a few fields or lines from its name, or has no name at
//! all but a place that says what it is. Part of [`super::RULES`], between the vendors' token
//! formats and the name-based rules; kept apart so each list can be read on its own.

use super::{Check, Rule};

pub(super) const CONFIG_RULES: &[Rule] = &[
    Rule {
        // A secret's name, then an object whose `value` field holds it, other scalar fields
        // first: Terraform's `output -json` (`"db_password": {"sensitive": true, "value": …}`),
        // Azure ARM parameter files.
        kind: "named_value",
        pattern: concat!(
            r#"["'](?P<NAME>"#,
            secret_name!(),
            r#")["'][ \t]*:[ \t]*\{(?:\s*["'][A-Za-z_]+["'][ \t]*:[ \t]*(?:true|false|null|[0-9]+|"[^"\n]*"|'[^'\n]*')[ \t]*,)*\s*["'](?i:value)["'][ \t]*:[ \t]*["'](?P<VALUE>[^"'\n]+)["']"#
        ),
        check: Check::Nearby,
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
        // Session cookies as name and value fields (HAR files, browser exports).
        kind: "cookie",
        pattern: r#"["'](?i:name)["'][ \t]*:[ \t]*["'](?i:[a-z0-9_.]*sess(?:ion)?(?:[_.]?id)?|sid|connect\.sid|[a-z0-9]*_session|phpsessid|jsessionid)["'][ \t]*,[ \t]*["'](?i:value)["'][ \t]*:[ \t]*["'](?P<VALUE>[^"'\n]{16,})["']"#,
        check: Check::Cookie,
    },
    Rule {
        // A default in a declaration: Terraform `variable "db_password" { … default = "…" }`,
        // Jenkins `string(name: 'API_TOKEN', defaultValue: '…')`, and YAML inputs and
        // parameters (`api_token:` then `default: …` a few lines down; CloudFormation).
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
    Rule {
        // Table cells: Markdown `| DB_PASSWORD | … |`, a CSV `NAME,value` line, HTML
        // `<td>Password</td><td>…</td>`. Judged as prose: 8 characters or more, with a letter
        // and a digit.
        kind: "table_secret",
        pattern: concat!(
            r#"\|[ \t]*`?(?P<NAME>"#,
            secret_name!(),
            r#")`?[ \t]*\|[ \t]*`?(?P<VALUE>[^\s|`]+)`?[ \t]*\|"#,
            r#"|(?m:^)(?P<NAME>"#,
            secret_name!(),
            r#"),(?P<VALUE>[^\s,"']+)[ \t]*(?m:$)"#,
            r#"|<td>[ \t]*(?P<NAME>[A-Za-z_ ]*(?i:password|passphrase|key|token|secret)[A-Za-z_ ]*)[ \t]*</td>\s*<td>[ \t]*(?P<VALUE>[^<\s]+)[ \t]*</td>"#
        ),
        check: Check::Prose,
    },
    Rule {
        // Vault's `operator init` output.
        kind: "vault_unseal_key",
        pattern: r"(?i:unseal key|recovery key)[ \t]+[0-9]+:[ \t]+(?P<VALUE>[A-Za-z0-9+/=]{20,})",
        check: Check::Token,
    },
    Rule {
        // Consul's and Nomad's ACL tokens (`SecretID: <uuid>`, `Secret ID = <uuid>`).
        kind: "acl_token",
        pattern: r"(?-u:\b)(?i:secret[ _]?id)[ \t]*[:=][ \t]*(?P<VALUE>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
        check: Check::Token,
    },
    Rule {
        // Password settings spelt as one word, in daemons' files: sssd `ldap_default_authtok`,
        // OpenLDAP `olcRootPW`, LDIF `userPassword`, offlineimap `remotepass`.
        kind: "config_password",
        pattern: r"(?m:^)[ \t]*(?P<NAME>(?i:[a-z_]*authtok|olcRootPW|userPassword|remotepass))[ \t]*(?:::?|=)[ \t]*(?P<VALUE>[^\s]+)",
        check: Check::Prose,
    },
    Rule {
        // Passwords whose place says what they are: Redis ACL `user app on >…`, HAProxy
        // `stats auth user:…` and `insecure-password …`, strongSwan `: PSK "…"`, Postfix
        // `sasl_passwd` (`[host]:port user:…`), fetchmail `user "bob" password "…"`, Squid
        // `login=user:…`, curl's config `user = "bob:…"`, Yarn `npmAuthIdent: "user:…"`,
        // `poetry config http-basic.NAME user …`, and an `expect` script's `send` after a
        // password prompt.
        kind: "config_password",
        pattern: concat!(
            r#"(?:(?m:^)[ \t]*(?:ACL[ \t]+SETUSER|user)[ \t]+[^\s]+(?:[ \t]+[^\s>#]+)*?[ \t]+>"#,
            r#"|(?-u:\b)stats[ \t]+auth[ \t]+[^\s:]+:"#,
            r#"|(?-u:\b)insecure-password[ \t]+"#,
            r#"|(?m:^)[^\n:"]*:[ \t]*(?:PSK|EAP|XAUTH)[ \t]+""#,
            r#"|(?m:^)\[[^\]\s]+\](?::[0-9]+)?[ \t]+[^\s:]+:"#,
            r#"|(?-u:\b)user[ \t]+"[^"\n]+"[ \t]+(?:(?:there|with|is)[ \t]+)*password[ \t]+""#,
            r#"|(?-u:\b)login=[^\s:]+:"#,
            r#"|(?m:^)[ \t]*(?:user|proxy-user)[ \t]*[=:][ \t]*"[^"\n:]+:"#,
            r#"|(?-u:\b)(?i:npmAuthIdent|_authIdent)["']?[ \t]*:[ \t]*["']?[^\s:"']+:"#,
            r#"|(?-u:\b)poetry[ \t]+config[ \t]+http-basic\.[^\s]+[ \t]+[^\s-][^\s]*[ \t]+["']?"#,
            r#"|(?-u:\b)expect[ \t]+(?:-[a-z]+[ \t]+)*"[^"\n]*(?i:password|passphrase)[^"\n]*"[ \t]*(?:\r?\n[ \t]*)+send[ \t]+(?:--[ \t]+)?")"#,
            r#"(?P<VALUE>[^\s"'\\]+)"#
        ),
        check: Check::Nearby,
    },
    Rule {
        // A Gmail app password (four groups of four letters) after a password's name:
        // `SMTP_PASSWORD=abcd efgh ijkl mnop`, msmtp's `password abcd efgh ijkl mnop`.
        kind: "app_password",
        pattern: concat!(
            r#"(?:(?-u:\b)(?P<NAME>"#,
            secret_name!(),
            r#")["']?[ \t]*=[ \t]*["']?|(?m:^)[ \t]*password[ \t]+)(?P<VALUE>[a-z]{4} [a-z]{4} [a-z]{4} [a-z]{4})["']?[ \t]*(?m:$)"#
        ),
        check: Check::Nearby,
    },
    Rule {
        // Maven's encrypted master password and Composer's bearer tokens.
        kind: "config_secret",
        pattern: r#"<master>\{(?P<VALUE>[^}\n]+)\}</master>|["']bearer["'][ \t]*:[ \t]*\{[ \t]*["'][^"'\n]+["'][ \t]*:[ \t]*["'](?P<VALUE>[^"'\n]+)["']"#,
        check: Check::Token,
    },
];
