"""Privacy before anything leaves the hook: <private> blocks, Cairn's own context, secrets.

`re` is imported (and patterns compiled) only when a cheap substring test says a text might
hold a secret, so the common tool event pays nothing for redaction.
"""

from __future__ import annotations

from cairn_hook_fence import CONTEXT_CLOSE, CONTEXT_OPEN


def strip_block(text: str, open_tag: str, close_tag: str) -> str:
    """Remove every open..close block (case-insensitive); an unclosed block runs to the end."""
    first = open_tag[:2]
    if first not in text and first.upper() not in text:
        return text  # no `<p` / `<P` at all: skip lower-casing a long text
    lowered = text.lower()
    if open_tag not in lowered:
        return text
    out: list[str] = []
    pos = 0
    while True:
        start = lowered.find(open_tag, pos)
        if start < 0:
            out.append(text[pos:])
            break
        out.append(text[pos:start])
        end = lowered.find(close_tag, start + len(open_tag))
        if end < 0:
            break
        pos = end + len(close_tag)
    return "".join(out)


def strip_private(text: str) -> str:
    """Drop <private>...</private> blocks and Cairn's own injected context."""
    text = strip_block(text, "<private>", "</private>")
    return strip_block(text, CONTEXT_OPEN, CONTEXT_CLOSE)


# (name, triggers, pattern). A pattern is compiled and run only if one of its triggers occurs
# in the text: a trigger with an upper-case letter is matched as written, others against the
# lower-cased text.
_B64 = r"[A-Za-z0-9+/]"
_DIGIT_AHEAD = r"(?=[A-Za-z0-9._~+/=-]*\d)"
# The key word ends the key name (`db_password`, `client_secret`); matches start at the word so
# the scan stays linear on long texts (the name's prefix is left as it is).
_KEY_WORD = (
    r"(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey"
    r"|access[_-]?key|private[_-]?key|credentials?|auth)"
)
_KEY = r"[A-Za-z0-9_.-]{0,40}" + _KEY_WORD
_KEY_WORDS = ("pass", "pwd", "secret", "token", "key", "credential", "auth")
_ENV_KEY = (
    r"[A-Z0-9_]{0,40}(?:PASSWORD|PASSWD|PASS|PWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY"
    r"|CREDENTIALS?|AUTH|DSN|DATABASE_URL)[A-Z0-9_]{0,40}"
)
RULES: list[tuple[str, tuple[str, ...], str]] = [
    (
        "private-key",
        ("private key",),
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY"
        r"(?: BLOCK)?-----|.*\Z)",
    ),
    # The end of a key whose BEGIN line fell before the window kept (a tail of long output).
    (
        "private-key",
        ("private key",),
        r"\A.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----",
    ),
    (
        "aws-access-key",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    ),
    (
        "aws-secret-key",
        ("aws",),
        r"(?i)(aws.{0,20}?(?:secret|private).{0,20}?['\"]?\s*[:=]\s*['\"]?)"
        + _B64
        + r"{40}(?!"
        + _B64
        + ")",
    ),
    (
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b",
    ),
    ("github-pat", ("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b"),
    ("gitlab-token", ("glpat-", "gldt-", "glrt-"), r"\bgl(?:pat|dt|rt)-[A-Za-z0-9_-]{20,}"),
    ("slack-token", ("xox",), r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    (
        "slack-webhook",
        ("hooks.slack.com",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
    ),
    (
        "stripe-key",
        ("sk_live", "sk_test", "rk_live", "rk_test"),
        r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",
    ),
    ("anthropic-key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    (
        "openai-key",
        ("sk-",),
        r"\bsk-(?:proj-|svcacct-|admin-)?" + r"(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}",
    ),
    ("google-api-key", ("AIza",), r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
    ("google-oauth-secret", ("GOCSPX-",), r"\bGOCSPX-[A-Za-z0-9_-]{20,}"),
    ("jwt", ("eyJ",), r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ("npm-token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("pypi-token", ("pypi-",), r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    ("sendgrid-key", ("SG.",), r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}"),
    ("huggingface-token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}\b"),
    ("digitalocean-token", ("dop_v1_", "doo_v1_"), r"\bdo[op]_v1_[a-f0-9]{64}\b"),
    (
        "shopify-token",
        ("shpat_", "shpss_", "shpca_", "shppa_"),
        r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b",
    ),
    ("databricks-token", ("dapi",), r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    ("twilio-key", ("SK",), r"\bSK[0-9a-f]{32}\b"),
    ("azure-storage-key", ("accountkey=",), r"(?i)(AccountKey=)[A-Za-z0-9+/=]{40,}"),
    ("bearer-token", ("bearer",), r"(?i)(\bbearer\s+)" + _DIGIT_AHEAD + r"[A-Za-z0-9._~+/=-]{16,}"),
    (
        "basic-auth",
        ("authorization",),
        r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?basic\s+)[A-Za-z0-9+/]{8,}={0,2}",
    ),
    (
        "url-credentials",
        ("://",),
        r"(\b[a-z][a-z0-9+.-]{0,30}://[^\s:/@'\"]{1,256}:)[^\s@/'\"]{1,256}(@)",
    ),
    (
        "env-assignment",
        ("PASS", "PWD", "SECRET", "TOKEN", "KEY", "AUTH", "CREDENTIAL", "DSN", "DATABASE_URL"),
        r"(?m)^(\s*(?:export\s+)?" + _ENV_KEY + r"\s*=\s*)([\"']?)([^\s\"'#]{3,})\2",
    ),
    # quoted value after = or :  (`"client_secret": "..."`, `password = 'hunter2'`)
    (
        "assignment",
        _KEY_WORDS,
        r"(?i)(" + _KEY_WORD + r"[\"']?\s*[:=]\s*)([\"'])([^\"'\n]{3,})\2",
    ),
    # unquoted value after =     (`--password=hunter2`, `token=abc123`)
    ("assignment", _KEY_WORDS, r"(?i)(" + _KEY_WORD + r"\s*=\s*)([^\s\"'`,;&)\]}]{3,})"),
    # YAML-ish line              (`  password: hunter2`)
    (
        "assignment",
        _KEY_WORDS,
        r"(?im)(^\s*-?\s*" + _KEY + r"\s*:\s+)([^\s\"'#|>][^\s#]{2,})[ \t]*$",
    ),
]

_compiled: dict[int, object] = {}


def _looks_like_code(value: str) -> bool:
    """A value that names where the secret comes from rather than holding it."""
    if value.startswith(("$", "%(", "{{", "<", "[REDACTED", "os.", "process.env", "env(", "ENV[")):
        return True
    if "(" in value or value.lower() in ("none", "null", "true", "false", "undefined", "nil"):
        return True
    if set(value) <= set("*xX.-_ "):
        return True  # masked: ****, xxxx
    # A bare (dotted) identifier without digits is a variable: password=password, key=self.key
    return value.replace(".", "").replace("_", "").isalpha() and not value.isupper()


# Each rule's triggers split once: those matched in the lower-cased text, those matched as written.
_SPLIT = {
    triggers: (
        tuple(t for t in triggers if t.islower()),
        tuple(t for t in triggers if not t.islower()),
    )
    for _, triggers, _ in RULES
}


def _triggered(text: str, lowered: str, triggers: tuple[str, ...]) -> bool:
    # Plain loops, not any(<generator>): this runs ~30 times per text, and an import cleans
    # hundreds of thousands of texts in one process.
    split = _SPLIT.get(triggers)
    if split is None:
        split = _SPLIT[triggers] = (
            tuple(t for t in triggers if t.islower()),
            tuple(t for t in triggers if not t.islower()),
        )
    for trigger in split[0]:
        if trigger in lowered:
            return True
    for trigger in split[1]:  # noqa: SIM110 - the loop is the point (see above)
        if trigger in text:
            return True
    return False


def _near_assignment(haystack: str, words: tuple[str, ...], reach: int = 40) -> bool:
    """A key word followed closely by `=` or `:` (so `PASSED` in test output costs nothing)."""
    for word in words:
        at = haystack.find(word)
        while at >= 0:
            window = haystack[at + len(word) : at + len(word) + reach]
            if "=" in window or ":" in window:
                return True
            at = haystack.find(word, at + 1)
    return False


def redact(text: str) -> str:
    """Replace secrets with [REDACTED:<kind>]; keeps SHAs, UUIDs, hashes, base64 images."""
    if not text:
        return text
    lowered = text.lower()
    for index, (name, triggers, pattern) in enumerate(RULES):
        if not _triggered(text, lowered, triggers):
            continue
        if name == "assignment" and not _near_assignment(lowered, triggers):
            continue
        if name == "env-assignment" and not _near_assignment(text, triggers):
            continue
        compiled = _compiled.get(index)
        if compiled is None:
            import re

            compiled = _compiled[index] = re.compile(pattern, re.DOTALL)
        new = compiled.sub(_replacer(name), text)  # type: ignore[attr-defined]
        if new != text:
            text = new
            lowered = text.lower()
    return text


def _replacer(name: str):  # type: ignore[no-untyped-def]
    tag = f"[REDACTED:{name}]"

    def replace(match) -> str:  # type: ignore[no-untyped-def]
        groups = match.groups()
        if name in ("assignment", "env-assignment"):
            if len(groups) == 3:  # quoted (or optionally quoted): keep the key and the quotes
                value = groups[2]
                if name == "assignment" and _looks_like_code(value):
                    return str(match.group(0))
                if name == "env-assignment" and value.startswith(("$", "<", "[REDACTED")):
                    return str(match.group(0))
                return f"{groups[0]}{groups[1]}{tag}{groups[1]}"
            if _looks_like_code(groups[1]):
                return str(match.group(0))
            return f"{groups[0]}{tag}"
        if name == "url-credentials":
            return f"{groups[0]}{tag}{groups[1]}"
        if groups:
            return f"{groups[0]}{tag}"
        return tag

    return replace


def clean(text: str) -> str:
    """Everything a recorded text goes through: private blocks out, then secrets redacted."""
    return redact(strip_private(text))
