"""Migration 16: what became of each injection (issue 32, learning from use).

`context_injections` (m002) records which items a session was given, one row per item and
session. Each row now also says what the session did with it once the turn ended
(worker/memory/use.py): `outcome` is NULL until judged, then 'used', 'ignored' or
'contradicted'; `evidence` says why in words (shown on the dashboard); `decided_at` when
(epoch ms; the usefulness estimate fades old evidence by it). An index serves the per-item
counts.
"""

STATEMENTS: list[str] = [
    "ALTER TABLE context_injections ADD COLUMN outcome TEXT",
    "ALTER TABLE context_injections ADD COLUMN evidence TEXT",
    "ALTER TABLE context_injections ADD COLUMN decided_at INTEGER",
    "CREATE INDEX context_injections_item ON context_injections(item_kind, item_id)",
]
