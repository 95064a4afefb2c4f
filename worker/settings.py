"""One Settings object, grouped by concern; every limit and default lives here and nowhere else.

Each leaf field declares its environment variable (`setting("CAIRN_SEARCH_DEFAULT_LIMIT", 10)`
is `settings.search.default_limit`). Its *flat name* is that variable without `CAIRN_`, lower-cased
(`search_default_limit`): what `load_settings(**overrides)`, `Settings.from_flat`, the Settings page
and `bench/coding_memory.py --set` use.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import Field, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

from worker.errors import ConfigError

FUSION_METHODS = ("convex", "rrf")

T = TypeVar("T")


def setting(env: str, default: T) -> T:
    """A field read from the environment variable `env`."""
    return field(default=default, metadata={"env": env})


@dataclass(frozen=True)
class ServerSettings:
    """The worker process: where it listens, its connections, its log file."""

    host: str = setting("CAIRN_HOST", "127.0.0.1")
    port: int = setting("CAIRN_PORT", 37800)
    # Request headers must arrive within this many seconds of connecting (slowloris), the body
    # within the next; open connections capped (0 = the descriptor limit less the reserve)
    header_timeout_seconds: float = setting("CAIRN_HEADER_TIMEOUT_SECONDS", 10.0)
    body_timeout_seconds: float = setting("CAIRN_BODY_TIMEOUT_SECONDS", 30.0)
    max_connections: int = setting("CAIRN_MAX_CONNECTIONS", 0)
    connection_fd_reserve: int = setting("CAIRN_CONNECTION_FD_RESERVE", 128)
    # Log file rotation
    log_max_bytes: int = setting("CAIRN_LOG_MAX_BYTES", 5 * 1024 * 1024)
    log_backups: int = setting("CAIRN_LOG_BACKUPS", 3)


@dataclass(frozen=True)
class LimitSettings:
    """What one request may hold or ask for."""

    max_body_bytes: int = setting("CAIRN_MAX_BODY_BYTES", 1024 * 1024)
    max_title_chars: int = setting("CAIRN_MAX_TITLE_CHARS", 500)
    max_text_chars: int = setting("CAIRN_MAX_TEXT_CHARS", 100_000)
    max_meta_bytes: int = setting("CAIRN_MAX_META_BYTES", 4096)
    max_files: int = setting("CAIRN_MAX_FILES", 200)
    max_tags: int = setting("CAIRN_MAX_TAGS", 20)
    max_batch: int = setting("CAIRN_MAX_BATCH", 500)
    page_size: int = setting("CAIRN_PAGE_SIZE", 50)
    max_page_size: int = setting("CAIRN_MAX_PAGE_SIZE", 500)


@dataclass(frozen=True)
class RateLimitSettings:
    """Requests per client and route group (`limits` syntax)."""

    read: str = setting("CAIRN_RATE_LIMIT_READ", "6000/minute")
    write: str = setting("CAIRN_RATE_LIMIT_WRITE", "30000/minute")
    login: str = setting("CAIRN_RATE_LIMIT_LOGIN", "20/minute")


@dataclass(frozen=True)
class DashboardSettings:
    """The browser side: logins, the live event stream, how sessions show."""

    # One-time links from `cairn open`, and how long the session cookie lasts
    login_link_seconds: int = setting("CAIRN_LOGIN_LINK_SECONDS", 120)
    session_cookie_days: int = setting("CAIRN_SESSION_COOKIE_DAYS", 30)
    # Logins kept at once (one per browser login; past it the oldest is logged out)
    max_logins: int = setting("CAIRN_MAX_DASHBOARD_LOGINS", 100)
    # An active session with no event for this long shows as idle (its SessionEnd never came)
    session_idle_minutes: int = setting("CAIRN_SESSION_IDLE_MINUTES", 30)
    sse_max_clients: int = setting("CAIRN_SSE_MAX_CLIENTS", 32)
    sse_buffer: int = setting("CAIRN_SSE_BUFFER", 1000)
    sse_ping_seconds: float = setting("CAIRN_SSE_PING_SECONDS", 15.0)


@dataclass(frozen=True)
class DatabaseSettings:
    """The SQLite file: locks, group commits, its size cap, backups."""

    busy_timeout_ms: int = setting("CAIRN_BUSY_TIMEOUT_MS", 5000)
    # While writes arrive concurrently (the last group commit held more than one), the writer
    # waits this long after the first write of a group so the others join its transaction;
    # a lone write never waits. 0 = never.
    group_commit_delay_ms: float = setting("CAIRN_GROUP_COMMIT_DELAY_MS", 0.5)
    # Cap on the database file (0 = none): past it writes answer 507 and hooks spool, as on a
    # full disk; raise it (or free space) and restart, and the spool replays.
    max_bytes: int = setting("CAIRN_MAX_DB_BYTES", 0)
    # Backups kept under $CAIRN_HOME/backups (older ones pruned; 0 keeps all)
    backup_keep: int = setting("CAIRN_BACKUP_KEEP", 10)


@dataclass(frozen=True)
class EmbeddingSettings:
    """The embedding model and the background queue that feeds it."""

    enabled: bool = setting("CAIRN_EMBED_ENABLED", True)
    model: str = setting("CAIRN_EMBED_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
    model_path: str = setting("CAIRN_EMBED_MODEL_PATH", "")
    # Where model files are kept and built (empty = $CAIRN_HOME/models); homes may share one.
    models_dir: str = setting("CAIRN_MODELS_DIR", "")
    batch: int = setting("CAIRN_EMBED_BATCH", 64)
    # Texts are cut to this many characters before embedding,
    max_chars: int = setting("CAIRN_EMBED_MAX_CHARS", 2000)
    # and then to this many word pieces (all-MiniLM-L6-v2 was trained on 256; the tokens past
    # that cost more than the rest of the text and add little to its vector).
    max_tokens: int = setting("CAIRN_EMBED_MAX_TOKENS", 256)
    queue_max: int = setting("CAIRN_EMBED_QUEUE_MAX", 100_000)
    # The default model with int8 matrix products, run one text at a time (built once in the
    # models folder; see worker/retrieval/quantize.py): ~1.5x faster embedding, ~30 MB less
    # memory, the same LoCoMo figures; vectors within cosine ~0.99 of the float32 model's.
    # Off = the packaged model's float32 products (what it gives bit for bit).
    quantize: bool = setting("CAIRN_EMBED_QUANTIZE", True)
    # An item's vector = its own embedding + this share of its thread predecessor's (context).
    context_weight: float = setting("CAIRN_EMBED_CONTEXT_WEIGHT", 0.5)


@dataclass(frozen=True)
class SearchSettings:
    """Search: limits, candidate pools, FTS column weights, threads, de-duplication."""

    default_limit: int = setting("CAIRN_SEARCH_DEFAULT_LIMIT", 10)
    max_limit: int = setting("CAIRN_SEARCH_MAX_LIMIT", 100)
    max_query_chars: int = setting("CAIRN_SEARCH_MAX_QUERY_CHARS", 10_000)
    max_query_terms: int = setting("CAIRN_SEARCH_MAX_QUERY_TERMS", 48)
    candidates: int = setting("CAIRN_SEARCH_CANDIDATES", 100)
    # Query terms found in more than this share of all items are left out of the keyword match.
    common_term_share: float = setting("CAIRN_SEARCH_COMMON_TERM_SHARE", 0.2)
    title_weight: float = setting("CAIRN_SEARCH_TITLE_WEIGHT", 3.0)
    body_weight: float = setting("CAIRN_SEARCH_BODY_WEIGHT", 1.0)
    # Items of one kind, project and session this close in time form a thread.
    thread_window_minutes: float = setting("CAIRN_THREAD_WINDOW_MINUTES", 30.0)
    # De-duplication of near-identical hits (cosine of their vectors)
    dedupe_cosine: float = setting("CAIRN_DEDUPE_COSINE", 0.97)


@dataclass(frozen=True)
class RankingSettings:
    """How the keyword and vector lists are fused and the hits reranked."""

    # "convex" = weighted sum of min-max normalised BM25 scores and cosines (BM25 from 0 when
    # every keyword match is listed, see ranking.fuse); "rrf" = weighted reciprocal rank fusion
    # with k. Weights tuned on LoCoMo dev (flat for a keyword share of 0.65..0.8; bench/locomo.py).
    fusion_method: str = setting("CAIRN_FUSION_METHOD", "convex")
    fusion_rrf_k: float = setting("CAIRN_FUSION_RRF_K", 1.0)
    fusion_keyword_weight: float = setting("CAIRN_FUSION_KEYWORD_WEIGHT", 0.7)
    fusion_vector_weight: float = setting("CAIRN_FUSION_VECTOR_WEIGHT", 0.3)
    # A hit lends part of its fused score to the previous/next item of its thread (same kind,
    # project and session, within the window): answers often sit next to what matches.
    fusion_prev_weight: float = setting("CAIRN_FUSION_PREV_WEIGHT", 0.1)
    fusion_next_weight: float = setting("CAIRN_FUSION_NEXT_WEIGHT", 0.2)
    # Rerank signals (added to the fused relevance, which is scaled to 0..1)
    relevance_weight: float = setting("CAIRN_RANK_RELEVANCE_WEIGHT", 1.0)
    recency_weight: float = setting("CAIRN_RANK_RECENCY_WEIGHT", 0.10)
    frequency_weight: float = setting("CAIRN_RANK_FREQUENCY_WEIGHT", 0.05)
    importance_weight: float = setting("CAIRN_RANK_IMPORTANCE_WEIGHT", 0.10)
    staleness_weight: float = setting("CAIRN_RANK_STALENESS_WEIGHT", 0.25)
    project_weight: float = setting("CAIRN_RANK_PROJECT_WEIGHT", 0.10)
    # Dates named in the query ("in October 2023") favour items from that time: as much as the
    # whole relevance range, so a candidate from the named time comes before one from another.
    date_weight: float = setting("CAIRN_RANK_DATE_WEIGHT", 1.0)
    date_slack_days: float = setting("CAIRN_RANK_DATE_SLACK_DAYS", 7.0)
    # Recency half-life per kind
    half_life_days_observation: float = setting("CAIRN_HALF_LIFE_DAYS_OBSERVATION", 14.0)
    half_life_days_prompt: float = setting("CAIRN_HALF_LIFE_DAYS_PROMPT", 7.0)
    half_life_days_summary: float = setting("CAIRN_HALF_LIFE_DAYS_SUMMARY", 30.0)
    half_life_days_memory: float = setting("CAIRN_HALF_LIFE_DAYS_MEMORY", 180.0)


@dataclass(frozen=True)
class JudgmentSettings:
    """Whether hits are relevant enough to show: search refusal, prompt-time floors."""

    # Refusal: nothing relevant -> no hits (see retrieval/ranking.py for the rule)
    # (tuned on LoCoMo dev: >=90% of foreign questions refused, <=2% of native ones)
    refusal_min_cosine: float = setting("CAIRN_REFUSAL_MIN_COSINE", 0.46)
    refusal_min_coverage: float = setting("CAIRN_REFUSAL_MIN_COVERAGE", 0.8)
    # Prompt context: each candidate's probability of mattering comes from the relevance model
    # (retrieval/relevance.py); strictness moves the probability an item needs, from 0 (more is
    # given) to 1 (only what is surely relevant); 0.5 is the cut cross-validation chose.
    prompt_strictness: float = setting("CAIRN_PROMPT_STRICTNESS", 0.5)
    # Keyword-only mode (no query vector: the model loading, disabled or broken): relevance on
    # words alone, each weighted by its IDF within the project (retrieval/keyword_judgment.py).
    # Search refuses unless a top keyword hit holds this share of the query's weight; at a
    # prompt, memories and other items each need a share and a matched weight (sum of IDF).
    # Tuned on LoCoMo dev (refusal) and bench/coding_memory.py --mode keyword (prompt).
    keyword_refusal_min_coverage: float = setting("CAIRN_KEYWORD_REFUSAL_MIN_COVERAGE", 0.3)
    prompt_keyword_memory_min_coverage: float = setting(
        "CAIRN_PROMPT_KEYWORD_MEMORY_MIN_COVERAGE", 0.15
    )
    prompt_keyword_memory_min_strength: float = setting(
        "CAIRN_PROMPT_KEYWORD_MEMORY_MIN_STRENGTH", 0.6
    )
    prompt_keyword_item_min_coverage: float = setting("CAIRN_PROMPT_KEYWORD_ITEM_MIN_COVERAGE", 0.4)
    prompt_keyword_item_min_strength: float = setting("CAIRN_PROMPT_KEYWORD_ITEM_MIN_STRENGTH", 1.5)
    # Keyword-only mode keeps an item whose score is within this share of the best kept item of
    # its group (explicit memories, other activity).
    prompt_relative_floor: float = setting("CAIRN_PROMPT_RELATIVE_FLOOR", 0.7)


@dataclass(frozen=True)
class LearningSettings:
    """Learning from use (worker/memory/use.py, usefulness.py): each injection's outcome is
    judged when the turn ends, and what an item proved worth moves its relevance."""

    enabled: bool = setting("CAIRN_LEARNING", True)
    # Evidence of use fades by half in this many days (an item drifts back to neutral).
    half_life_days: float = setting("CAIRN_LEARNING_HALF_LIFE_DAYS", 30.0)
    # Log-odds one injection moves an item at the same question: used +E, ignored -E,
    # contradicted -2E (2.2 ~ ln 9: the odds multiplied or divided by nine; bench/learning.py
    # --evidence favours any larger value, its scripted agent never ignoring what it needs:
    # docs/how-it-works.md says why the default stays here).
    evidence: float = setting("CAIRN_LEARNING_EVIDENCE", 2.2)


@dataclass(frozen=True)
class ContextSettings:
    """The injected blocks: session start and per prompt, and the project profile in them."""

    session_tokens: int = setting("CAIRN_CONTEXT_TOKENS", 1500)
    prompt_tokens: int = setting("CAIRN_PROMPT_CONTEXT_TOKENS", 500)
    recent_observations: int = setting("CAIRN_CONTEXT_RECENT_OBSERVATIONS", 60)
    memory_min_importance: int = setting("CAIRN_CONTEXT_MEMORY_MIN_IMPORTANCE", 4)
    prompt_max_items: int = setting("CAIRN_CONTEXT_PROMPT_MAX_ITEMS", 8)
    # Project profile cache (seconds); new observations refresh it at most this often
    profile_ttl_seconds: float = setting("CAIRN_PROFILE_TTL_SECONDS", 600.0)
    profile_min_refresh_seconds: float = setting("CAIRN_PROFILE_MIN_REFRESH_SECONDS", 60.0)


@dataclass(frozen=True)
class SessionSettings:
    """Session summaries, checkpoints, plans, and the activity report's window."""

    summary_max_completed: int = setting("CAIRN_SUMMARY_MAX_COMPLETED", 10)
    summary_max_files: int = setting("CAIRN_SUMMARY_MAX_FILES", 20)
    summary_max_learned: int = setting("CAIRN_SUMMARY_MAX_LEARNED", 8)
    summary_max_next_steps: int = setting("CAIRN_SUMMARY_MAX_NEXT_STEPS", 8)
    summary_item_chars: int = setting("CAIRN_SUMMARY_ITEM_CHARS", 300)
    checkpoint_max_files: int = setting("CAIRN_CHECKPOINT_MAX_FILES", 15)
    plan_max_items: int = setting("CAIRN_PLAN_MAX_ITEMS", 200)
    report_default_days: int = setting("CAIRN_REPORT_DEFAULT_DAYS", 7)


@dataclass(frozen=True)
class TeamSettings:
    """On a team database: what this worker's hooks share with teammates beyond the defaults
    (memories, summaries and checkpoints are always the team's)."""

    # Prompts and raw tool observations stay private to their author unless these are set.
    share_prompts: bool = setting("CAIRN_TEAM_SHARE_PROMPTS", False)
    share_observations: bool = setting("CAIRN_TEAM_SHARE_OBSERVATIONS", False)


@dataclass(frozen=True)
class SpoolSettings:
    """The hooks' spool, as the worker replays it."""

    replay_seconds: float = setting("CAIRN_SPOOL_REPLAY_SECONDS", 30.0)


@dataclass(frozen=True)
class ObservationHalfLives:
    """Observation half-life in active days, by observation type."""

    command: float = setting("CAIRN_OBS_HALF_LIFE_DAYS_COMMAND", 1.0)
    research: float = setting("CAIRN_OBS_HALF_LIFE_DAYS_RESEARCH", 3.0)
    web: float = setting("CAIRN_OBS_HALF_LIFE_DAYS_WEB", 5.0)
    mcp: float = setting("CAIRN_OBS_HALF_LIFE_DAYS_MCP", 3.0)
    other: float = setting("CAIRN_OBS_HALF_LIFE_DAYS_OTHER", 3.0)
    delegation: float = setting("CAIRN_OBS_HALF_LIFE_DAYS_DELEGATION", 10.0)
    file_write: float = setting("CAIRN_OBS_HALF_LIFE_DAYS_FILE_WRITE", 21.0)
    note: float = setting("CAIRN_OBS_HALF_LIFE_DAYS_NOTE", 30.0)
    # The agent's closing message of a turn (the Stop hook): what it concluded, as a
    # delegation is what a subagent concluded.
    answer: float = setting("CAIRN_OBS_HALF_LIFE_DAYS_ANSWER", 10.0)

    def by_type(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class LifecycleSettings:
    """How stored items age and leave: decay, per-project caps, compression of near-duplicates."""

    decay_memory_half_lives_days: str = setting(
        "CAIRN_DECAY_MEMORY_HALF_LIVES_DAYS", "7,14,30,90,365"
    )
    decay_reinforcement: float = setting("CAIRN_DECAY_REINFORCEMENT", 0.15)
    decay_interval_seconds: float = setting("CAIRN_DECAY_INTERVAL_SECONDS", 3600.0)
    decay_first_run_seconds: float = setting("CAIRN_DECAY_FIRST_RUN_SECONDS", 120.0)
    obs_half_life_days: ObservationHalfLives = field(default_factory=ObservationHalfLives)
    obs_cap_per_project: int = setting("CAIRN_OBS_CAP_PER_PROJECT", 5000)
    obs_chatter_types: str = setting("CAIRN_OBS_CHATTER_TYPES", "command,mcp,research,other")
    obs_cap_check_seconds: float = setting("CAIRN_OBS_CAP_CHECK_SECONDS", 10.0)
    compress_threshold: float = setting("CAIRN_COMPRESS_THRESHOLD", 0.88)
    compress_lexical_threshold: float = setting("CAIRN_COMPRESS_LEXICAL_THRESHOLD", 0.8)


@dataclass(frozen=True)
class MemorySettings:
    """A memory being saved: the tags picked for it, the older memory it replaces."""

    auto_tags: int = setting("CAIRN_MEMORY_AUTO_TAGS", 5)
    supersede_enabled: bool = setting("CAIRN_SUPERSEDE_ENABLED", True)
    supersede_min_similarity: float = setting("CAIRN_SUPERSEDE_MIN_SIMILARITY", 0.5)
    supersede_cosine: float = setting("CAIRN_SUPERSEDE_COSINE", 0.7)


@dataclass(frozen=True)
class Settings:
    """Effective configuration: the data directory, the default author, and one group per concern."""

    home: Path = field(
        default_factory=lambda: Path.home() / ".cairn", metadata={"env": "CAIRN_HOME"}
    )
    # Who this worker's rows are by when a request names nobody ('': git user.email, else the
    # OS user, read at start; the hooks send the repository's own user.email with every event)
    author: str = setting("CAIRN_AUTHOR", "")
    server: ServerSettings = field(default_factory=ServerSettings)
    limits: LimitSettings = field(default_factory=LimitSettings)
    rate_limits: RateLimitSettings = field(default_factory=RateLimitSettings)
    dashboard: DashboardSettings = field(default_factory=DashboardSettings)
    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    ranking: RankingSettings = field(default_factory=RankingSettings)
    judgment: JudgmentSettings = field(default_factory=JudgmentSettings)
    learning: LearningSettings = field(default_factory=LearningSettings)
    context: ContextSettings = field(default_factory=ContextSettings)
    sessions: SessionSettings = field(default_factory=SessionSettings)
    team: TeamSettings = field(default_factory=TeamSettings)
    spool: SpoolSettings = field(default_factory=SpoolSettings)
    lifecycle: LifecycleSettings = field(default_factory=LifecycleSettings)
    memories: MemorySettings = field(default_factory=MemorySettings)

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
        folder = self.embedding.models_dir
        return Path(folder).expanduser() if folder else self.home / "models"

    @classmethod
    def from_flat(cls, **values: object) -> Settings:
        """Defaults with some settings given by flat name (`search_default_limit=5`)."""
        unknown = sorted(set(values) - set(FLAT_NAMES))
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(unknown)}")
        return _build(cls, (), values)

    def with_flat(self, **values: object) -> Settings:
        """A copy with some settings changed, by flat name."""
        return Settings.from_flat(**{**self.flat(), **values})

    def flat(self) -> dict[str, object]:
        """Every setting by flat name."""
        return {name: self.value(name) for name in FLAT_NAMES}

    def value(self, flat_name: str) -> Any:
        """One setting by flat name."""
        target: Any = self
        for part in FLAT_NAMES[flat_name]:
            target = getattr(target, part)
        return target

    def public_dict(self) -> dict[str, object]:
        """Settings as shown to users, by flat name (no secrets live here; paths as strings)."""
        return {k: str(v) if isinstance(v, Path) else v for k, v in self.flat().items()}


def _leaves(cls: type, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Field[Any]]]:
    """Every field read from the environment, with its attribute path from Settings."""
    for f in fields(cls):
        if "env" in f.metadata:
            yield (*path, f.name), f
        else:
            kind = f.default_factory  # a group: its class is its own default factory
            assert isinstance(kind, type) and is_dataclass(kind), f.name
            yield from _leaves(kind, (*path, f.name))


def flat_name(env: str) -> str:
    return env.removeprefix("CAIRN_").lower()


ENV_NAMES: dict[tuple[str, ...], str] = {path: f.metadata["env"] for path, f in _leaves(Settings)}
"""Attribute path from Settings -> its environment variable."""
FLAT_NAMES: dict[str, tuple[str, ...]] = {flat_name(env): path for path, env in ENV_NAMES.items()}
"""Flat name -> attribute path from Settings."""
_FLAT_BY_PATH = {path: name for name, path in FLAT_NAMES.items()}


def _build(cls: type[T], path: tuple[str, ...], values: Mapping[str, object]) -> T:
    kwargs: dict[str, object] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        here = (*path, f.name)
        if "env" not in f.metadata:
            kwargs[f.name] = _build(f.default_factory, here, values)  # type: ignore[arg-type]
        elif (name := _FLAT_BY_PATH[here]) in values:
            kwargs[f.name] = values[name]
    return cls(**kwargs)


def _convert(env: str, raw: str, default: object) -> object:
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
        raise ConfigError(f"{env}={raw!r} is not a valid {type(default).__name__}") from None
    return raw


def load_settings(env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
    """Build Settings from CAIRN_* environment variables, then explicit overrides (flat names)."""
    env = os.environ if env is None else env
    defaults = Settings()
    values: dict[str, object] = {}
    for name, path in FLAT_NAMES.items():
        if (key := ENV_NAMES[path]) in env:
            values[name] = _convert(key, env[key], defaults.value(name))
    values.update({k: v for k, v in overrides.items() if v is not None})
    settings = Settings.from_flat(**values)
    _check(settings)
    return settings


def _check(settings: Settings) -> None:
    """Refuse values that would only fail later, mid-request (a limit of -1, NaN, '5/fortnight')."""
    for name, path in FLAT_NAMES.items():
        value = settings.value(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{ENV_NAMES[path]}={value!r} must be a finite number >= 0")
    defaults = Settings()
    for name in ("rate_limit_read", "rate_limit_write", "rate_limit_login"):
        raw = settings.value(name)
        if raw == defaults.value(name):
            continue  # valid; and `limits` costs ~60 ms to import, on every CLI command
        from limits import parse_many

        try:
            parse_many(raw)
        except ValueError:
            raise ConfigError(
                f"CAIRN_{name.upper()}={raw!r} is not a rate limit (e.g. '600/minute')"
            ) from None
    ranking, database, server = settings.ranking, settings.database, settings.server
    if ranking.fusion_method not in FUSION_METHODS:
        raise ConfigError(
            f"CAIRN_FUSION_METHOD={ranking.fusion_method!r} is not one of "
            + ", ".join(FUSION_METHODS)
        )
    if database.group_commit_delay_ms > 50:
        raise ConfigError(
            f"CAIRN_GROUP_COMMIT_DELAY_MS={database.group_commit_delay_ms} is over 50 ms: "
            "every concurrent write would wait that long"
        )
    if settings.judgment.prompt_strictness > 1:
        raise ConfigError(
            f"CAIRN_PROMPT_STRICTNESS={settings.judgment.prompt_strictness} is outside 0..1"
        )
    if not 0 <= server.port <= 65535:
        raise ConfigError(f"CAIRN_PORT={server.port} is outside 0..65535")
    if server.host not in ("127.0.0.1", "::1", "localhost"):
        raise ConfigError(
            f"CAIRN_HOST={server.host!r}: Cairn binds loopback only (127.0.0.1, ::1, localhost)"
        )
