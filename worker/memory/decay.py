"""Ebbinghaus-style retention with reinforcement, counted in the project's active days; the pass
that archives expired memories and what a project holds over its cap.

retention = exp(-t * ln 2 / half_life), t the days the item's project was worked on since the
item's last retrieval (or creation): a project's items do not age while it sleeps, and imported
history keeps its dates without fading on arrival. A memory's half-life comes from its importance
(7, 14, 30, 90, 365 active days for 1..5 by default) and grows by 15% per reinforcement
(retrieval or re-statement), compounding. Pinned items never decay. Observations fade faster, by
type (settings), scaled by their importance around the default of 2.

Retention ranks (API, dashboard, the order under cap pressure); it never archives by itself.
Items are archived only when their memory's `expires_at` passes, or when a project holds more
live observations than its cap: the least valuable go first (tool chatter, then lower
importance, then lower retention, then older).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from worker.errors import ConfigError
from worker.settings import Settings
from worker.store import lifecycle
from worker.store.db import AnyDb
from worker.store.observations import TYPES as OBSERVATION_TYPES

DAY_MS = 86_400_000
LN2 = math.log(2.0)
# Reinforcement stops compounding after this many uses (a 1.15**60 half-life is ~4,400x already).
MAX_REINFORCEMENTS = 60


@dataclass(frozen=True)
class DecayPolicy:
    memory_half_lives_days: tuple[float, float, float, float, float] = (7, 14, 30, 90, 365)
    reinforcement: float = 0.15
    observation_half_lives_days: dict[str, float] = field(
        default_factory=lambda: {
            "command": 1.0,
            "research": 3.0,
            "web": 5.0,
            "mcp": 3.0,
            "other": 3.0,
            "delegation": 10.0,
            "file_write": 21.0,
            "note": 30.0,
            "answer": 10.0,
        }
    )
    observation_cap: int = 5000
    chatter_types: tuple[str, ...] = ("command", "mcp", "research", "other")

    @classmethod
    def from_settings(cls, s: Settings) -> DecayPolicy:
        """Build from settings; a malformed value raises ConfigError naming its variable."""
        try:
            lives = tuple(float(x) for x in s.lifecycle.decay_memory_half_lives_days.split(","))
        except ValueError:
            lives = ()
        if len(lives) != 5 or any(x <= 0 for x in lives):
            raise ConfigError(
                "CAIRN_DECAY_MEMORY_HALF_LIVES_DAYS must be five positive numbers "
                f"(importance 1..5), got {s.lifecycle.decay_memory_half_lives_days!r}"
            )
        by_type = s.lifecycle.obs_half_life_days.by_type()
        obs = {t: by_type[t] for t in OBSERVATION_TYPES}
        for t, days in obs.items():
            if days <= 0:
                raise ConfigError(f"CAIRN_OBS_HALF_LIFE_DAYS_{t.upper()} must be > 0")
        chatter = tuple(t.strip() for t in s.lifecycle.obs_chatter_types.split(",") if t.strip())
        unknown = [t for t in chatter if t not in OBSERVATION_TYPES]
        if unknown:
            raise ConfigError(f"CAIRN_OBS_CHATTER_TYPES has unknown types: {', '.join(unknown)}")
        return cls(
            memory_half_lives_days=(lives[0], lives[1], lives[2], lives[3], lives[4]),
            reinforcement=s.lifecycle.decay_reinforcement,
            observation_half_lives_days=obs,
            observation_cap=s.lifecycle.obs_cap_per_project,
            chatter_types=chatter,
        )

    def memory_half_life_days(self, importance: int, reinforcements: int = 0) -> float:
        base = self.memory_half_lives_days[min(5, max(1, importance)) - 1]
        return base * self.boost(reinforcements)

    def observation_half_life_days(self, type_: str, importance: int, reinforcements: int) -> float:
        base = self.observation_half_lives_days.get(
            type_, self.observation_half_lives_days["other"]
        )
        # Importance 2 is the default for observations; each step doubles or halves the half-life.
        return base * 2.0 ** (min(5, max(1, importance)) - 2) * self.boost(reinforcements)

    def boost(self, reinforcements: int) -> float:
        n = min(MAX_REINFORCEMENTS, max(0, reinforcements))
        return float((1.0 + self.reinforcement) ** n)


def retention(age_ms: float, half_life_days: float, pinned: bool = False) -> float:
    """Fraction of strength left after `age_ms` of active time; 1.0 at age 0 (and for the
    future), halves per half-life."""
    if pinned:
        return 1.0
    t_days = max(0.0, age_ms) / DAY_MS
    return math.exp(-t_days * LN2 / half_life_days)


def memory_retention(
    policy: DecayPolicy, *, importance: int, reinforcements: int, pinned: bool, age_ms: float
) -> float:
    """A memory's retention after `age_ms` of its project's active time (ActivityClock)."""
    return retention(age_ms, policy.memory_half_life_days(importance, reinforcements), pinned)


def retention_array(
    age_ms: npt.NDArray[np.float64], half_life_days: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """The vectorised `retention` (no pinned handling: filter pinned rows before)."""
    t_days = np.maximum(age_ms, 0.0) / DAY_MS
    out: npt.NDArray[np.float64] = np.exp(-t_days * LN2 / half_life_days)
    return out


def memory_half_lives_array(
    policy: DecayPolicy,
    importance: npt.NDArray[np.int64],
    reinforcements: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]:
    base = np.asarray(policy.memory_half_lives_days, dtype=np.float64)
    idx = np.clip(importance, 1, 5) - 1
    n = np.clip(reinforcements, 0, MAX_REINFORCEMENTS)
    out: npt.NDArray[np.float64] = base[idx] * (1.0 + policy.reinforcement) ** n
    return out


def observation_half_lives_array(
    policy: DecayPolicy,
    types: list[str],
    importance: npt.NDArray[np.int64],
    reinforcements: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]:
    table = policy.observation_half_lives_days
    base = np.fromiter(
        (table.get(t, table["other"]) for t in types), dtype=np.float64, count=len(types)
    )
    scale = 2.0 ** (np.clip(importance, 1, 5) - 2)
    n = np.clip(reinforcements, 0, MAX_REINFORCEMENTS)
    out: npt.NDArray[np.float64] = base * scale * (1.0 + policy.reinforcement) ** n
    return out


# ---------------------------------------------------------------------------- the activity clock
EMPTY_DAYS: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class ActivityClock:
    """Each scope's active days (from store.lifecycle.active_days): items age by them alone."""

    days: dict[int | None, npt.NDArray[np.int64]]
    now_ms: int

    @classmethod
    def load(cls, conn: AnyDb, scopes: list[int | None], now_ms: int) -> ActivityClock:
        found = lifecycle.active_days(conn, scopes)
        return cls({k: np.asarray(v, dtype=np.int64) for k, v in found.items()}, now_ms)

    def age_ms(
        self, scope: int | None, anchor_ms: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """Active time since each anchor: the scope's active days after the anchor's day, up to
        today (a whole day each, as `retention_array` expects milliseconds)."""
        days = self.days.get(scope, EMPTY_DAYS)
        upto = np.searchsorted(days, self.now_ms // DAY_MS, side="right")
        after = np.searchsorted(days, np.floor_divide(anchor_ms, DAY_MS), side="right")
        out: npt.NDArray[np.float64] = np.maximum(upto - after, 0).astype(np.float64) * DAY_MS
        return out

    def age_of(self, scope: int | None, anchor_ms: int) -> float:
        return float(self.age_ms(scope, np.asarray([anchor_ms], dtype=np.float64))[0])


# ---------------------------------------------------------------------------- the decay pass
LISTED_IDS = 200  # ids listed per kind in a pass report (counts are always complete)


def cap_evictions(
    ids: npt.NDArray[np.int64],
    chatter: npt.NDArray[np.bool_],
    importance: npt.NDArray[np.int64],
    kept: npt.NDArray[np.float64],
    cap: int,
) -> list[int]:
    """Ids to archive so that at most `cap` stay: exactly the overflow, least valuable first.

    Tool chatter goes before anything else, then lower importance, then lower retention; ties
    go to the older (smaller) id.
    """
    over = len(ids) - cap
    if over <= 0:
        return []
    order = np.lexsort((ids, kept, importance, ~chatter))
    out: list[int] = sorted(ids[order[:over]].tolist())
    return out


def _observation_plan(
    rows: list[tuple[Any, ...]], policy: DecayPolicy, clock: ActivityClock, project_id: int
) -> list[int]:
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    types = [str(r[1]) for r in rows]
    importance = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
    uses = np.fromiter((r[3] for r in rows), dtype=np.int64, count=len(rows))
    anchor = np.fromiter((r[4] for r in rows), dtype=np.float64, count=len(rows))
    halves = observation_half_lives_array(policy, types, importance, uses)
    kept = retention_array(clock.age_ms(project_id, anchor), halves)
    chatter = np.fromiter((t in policy.chatter_types for t in types), dtype=bool, count=len(rows))
    return cap_evictions(ids, chatter, importance, kept, policy.observation_cap)


def enforce_caps(
    conn: AnyDb,
    policy: DecayPolicy,
    now: int,
    *,
    project_id: int | None = None,
    dry_run: bool = False,
) -> list[int]:
    """Archive the least valuable live observations of the projects over their cap."""
    cap = policy.observation_cap
    if cap <= 0:
        return []
    evicted: list[int] = []
    for pid, live in lifecycle.live_observation_counts(conn):
        if live <= cap or (project_id is not None and pid != project_id):
            continue
        clock = ActivityClock.load(conn, [pid], now)
        evicted.extend(
            _observation_plan(lifecycle.observation_decay_rows(conn, pid), policy, clock, pid)
        )
    if not dry_run:
        lifecycle.archive(conn, "observation", evicted, now, "cap")
    return evicted


def run_pass(
    conn: AnyDb,
    policy: DecayPolicy,
    now: int,
    *,
    project_id: int | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Archive expired memories, then enforce the observation caps. Returns counts.

    Nothing is archived for being old: retention only ranks (see the module docstring).
    """
    started = time.perf_counter()
    expired = lifecycle.expired_memories(conn, now, project_id)
    memories = lifecycle.live_memory_count(conn, project_id)
    counts = dict(lifecycle.live_observation_counts(conn))
    scanned = counts.get(project_id, 0) if project_id is not None else sum(counts.values())
    if not dry_run:
        lifecycle.archive(conn, "memory", expired, now, "expired")
    evicted = sorted(enforce_caps(conn, policy, now, project_id=project_id, dry_run=dry_run))
    return {
        "dry_run": dry_run,
        "observation_cap": policy.observation_cap,
        "memories": {
            "scanned": memories,
            "expired": len(expired),
            "archived": len(expired),
            "ids": expired[:LISTED_IDS],
        },
        "observations": {
            "scanned": scanned,
            "evicted": len(evicted),
            "archived": len(evicted),
            "ids": evicted[:LISTED_IDS],
        },
        "took_ms": round((time.perf_counter() - started) * 1000, 1),
    }
