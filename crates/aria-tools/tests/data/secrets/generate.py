#!/usr/bin/env python3
"""Writes positive.jsonl and negative.jsonl: the labelled corpus of the secret filter.

Every value is synthesized (random characters in the documented shape of the format, seeded so
the files are reproducible); none is a real credential. Each line names in "source" where the
format (or, for negatives, the kind of look-alike) is documented.

    python3 crates/aria-tools/tests/data/secrets/generate.py
"""
import json
import os
import random
import string
import uuid

R = random.Random(16)
LOWER, UPPER, DIGITS = string.ascii_lowercase, string.ascii_uppercase, string.digits
ALNUM = LOWER + UPPER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLB64 = ALNUM + "-_"


def r(chars, n):
    while True:
        s = "".join(R.choice(chars) for _ in range(n))
        # A random value: at least one digit and one letter when the alphabet has both.
        if n < 8 or not (set(chars) & set(DIGITS)) or any(c in DIGITS for c in s):
            if n < 8 or not (set(chars) & set(LOWER + UPPER)) or any(c.isalpha() for c in s):
                return s


def a(n):
    return r(ALNUM, n)


def h(n):
    return r(HEX, n)


def hu(n):
    return r(HEX.upper(), n)


def u():
    return str(uuid.UUID(int=R.getrandbits(128), version=4))


def b64(nbytes):
    import base64
    return base64.b64encode(bytes(R.getrandbits(8) for _ in range(nbytes))).decode()


def jwt():
    import base64
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")
    head = enc({"alg": "HS256", "typ": "JWT"})
    body = enc({"sub": a(10), "iat": R.randint(1600000000, 1800000000), "role": "service"})
    return f"{head}.{body}.{r(URLB64, 43)}"


# (service, env var name, value generator, where the format is documented)
SERVICES = [
    ("aws access key id", "AWS_ACCESS_KEY_ID", lambda: "AKIA" + r("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16), "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html"),
    ("aws secret access key", "AWS_SECRET_ACCESS_KEY", lambda: r(B64, 40), "https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html"),
    ("aws session token", "AWS_SESSION_TOKEN", lambda: "FwoGZXIvYXdzE" + r(B64, 300), "https://docs.aws.amazon.com/STS/latest/APIReference/API_Credentials.html"),
    ("github classic pat", "GITHUB_TOKEN", lambda: "ghp_" + a(36), "https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/"),
    ("github oauth", "GH_OAUTH_TOKEN", lambda: "gho_" + a(36), "https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/"),
    ("github app installation", "GITHUB_APP_TOKEN", lambda: "ghs_" + a(36), "https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/"),
    ("github refresh", "GITHUB_REFRESH_TOKEN", lambda: "ghr_" + a(76), "https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/"),
    ("github fine-grained pat", "GITHUB_PAT", lambda: "github_pat_" + a(22) + "_" + a(59), "https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/managing-your-personal-access-tokens"),
    ("gitlab pat", "GITLAB_TOKEN", lambda: "glpat-" + r(URLB64, 20), "https://docs.gitlab.com/ee/security/tokens/#token-prefixes"),
    ("gitlab deploy token", "GITLAB_DEPLOY_TOKEN", lambda: "gldt-" + r(URLB64, 20), "https://docs.gitlab.com/ee/security/tokens/#token-prefixes"),
    ("gitlab runner token", "CI_RUNNER_TOKEN", lambda: "glrt-" + r(URLB64, 20), "https://docs.gitlab.com/ee/security/tokens/#token-prefixes"),
    ("gitlab pipeline trigger", "GITLAB_TRIGGER_TOKEN", lambda: "glptt-" + h(40), "https://docs.gitlab.com/ee/security/tokens/#token-prefixes"),
    ("gitlab runner registration", "REGISTRATION_TOKEN", lambda: "GR1348941" + r(URLB64, 20), "https://docs.gitlab.com/ee/security/tokens/#token-prefixes"),
    ("bitbucket app password", "BITBUCKET_APP_PASSWORD", lambda: "ATBB" + a(32), "https://support.atlassian.com/bitbucket-cloud/docs/app-passwords/"),
    ("atlassian api token", "JIRA_API_TOKEN", lambda: "ATATT3xFfGF0" + r(URLB64, 180) + "=" + hu(8), "https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/"),
    ("azure devops pat", "AZURE_DEVOPS_PAT", lambda: r(LOWER + "234567", 52), "https://learn.microsoft.com/en-us/azure/devops/organizations/accounts/use-personal-access-tokens-to-authenticate"),
    ("slack bot token", "SLACK_BOT_TOKEN", lambda: f"xoxb-{R.randint(10**10, 10**13)}-{R.randint(10**10, 10**13)}-{a(24)}", "https://api.slack.com/authentication/token-types"),
    ("slack user token", "SLACK_USER_TOKEN", lambda: f"xoxp-{R.randint(10**10, 10**13)}-{R.randint(10**10, 10**13)}-{R.randint(10**10, 10**13)}-{h(32)}", "https://api.slack.com/authentication/token-types"),
    ("slack app token", "SLACK_APP_TOKEN", lambda: f"xapp-1-A{hu(10)}-{R.randint(10**12, 10**13)}-{h(64)}", "https://api.slack.com/authentication/token-types"),
    ("slack webhook", "SLACK_WEBHOOK_URL", lambda: f"https://hooks.slack.com/services/T{hu(8)}/B{hu(8)}/{a(24)}", "https://api.slack.com/messaging/webhooks"),
    ("discord bot token", "DISCORD_TOKEN", lambda: R.choice("MN") + a(25) + "." + r(URLB64, 6) + "." + r(URLB64, 38), "https://discord.com/developers/docs/reference#authentication"),
    ("discord webhook", "DISCORD_WEBHOOK", lambda: f"https://discord.com/api/webhooks/{R.randint(10**17, 10**18)}/{r(URLB64, 68)}", "https://discord.com/developers/docs/resources/webhook"),
    ("telegram bot token", "TELEGRAM_BOT_TOKEN", lambda: f"{R.randint(10**8, 10**10)}:AA{r(URLB64, 33)}", "https://core.telegram.org/bots/api#authorizing-your-bot"),
    ("teams webhook", "TEAMS_WEBHOOK_URL", lambda: f"https://contoso.webhook.office.com/webhookb2/{u()}@{u()}/IncomingWebhook/{h(32)}/{u()}", "https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook"),
    ("twilio api key", "TWILIO_API_KEY", lambda: "SK" + h(32), "https://www.twilio.com/docs/iam/api-keys"),
    ("twilio auth token", "TWILIO_AUTH_TOKEN", lambda: h(32), "https://www.twilio.com/docs/iam/access-tokens"),
    ("sendgrid", "SENDGRID_API_KEY", lambda: "SG." + r(URLB64, 22) + "." + r(URLB64, 43), "https://docs.sendgrid.com/ui/account-and-settings/api-keys"),
    ("mailgun", "MAILGUN_API_KEY", lambda: "key-" + h(32), "https://documentation.mailgun.com/docs/mailgun/api-reference/authentication/"),
    ("mailgun new", "MAILGUN_PRIVATE_KEY", lambda: f"{h(32)}-{h(8)}-{h(8)}", "https://documentation.mailgun.com/docs/mailgun/api-reference/authentication/"),
    ("mailchimp", "MAILCHIMP_API_KEY", lambda: h(32) + f"-us{R.randint(1, 21)}", "https://mailchimp.com/developer/marketing/guides/quick-start/"),
    ("mandrill", "MANDRILL_API_KEY", lambda: "md-" + r(URLB64, 22), "https://mailchimp.com/developer/transactional/guides/quick-start/"),
    ("brevo", "BREVO_API_KEY", lambda: f"xkeysib-{h(64)}-{a(16)}", "https://developers.brevo.com/docs/getting-started"),
    ("postmark", "POSTMARK_SERVER_TOKEN", u, "https://postmarkapp.com/developer/api/overview#authentication"),
    ("sparkpost", "SPARKPOST_API_KEY", lambda: h(40), "https://developers.sparkpost.com/api/#header-authorization"),
    ("stripe secret", "STRIPE_SECRET_KEY", lambda: "sk_live_" + a(99), "https://docs.stripe.com/keys"),
    ("stripe test secret", "STRIPE_TEST_KEY", lambda: "sk_test_" + a(99), "https://docs.stripe.com/keys"),
    ("stripe restricted", "STRIPE_RESTRICTED_KEY", lambda: "rk_live_" + a(99), "https://docs.stripe.com/keys#limit-access"),
    ("stripe webhook secret", "STRIPE_WEBHOOK_SECRET", lambda: "whsec_" + a(32), "https://docs.stripe.com/webhooks#verify-events"),
    ("square access token", "SQUARE_ACCESS_TOKEN", lambda: "EAAA" + r(URLB64, 60), "https://developer.squareup.com/docs/build-basics/access-tokens"),
    ("square oauth secret", "SQUARE_APP_SECRET", lambda: "sq0csp-" + r(URLB64, 43), "https://developer.squareup.com/docs/oauth-api/overview"),
    ("braintree", "BRAINTREE_ACCESS_TOKEN", lambda: f"access_token$production${h(16)}${h(32)}", "https://developer.paypal.com/braintree/docs/guides/authorization/overview"),
    ("paypal client secret", "PAYPAL_CLIENT_SECRET", lambda: "E" + r(URLB64, 79), "https://developer.paypal.com/api/rest/authentication/"),
    ("shopify access token", "SHOPIFY_ACCESS_TOKEN", lambda: "shpat_" + h(32), "https://shopify.dev/docs/apps/auth/access-token-types"),
    ("shopify shared secret", "SHOPIFY_API_SECRET", lambda: "shpss_" + h(32), "https://shopify.dev/docs/apps/auth"),
    ("razorpay", "RAZORPAY_KEY_SECRET", lambda: a(24), "https://razorpay.com/docs/api/authentication/"),
    ("flutterwave", "FLW_SECRET_KEY", lambda: f"FLWSECK-{h(32)}-X", "https://developer.flutterwave.com/docs/integration-guides/authentication"),
    ("paystack", "PAYSTACK_SECRET_KEY", lambda: "sk_live_" + h(40), "https://paystack.com/docs/api/authentication/"),
    ("mollie", "MOLLIE_API_KEY", lambda: "live_" + a(30), "https://docs.mollie.com/overview/authentication"),
    ("gocardless", "GOCARDLESS_ACCESS_TOKEN", lambda: "live_" + r(URLB64, 40), "https://developer.gocardless.com/getting-started/api/making-your-first-request/"),
    ("plaid", "PLAID_SECRET", lambda: h(30), "https://plaid.com/docs/api/#api-access"),
    ("coinbase", "COINBASE_API_SECRET", lambda: a(32), "https://docs.cloud.coinbase.com/"),
    ("shippo", "SHIPPO_API_TOKEN", lambda: "shippo_live_" + h(40), "https://docs.goshippo.com/docs/guides_general/authentication/"),
    ("easypost", "EASYPOST_API_KEY", lambda: "EZAK" + h(54), "https://docs.easypost.com/docs/authentication"),
    ("duffel", "DUFFEL_ACCESS_TOKEN", lambda: "duffel_live_" + r(URLB64, 43), "https://duffel.com/docs/api/overview/making-requests/authentication"),
    ("openai", "OPENAI_API_KEY", lambda: "sk-proj-" + r(URLB64, 156), "https://platform.openai.com/docs/api-reference/authentication"),
    ("openai legacy", "OPENAI_KEY", lambda: "sk-" + a(20) + "T3BlbkFJ" + a(20), "https://platform.openai.com/docs/api-reference/authentication"),
    ("anthropic", "ANTHROPIC_API_KEY", lambda: "sk-ant-api03-" + r(URLB64, 93) + "AA", "https://docs.anthropic.com/en/api/getting-started#authentication"),
    ("huggingface", "HF_TOKEN", lambda: "hf_" + a(34), "https://huggingface.co/docs/hub/security-tokens"),
    ("groq", "GROQ_API_KEY", lambda: "gsk_" + a(52), "https://console.groq.com/docs/quickstart"),
    ("replicate", "REPLICATE_API_TOKEN", lambda: "r8_" + a(37), "https://replicate.com/docs/reference/http#authentication"),
    ("perplexity", "PERPLEXITY_API_KEY", lambda: "pplx-" + a(48), "https://docs.perplexity.ai/guides/getting-started"),
    ("xai", "XAI_API_KEY", lambda: "xai-" + a(80), "https://docs.x.ai/docs/overview"),
    ("openrouter", "OPENROUTER_API_KEY", lambda: "sk-or-v1-" + h(64), "https://openrouter.ai/docs/api-reference/authentication"),
    ("deepseek", "DEEPSEEK_API_KEY", lambda: "sk-" + h(32), "https://api-docs.deepseek.com/"),
    ("mistral", "MISTRAL_API_KEY", lambda: a(32), "https://docs.mistral.ai/api/#authentication"),
    ("cohere", "COHERE_API_KEY", lambda: a(40), "https://docs.cohere.com/reference/about"),
    ("together", "TOGETHER_API_KEY", lambda: h(64), "https://docs.together.ai/reference/authentication-1"),
    ("fireworks", "FIREWORKS_API_KEY", lambda: "fw_" + a(24), "https://docs.fireworks.ai/api-reference/introduction"),
    ("elevenlabs", "ELEVENLABS_API_KEY", lambda: "sk_" + h(48), "https://elevenlabs.io/docs/api-reference/authentication"),
    ("assemblyai", "ASSEMBLYAI_API_KEY", lambda: h(32), "https://www.assemblyai.com/docs/api-reference/overview#authorization"),
    ("deepgram", "DEEPGRAM_API_KEY", lambda: h(40), "https://developers.deepgram.com/reference/authentication"),
    ("pinecone", "PINECONE_API_KEY", lambda: "pcsk_" + a(5) + "_" + a(64), "https://docs.pinecone.io/guides/projects/manage-api-keys"),
    ("wandb", "WANDB_API_KEY", lambda: h(40), "https://docs.wandb.ai/guides/track/environment-variables"),
    ("langsmith", "LANGSMITH_API_KEY", lambda: f"lsv2_pt_{h(32)}_{h(10)}", "https://docs.smith.langchain.com/administration/how_to_guides/organization_management/create_account_api_key"),
    ("azure openai", "AZURE_OPENAI_API_KEY", lambda: h(32), "https://learn.microsoft.com/en-us/azure/ai-services/openai/reference#authentication"),
    ("google api key", "GOOGLE_API_KEY", lambda: "AIza" + r(URLB64, 35), "https://cloud.google.com/docs/authentication/api-keys"),
    ("google oauth client secret", "GOOGLE_CLIENT_SECRET", lambda: "GOCSPX-" + r(URLB64, 28), "https://developers.google.com/identity/protocols/oauth2"),
    ("google oauth access token", "GOOGLE_ACCESS_TOKEN", lambda: "ya29." + r(URLB64, 120), "https://developers.google.com/identity/protocols/oauth2"),
    ("firebase cloud messaging", "FCM_SERVER_KEY", lambda: "AAAA" + a(7) + ":APA91b" + r(URLB64, 134), "https://firebase.google.com/docs/cloud-messaging/auth-server"),
    ("azure storage account key", "AZURE_STORAGE_KEY", lambda: b64(64), "https://learn.microsoft.com/en-us/azure/storage/common/storage-account-keys-manage"),
    ("azure ad client secret", "AZURE_CLIENT_SECRET", lambda: a(3) + "8Q~" + r(ALNUM + "_.~-", 34), "https://learn.microsoft.com/en-us/entra/identity-platform/howto-create-service-principal-portal"),
    ("alibaba cloud", "ALIBABA_CLOUD_ACCESS_KEY_ID", lambda: "LTAI" + a(20), "https://www.alibabacloud.com/help/en/ram/user-guide/create-an-accesskey-pair"),
    ("tencent cloud", "TENCENTCLOUD_SECRET_ID", lambda: "AKID" + a(32), "https://www.tencentcloud.com/document/product/598/32675"),
    ("ibm cloud", "IBMCLOUD_API_KEY", lambda: r(URLB64, 44), "https://cloud.ibm.com/docs/account?topic=account-userapikey"),
    ("digitalocean", "DIGITALOCEAN_TOKEN", lambda: "dop_v1_" + h(64), "https://docs.digitalocean.com/reference/api/create-personal-access-token/"),
    ("linode", "LINODE_TOKEN", lambda: h(64), "https://techdocs.akamai.com/linode-api/reference/get-started"),
    ("vultr", "VULTR_API_KEY", lambda: r(UPPER + DIGITS, 36), "https://www.vultr.com/api/#section/Authentication"),
    ("hetzner", "HCLOUD_TOKEN", lambda: a(64), "https://docs.hetzner.cloud/#authentication"),
    ("heroku", "HEROKU_API_KEY", u, "https://devcenter.heroku.com/articles/authentication"),
    ("heroku new", "HEROKU_API_TOKEN", lambda: "HRKU-AA" + r(URLB64, 58), "https://devcenter.heroku.com/articles/authentication"),
    ("cloudflare api token", "CLOUDFLARE_API_TOKEN", lambda: r(URLB64, 40), "https://developers.cloudflare.com/fundamentals/api/get-started/create-token/"),
    ("cloudflare global key", "CF_API_KEY", lambda: h(37), "https://developers.cloudflare.com/fundamentals/api/get-started/keys/"),
    ("fastly", "FASTLY_API_TOKEN", lambda: r(URLB64, 32), "https://docs.fastly.com/en/guides/using-api-tokens"),
    ("vercel", "VERCEL_TOKEN", lambda: a(24), "https://vercel.com/docs/rest-api#authentication"),
    ("netlify", "NETLIFY_AUTH_TOKEN", lambda: "nfp_" + a(36), "https://docs.netlify.com/api/get-started/#authentication"),
    ("fly.io", "FLY_API_TOKEN", lambda: "fo1_" + r(URLB64, 43), "https://fly.io/docs/security/tokens/"),
    ("render", "RENDER_API_KEY", lambda: "rnd_" + a(32), "https://api-docs.render.com/reference/authentication"),
    ("railway", "RAILWAY_TOKEN", u, "https://docs.railway.com/guides/public-api"),
    ("supabase", "SUPABASE_ACCESS_TOKEN", lambda: "sbp_" + h(40), "https://supabase.com/docs/reference/api/introduction"),
    ("supabase service role", "SUPABASE_SERVICE_ROLE_KEY", jwt, "https://supabase.com/docs/guides/api/api-keys"),
    ("planetscale", "PLANETSCALE_SERVICE_TOKEN", lambda: "pscale_tkn_" + r(URLB64, 43), "https://planetscale.com/docs/concepts/service-tokens"),
    ("planetscale password", "DATABASE_PASSWORD", lambda: "pscale_pw_" + r(URLB64, 43), "https://planetscale.com/docs/concepts/connection-strings"),
    ("neon", "NEON_API_KEY", lambda: a(64), "https://neon.tech/docs/manage/api-keys"),
    ("mongodb atlas", "MONGODB_ATLAS_PRIVATE_KEY", u, "https://www.mongodb.com/docs/atlas/configure-api-access/"),
    ("snowflake", "SNOWFLAKE_PASSWORD", lambda: a(16) + "!" + a(4), "https://docs.snowflake.com/en/user-guide/admin-user-management"),
    ("databricks", "DATABRICKS_TOKEN", lambda: "dapi" + h(32), "https://docs.databricks.com/en/dev-tools/auth/pat.html"),
    ("elastic", "ELASTIC_API_KEY", lambda: b64(48), "https://www.elastic.co/guide/en/elasticsearch/reference/current/security-api-create-api-key.html"),
    ("redis cloud", "REDIS_PASSWORD", lambda: a(32), "https://redis.io/docs/latest/operate/rc/security/access-control/data-access-control/"),
    ("upstash", "UPSTASH_REDIS_REST_TOKEN", lambda: "A" + r(URLB64, 59) + "=", "https://upstash.com/docs/redis/features/restapi"),
    ("confluent", "CONFLUENT_CLOUD_API_SECRET", lambda: r(ALNUM + "+/", 64), "https://docs.confluent.io/cloud/current/security/authenticate/workload-identities/service-accounts/api-keys/overview.html"),
    ("algolia", "ALGOLIA_ADMIN_KEY", lambda: h(32), "https://www.algolia.com/doc/guides/security/api-keys/"),
    ("datadog api", "DD_API_KEY", lambda: h(32), "https://docs.datadoghq.com/account_management/api-app-keys/"),
    ("datadog app", "DD_APP_KEY", lambda: h(40), "https://docs.datadoghq.com/account_management/api-app-keys/"),
    ("new relic", "NEW_RELIC_API_KEY", lambda: "NRAK-" + r(UPPER + DIGITS, 27), "https://docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/"),
    ("new relic license", "NEW_RELIC_LICENSE_KEY", lambda: h(36) + "NRAL", "https://docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/"),
    ("sentry auth token", "SENTRY_AUTH_TOKEN", lambda: "sntrys_" + r(URLB64, 120), "https://docs.sentry.io/account/auth-tokens/"),
    ("sentry user token", "SENTRY_TOKEN", lambda: "sntryu_" + h(64), "https://docs.sentry.io/account/auth-tokens/"),
    ("grafana service account", "GRAFANA_TOKEN", lambda: f"glsa_{a(32)}_{h(8)}", "https://grafana.com/docs/grafana/latest/administration/service-accounts/"),
    ("grafana cloud", "GRAFANA_CLOUD_API_KEY", lambda: "glc_" + r(URLB64, 120), "https://grafana.com/docs/grafana-cloud/account-management/authentication-and-permissions/access-policies/"),
    ("dynatrace", "DT_API_TOKEN", lambda: f"dt0c01.{r(UPPER + DIGITS, 24)}.{r(UPPER + DIGITS, 64)}", "https://docs.dynatrace.com/docs/manage/identity-access-management/access-tokens-and-oauth-clients/access-tokens"),
    ("honeycomb", "HONEYCOMB_API_KEY", lambda: a(22), "https://docs.honeycomb.io/get-started/configure/environments/manage-api-keys/"),
    ("pagerduty", "PAGERDUTY_TOKEN", lambda: "u+" + r(URLB64, 18), "https://developer.pagerduty.com/docs/authentication"),
    ("opsgenie", "OPSGENIE_API_KEY", u, "https://docs.opsgenie.com/docs/api-key-management"),
    ("rollbar", "ROLLBAR_ACCESS_TOKEN", lambda: h(32), "https://docs.rollbar.com/docs/access-tokens"),
    ("bugsnag", "BUGSNAG_API_KEY", lambda: h(32), "https://docs.bugsnag.com/api/data-access/"),
    ("launchdarkly", "LAUNCHDARKLY_SDK_KEY", lambda: "sdk-" + u(), "https://docs.launchdarkly.com/sdk/concepts/client-side-server-side#keys"),
    ("splunk hec", "SPLUNK_HEC_TOKEN", u, "https://docs.splunk.com/Documentation/Splunk/latest/Data/UsetheHTTPEventCollector"),
    ("sumo logic", "SUMOLOGIC_ACCESSKEY", lambda: a(64), "https://help.sumologic.com/docs/manage/security/access-keys/"),
    ("loggly", "LOGGLY_TOKEN", u, "https://documentation.solarwinds.com/en/success_center/loggly/content/admin/customer-token-authentication-token.htm"),
    ("logz.io", "LOGZIO_TOKEN", lambda: r(LOWER, 32), "https://docs.logz.io/docs/user-guide/admin/authentication-tokens/"),
    ("segment", "SEGMENT_WRITE_KEY", lambda: a(32), "https://segment.com/docs/connections/find-writekey/"),
    ("mixpanel", "MIXPANEL_API_SECRET", lambda: h(32), "https://developer.mixpanel.com/reference/authentication"),
    ("amplitude", "AMPLITUDE_SECRET_KEY", lambda: h(32), "https://amplitude.com/docs/apis/authentication"),
    ("intercom", "INTERCOM_ACCESS_TOKEN", lambda: "dG9rOj" + r(URLB64, 54) + "=", "https://developers.intercom.com/docs/build-an-integration/learn-more/authentication"),
    ("zendesk", "ZENDESK_API_TOKEN", lambda: a(40), "https://developer.zendesk.com/api-reference/introduction/security-and-auth/"),
    ("hubspot", "HUBSPOT_ACCESS_TOKEN", lambda: "pat-na1-" + u(), "https://developers.hubspot.com/docs/api/private-apps"),
    ("salesforce", "SALESFORCE_ACCESS_TOKEN", lambda: f"00D{a(12)}!{r(ALNUM + '._', 96)}", "https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_flows.htm"),
    ("okta", "OKTA_API_TOKEN", lambda: "00" + r(URLB64, 40), "https://developer.okta.com/docs/guides/create-an-api-token/main/"),
    ("auth0", "AUTH0_CLIENT_SECRET", lambda: r(URLB64, 64), "https://auth0.com/docs/get-started/applications/application-credentials"),
    ("twitter bearer", "TWITTER_BEARER_TOKEN", lambda: "A" * 22 + r(ALNUM + "%", 90), "https://developer.x.com/en/docs/authentication/oauth-2-0/bearer-tokens"),
    ("twitter consumer secret", "TWITTER_CONSUMER_SECRET", lambda: a(50), "https://developer.x.com/en/docs/authentication/oauth-1-0a/api-key-and-secret"),
    ("facebook access token", "FACEBOOK_ACCESS_TOKEN", lambda: "EAA" + a(180), "https://developers.facebook.com/docs/facebook-login/guides/access-tokens"),
    ("facebook app secret", "FACEBOOK_APP_SECRET", lambda: h(32), "https://developers.facebook.com/docs/facebook-login/security/#appsecret"),
    ("linkedin", "LINKEDIN_CLIENT_SECRET", lambda: a(16), "https://learn.microsoft.com/en-us/linkedin/shared/authentication/authorization-code-flow"),
    ("twitch", "TWITCH_CLIENT_SECRET", lambda: r(LOWER + DIGITS, 30), "https://dev.twitch.tv/docs/authentication/register-app/"),
    ("spotify", "SPOTIFY_CLIENT_SECRET", lambda: h(32), "https://developer.spotify.com/documentation/web-api/concepts/apps"),
    ("dropbox", "DROPBOX_ACCESS_TOKEN", lambda: "sl." + r(URLB64, 135), "https://developers.dropbox.com/oauth-guide"),
    ("box", "BOX_CLIENT_SECRET", lambda: a(32), "https://developer.box.com/guides/authentication/"),
    ("notion", "NOTION_TOKEN", lambda: "ntn_" + a(46), "https://developers.notion.com/docs/authorization"),
    ("notion legacy", "NOTION_API_KEY", lambda: "secret_" + a(43), "https://developers.notion.com/docs/authorization"),
    ("airtable", "AIRTABLE_TOKEN", lambda: f"pat{a(14)}.{h(64)}", "https://airtable.com/developers/web/guides/personal-access-tokens"),
    ("asana", "ASANA_ACCESS_TOKEN", lambda: f"2/{R.randint(10**15, 10**16)}/{R.randint(10**15, 10**16)}:{h(32)}", "https://developers.asana.com/docs/personal-access-token"),
    ("linear", "LINEAR_API_KEY", lambda: "lin_api_" + a(40), "https://developers.linear.app/docs/graphql/working-with-the-graphql-api#personal-api-keys"),
    ("figma", "FIGMA_TOKEN", lambda: "figd_" + r(URLB64, 40), "https://www.figma.com/developers/api#access-tokens"),
    ("contentful", "CONTENTFUL_MANAGEMENT_TOKEN", lambda: "CFPAT-" + r(URLB64, 43), "https://www.contentful.com/developers/docs/references/authentication/"),
    ("typeform", "TYPEFORM_TOKEN", lambda: f"tfp_{a(44)}_{a(14)}", "https://www.typeform.com/developers/get-started/personal-access-token/"),
    ("mapbox", "MAPBOX_SECRET_TOKEN", lambda: "sk.eyJ1Ijoi" + a(20) + "." + r(URLB64, 22), "https://docs.mapbox.com/accounts/guides/tokens/"),
    ("postman", "POSTMAN_API_KEY", lambda: f"PMAK-{h(24)}-{h(34)}", "https://learning.postman.com/docs/developer/postman-api/authentication/"),
    ("doppler", "DOPPLER_TOKEN", lambda: "dp.pt." + a(43), "https://docs.doppler.com/reference/auth-token-formats"),
    ("vault", "VAULT_TOKEN", lambda: "hvs." + r(URLB64, 90), "https://developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes"),
    ("terraform cloud", "TFE_TOKEN", lambda: f"{a(14)}.atlasv1.{r(URLB64, 67)}", "https://developer.hashicorp.com/terraform/cloud-docs/users-teams-organizations/api-tokens"),
    ("pulumi", "PULUMI_ACCESS_TOKEN", lambda: "pul-" + h(40), "https://www.pulumi.com/docs/pulumi-cloud/access-management/access-tokens/"),
    ("1password service account", "OP_SERVICE_ACCOUNT_TOKEN", lambda: "ops_eyJ" + r(URLB64, 300), "https://developer.1password.com/docs/service-accounts/"),
    ("age", "SOPS_AGE_KEY", lambda: "AGE-SECRET-KEY-1" + r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), "https://age-encryption.org/v1"),
    ("circleci", "CIRCLECI_TOKEN", lambda: f"CCIPAT_{a(22)}_{h(40)}", "https://circleci.com/docs/managing-api-tokens/"),
    ("travis", "TRAVIS_API_TOKEN", lambda: r(URLB64, 22), "https://docs.travis-ci.com/user/triggering-builds/"),
    ("buildkite", "BUILDKITE_API_TOKEN", lambda: "bkua_" + h(40), "https://buildkite.com/docs/apis/managing-api-tokens"),
    ("sonarqube", "SONAR_TOKEN", lambda: "squ_" + h(40), "https://docs.sonarsource.com/sonarqube/latest/user-guide/user-account/generating-and-using-tokens/"),
    ("snyk", "SNYK_TOKEN", u, "https://docs.snyk.io/snyk-api/authentication-for-api"),
    ("codecov", "CODECOV_TOKEN", u, "https://docs.codecov.com/docs/codecov-tokens"),
    ("docker hub", "DOCKERHUB_TOKEN", lambda: "dckr_pat_" + r(URLB64, 27), "https://docs.docker.com/security/for-developers/access-tokens/"),
    ("jfrog", "ARTIFACTORY_API_KEY", lambda: "AKCp" + a(69), "https://jfrog.com/help/r/jfrog-platform-administration-documentation/api-key"),
    ("npm", "NPM_TOKEN", lambda: "npm_" + a(36), "https://docs.npmjs.com/about-access-tokens"),
    ("pypi", "PYPI_TOKEN", lambda: "pypi-AgEIcHlwaS5vcmc" + r(URLB64, 70), "https://pypi.org/help/#apitoken"),
    ("rubygems", "GEM_HOST_API_KEY", lambda: "rubygems_" + h(48), "https://guides.rubygems.org/api-key-scopes/"),
    ("nuget", "NUGET_API_KEY", lambda: "oy2" + r(LOWER + DIGITS, 43), "https://learn.microsoft.com/en-us/nuget/nuget-org/publish-a-package#create-an-api-key"),
    ("crates.io", "CARGO_REGISTRY_TOKEN", lambda: "cio" + a(32), "https://doc.rust-lang.org/cargo/reference/registry-authentication.html"),
    ("clojars", "CLOJARS_TOKEN", lambda: "CLOJARS_" + h(60), "https://github.com/clojars/clojars-web/wiki/Deploy-Tokens"),
    ("hex.pm", "HEX_API_KEY", lambda: h(32), "https://hex.pm/docs/publish"),
    ("prefect", "PREFECT_API_KEY", lambda: "pnu_" + a(36), "https://docs.prefect.io/v3/manage/cloud/manage-users/api-keys"),
    ("readme", "README_API_KEY", lambda: "rdme_" + h(70), "https://docs.readme.com/main/reference/intro/authentication"),
    ("scalingo", "SCALINGO_API_TOKEN", lambda: "tk-us-" + r(URLB64, 48), "https://developers.scalingo.com/#authentication"),
    ("infracost", "INFRACOST_API_KEY", lambda: "ico-" + a(32), "https://www.infracost.io/docs/"),
    ("frame.io", "FRAMEIO_TOKEN", lambda: "fio-u-" + r(URLB64, 64), "https://developer.frame.io/docs/getting-started/authentication"),
    ("adafruit io", "ADAFRUIT_IO_KEY", lambda: "aio_" + a(28), "https://io.adafruit.com/api/docs/#authentication"),
    ("ngrok", "NGROK_AUTHTOKEN", lambda: a(27) + "_" + a(21), "https://ngrok.com/docs/agent/#authtokens"),
    ("cloudinary", "CLOUDINARY_API_SECRET", lambda: r(URLB64, 27), "https://cloudinary.com/documentation/how_to_integrate_cloudinary#account_details"),
    ("zoom", "ZOOM_CLIENT_SECRET", lambda: a(32), "https://developers.zoom.us/docs/internal-apps/s2s-oauth/"),
    ("jwt", "JWT_TOKEN", jwt, "https://datatracker.ietf.org/doc/html/rfc7519"),
    ("kubernetes service account", "K8S_TOKEN", jwt, "https://kubernetes.io/docs/reference/access-authn-authz/service-accounts-admin/"),
    ("generic password", "DB_PASSWORD", lambda: a(12) + R.choice("!@#%^*") + a(3), "https://12factor.net/config"),
    ("generic secret", "APP_SECRET", lambda: a(40), "https://12factor.net/config"),
    ("generic api key", "API_KEY", lambda: a(32), "https://12factor.net/config"),
    ("django secret key", "DJANGO_SECRET_KEY", lambda: r(LOWER + DIGITS + "!@#$%^&*(-_=+)", 50), "https://docs.djangoproject.com/en/5.0/ref/settings/#secret-key"),
    ("rails secret key base", "SECRET_KEY_BASE", lambda: h(128), "https://guides.rubyonrails.org/security.html#custom-credentials"),
    ("flask secret", "FLASK_SECRET_KEY", lambda: h(64), "https://flask.palletsprojects.com/en/latest/config/#SECRET_KEY"),
    ("encryption key", "ENCRYPTION_KEY", lambda: b64(32), "https://12factor.net/config"),
]


def camel(env):
    parts = env.lower().split("_")
    return parts[0] + "".join(p.title() for p in parts[1:])


def snake(env):
    return env.lower()


# How a value is written next to its name, in the syntaxes code and configs use.
CONTEXTS = [
    ("env", lambda n, v: f"{n}={v}"),
    ("env-export", lambda n, v: f'export {n}="{v}"'),
    ("dotenv-quoted", lambda n, v: f"{n}='{v}'"),
    ("yaml", lambda n, v: f"{snake(n)}: {v}"),
    ("yaml-nested", lambda n, v: f"env:\n  - name: {n}\n    value: \"{v}\""),
    ("yaml-k8s", lambda n, v: f"spec:\n  containers:\n    - env:\n        {n}: '{v}'"),
    ("json", lambda n, v: f'{{"{camel(n)}": "{v}", "region": "eu-west-1"}}'),
    ("toml", lambda n, v: f'[service]\n{snake(n)} = "{v}"'),
    ("ini", lambda n, v: f"[default]\n{snake(n)} = {v}"),
    ("xml", lambda n, v: f"<config>\n  <{camel(n)}>{v}</{camel(n)}>\n</config>"),
    ("xml-appsettings", lambda n, v: f'<appSettings>\n  <add key="{camel(n)}" value="{v}" />\n</appSettings>'),
    ("properties", lambda n, v: f"{snake(n).replace('_', '.')}={v}"),
    ("python", lambda n, v: f'{snake(n)} = "{v}"'),
    ("python-kwarg", lambda n, v: f'client = Client({snake(n)}="{v}")'),
    ("python-dict", lambda n, v: f'config = {{"{snake(n)}": "{v}"}}'),
    ("js", lambda n, v: f"const {camel(n)} = '{v}';"),
    ("js-object", lambda n, v: f"  {camel(n)}: \"{v}\","),
    ("ts-process-env", lambda n, v: f'process.env.{n} = "{v}";'),
    ("go", lambda n, v: f'{camel(n)} := "{v}"'),
    ("go-const", lambda n, v: f'const {camel(n)} = "{v}"'),
    ("java", lambda n, v: f'private static final String {n} = "{v}";'),
    ("csharp", lambda n, v: f'var {camel(n)} = "{v}";'),
    ("ruby", lambda n, v: f"{snake(n)} = '{v}'"),
    ("ruby-hash", lambda n, v: f'  "{snake(n)}" => "{v}",'),
    ("php", lambda n, v: f"define('{n}', '{v}');"),
    ("php-array", lambda n, v: f"    '{snake(n)}' => '{v}',"),
    ("shell-flag", lambda n, v: f"deploy --{snake(n).replace('_', '-')} {v} --region eu"),
    ("shell-flag-eq", lambda n, v: f"tool --{snake(n).replace('_', '-')}={v}"),
    ("docker-env", lambda n, v: f"docker run -e {n}={v} app:latest"),
    ("dockerfile", lambda n, v: f"ENV {n}={v}"),
    ("github-actions", lambda n, v: f"    env:\n      {n}: {v}"),
    ("terraform", lambda n, v: f'  {snake(n)} = "{v}"'),
    ("rust", lambda n, v: f'let {snake(n)} = "{v}";'),
    ("rust-const", lambda n, v: f'const {n}: &str = "{v}";'),
    ("curl-header", lambda n, v: f'curl -H "Authorization: Bearer {v}" https://api.example.org/v1'),
    ("log-line", lambda n, v: f"2024-05-01 12:00:01 DEBUG config loaded {n}={v} region=eu-west-1"),
]

# Values that only the name makes secret (no format of their own) are tried in every context
# except the Authorization header, whose scheme says it anyway.

# Services whose values have no format of their own (hex, UUIDs, plain random characters): only
# the name next to them makes them secrets, so they are not tried in prose.
FORMATLESS = {
    "aws secret access key", "azure devops pat", "twilio auth token", "mailgun new", "postmark",
    "sparkpost", "razorpay", "paypal client secret", "plaid", "coinbase", "mistral", "cohere",
    "together", "assemblyai", "deepgram", "wandb", "azure openai", "azure storage account key",
    "ibm cloud", "linode", "vultr", "hetzner", "heroku", "cloudflare api token",
    "cloudflare global key", "fastly", "vercel", "railway", "neon", "mongodb atlas", "snowflake",
    "elastic", "redis cloud", "upstash", "confluent", "algolia", "datadog api", "datadog app",
    "honeycomb", "opsgenie", "rollbar", "bugsnag", "splunk hec", "sumo logic", "loggly",
    "logz.io", "segment", "mixpanel", "amplitude", "zendesk", "okta", "auth0",
    "twitter consumer secret", "facebook app secret", "linkedin", "twitch", "spotify", "box",
    "travis", "snyk", "codecov", "hex.pm", "ngrok", "cloudinary", "zoom", "generic password",
    "generic secret", "generic api key", "django secret key", "rails secret key base",
    "flask secret", "encryption key", "pagerduty", "mollie", "gocardless",
}


def positives():
    out = []
    for (service, env, gen, source) in SERVICES:
        picks = R.sample(CONTEXTS, 4)
        for (ctx, render) in picks:
            v = gen()
            out.append({"text": render(env, v), "secret": v, "service": service, "syntax": ctx, "source": source})
    # Private keys, PEM/OpenSSH/PGP.
    for label in ["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "DSA PRIVATE KEY"]:
        body = "\n".join(b64(48) for _ in range(R.randint(3, 8)))
        key = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
        out.append({"text": key, "secret": body.split("\n")[1], "service": "private key", "syntax": "pem", "source": "https://datatracker.ietf.org/doc/html/rfc7468"})
        esc = key.replace("\n", "\\n")
        out.append({"text": f'{{"type": "service_account", "private_key": "{esc}\\n"}}', "secret": body.split("\n")[1], "service": "gcp service account", "syntax": "json", "source": "https://cloud.google.com/iam/docs/keys-create-delete"})
    body = "\n".join(b64(48) for _ in range(5))
    out.append({"text": f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n=Ab3x\n-----END PGP PRIVATE KEY BLOCK-----", "secret": body.split("\n")[1], "service": "pgp private key", "syntax": "armor", "source": "https://datatracker.ietf.org/doc/html/rfc4880#section-6.2"})
    # URLs with credentials.
    for scheme, port, doc in [("postgres", 5432, "https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS"), ("postgresql", 5432, "https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS"), ("mysql", 3306, "https://dev.mysql.com/doc/refman/8.0/en/connecting-using-uri-or-key-value-pairs.html"), ("mongodb+srv", None, "https://www.mongodb.com/docs/manual/reference/connection-string/"), ("mongodb", 27017, "https://www.mongodb.com/docs/manual/reference/connection-string/"), ("redis", 6379, "https://www.iana.org/assignments/uri-schemes/prov/redis"), ("rediss", 6380, "https://www.iana.org/assignments/uri-schemes/prov/rediss"), ("amqp", 5672, "https://www.rabbitmq.com/docs/uri-spec"), ("amqps", 5671, "https://www.rabbitmq.com/docs/uri-spec"), ("https", None, "https://datatracker.ietf.org/doc/html/rfc3986#section-3.2.1"), ("ftp", 21, "https://datatracker.ietf.org/doc/html/rfc1738"), ("smtp", 587, "https://datatracker.ietf.org/doc/html/rfc3986#section-3.2.1")]:
        for _ in range(2):
            pw = a(16)
            host = f"db-{r(LOWER, 6)}.internal" + (f":{port}" if port else "")
            user = R.choice(["app", "admin", "svc_user", "deploy"])
            url = f"{scheme}://{user}:{pw}@{host}/prod"
            ctx = R.choice([lambda u: f"DATABASE_URL={u}", lambda u: f'url: "{u}"', lambda u: f"connecting to {u} ...", lambda u: f"conn = connect('{u}')"])
            out.append({"text": ctx(url), "secret": pw, "service": f"{scheme} url", "syntax": "url", "source": doc})
    pw = a(14)
    out.append({"text": f"jdbc:mysql://db.internal:3306/shop?user=app&password={pw}&useSSL=true", "secret": pw, "service": "jdbc", "syntax": "url-query", "source": "https://dev.mysql.com/doc/connector-j/en/connector-j-reference-jdbc-url-format.html"})
    pw = a(14)
    out.append({"text": f"Server=tcp:db.database.windows.net,1433;Database=shop;User ID=app;Password={pw};Encrypt=True;", "secret": pw, "service": "sql server connection string", "syntax": "ado.net", "source": "https://learn.microsoft.com/en-us/dotnet/framework/data/adonet/connection-string-syntax"})
    k = b64(64)
    out.append({"text": f"DefaultEndpointsProtocol=https;AccountName=store{r(LOWER, 5)};AccountKey={k};EndpointSuffix=core.windows.net", "secret": k, "service": "azure storage connection string", "syntax": "connection-string", "source": "https://learn.microsoft.com/en-us/azure/storage/common/storage-configure-connection-string"})
    pw = a(14)
    out.append({"text": f"machine api.heroku.com\n  login me@corp.test\n  password {pw}", "secret": pw, "service": "netrc", "syntax": "netrc", "source": "https://www.gnu.org/software/inetutils/manual/html_node/The-_002enetrc-file.html"})
    pw = a(14)
    out.append({"text": f"machine github.com login me password {pw}", "secret": pw, "service": "netrc", "syntax": "netrc", "source": "https://www.gnu.org/software/inetutils/manual/html_node/The-_002enetrc-file.html"})
    t = "npm_" + a(36)
    out.append({"text": f"//registry.npmjs.org/:_authToken={t}", "secret": t, "service": "npmrc", "syntax": "npmrc", "source": "https://docs.npmjs.com/cli/v10/configuring-npm/npmrc"})
    t = b64(24)
    out.append({"text": f'{{"auths": {{"https://index.docker.io/v1/": {{"auth": "{t}"}}}}}}', "secret": t, "service": "docker config", "syntax": "json", "source": "https://docs.docker.com/reference/cli/docker/login/"})
    t = b64(900).replace("\n", "")
    out.append({"text": f"users:\n- name: admin\n  user:\n    client-key-data: {t}", "secret": t, "service": "kubeconfig", "syntax": "yaml", "source": "https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/"})
    for flag in ["--password", "--api-key", "--token", "--client-secret", "--auth-token", "-p"]:
        pw = a(18)
        sep = "" if flag == "-p" else R.choice([" ", "="])
        text = f"mysql -u root {flag}{sep}{pw} shop" if flag == "-p" else f"cli login {flag}{sep}{pw}"
        out.append({"text": text, "secret": pw, "service": "command-line flag", "syntax": "cli-flag", "source": "https://dev.mysql.com/doc/refman/8.0/en/connection-options.html"})
    for tmpl in ["curl -u deploy:{} https://api.service.test/v1/ping", "curl --user 'ci:{}' -X POST https://ci.test/hook", "wget --user=bot --password={} https://files.test/a.zip", "sshpass -p '{}' ssh admin@10.0.0.5", "docker login -u ci -p {} registry.test", "echo ok && helm registry login registry.test --username ci --password {}"]:
        pw = a(18)
        out.append({"text": tmpl.format(pw), "secret": pw, "service": "command-line credentials", "syntax": "cli-flag", "source": "https://curl.se/docs/manpage.html#-u"})
    for tmpl in ["ENV['STRIPE_API_KEY'] = '{}'", "os.environ[\"OPENAI_API_KEY\"] = \"{}\"", "process.env[\"API_TOKEN\"] = '{}';", "$_ENV['DB_PASSWORD'] = '{}';"]:
        v = a(32)
        out.append({"text": tmpl.format(v), "secret": v, "service": "environment by index", "syntax": "code-index", "source": "https://docs.python.org/3/library/os.html#os.environ"})
    for _ in range(3):
        b = b64(R.randint(12, 30))
        out.append({"text": f"Authorization: Basic {b}", "secret": b, "service": "http basic auth", "syntax": "header", "source": "https://datatracker.ietf.org/doc/html/rfc7617"})
        t = a(40)
        out.append({"text": f"Authorization: Bearer {t}", "secret": t, "service": "http bearer", "syntax": "header", "source": "https://datatracker.ietf.org/doc/html/rfc6750"})
        t = r(URLB64, 43)
        out.append({"text": f"X-API-Key: {t}", "secret": t, "service": "api key header", "syntax": "header", "source": "https://swagger.io/docs/specification/v3_0/authentication/api-keys/"})
    for _ in range(4):
        t = a(40)
        out.append({"text": f"https://api.service.test/v2/items?api_key={t}&page=2", "secret": t, "service": "api key in query", "syntax": "url-query", "source": "https://swagger.io/docs/specification/v3_0/authentication/api-keys/"})
        t = r(URLB64, 80)
        out.append({"text": f"session {t}", "secret": t, "service": "high entropy", "syntax": "bare", "source": "https://github.com/Yelp/detect-secrets#plugins"})
    # Tokens with a format of their own, found without any name around them.
    for (service, env, gen, source) in SERVICES:
        if service in FORMATLESS:
            continue
        v = gen()
        out.append({"text": f"here is what I found in the logs: {v} (rotated since)", "secret": v, "service": service, "syntax": "prose", "source": source})
    return out


def negatives():
    out = []
    src = lambda s: s
    def add(text, source, kind):
        out.append({"text": text, "source": source, "kind": kind})
    for _ in range(25):
        add(f"commit {h(40)}\nAuthor: Dev <dev@corp.test>", "https://git-scm.com/book/en/v2/Git-Internals-Git-Objects", "commit id")
        add(f"sha256:{h(64)}", "https://github.com/opencontainers/image-spec/blob/main/descriptor.md#digests", "digest")
        add(f'  "integrity": "sha512-{b64(64)}"', "https://docs.npmjs.com/cli/v10/configuring-npm/package-lock-json", "sri hash")
        add(f"request_id={u()} status=200 duration=12ms", "https://datatracker.ietf.org/doc/html/rfc9562", "uuid")
        add(f'{{"id": "{u()}", "name": "widget", "created_at": "2024-01-01T00:00:00Z"}}', "https://datatracker.ietf.org/doc/html/rfc9562", "uuid")
        add(f"trace_id: {h(32)} span_id: {h(16)}", "https://www.w3.org/TR/trace-context/", "trace id")
        add(f"md5({r(LOWER, 8)}.tar.gz) = {h(32)}", "https://www.rfc-editor.org/rfc/rfc1321", "hash")
        add(f"<img src=\"data:image/png;base64,{b64(120)}\" />", "https://datatracker.ietf.org/doc/html/rfc2397", "data uri")
        add(f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64(24)[:43]} dev@laptop", "https://datatracker.ietf.org/doc/html/rfc8709", "ssh public key")
        add(f"https://cdn.service.test/assets/{h(20)}/app.{h(8)}.js", "https://datatracker.ietf.org/doc/html/rfc3986", "url without credentials")
        add(f"git clone git@github.com:{r(LOWER, 6)}/{r(LOWER, 8)}.git", "https://git-scm.com/docs/git-clone#_git_urls", "url without credentials")
        add(f"https://user@{r(LOWER, 6)}.test/path?page=2&sort=desc", "https://datatracker.ietf.org/doc/html/rfc3986#section-3.2.1", "url without password")
    for text in [
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "GOOGLE_API_KEY=AIzaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "OPENAI_API_KEY=sk-...",
        "OPENAI_API_KEY=your-openai-api-key",
        "API_KEY=your-api-key-here",
        "API_KEY=<your-api-key>",
        "api_key: <token>",
        "token: ${GITHUB_TOKEN}",
        "GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}",
        "password: changeme",
        "PASSWORD=changeme",
        "DB_PASSWORD=password",
        "password = \"********\"",
        "secret_key = 'REPLACE_ME'",
        "STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
        "SLACK_BOT_TOKEN=xoxb-your-token",
        "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "api_key = \"example-key\"",
        "API_KEY=sample_api_key",
        "token = \"dummy-token\"",
        "SECRET_KEY=test",
        "SECRET_KEY=test-secret-key",
        "password=test123",
        "client_secret: \"{{ client_secret }}\"",
        "ANTHROPIC_API_KEY=sk-ant-...",
        "apiKey: process.env.API_KEY",
        "export API_KEY=\"$API_KEY\"",
        "password: %(db_password)s",
        "token = os.environ[\"TOKEN\"]",
        "api_key = os.getenv(\"OPENAI_API_KEY\")",
        "const token = req.headers.authorization;",
        "let password = prompt(\"Password:\");",
        "password = getpass.getpass()",
        "def check_password(password: str) -> bool:",
        "if password == confirm_password:",
        "    token: string;",
        "  api_key: Optional[str] = None",
        "The password must be at least 12 characters long.",
        "Reset your password from the account settings page.",
        "Never commit your API key to version control; use a secret manager.",
        "max_tokens: 4096",
        "\"prompt_tokens\": 1520, \"completion_tokens\": 88",
        "primary_key = \"id\"",
        "sort_key: created_at",
        "token_type: bearer",
        "keyboard_layout = \"us\"",
        "foreign_key: user_id",
        "key: value",
        "cache_key = f\"user:{user_id}:profile\"",
        "api_key_env = \"OPENAI_API_KEY\"",
        "password_file: /run/secrets/db_password",
        "key_file = /etc/ssl/private/server.key",
        "TOKEN_URL=https://oauth2.googleapis.com/token",
        "secret_name: prod/db/credentials",
        "passwordless: true",
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.",
        "The quick brown fox jumps over the lazy dog.",
        "https://github.com/rust-lang/rust/pull/12345",
        "https://docs.python.org/3/library/secrets.html",
        "<password></password>",
        "<apiKey>${API_KEY}</apiKey>",
        "<add key=\"ApiKey\" value=\"\" />",
        "--password <PASSWORD>",
        "mysql -u root -p shop",
        "aws configure set aws_secret_access_key YOUR_SECRET_KEY",
        "curl -H \"Authorization: Bearer $TOKEN\" https://api.example.org",
        "Authorization: Bearer <token>",
        "Authorization: Bearer YOUR_ACCESS_TOKEN",
        "postgres://user:password@localhost:5432/db",
        "postgres://postgres:postgres@localhost/test",
        "redis://localhost:6379/0",
        "mongodb://${MONGO_USER}:${MONGO_PASS}@mongo:27017",
        "https://user:<password>@host.test/",
        "SENTRY_DSN=",
        "GITHUB_TOKEN=",
        "secret: true",
        "token_expiry: 3600",
        "api_key_required = false",
        "hashed_password = bcrypt.hashpw(password, bcrypt.gensalt())",
        "self.secret = secret",
        "this.apiKey = apiKey;",
        "private final String password;",
        "String token = tokenService.issue(user);",
        "password := os.Getenv(\"DB_PASSWORD\")",
        "Key ID: 3AA5C34371567BD2",
        "fingerprint: SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s",
        "AKIA in docs: the access key id starts with AKIA",
        "pip install python-dotenv",
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUeXbWlbS9Ho4Yt0b3mQvQ7+6aPz8wCgYIKoZIzj0EAwIw\n-----END CERTIFICATE-----",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEtFkp9Nf0xZy7pQo1bH8rjQ0OWRX1\n-----END PUBLIC KEY-----",
        "version: 0.4.18\nchecksum = \"" + "0" * 64 + "\"",
        "tokenizer = AutoTokenizer.from_pretrained(\"bert-base-uncased\")",
        "num_tokens = len(tokenizer.encode(text))",
        "keyof typeof config",
        "password_reset_url: /account/password/reset",
        "secret_santa_participants = 12",
        "SECRET_KEY = env(\"DJANGO_SECRET_KEY\")",
        "access_token = response.json()[\"access_token\"]",
        "OPENAI_API_KEY=sk-your-key-here",
        "GITHUB_TOKEN=ghp_your_token_here",
        "token: \"<YOUR_TOKEN>\"",
        "API_KEY=\"...\"",
        "password: \"xxxxxxxx\"",
        "api_key = \"1234567890\"",
        "token = \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"",
        "SECRET=0000000000000000",
        "API_TOKEN=abcdefghijklmnopqrstuvwxyz",
        "api_key: \"INSERT_API_KEY_HERE\"",
        "password = \"<%= ENV['DB_PASSWORD'] %>\"",
        "DATABASE_URL=postgres://localhost/app_development",
        "key = \"name\"",
        "sorted(items, key=lambda x: x[1])",
        "monkey: banana",
        "{\"key\": \"Enter\", \"code\": \"Enter\", \"keyCode\": 13}",
        "<key>CFBundleIdentifier</key>",
        "kubectl create secret generic db --from-literal=password=$(cat pw.txt)",
        "echo $GITHUB_TOKEN | docker login ghcr.io -u USERNAME --password-stdin",
        "curl -u \"$USER:$TOKEN\" https://api.example.org",
        "curl -u admin:admin http://localhost:8080/",
        "docker login -u \"$DOCKER_USER\" -p \"$DOCKER_PASS\" registry.test",
        "sshpass -p \"$SSH_PASS\" ssh host",
        "value = os.environ[\"API_KEY\"]",
        "if ENV['API_KEY'] == nil then abort end",
    ]:
        add(text, "https://github.com/Yelp/detect-secrets/blob/master/docs/filters.md", "placeholder or code")
    lorem = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua".split()
    for _ in range(40):
        add(" ".join(R.choice(lorem) for _ in range(R.randint(8, 20))).capitalize() + ".", "https://www.lipsum.com/", "lorem ipsum")
    for _ in range(20):
        name = R.choice(["user_id", "order_id", "session_id", "build_id", "checksum", "etag", "digest", "commit", "revision", "object_id"])
        add(f"{name} = \"{R.choice([h(40), u(), h(32)])}\"", "https://datatracker.ietf.org/doc/html/rfc9562", "identifier")
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for name, rows in [("positive.jsonl", positives()), ("negative.jsonl", negatives())]:
        with open(os.path.join(here, name), "w") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(name, len(rows))


if __name__ == "__main__":
    main()
