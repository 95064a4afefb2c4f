"""Migration 3: memory lifecycle (relation reasons, scored-vs-given flags, live-item indexes)."""

STATEMENTS: list[str] = [
    # Why a relation exists: 'manual' (set by hand), 'supersession' (detected on save),
    # 'compress' (a near-duplicate merged into its keeper).
    "ALTER TABLE memory_relations ADD COLUMN reason TEXT NOT NULL DEFAULT 'manual'",
    # 1 when Cairn scored the importance / picked the tags itself (re-scored when content changes).
    "ALTER TABLE memories ADD COLUMN importance_auto INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE memories ADD COLUMN tags_auto INTEGER NOT NULL DEFAULT 0",
    # Why an item was archived: manual, decay, expired, cap, merged.
    "ALTER TABLE memories ADD COLUMN archive_reason TEXT",
    "ALTER TABLE observations ADD COLUMN archive_reason TEXT",
    # When a person restored an observation: its decay clock restarts there.
    "ALTER TABLE observations ADD COLUMN kept_at INTEGER",
    "CREATE INDEX memories_superseded ON memories(superseded_by)",
    "CREATE INDEX memories_live ON memories(project_id, archived_at)",
    "CREATE INDEX memory_relations_from ON memory_relations(from_id)",
    "CREATE INDEX observations_live ON observations(project_id, archived_at, type)",
]
