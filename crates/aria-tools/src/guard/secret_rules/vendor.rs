//! Token formats of more vendors (code hosts, chat, payments, clouds, AI providers,
//! observability, package registries, ...), each recognisable by its own prefix or shape. Part
//! of [`super::RULES`], between the first token formats and the name-based rules; kept apart
//! so each list can be read and reviewed on its own.

use super::{Check, Rule};

pub(super) const VENDOR_RULES: &[Rule] = &[
    Rule {
        // NATS nkey seeds (`SU…`, `SO…`, `SA…`: 58 base32 characters) and Stellar secret seeds
        // (`S…`, 56).
        kind: "seed_key",
        pattern: r"(?-u:\b)(?:S[UOANCPX][A-Z2-7]{56}|S[A-D][A-Z2-7]{54})(?-u:\b)",
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
];
