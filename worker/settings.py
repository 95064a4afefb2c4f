"""One Settings dataclass; every limit and default lives here and nowhere else."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from worker.errors import ConfigError

FUSION_METHODS = ("convex", "rrf")


class Secret:
    """A string that never prints: repr/str hide it, `reveal()` gives it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True)
class Settings:
    """Effective configuration. Each field maps to env var CAIRN_<NAME upper-cased>."""

    home: Path = field(default_factory=lambda: Path.home() / ".cairn")
    host: str = "127.0.0.1"
    port: int = 37800
    # HTTP limits
    max_body_bytes: int = 1024 * 1024
    max_title_chars: int = 500
    max_text_chars: int = 100_000
    max_meta_bytes: int = 4096
    max_files: int = 200
    max_tags: int = 20
    max_batch: int = 500
    page_size: int = 50
    # An active session with no event for this long shows as idle (its SessionEnd never came)
    session_idle_minutes: int = 30
    max_page_size: int = 500
    # Rate limits (slowapi / limits syntax), per client and route group
    rate_limit_read: str = "6000/minute"
    rate_limit_write: str = "30000/minute"
    rate_limit_login: str = "20/minute"
    # Dashboard login: one-time links from `cairn open`, and how long the session cookie lasts
    login_link_seconds: int = 120
    session_cookie_days: int = 30
    # Dashboard logins kept at once (one per browser login; past it the oldest is logged out)
    max_dashboard_logins: int = 100
    # HTTP connections: request headers must arrive within this many seconds of connecting
    # (slowloris); open connections capped (0 = the descriptor limit less the reserve)
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 30.0
    max_connections: int = 0
    connection_fd_reserve: int = 128
    # SSE
    sse_max_clients: int = 32
    sse_buffer: int = 1000
    sse_ping_seconds: float = 15.0
    # Who this worker's rows are by when a request names nobody ('': git user.email, else the
    # OS user, read at start; the hooks send the repository's own user.email with every event)
    author: str = ""
    # SQLite
    busy_timeout_ms: int = 5000
    # While writes arrive concurrently (the last group commit held more than one), the writer
    # waits this long after the first write of a group so the others join its transaction;
    # a lone write never waits. 0 = never.
    group_commit_delay_ms: float = 0.5
    # Cap on the database file (0 = none): past it writes answer 507 and hooks spool, as on a
    # full disk; raise it (or free space) and restart, and the spool replays.
    max_db_bytes: int = 0
    # Embeddings
    embed_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    embed_model_path: str = ""
    embed_batch: int = 64
    embed_enabled: bool = True
    # Background embedding: texts are cut to this many characters before embedding,
    embed_max_chars: int = 2000
    # and then to this many word pieces (all-MiniLM-L6-v2 was trained on 256; the tokens past
    # that cost more than the rest of the text and add little to its vector).
    embed_max_tokens: int = 256
    embed_queue_max: int = 100_000
    # The default model with int8 matrix products, run one text at a time (built once in the
    # models folder; see worker/retrieval/quantize.py): ~1.5x faster embedding, ~30 MB less
    # memory, the same LoCoMo figures; vectors within cosine ~0.99 of the float32 model's.
    # Off = the packaged model's float32 products (what it gives bit for bit).
    embed_quantize: bool = True
    # Where model files are kept and built (empty = $CAIRN_HOME/models); homes may share one.
    models_dir: str = ""
    # Search (retrieval engineer): limits, candidate pools and FTS column weights
    search_default_limit: int = 10
    search_max_limit: int = 100
    search_max_query_chars: int = 10_000
    search_max_query_terms: int = 48
    search_candidates: int = 100
    # Query terms found in more than this share of all items are left out of the keyword match.
    search_common_term_share: float = 0.2
    search_title_weight: float = 3.0
    search_body_weight: float = 1.0
    # Hybrid fusion of the keyword and vector lists: "convex" = weighted sum of min-max
    # normalised BM25 scores and cosines (BM25 from 0 when every keyword match is listed, see
    # ranking.fuse); "rrf" = weighted reciprocal rank fusion with k.
    # Weights tuned on LoCoMo dev (flat for a keyword share of 0.65..0.8; see bench/locomo.py).
    fusion_method: str = "convex"
    fusion_rrf_k: float = 1.0
    fusion_keyword_weight: float = 0.7
    fusion_vector_weight: float = 0.3
    # A hit lends part of its fused score to the previous/next item of its thread (same kind,
    # project and session, within the window): answers often sit next to what matches.
    fusion_prev_weight: float = 0.1
    fusion_next_weight: float = 0.2
    thread_window_minutes: float = 30.0
    # An item's vector = its own embedding + this share of its thread predecessor's (context).
    embed_context_weight: float = 0.5
    # Rerank signals (added to the fused relevance, which is scaled to 0..1)
    rank_relevance_weight: float = 1.0
    rank_recency_weight: float = 0.10
    rank_frequency_weight: float = 0.05
    rank_importance_weight: float = 0.10
    rank_staleness_weight: float = 0.25
    rank_project_weight: float = 0.10
    # Dates named in the query ("in October 2023") favour items from that time: as much as the
    # whole relevance range, so a candidate from the named time comes before one from another.
    rank_date_weight: float = 1.0
    rank_date_slack_days: float = 7.0
    half_life_days_observation: float = 14.0
    half_life_days_prompt: float = 7.0
    half_life_days_summary: float = 30.0
    half_life_days_memory: float = 180.0
    # Refusal: nothing relevant -> no hits (see retrieval/ranking.py for the rule)
    # (tuned on LoCoMo dev: >=90% of foreign questions refused, <=2% of native ones)
    refusal_min_cosine: float = 0.46
    refusal_min_coverage: float = 0.8
    # Prompt context: each item judged on its own (ranking.item_relevant) instead of the one
    # refusal above, which was tuned on chat and silenced the rules that matter in coding work.
    # Explicit memories (few, high value) pass a looser floor than raw activity; an item also
    # needs a score within `prompt_relative_floor` of the best hit of its group, memories or
    # activity (tuned on bench/coding_memory.py, dev half, with leave-one-project-out
    # cross-validation).
    prompt_memory_min_cosine: float = 0.30
    prompt_memory_min_coverage: float = 0.4
    prompt_item_min_cosine: float = 0.40
    prompt_item_min_coverage: float = 0.7
    prompt_relative_floor: float = 0.7
    # Keyword-only mode (no query vector: the model loading, disabled or broken): relevance on
    # words alone, each weighted by its IDF within the project (retrieval/keyword_judgment.py).
    # Search refuses unless a top keyword hit holds this share of the query's weight; at a
    # prompt, memories and other items each need a share and a matched weight (sum of IDF).
    # Tuned on LoCoMo dev (refusal) and bench/coding_memory.py --mode keyword (prompt).
    keyword_refusal_min_coverage: float = 0.3
    prompt_keyword_memory_min_coverage: float = 0.15
    prompt_keyword_memory_min_strength: float = 0.6
    prompt_keyword_item_min_coverage: float = 0.4
    prompt_keyword_item_min_strength: float = 1.5
    # More evidence at a prompt (retrieval/judgment.py): an item holding a code name the prompt
    # mentions (a file, symbol, setting) with a cosine of at least `prompt_name_min_cosine`; an
    # item in the top `prompt_agree_depth` of both the keyword and the vector list (0: off)
    # with a cosine of at least `prompt_agree_min_cosine`.
    prompt_name_min_cosine: float = 0.15
    prompt_agree_depth: int = 3
    prompt_agree_min_cosine: float = 0.15
    # De-duplication of near-identical hits (cosine of their vectors)
    dedupe_cosine: float = 0.97
    # Context injection
    context_recent_observations: int = 60
    context_memory_min_importance: int = 4
    context_prompt_max_items: int = 8
    # Context budgets (tokens)
    context_tokens: int = 1500
    prompt_context_tokens: int = 500
    # Spool replay period (seconds)
    spool_replay_seconds: float = 30.0
    # Log file rotation
    log_max_bytes: int = 5 * 1024 * 1024
    log_backups: int = 3
    # Session summaries, checkpoints, plans (sessions engineer)
    summary_max_completed: int = 10
    summary_max_files: int = 20
    summary_max_learned: int = 8
    summary_max_next_steps: int = 8
    summary_item_chars: int = 300
    checkpoint_max_files: int = 15
    plan_max_items: int = 200
    # Project profile cache (seconds) and report window default (days)
    profile_ttl_seconds: float = 600.0
    # New observations refresh the cached static profile at most this often
    profile_min_refresh_seconds: float = 60.0
    report_default_days: int = 7
    # Backups kept under $CAIRN_HOME/backups (older ones pruned; 0 keeps all)
    backup_keep: int = 10

    # Memory lifecycle: decay, caps, consolidation, supersession (lifecycle engineer)
    decay_memory_half_lives_days: str = "7,14,30,90,365"
    decay_reinforcement: float = 0.15
    decay_interval_seconds: float = 3600.0
    decay_first_run_seconds: float = 120.0
    obs_half_life_days_command: float = 1.0
    obs_half_life_days_research: float = 3.0
    obs_half_life_days_web: float = 5.0
    obs_half_life_days_mcp: float = 3.0
    obs_half_life_days_other: float = 3.0
    obs_half_life_days_delegation: float = 10.0
    obs_half_life_days_file_write: float = 21.0
    obs_half_life_days_note: float = 30.0
    obs_cap_per_project: int = 5000
    obs_chatter_types: str = "command,mcp,research,other"
    obs_cap_check_seconds: float = 10.0
    memory_auto_tags: int = 5
    compress_threshold: float = 0.88
    compress_lexical_threshold: float = 0.8
    supersede_enabled: bool = True
    supersede_min_similarity: float = 0.5
    supersede_cosine: float = 0.7

    @property
    def db_path(self) -> Path:
        return self.home / "cairn.db"

    @property
    def token_path(self) -> Path:
        return self.home / "token"

    @property
    def logins_path(self) -> Path:
        return self.home / "logins.json"

    @property
    def runtime_path(self) -> Path:
        return self.home / "worker.json"

    @property
    def lock_path(self) -> Path:
        return self.home / "worker.lock"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def spool_dir(self) -> Path:
        return self.home / "spool"

    @property
    def backups_dir(self) -> Path:
        return self.home / "backups"

    @property
    def models_path(self) -> Path:
        return Path(self.models_dir).expanduser() if self.models_dir else self.home / "models"

    def public_dict(self) -> dict[str, object]:
        """Settings as shown to users (no secrets live here; paths as strings)."""
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = str(value) if isinstance(value, Path) else value
        return out


def _convert(name: str, raw: str, default: object) -> object:
    try:
        if isinstance(default, bool):
            lowered = raw.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(raw)
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, Path):
            return Path(raw).expanduser()
    except ValueError:
        raise ConfigError(
            f"CAIRN_{name.upper()}={raw!r} is not a valid {type(default).__name__}"
        ) from None
    return raw


def load_settings(env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
    """Build Settings from CAIRN_* environment variables, then explicit overrides."""
    env = os.environ if env is None else env
    defaults = Settings()
    values: dict[str, object] = {}
    for f in fields(Settings):
        key = f"CAIRN_{f.name.upper()}"
        if key in env:
            values[f.name] = _convert(f.name, env[key], getattr(defaults, f.name))
    values.update({k: v for k, v in overrides.items() if v is not None})
    settings = Settings(**values)  # type: ignore[arg-type]
    _check(settings)
    return settings


def _check(settings: Settings) -> None:
    """Refuse values that would only fail later, mid-request (a limit of -1, NaN, '5/fortnight')."""
    for f in fields(settings):
        value = getattr(settings, f.name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"CAIRN_{f.name.upper()}={value!r} must be a finite number >= 0")
    for name in ("rate_limit_read", "rate_limit_write", "rate_limit_login"):
        raw = getattr(settings, name)
        if raw == getattr(Settings, name):  # the class holds each field's default
            continue  # valid; and `limits` costs ~60 ms to import, on every CLI command
        from limits import parse_many

        try:
            parse_many(raw)
        except ValueError:
            raise ConfigError(
                f"CAIRN_{name.upper()}={raw!r} is not a rate limit (e.g. '600/minute')"
            ) from None
    if settings.fusion_method not in FUSION_METHODS:
        raise ConfigError(
            f"CAIRN_FUSION_METHOD={settings.fusion_method!r} is not one of "
            + ", ".join(FUSION_METHODS)
        )
    if settings.group_commit_delay_ms > 50:
        raise ConfigError(
            f"CAIRN_GROUP_COMMIT_DELAY_MS={settings.group_commit_delay_ms} is over 50 ms: "
            "every concurrent write would wait that long"
        )
    if not 0 <= settings.port <= 65535:
        raise ConfigError(f"CAIRN_PORT={settings.port} is outside 0..65535")
    if settings.host not in ("127.0.0.1", "::1", "localhost"):
        raise ConfigError(
            f"CAIRN_HOST={settings.host!r}: Cairn binds loopback only (127.0.0.1, ::1, localhost)"
        )
