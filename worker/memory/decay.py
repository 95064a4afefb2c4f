"""Ebbinghaus-style retention with reinforcement; pure functions plus a vectorised form for passes.

retention = exp(-t * ln 2 / half_life), t since the last retrieval (or creation). A memory's
half-life comes from its importance (7, 14, 30, 90, 365 days for 1..5 by default) and grows by 15%
per reinforcement (retrieval or re-statement), compounding. Pinned items never decay. Observations
fade faster, by type (settings), scaled by their importance around the default of 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from worker.errors import ConfigError
from worker.settings import Settings

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
