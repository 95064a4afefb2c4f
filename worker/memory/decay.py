"""Ebbinghaus-style retention with reinforcement; pure functions plus a vectorised form for passes.

retention = exp(-t * ln 2 / half_life), t since the last retrieval (or creation). A memory's
half-life comes from its importance (7, 14, 30, 90, 365 days for 1..5 by default) and grows by 15%
per reinforcement (retrieval or re-statement), compounding. Pinned items never decay. Observations
fade faster, by type (settings), scaled by their importance around the default of 2.
"""

from __future__ import annotations

import math
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from worker.errors import ConfigError
from worker.settings import Settings
from worker.store import lifecycle

DAY_MS = 86_400_000
LN2 = math.log(2.0)
# Reinforcement stops compounding after this many uses (a 1.15**60 half-life is ~4,400x already).
MAX_REINFORCEMENTS = 60
OBSERVATION_TYPES = (
    "file_write",
    "command",
    "research",
    "web",
    "delegation",
    "mcp",
    "note",
    "other",
)


@dataclass(frozen=True)
class DecayPolicy:
    memory_half_lives_days: tuple[float, float, float, float, float] = (7, 14, 30, 90, 365)
    reinforcement: float = 0.15
    threshold: float = 0.05
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
        }
    )
    observation_cap: int = 5000
    chatter_share: float = 0.30
    chatter_types: tuple[str, ...] = ("command", "mcp", "research", "other")

    @classmethod
    def from_settings(cls, s: Settings) -> DecayPolicy:
        """Build from settings; a malformed value raises ConfigError naming its variable."""
        try:
            lives = tuple(float(x) for x in s.decay_memory_half_lives_days.split(","))
        except ValueError:
            lives = ()
        if len(lives) != 5 or any(x <= 0 for x in lives):
            raise ConfigError(
                "CAIRN_DECAY_MEMORY_HALF_LIVES_DAYS must be five positive numbers "
                f"(importance 1..5), got {s.decay_memory_half_lives_days!r}"
            )
        if not 0 < s.decay_threshold < 1:
            raise ConfigError(f"CAIRN_DECAY_THRESHOLD must be in (0, 1), got {s.decay_threshold}")
        if not 0 <= s.obs_chatter_share <= 1:
            raise ConfigError(
                f"CAIRN_OBS_CHATTER_SHARE must be in [0, 1], got {s.obs_chatter_share}"
            )
        obs = {t: float(getattr(s, f"obs_half_life_days_{t}")) for t in OBSERVATION_TYPES}
        for t, days in obs.items():
            if days <= 0:
                raise ConfigError(f"CAIRN_OBS_HALF_LIFE_DAYS_{t.upper()} must be > 0")
        chatter = tuple(t.strip() for t in s.obs_chatter_types.split(",") if t.strip())
        unknown = [t for t in chatter if t not in OBSERVATION_TYPES]
        if unknown:
            raise ConfigError(f"CAIRN_OBS_CHATTER_TYPES has unknown types: {', '.join(unknown)}")
        return cls(
            memory_half_lives_days=(lives[0], lives[1], lives[2], lives[3], lives[4]),
            reinforcement=s.decay_reinforcement,
            threshold=s.decay_threshold,
            observation_half_lives_days=obs,
            observation_cap=s.obs_cap_per_project,
            chatter_share=s.obs_chatter_share,
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

    @property
    def archive_after_half_lives(self) -> float:
        """How many half-lives until retention falls under the threshold."""
        return math.log2(1.0 / self.threshold)


def retention(age_ms: float, half_life_days: float, pinned: bool = False) -> float:
    """Fraction of strength left after `age_ms`; 1.0 at age 0 (and for the future), halves per half-life."""
    if pinned:
        return 1.0
    t_days = max(0.0, age_ms) / DAY_MS
    return math.exp(-t_days * LN2 / half_life_days)


def memory_retention(
    policy: DecayPolicy,
    *,
    importance: int,
    reinforcements: int,
    pinned: bool,
    anchor_ms: int,
    now_ms: int,
) -> float:
    return retention(
        now_ms - anchor_ms, policy.memory_half_life_days(importance, reinforcements), pinned
    )


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


# ---------------------------------------------------------------------------- the decay pass
LISTED_IDS = 200  # ids listed per kind in a pass report (counts are always complete)


def _memory_plan(
    rows: list[tuple[Any, ...]], policy: DecayPolicy, now: int
) -> tuple[list[int], list[int]]:
    """(decayed ids, expired ids) among live memory rows from store.lifecycle."""
    if not rows:
        return [], []
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    importance = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    uses = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
    pinned = np.fromiter((bool(r[3]) for r in rows), dtype=bool, count=len(rows))
    anchor = np.fromiter((r[4] for r in rows), dtype=np.float64, count=len(rows))
    expires = np.fromiter(
        (r[5] if r[5] is not None else np.inf for r in rows), dtype=np.float64, count=len(rows)
    )
    expired = expires <= now
    kept = retention_array(now - anchor, memory_half_lives_array(policy, importance, uses))
    decayed = (kept < policy.threshold) & ~pinned & ~expired
    return ids[decayed].tolist(), ids[expired].tolist()


def _observation_retention(
    rows: list[tuple[Any, ...]], policy: DecayPolicy, now: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    types = [str(r[1]) for r in rows]
    importance = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
    uses = np.fromiter((r[3] for r in rows), dtype=np.int64, count=len(rows))
    anchor = np.fromiter((r[4] for r in rows), dtype=np.float64, count=len(rows))
    halves = observation_half_lives_array(policy, types, importance, uses)
    return ids, retention_array(now - anchor, halves)


def cap_evictions(
    ids: npt.NDArray[np.int64],
    kept: npt.NDArray[np.float64],
    chatter: npt.NDArray[np.bool_],
    cap: int,
    chatter_share: float,
) -> list[int]:
    """Ids to evict so at most `cap` stay, chatter at most `chatter_share` of the cap.

    Lowest retention goes first; ties go to the older (smaller) id.
    """
    evict = np.zeros(len(ids), dtype=bool)
    chatter_limit = int(cap * chatter_share)
    chatter_idx = np.flatnonzero(chatter)
    if len(chatter_idx) > chatter_limit:
        order = np.lexsort((ids[chatter_idx], kept[chatter_idx]))
        evict[chatter_idx[order[: len(chatter_idx) - chatter_limit]]] = True
    remaining = np.flatnonzero(~evict)
    if len(remaining) > cap:
        order = np.lexsort((ids[remaining], kept[remaining]))
        evict[remaining[order[: len(remaining) - cap]]] = True
    out: list[int] = ids[evict].tolist()
    return out


def enforce_caps(
    conn: sqlite3.Connection,
    policy: DecayPolicy,
    now: int,
    *,
    project_id: int | None = None,
    dry_run: bool = False,
) -> list[int]:
    """Archive the lowest-retention live observations of projects over their cap."""
    cap = policy.observation_cap
    if cap <= 0:
        return []
    chatter_limit = int(cap * policy.chatter_share)
    evicted: list[int] = []
    for pid, live, chatter in lifecycle.live_observation_counts(conn, policy.chatter_types):
        if project_id is not None and pid != project_id:
            continue
        if live <= cap and chatter <= chatter_limit:
            continue
        rows = lifecycle.observation_decay_rows(conn, pid)
        ids, kept = _observation_retention(rows, policy, now)
        is_chatter = np.fromiter(
            (r[1] in policy.chatter_types for r in rows), dtype=bool, count=len(rows)
        )
        evicted.extend(cap_evictions(ids, kept, is_chatter, cap, policy.chatter_share))
    if not dry_run:
        lifecycle.archive(conn, "observation", evicted, now, "cap")
    return evicted


def run_pass(
    conn: sqlite3.Connection,
    policy: DecayPolicy,
    now: int,
    *,
    project_id: int | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Archive faded and expired items, then enforce the observation caps. Returns counts."""
    started = time.perf_counter()
    mem_rows = lifecycle.memory_decay_rows(conn, project_id, all_projects=project_id is None)
    decayed, expired = _memory_plan(mem_rows, policy, now)
    obs_rows = lifecycle.observation_decay_rows(conn, project_id)
    faded: list[int] = []
    if obs_rows:
        ids, kept = _observation_retention(obs_rows, policy, now)
        faded = ids[kept < policy.threshold].tolist()
    if not dry_run:
        lifecycle.archive(conn, "memory", decayed, now, "decay")
        lifecycle.archive(conn, "memory", expired, now, "expired")
        lifecycle.archive(conn, "observation", faded, now, "decay")
    evicted = enforce_caps(conn, policy, now, project_id=project_id, dry_run=dry_run)
    if dry_run:
        evicted = sorted(set(evicted) - set(faded))
    return {
        "dry_run": dry_run,
        "threshold": policy.threshold,
        "memories": {
            "scanned": len(mem_rows),
            "decayed": len(decayed),
            "expired": len(expired),
            "archived": len(decayed) + len(expired),
            "ids": sorted(decayed + expired)[:LISTED_IDS],
        },
        "observations": {
            "scanned": len(obs_rows),
            "decayed": len(faded),
            "evicted": len(evicted),
            "archived": len(faded) + len(evicted),
            "ids": sorted(faded + evicted)[:LISTED_IDS],
        },
        "took_ms": round((time.perf_counter() - started) * 1000, 1),
    }
