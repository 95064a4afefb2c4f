"""Privacy in the hook: <private> blocks, Cairn's own context, and a corpus of real-looking secrets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.hook_modules import privacy

# Each entry: (kind, text holding a secret, the secret that must disappear). The values are
# synthetic: right shape, never real credentials.
SECRETS: list[tuple[str, str, str]] = [
    ("aws-access-key", "aws_access_key_id = AKIAIOSFODNN7EXAMPLQ", "AKIAIOSFODNN7EXAMPLQ"),
    ("aws-sts-key", "key ASIAY34FZKBOKMUTVV7A in env", "ASIAY34FZKBOKMUTVV7A"),
    (
        "aws-secret-key",
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "github-token",
        "git push https://x:ghp_R4nd0mT0k3nV4lu3Abcdefghij0123456789@github.com/o/r",
        "ghp_R4nd0mT0k3nV4lu3Abcdefghij0123456789",
    ),
    (
        "github-pat",
        "GH_TOKEN: github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    ),
    ("gitlab-token", "token glpat-xR4nd0mV4lu3Zz123456 expired", "glpat-xR4nd0mV4lu3Zz123456"),
    (
        "slack-bot-token",
        "SLACK: xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    (
        "slack-webhook",
        "curl -X POST https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    (
        "stripe-key",
        "stripe.api_key = sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    ),
    (
        "anthropic-key",
        "ANTHROPIC_API_KEY=sk-ant-api03-abcDEF123456ghiJKL789mnoPQR_stuVWX-yz0123456789AA",
        "sk-ant-api03-abcDEF123456ghiJKL789mnoPQR",
    ),
    (
        "openai-key",
        "client = OpenAI(api_key='sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678')",
        "sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678",
    ),
    (
        "google-api-key",
        "maps?key=AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI&q=x",
        "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI",
    ),
    (
        "google-oauth",
        "client secret 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s",
        "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s",
    ),
    (
        "jwt",
        "cookie: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ),
    (
        "pem-private-key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq0Vx1yZ2\nabcdefSECRETLINE\n"
        "-----END RSA PRIVATE KEY-----\nafter",
        "abcdefSECRETLINE",
    ),
    (
        "pem-in-json",
        '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkq'
        'hkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n"}',
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    ),
    (
        "openssh-key-truncated",
        "cat ~/.ssh/id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
    ),
    (
        "bearer-header",
        'curl -H "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0" https://api.example.com',
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    ),
    (
        "basic-auth",
        "Authorization: Basic dXNlcjpodW50ZXIyMDI0IQ==",
        "dXNlcjpodW50ZXIyMDI0IQ==",
    ),
    (
        "url-credentials",
        "DATABASE: postgres://admin:Sup3rS3cret!@db.internal:5432/app",
        "Sup3rS3cret!",
    ),
    ("password-assignment", "mysql -u root --password=hunter2024 -h db", "hunter2024"),
    ("secret-assignment", 'config = {"client_secret": "a1b2c3d4e5f6g7h8"}', "a1b2c3d4e5f6g7h8"),
    ("dotenv-line", "cat .env\nDB_PASSWORD=correcthorsebattery\nDEBUG=1", "correcthorsebattery"),
    ("dotenv-export", "export SECRET_KEY='django-insecure-abc123xyz'", "django-insecure-abc123xyz"),
    ("yaml-password", "db:\n  user: app\n  password: s3cr3t-P4ss\n", "s3cr3t-P4ss"),
    (
        "npm-token",
        "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    (
        "pypi-token",
        "password = pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejAxMjM0NTY3",
        "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejAxMjM0NTY3",
    ),
    (
        "sendgrid-key",
        "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",
        "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr",
    ),
    (
        "huggingface-token",
        "HF hf_abcdefghijklmnopqrstuvwxyzABCDEFGH used",
        "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
    ),
    (
        "digitalocean-token",
        "doctl auth init -t dop_v1_" + "a1" * 32,
        "dop_v1_" + "a1" * 32,
    ),
    (
        "shopify-token",
        "X-Shopify-Access-Token: shpat_" + "0123456789abcdef" * 2,
        "shpat_" + "0123456789abcdef" * 2,
    ),
    ("databricks-token", "dapi" + "0123456789abcdef" * 2, "dapi" + "0123456789abcdef" * 2),
    ("twilio-key", "TWILIO SK" + "0123456789abcdef" * 2, "SK" + "0123456789abcdef" * 2),
    (
        "azure-storage",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + "A1b2C3d4" * 11 + ";",
        "A1b2C3d4" * 11,
    ),
]

# Text that looks high-entropy but is not a secret: must survive byte for byte.
LOOKALIKES: list[str] = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main)",
    "git checkout 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "session 123e4567-e89b-12d3-a456-426614174000 resumed",
    "request id f47ac10b-58cc-4372-a567-0e02b2c3d479",
    '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk'
    'YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">',
    '"integrity": "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="',
    'hash = "sha256:2cf56f4cb9ad5b8fcd6b6d6cb4d3ef1a0ea2b4f74f0a0c3bb3e1c4c0e2a1b9f8"',
    "requests==2.31.0 --hash=sha256:58cd2187c01e70e6e26505bca751777aa9f2ee0b7f4300988b709f44e013003f",
    'resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#679591c564c3bffaae8454cf0b3df370c3d6911c"',
    "def login(user: str, password: str) -> Token:",
    "password = getpass.getpass()",
    "token = os.environ['GITHUB_TOKEN']",
    "api_key=settings.api_key",
    "secret = ${{ secrets.DEPLOY_KEY }}",
    "The tokenizer splits text; max_tokens: 512",
    "Read the basic authentication docs and the bearer token guide",
    "task-list and disk-usage reports",
    "PRIMARY KEY (id) and FOREIGN KEY",
    "sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "https://github.com/anthropics/claude-code/issues/33656",
]


@pytest.mark.parametrize(("kind", "text", "secret"), SECRETS, ids=[s[0] for s in SECRETS])
def test_secret_is_redacted(kind: str, text: str, secret: str) -> None:
    out = privacy.redact(text)
    assert secret not in out, out
    assert "[REDACTED:" in out


def test_corpus_has_at_least_twenty_shapes() -> None:
    assert len({kind for kind, _, _ in SECRETS}) >= 20


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalike_is_kept(text: str) -> None:
    assert privacy.redact(text) == text


def test_redaction_keeps_the_surroundings() -> None:
    out = privacy.redact("before AKIAIOSFODNN7EXAMPLQ after")
    assert out == "before [REDACTED:aws-access-key] after"
    assert privacy.redact("url postgres://u:pw1234@h/db").startswith("url postgres://u:[REDACTED")


def test_private_blocks_are_removed_even_unclosed_and_mixed_case() -> None:
    text = "keep <private>drop me</private> this <PRIVATE>and me</Private> and <private>tail"
    assert privacy.strip_private(text) == "keep  this  and "


def test_cairn_context_is_stripped_from_recorded_text() -> None:
    text = "hello <cairn-context>\n# Cairn memory\n#1 old stuff\n</cairn-context> world"
    assert privacy.clean(text) == "hello  world"


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=400))
def test_redact_never_raises_and_is_stable(text: str) -> None:
    once = privacy.clean(text)
    assert isinstance(once, str)
    assert privacy.clean(once) == once


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "password=",
                "Bearer ",
                "AKIA",
                "-----BEGIN PRIVATE KEY-----",
                "<private>",
                "://a:b@",
                "eyJ",
                "sk-",
                " ",
                "\n",
                "'",
                '"',
                "x1",
                "=",
                ":",
            ]
        )
        | st.text(max_size=12),
        max_size=30,
    )
)
def test_redact_survives_adversarial_fragments(parts: list[str]) -> None:
    out = privacy.clean("".join(parts))
    assert isinstance(out, str)
    assert "<private>" not in out.lower()
