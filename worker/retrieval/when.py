"""Query reading: explicit dates in a query ("on 1 February, 2023", "in October 2023",
"2024-01-15", "March 3rd") become time ranges, so items from that time rank higher.

Only explicit calendar mentions are read (no "last week": relative to when?). English and
Italian month names. A range is [start, end) in epoch ms, UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan", "gennaio", "gen"),
            ("february", "feb", "febbraio"),
            ("march", "mar", "marzo"),
            ("april", "apr", "aprile"),
            ("may", "maggio", "mag"),
            ("june", "jun", "giugno", "giu"),
            ("july", "jul", "luglio", "lug"),
            ("august", "aug", "agosto", "ago"),
            ("september", "sep", "sept", "settembre", "set"),
            ("october", "oct", "ottobre", "ott"),
            ("november", "nov", "novembre"),
            ("december", "dec", "dicembre", "dic"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_PATTERNS = (
    ("ymd", re.compile(r"\b" + _YEAR + r"-(\d\d)-(\d\d)\b")),
    ("dmy", re.compile(r"\b" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+" + _YEAR + r"\b", re.I)),
    ("mdy", re.compile(r"\b" + _MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR + r"\b", re.I)),
    ("my", re.compile(r"\b" + _MONTH + r",?\s+(?:of\s+)?" + _YEAR + r"\b", re.I)),
    ("y", re.compile(r"\b(?:in|during|of|nel|del)\s+" + _YEAR + r"\b", re.I)),
)


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _month_range(year: int, month: int) -> tuple[int, int]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return _ms(start), _ms(end)


def date_ranges(query: str) -> list[tuple[int, int]]:
    """Time ranges the query names explicitly, most specific reading of each span first."""
    ranges: list[tuple[int, int]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(query):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            groups = match.groups()
            try:
                if kind == "ymd":
                    day = datetime(int(groups[0]), int(groups[1]), int(groups[2]), tzinfo=UTC)
                    ranges.append((_ms(day), _ms(day + timedelta(days=1))))
                elif kind in ("dmy", "mdy"):
                    if kind == "dmy":
                        d, m, y = groups[0], groups[1], groups[2]
                    else:
                        m, d, y = groups[0], groups[1], groups[2]
                    day = datetime(int(y), MONTHS[m.lower().rstrip(".")], int(d), tzinfo=UTC)
                    ranges.append((_ms(day), _ms(day + timedelta(days=1))))
                elif kind == "my":
                    ranges.append(
                        _month_range(int(groups[1]), MONTHS[groups[0].lower().rstrip(".")])
                    )
                else:
                    year = int(groups[0])
                    ranges.append(
                        (
                            _ms(datetime(year, 1, 1, tzinfo=UTC)),
                            _ms(datetime(year + 1, 1, 1, tzinfo=UTC)),
                        )
                    )
            except (ValueError, KeyError):
                continue
            taken.append(span)
    return ranges


def time_match(created_at: int, ranges: list[tuple[int, int]], slack_days: float) -> float:
    """1 inside a named range, decaying linearly to 0 at `slack_days` outside it."""
    best = 0.0
    slack = slack_days * 86_400_000
    for start, end in ranges:
        if start <= created_at < end:
            return 1.0
        gap = start - created_at if created_at < start else created_at - end
        if slack > 0 and gap < slack:
            best = max(best, 1.0 - gap / slack)
    return best
