#!/usr/bin/env python3
"""Second attack set for ARIA's outbound secret filter: `python3 bench/secrets/attack2.py [LEAK] [FP]`
(release build; `ARIA_BIN` to use another binary). Asserts nothing: a measuring tool, like
bench/secrets/attack.py, whose harness it repeats; every case here is a form that
attack.py does not contain: config formats (Terraform, Helm, systemd, nginx/Apache/HAProxy,
LDAP, Redis, keytool, Gradle, Postman/HAR/SSM/terraform-output JSON, NATS, OpenVPN, ...), code
forms (positional credentials, env-var fallbacks, wrapper constructors, exec-form argv arrays),
Markdown/CSV/HTML tables, chat prose, tool output, vendor tokens without a rule, and false-
positive probes (public keys, pagination tokens, KMS ARNs, Playwright env vars, ...).
A case expected "secret" that comes back "clean" is a LEAK; expected "clean" and got "secret"
is an FP."""
import json, os, random, string, subprocess, sys, tempfile, base64, urllib.parse

ARIA = os.environ.get("ARIA_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "target", "release", "aria")
rnd = random.Random(98765)
def r(n, alpha=string.ascii_letters + string.digits):
    while True:
        s = "".join(rnd.choice(alpha) for _ in range(n))
        need_d = any(c.isdigit() for c in alpha); need_a = any(c.isalpha() for c in alpha)
        if (not need_d or any(c.isdigit() for c in s)) and (not need_a or any(c.isalpha() for c in s)):
            return s
B64 = string.ascii_letters + string.digits + "+/"
B64URL = string.ascii_letters + string.digits + "-_"
HEX = "0123456789abcdef"
LOW36 = string.ascii_lowercase + string.digits
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

PW = "Tq7vRw3nKz9bLp"                  # a password (different from attack.py's)
PW2 = "hG4!sN8q#Vw2"                   # a password with punctuation
AWS_ID = "AKIA" + r(16, string.ascii_uppercase + string.digits)
AWS_SECRET = r(40, B64)
HEX32 = r(32, HEX)
HEX40 = r(40, HEX)
HEX64 = r(64, HEX)
TOK32 = r(32)
TOK40 = r(40)
GMAIL_APP = " ".join(r(4, string.ascii_lowercase) for _ in range(4))

cases = []   # (class, name, text, expected)
def C(cls, name, text, exp="secret"):
    cases.append((cls, name, text, exp))

# ---- controls: the same values in forms the filter is known to catch (proves the values count) ----
C("control", ".env password", f"DB_PASSWORD={PW}")
C("control", "YAML password alone on line", f"password: {PW}")
C("control", "JSON api_key", f'{{"api_key": "{TOK32}"}}')
C("control", "Authorization Bearer", f"Authorization: Bearer {TOK40}")
C("control", "--password flag", f"app --password {PW}")
C("control", "python kwarg password", f'connect(host="db", user="app", password="{PW}")')
C("control", "AWS secret by name", f"aws_secret_access_key = {AWS_SECRET}")
C("control", "datadog key by name", f"DD_API_KEY={HEX32}")

# ======================= BYPASS PROBES (expected: secret) =======================

# ---- name and value in separate fields (JSON exports, tool output) ----
C("kv-fields", "Postman environment export", '{"id":"' + r(8, HEX) + '","name":"prod","values":[{"key":"api_key","value":"' + TOK32 + '","type":"secret","enabled":true}]}')
C("kv-fields", "Postman env (default type)", '{"key": "password", "value": "' + PW + '", "type": "default", "enabled": true}')
C("kv-fields", "HAR request header Authorization", '{"headers": [{"name": "Authorization", "value": "Bearer ' + TOK40 + '"}]}')
C("kv-fields", "HAR request header X-API-Key", '{"name": "X-API-Key", "value": "' + TOK32 + '"}')
C("kv-fields", "HAR cookie sessionid", '"cookies": [{"name": "sessionid", "value": "' + r(32, LOW36) + '", "httpOnly": true}]')
C("kv-fields", "terraform output -json sensitive", '{"db_password": {"sensitive": true, "type": "string", "value": "' + PW + '"}}')
C("kv-fields", "aws ssm get-parameter --with-decryption", '{"Parameter": {"Name": "/prod/db/password", "Type": "SecureString", "Value": "' + PW + '", "Version": 3}}')
C("kv-fields", "aws secretsmanager list w/ value pair", '{"Name": "prod/api-token", "SecretString": "' + TOK40 + '"}')
C("kv-fields", "Terraform variable default", 'variable "db_password" {\n  type      = string\n  sensitive = true\n  default   = "' + PW + '"\n}')
C("kv-fields", "Jenkins password parameter defaultValue", "password(name: 'DB_PASSWORD', defaultValue: '" + PW + "', description: 'db')")
C("kv-fields", "Jenkins string parameter API token", "string(name: 'API_TOKEN', defaultValue: '" + TOK32 + "')")
C("kv-fields", "GitHub Actions workflow_dispatch input default", "inputs:\n  api_token:\n    description: token\n    default: " + TOK32)
C("kv-fields", "ECS task def environment pair", '"environment": [{"name": "DB_PASSWORD", "value": "' + PW + '"}]')
C("kv-fields", "CloudFormation parameter Default", "Parameters:\n  DBPassword:\n    Type: String\n    NoEcho: true\n    Default: " + PW)
C("kv-fields", "Azure ARM parameters file", '"adminPassword": {\n  "value": "' + PW + '"\n}')
C("control", "Bruno env vars block", 'vars {\n  apiToken: ' + TOK32 + '\n}\nvars:secret [\n  apiToken\n]')
C("kv-fields", "Vault operator init unseal key", "Unseal Key 1: " + r(43, B64) + "=\nUnseal Key 2: " + r(43, B64) + "=")
C("kv-fields", "consul acl bootstrap SecretID", "AccessorID:       " + "e4b1a8c2-5d3f-4a6b-9c8d-7e6f5a4b3c2d" + "\nSecretID:         " + "6a1f3c9e-2b7d-4e8a-b5c4-d3e2f1a0b9c8")
C("kv-fields", "nomad acl bootstrap Secret ID", "Accessor ID  = 2c8d3e4f-5a6b-7c8d-9e0f-1a2b3c4d5e6f\nSecret ID    = 9f8e7d6c-5b4a-3c2d-1e0f-a9b8c7d6e5f4")
C("kv-fields", "Markdown table row", "| Variable | Value |\n|---|---|\n| DB_PASSWORD | " + PW + " |")
C("kv-fields", "CSV name,value", "name,value\nSTRIPE_SECRET," + TOK32)
C("kv-fields", "HTML table cells", "<tr><td>Password</td><td>" + PW + "</td></tr>")

# ---- interpolation with a default value ----
C("default", "Spring @Value default", '@Value("${db.password:' + PW + '}")')
C("default", "application.yml ${VAR:default}", "spring:\n  datasource:\n    password: ${DB_PASSWORD:" + PW + "}")
C("default", "compose ${VAR:-default}", "    environment:\n      - POSTGRES_PASSWORD=${POSTGRES_PASSWORD:-" + PW + "}")
C("default", "shell ${VAR:-default}", 'psql "host=db user=app password=${PGPASS:-' + PW + '}"')
C("default", "python os.getenv default", 'DB_PASSWORD = os.getenv("DB_PASSWORD", "' + PW + '")')
C("default", "python os.environ.get default", 'SECRET_KEY = os.environ.get("SECRET_KEY", "' + r(50, string.ascii_lowercase + string.digits + "!@#%^&*-_=+") + '")')
C("default", "python `or` fallback", 'api_key = os.environ.get("API_KEY") or "' + TOK32 + '"')
C("default", "node || fallback", "const password = process.env.DB_PASSWORD || '" + PW + "';")
C("default", "node ?? fallback", "const token = process.env.API_TOKEN ?? '" + TOK32 + "'")
C("default", "go getEnv helper default", 'dbPass := getEnv("DB_PASSWORD", "' + PW + '")')
C("default", "ruby ENV.fetch default", 'ENV.fetch("DB_PASSWORD", "' + PW + '")')
C("default", "C# ?? fallback", 'var pwd = Environment.GetEnvironmentVariable("DB_PASSWORD") ?? "' + PW + '";')
C("default", "Rust unwrap_or", 'let token = std::env::var("API_TOKEN").unwrap_or("' + TOK32 + '".into());')

# ---- positional credential arguments (beyond attack.py's jwt.encode) ----
C("positional", "python smtplib login", 'server.login("alerts@example.com", "' + PW + '")')
C("positional", "python ftplib login", "ftp.login('deploy', '" + PW + "')")
C("positional", "python requests auth tuple", "requests.get(url, auth=('admin', '" + PW + "'))")
C("positional", "python HTTPBasicAuth", "auth = HTTPBasicAuth('admin', '" + PW + "')")
C("positional", "python ldap3 Connection", "conn = Connection(server, 'cn=admin,dc=example,dc=org', '" + PW + "', auto_bind=True)")
C("positional", "python Fernet key", "f = Fernet(b'" + base64.urlsafe_b64encode(os.urandom(32)).decode() + "')")
C("positional", "python hmac.new key", "sig = hmac.new(b'" + TOK32 + "', body, hashlib.sha256).hexdigest()")
C("positional", "twilio Client(sid, token)", 'client = Client("AC' + r(32, HEX) + '", "' + r(32, HEX) + '")')
C("positional", "algolia client admin key", "client = algoliasearch('" + r(10, string.ascii_uppercase + string.digits) + "', '" + r(32, HEX) + "')")
C("positional", "paramiko connect positional-ish", "ssh.connect('10.0.0.5', 22, 'root', '" + PW + "')")
C("positional", "Java DriverManager.getConnection", 'Connection c = DriverManager.getConnection(url, "sa", "' + PW + '");')
C("positional", "Java builder .password()", 'DataSourceBuilder.create().url(url).username("app").password("' + PW + '").build();')
C("positional", "Java builder .apiKey()", 'OpenAiService svc = OpenAiClient.builder().apiKey("' + TOK40 + '").build();')
C("positional", "OkHttp Credentials.basic", 'String cred = Credentials.basic("admin", "' + PW + '");')
C("positional", "C# NetworkCredential", 'client.Credentials = new NetworkCredential("svc_backup", "' + PW + '");')
C("positional", "C# AuthenticationHeaderValue", 'http.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", "' + TOK40 + '");')
C("positional", "Go smtp.PlainAuth", 'auth := smtp.PlainAuth("", "alerts@example.com", "' + PW + '", "smtp.example.com")')
C("positional", "Go req.Header.Set Authorization", 'req.Header.Set("Authorization", "Bearer ' + TOK40 + '")')
C("positional", "Go req.Header.Add X-Api-Key", 'req.Header.Add("X-Api-Key", "' + TOK32 + '")')
C("positional", "Java .header(Authorization)", 'HttpRequest.newBuilder().header("Authorization", "Bearer ' + TOK40 + '")')
C("positional", "JS axios headers set", "axios.defaults.headers.common['Authorization'] = 'Bearer " + TOK40 + "';")
C("positional", "PHP PDO constructor", "$pdo = new PDO('mysql:host=db;dbname=app', 'root', '" + PW + "');")
C("positional", "PHP mysqli_connect", '$c = mysqli_connect("localhost", "root", "' + PW + '", "app");')
C("positional", "PHP ldap_bind", '$ok = ldap_bind($ds, "cn=admin,dc=example,dc=org", "' + PW + '");')
C("positional", "Ruby Net::SMTP start", "smtp.start('example.com', 'alerts', '" + PW + "', :login)")
C("positional", "Rust Credentials::new", 'let creds = Credentials::new("' + AWS_ID[:4] + 'XXXX", "' + AWS_SECRET + '", None, None, "static");')
C("positional", "pydantic SecretStr wrapper", 'password = SecretStr("' + PW + '")')
C("positional", "Rust SecretString wrapper", 'let api_key = SecretString::new("' + TOK32 + '".into());')
C("positional", "Rust String::from", 'let password = String::from("' + PW + '");')
C("positional", "PowerShell ConvertTo-SecureString", "$pw = ConvertTo-SecureString '" + PW + "' -AsPlainText -Force")
C("positional", "PowerShell PSCredential", "$cred = New-Object PSCredential('CORP\\svc', (ConvertTo-SecureString \"" + PW + "\" -AsPlainText -Force))")

# ---- exec-form argv arrays ----
C("argv", "compose command list redis --requirepass", 'command: ["redis-server", "--requirepass", "' + PW + '"]')
C("argv", "compose healthcheck mysqladmin -p", 'test: ["CMD", "mysqladmin", "ping", "-h", "localhost", "-p' + PW + '"]')
C("argv", "k8s args --password", 'args: ["--user", "admin", "--password", "' + PW + '"]')
C("argv", "k8s args --api-key YAML list", "args:\n  - --api-key\n  - " + TOK32)
C("argv", "python subprocess sshpass", 'subprocess.run(["sshpass", "-p", "' + PW + '", "ssh", host])')
C("argv", "python subprocess mysql -p glued", 'subprocess.check_call(["mysql", "-u", "root", "-p' + PW + '", "app"])')
C("argv", "Dockerfile CMD exec form --token", 'CMD ["agent", "--token", "' + TOK40 + '"]')

# ---- CLI tools not covered ----
C("cli", "keytool -storepass", "keytool -importcert -alias ca -file ca.crt -keystore trust.jks -storepass " + PW + " -noprompt")
C("cli", "jarsigner -storepass -keypass", "jarsigner -keystore rel.jks -storepass " + PW + " -keypass " + PW2 + " app.apk upload")
C("cli", "ssh-keygen -N passphrase", "ssh-keygen -t ed25519 -f ~/.ssh/deploy -N '" + PW + "'")
C("cli", "mysql -p'quoted'", "mysql -h db -u root -p'" + PW + "' app")
C("cli", 'mysqldump -p"quoted"', 'mysqldump -uroot -p"' + PW + '" --all-databases > all.sql')
C("cli", "echo | sudo -S", "echo '" + PW + "' | sudo -S apt-get update")
C("cli", "echo | docker login --password-stdin", "echo \"" + PW + "\" | docker login -u bob --password-stdin registry.example.com")
C("cli", "chpasswd", "echo 'deploy:" + PW + "' | chpasswd")
C("cli", "windows net user /add", "net user svc_backup " + PW + " /add")
C("cli", "vault login legacy s. token", "vault login s." + r(24))
C("cli", "ngrok add-authtoken", "ngrok config add-authtoken " + r(27) + "_" + r(21))
C("cli", "poetry http-basic", "poetry config http-basic.private ci-bot " + PW)
C("cli", "lftp -u user,pass", "lftp -u deploy," + PW + " sftp://files.example.com")
C("cli", "az login -p", "az login --service-principal -u 1b2c3d4e-0000-4000-8000-123456789abc -p " + r(40, string.ascii_letters + string.digits + "_-.") + " --tenant example.onmicrosoft.com")
C("cli", "expect send after password prompt", 'expect "password:"\nsend "' + PW + '\\r"')
C("cli", "redis-server --requirepass (compose command)", "command: redis-server --appendonly yes --requirepass " + PW)
C("cli", "influx -password", "influx -username admin -password " + PW + " -execute 'SHOW DATABASES'")

# ---- server/daemon configs with space-separated or odd directives ----
C("daemon", "redis.conf requirepass", "bind 127.0.0.1\nrequirepass " + PW)
C("daemon", "redis.conf masterauth", "replicaof 10.0.0.1 6379\nmasterauth " + PW)
C("daemon", "redis ACL user line", "user app on >" + PW + " ~app:* +@all")
C("daemon", "nginx proxy_set_header Authorization", 'proxy_set_header Authorization "Basic ' + base64.b64encode(("admin:" + PW).encode()).decode() + '";')
C("daemon", "Apache RequestHeader Authorization", 'RequestHeader set Authorization "Bearer ' + TOK40 + '"')
C("daemon", "Apache AuthLDAPBindPassword quoted", 'AuthLDAPBindDN "cn=apache,dc=example,dc=org"\nAuthLDAPBindPassword "' + PW + '"')
C("daemon", "HAProxy stats auth", "listen stats\n  bind :8404\n  stats auth admin:" + PW)
C("daemon", "HAProxy userlist insecure-password", "userlist ops\n  user admin insecure-password " + PW)
C("daemon", "nslcd.conf bindpw", "binddn cn=nslcd,dc=example,dc=org\nbindpw " + PW)
C("daemon", "sssd ldap_default_authtok", "[domain/example]\nldap_default_bind_dn = cn=sssd,dc=example,dc=org\nldap_default_authtok = " + PW)
C("daemon", "slapd olcRootPW plaintext", "dn: olcDatabase={1}mdb,cn=config\nolcRootPW: " + PW)
C("daemon", "strongSwan ipsec.secrets PSK", ': PSK "' + PW + '"')
C("daemon", "Postfix sasl_passwd", "[smtp.gmail.com]:587 alerts@example.com:" + GMAIL_APP.replace(" ", ""))
C("daemon", "msmtprc password w/ gmail app pw", "account gmail\nhost smtp.gmail.com\nuser alerts@example.com\npassword " + GMAIL_APP)
C("daemon", "fetchmailrc", 'poll imap.example.com protocol IMAP user "bob" password "' + PW + '"')
C("daemon", "offlineimap remotepass", "[Repository Remote]\ntype = IMAP\nremoteuser = bob\nremotepass = " + PW)
C("daemon", "Squid cache_peer login=", "cache_peer proxy.example.com parent 3128 0 no-query login=bob:" + PW)
C("daemon", "curl --config user =", 'url = "https://api.example.com/v1"\nuser = "bob:' + PW + '"')
C("daemon", "Maven settings-security master", "<settingsSecurity>\n  <master>{" + r(43, B64) + "=}</master>\n</settingsSecurity>")
C("daemon", "composer auth.json bearer", '{"bearer": {"repo.example.org": "' + TOK40 + '"}}')
C("daemon", ".yarnrc.yml npmAuthIdent", 'npmRegistries:\n  "https://npm.example.com":\n    npmAlwaysAuth: true\n    npmAuthIdent: "ci-bot:' + PW + '"')
C("daemon", "Gradle Groovy signingConfigs", "signingConfigs {\n    release {\n        storeFile file('rel.jks')\n        storePassword '" + PW + "'\n        keyAlias 'upload'\n        keyPassword '" + PW2 + "'\n    }\n}")
C("daemon", "Gradle Groovy credentials block", 'credentials {\n    username "deployer"\n    password "' + PW + '"\n}')
C("daemon", ".env unquoted password with spaces (dotenv)", "SMTP_PASSWORD=" + GMAIL_APP)

# ---- YAML / TOML / Python syntax variants ----
C("syntax", "YAML anchor on password", "db: &db\n  user: app\n  password: &pw " + PW)
C("syntax", "YAML !!str tag", "password: !!str " + PW)
C("syntax", "Ansible !unsafe tag", "ansible_become_password: !unsafe '" + PW2 + "'")
C("syntax", "TOML multi-line basic string", 'password = """' + PW + '"""')
C("syntax", "Python triple-quoted", "API_TOKEN = '''" + TOK32 + "'''")
C("syntax", "Go struct raw string", "cfg := Config{\n\tPassword: `" + PW + "`,\n}")
C("syntax", "Markdown bold label", "**Password:** " + PW)
C("syntax", "Markdown list bold label", "- **API key**: " + TOK32)
C("syntax", "YAML key: value followed by other key (flow-less one line log)", "user=app password: " + PW + " host=db")

# ---- prose / chat forms ----
C("prose", "prose: password for X is", "The admin password for the staging database is " + PW)
C("prose", "prose: Password for user:", "Password for bob: " + PW)
C("prose", "prose: vendor API key colon", "Here's the Datadog API key: " + HEX32)
C("prose", "prose: token colon mid-sentence", "ok, use this token: " + TOK40 + " for the deploy")
C("prose", "prose: username X, password Y", "Login with username admin, password " + PW)
C("prose", "prose: credentials slash", "creds are admin / " + PW)
C("prose", "prose: key on the next line", "Your new API key (copy it now, it will not be shown again):\n\n" + TOK40)
C("prose", "prose: recovery codes", "GitHub recovery codes:\n" + "\n".join(r(5, HEX) + "-" + r(5, HEX) for _ in range(4)))

# ---- key material formats without a rule ----
OVPN = "-----BEGIN OpenVPN Static key V1-----\n" + "\n".join(r(32, HEX) for _ in range(16)) + "\n-----END OpenVPN Static key V1-----"
C("keymat", "OpenVPN static key (tls-auth)", OVPN)
C("keymat", "OpenVPN inline <tls-crypt>", "<tls-crypt>\n" + OVPN + "\n</tls-crypt>")
C("keymat", "NATS nkey seed in .creds", "-----BEGIN USER NKEY SEED-----\nSUA" + r(55, B32) + "\n------END USER NKEY SEED------")
C("keymat", "NATS nkey seed bare", "seed: SUA" + r(55, B32))
C("keymat", "Solana keypair JSON byte array", "[" + ",".join(str(rnd.randrange(256)) for _ in range(64)) + "]")
C("keymat", "Rust const secret byte array", "const HMAC_KEY: [u8; 32] = [" + ", ".join(f"0x{rnd.randrange(256):02x}" for _ in range(32)) + "];")
C("keymat", "hardhat accounts private key", 'sepolia: { url: RPC_URL, accounts: ["0x' + HEX64 + '"] }')
C("keymat", "SSH2 (ssh.com) private key 4-dash header", "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key\"\n" + "\n".join(r(70, B64) for _ in range(6)) + "\n---- END SSH2 ENCRYPTED PRIVATE KEY ----")
C("keymat", "k3s node-token bare", "K10" + HEX64 + "::server:" + HEX32)
C("keymat", "Stellar secret seed", "S" + r(55, B32))
C("keymat", "Ethereum keystore-less raw key in .env quoted hex no 0x", 'const wallet = new ethers.Wallet("' + HEX64 + '", provider);')
C("keymat", "Tink/JWK oct symmetric key k", '{"kty":"oct","kid":"hmac-1","alg":"HS256","k":"' + r(43, B64URL) + '"}')

# ---- vendor token formats with no rule (bare, or in a positional/non-named spot) ----
C("vendor", "Tavily key positional", 'client = TavilyClient("tvly-' + r(32) + '")')
C("vendor", "NVIDIA nvapi key positional (64 chars: entropy)", 'client = NvidiaClient("nvapi-' + r(64, B64URL) + '")')
C("vendor", "Jina key positional", 'embed("jina_' + r(60) + '")')
C("vendor", "Cerebras csk- key positional", 'Cerebras("csk-' + r(48, LOW36) + '")')
C("vendor", "Firecrawl fc- key positional", 'FirecrawlApp("fc-' + HEX32 + '")')
C("vendor", "Voyage pa- key positional", 'voyageai.Client("pa-' + r(43, B64URL) + '")')
C("vendor", "Tailscale auth key bare", "tskey-auth-k" + r(16) + "-" + r(33))
C("vendor", "Okta SSWS-less token bare", "00" + r(40, B64URL))
C("vendor", "Cloudflare API token (40 chars) bare in wrangler output", "Created API token: " + r(40, B64URL) + "\nStore it now; it will not be shown again.")
C("vendor", "curl -H Api-Token", 'curl -s -H "Api-Token: ' + TOK40 + '" https://api.example.com/v2/items')
C("vendor", "curl -H Fastly-Key", 'curl -H "Fastly-Key: ' + TOK32 + '" -X POST https://api.fastly.com/service/x/purge_all')
C("vendor", "curl -H Access-Token", "curl -H 'Access-Token: " + TOK40 + "' https://api.example.com/me")
C("vendor", "Azure Functions ?code= key", "https://myfunc.azurewebsites.net/api/HttpTrigger1?code=" + r(54, B64URL) + "==")
C("vendor", "Docker swarm join token bare", "SWMTKN-1-" + r(50, LOW36) + "-" + r(25, LOW36))

# ======================= FALSE-POSITIVE PROBES (expected: clean) =======================
C("fp", "GitHub repo public key (for encrypting secrets)", '{"key_id": "568250167242549743", "key": "' + r(43, B64) + '="}', "clean")
C("fp", "VAPID public key", "VAPID_PUBLIC_KEY=B" + r(86, B64URL), "clean")
C("fp", "PostHog public project key", "NEXT_PUBLIC_POSTHOG_KEY=phc_" + r(43), "clean")
C("fp", "reCAPTCHA site key", "RECAPTCHA_SITE_KEY=6Le" + r(37, B64URL), "clean")
C("fp", "JSON public_key DER base64", '"public_key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE' + r(52, B64) + '=="', "clean")
C("fp", "cosign/sigstore signature", '{"base64Signature": "MEUCIQ' + r(90, B64) + '"}', "clean")
C("fp", "ssh-keygen -lf fingerprint", "256 SHA256:" + r(43, B64) + " deploy@ci (ED25519)", "clean")
C("fp", "ssh key fingerprint YAML", "ssh_key_fingerprint: SHA256:" + r(43, B64), "clean")
C("fp", "apt-key recv-keys fingerprint", "RUN apt-key adv --keyserver hkp://keyserver.ubuntu.com:80 --recv-keys 7EA0A9C3F273FCD8", "clean")
C("fp", "gpg --recv-keys long fpr", "gpg --keyserver hkps://keys.openpgp.org --recv-keys 4ED778F539E3634C779C87C6D7062848A1AB005C", "clean")
C("fp", "gpg --list-secret-keys output", "sec   rsa4096/3AA5C34371567BD2 2016-03-10 [SC]\n      4ED778F539E3634C779C87C6D7062848A1AB005C\nuid           [ultimate] Bob <bob@example.org>", "clean")
C("fp", "AWS CLI NextToken", '{"Items": [], "NextToken": "' + r(120, B64) + '=="}', "clean")
C("fp", "Google API nextPageToken", '{"files": [], "nextPageToken": "' + r(44, B64URL) + '"}', "clean")
C("fp", "AWS ClientRequestToken uuid", '"ClientRequestToken": "a1b2c3d4-5678-4e90-ab12-34567890cdef"', "clean")
C("fp", "ERC-20 tokenAddress", '"tokenAddress": "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"', "clean")
C("fp", "token contract address YAML", "token_address: 0xdAC17F958D2ee523a2206206994597C13D831ec7", "clean")
C("fp", "ethereum tx hash", '"transactionHash": "0x' + HEX64 + '"', "clean")
C("fp", "Terraform S3 backend key", 'terraform {\n  backend "s3" {\n    bucket = "acme-tfstate"\n    key    = "prod/us-east-1/network-2024.tfstate"\n  }\n}', "clean")
C("fp", "KMS key ARN", "kms_key: arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab", "clean")
C("fp", "gcloud KMS key resource name", "gcloud kms decrypt --key=projects/acme-prod-123/locations/us/keyRings/app-ring/cryptoKeys/db-key --ciphertext-file=x.enc --plaintext-file=-", "clean")
C("fp", "relative key path in quotes", 'ssl_key = "certs/server-2024.key"', "clean")
C("fp", "systemd LoadCredential", "LoadCredential=db-pass:/etc/credstore/db-pass", "clean")
C("fp", "Playwright PW_TEST_HTML_REPORT_OPEN", "PW_TEST_HTML_REPORT_OPEN=on-failure", "clean")
C("fp", "psk_identity", "psk_identity: client1", "clean")
C("fp", "render pass name", "first_pass: shadow_depth", "clean")
C("fp", "glob pattern var pat", 'search_pat = "src/**/*.rs"', "clean")
C("fp", "Terraform sensitive plan output", "  + master_password = (sensitive value)\n  ~ api_token       = (sensitive value)", "clean")
C("fp", "terraform output sensitive", 'db_password = <sensitive>', "clean")
C("fp", "HCL references", 'password = random_password.db.result\ntoken    = var.github_token\napi_key  = data.vault_generic_secret.app.data["api_key"]', "clean")
C("fp", "Ansible vaulted value", "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  " + r(64, HEX) + "\n  " + r(64, HEX), "clean")
C("fp", "SOPS encrypted value", "password: ENC[AES256_GCM,data:" + r(16, B64) + ",iv:" + r(43, B64) + "=,tag:" + r(22, B64) + "==,type:str]", "clean")
C("fp", "GitHub Actions secrets reference", "with:\n  username: ${{ secrets.DOCKERHUB_USER }}\n  password: ${{ secrets.DOCKERHUB_TOKEN }}", "clean")
C("fp", "Actions masked log", "Run docker login -u ci -p ***\nLogin Succeeded", "clean")
C("fp", "kubectl describe secret", "Name:         db-credentials\nType:  Opaque\n\nData\n====\npassword:  16 bytes\nusername:  3 bytes", "clean")
C("fp", "aws configure list", "      Name                    Value             Type    Location\n      ----                    -----             ----    --------\n   profile                <not set>             None    None\naccess_key     ****************QX7A shared-credentials-file\nsecret_key     ****************9fKe shared-credentials-file\n    region                us-east-1      config-file    ~/.aws/config", "clean")
C("fp", "psql auth failure message", 'psql: error: connection to server at "db" (10.0.0.5), port 5432 failed: FATAL:  password authentication failed for user "app"', "clean")
C("fp", "mysql client warning", "mysql: [Warning] Using a password on the command line interface can be insecure.", "clean")
C("fp", "git config --list credential helper", "credential.helper=store\ncredential.https://github.com.username=bob\nuser.email=bob@example.org", "clean")
C("fp", "sshd_config auth directives", "PasswordAuthentication no\nPubkeyAuthentication yes\nAuthorizedKeysFile .ssh/authorized_keys\nKbdInteractiveAuthentication no", "clean")
C("fp", "nginx auth_basic", 'auth_basic "Restricted";\nauth_basic_user_file /etc/nginx/.htpasswd;', "clean")
C("fp", "login.defs PASS_MAX_DAYS", "PASS_MAX_DAYS\t99999\nPASS_MIN_DAYS\t0\nPASS_WARN_AGE\t7", "clean")
C("fp", "Django password validators", "AUTH_PASSWORD_VALIDATORS = [\n    {'NAME': 'django.contrib.auth.password_validation.MinimumLengthValidator'},\n]", "clean")
C("fp", "Kafka config non-secret keys", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nssl.keystore.type=PKCS12\nssl.endpoint.identification.algorithm=https", "clean")
C("fp", "OpenAI logprobs token", '{"token": " Paris", "logprob": -0.0012, "bytes": [32, 80, 97, 114, 105, 115]}', "clean")
C("fp", "HF special tokens", '{"bos_token": "<s>", "eos_token": "</s>", "pad_token": "[PAD]", "unk_token": "<unk>", "model_max_length": 4096}', "clean")
C("fp", "Nix store path", "/nix/store/9krlzvny65gdc8s7kpb6lkx8cd02c25b-bash-5.2-p15/bin/bash", "clean")
C("fp", "Nix fetch hash", 'src = fetchFromGitHub { owner = "x"; repo = "y"; rev = "v1.2.3"; hash = "sha256-' + r(43, B64) + '="; };', "clean")
C("fp", "source map mappings", '{"version":3,"sources":["a.ts"],"mappings":";;AAAA,SAAS,GAAG,CAAC,CAAS;IACnB,OAAO,CAAC,GAAG,CAAC,CAAC;AACf,CAAC"}', "clean")
C("fp", "PGP public key block", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + "\n".join(r(64, B64) for _ in range(6)) + "\n=" + r(4, B64) + "\n-----END PGP PUBLIC KEY BLOCK-----", "clean")
C("fp", "age encrypted file armor", "-----BEGIN AGE ENCRYPTED FILE-----\n" + "\n".join(r(64, B64) for _ in range(4)) + "\n-----END AGE ENCRYPTED FILE-----", "clean")
CERT_PEM = "-----BEGIN CERTIFICATE-----\nMIIC/jCCAeagAwIBAgIBADANBgkqhkiG9w0BAQsFADAVMRMwEQYDVQQDEwprdWJl\n" + "\n".join(r(64, B64) for _ in range(15)) + "\n" + r(20, B64) + "=\n-----END CERTIFICATE-----\n"
C("fp", "X.509 certificate in kubeconfig (base64 of PEM)", "    certificate-authority-data: " + base64.b64encode(CERT_PEM.encode()).decode(), "clean")
C("fp", "bitcoin address", "send to bc1q" + r(38, "023456789acdefghjklmnpqrstuvwxyz"), "clean")
C("fp", "docker container id", "CONTAINER ID   IMAGE\n" + r(12, HEX) + "   nginx:1.25", "clean")
C("fp", "k8s secretName reference", "tls:\n  - hosts: [app.example.com]\n    secretName: app-example-com-tls-2024", "clean")
C("fp", "credentialsId reference", "withCredentials([usernamePassword(credentialsId: 'nexus-deploy-2024', usernameVariable: 'U', passwordVariable: 'P')])", "clean")
C("fp", "Authorization with command substitution", 'curl -H "Authorization: Bearer $(gcloud auth print-access-token)" https://x', "clean")
C("fp", "WWW-Authenticate challenge", 'WWW-Authenticate: Bearer realm="api", error="invalid_token", error_description="The access token expired"', "clean")
C("fp", "Traefik basicauth apr1 hash", "traefik.http.middlewares.auth.basicauth.users=admin:$$apr1$$" + r(8, LOW36) + "$$" + r(22, string.ascii_letters + string.digits + "./"), "clean")
C("fp", "Java keystore alias + type", "server.ssl.key-store-type=PKCS12\nserver.ssl.key-alias=tomcat\nserver.ssl.key-store=classpath:keystore.p12", "clean")
C("fp", "OAuth well-known endpoints", '{"token_endpoint": "https://auth.example.com/oauth2/token", "jwks_uri": "https://auth.example.com/.well-known/jwks.json", "token_endpoint_auth_methods_supported": ["client_secret_basic"]}', "clean")
C("fp", "token usage stats", "prompt_tokens=1532 completion_tokens=211 total_tokens=1743 cached_tokens=1024", "clean")
C("fp", "actions/cache log line", "Cache restored from key: Linux-cargo-" + HEX64, "clean")
C("fp", "CircleCI restore_cache key (literal)", "- restore_cache:\n    keys:\n      - v2-deps-linux-2024-05-" + HEX40[:12], "clean")
C("fp", "ULID/KSUID ids", '{"id": "01HZX3K8Q9V7M2N4P6R8T0W2Y4", "ksuid": "2CBnZ1sdkvdB5S2TYZJcjiE8xGk"}', "clean")

def run(texts):
    inp = "".join(json.dumps({"input": t}) + "\n" for t in texts)
    with tempfile.TemporaryDirectory(prefix="aria_home_") as home:
        p = subprocess.run([ARIA, "check", "secrets", "--jsonl"], input=inp, capture_output=True,
                           text=True, env={**os.environ, "ARIA_HOME": home}, timeout=300)
    out = [json.loads(l) for l in p.stdout.split("\n") if l.strip()]
    if len(out) != len(texts):
        sys.exit(f"got {len(out)} answers for {len(texts)} inputs; stderr: {p.stderr[:500]}")
    return out

if __name__ == "__main__":
    res = run([c[2] for c in cases])
    only = sys.argv[1:]  # optional filter: LEAK, FP
    width = max(len(f"{c[0]}/{c[1]}") for c in cases)
    leaks = fps = 0
    nsec = sum(1 for c in cases if c[3] == "secret"); nclean = len(cases) - nsec
    for (cls, name, text, exp), o in zip(cases, res):
        got = o["verdict"]
        tag = "ok"
        if exp == "secret" and got == "clean": tag = "LEAK"; leaks += 1
        if exp == "clean" and got == "secret": tag = "FP"; fps += 1
        if only and tag not in only: continue
        shown = text if len(text) <= 110 else text[:107] + "..."
        print(f"{tag:4} | {cls+'/'+name:{width}} | exp={exp:6} got={got:6} | {o['reason'][:60]:60} | {shown!r}")
    print(f"\n{len(cases)} cases ({nsec} secret, {nclean} clean probes), {leaks} leaks, {fps} false positives")
