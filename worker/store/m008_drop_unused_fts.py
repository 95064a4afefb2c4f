"""Migration 8: drop the m001 FTS indexes over observations, prompts and summaries.

Keyword search reads the analysed `search_index` (m002: identifiers split, English + Italian
stems) and nothing queries these three any more, yet every insert paid for them: measured on the
Store, batch inserts ran at about 2.2k rows/s with both indexes and about 5k/s with one.
`memories_fts` stays: supersession looks up candidate memories through it.
"""

STATEMENTS: list[str] = [
    f"DROP TRIGGER IF EXISTS {table}_{suffix}"
    for table in ("observations", "prompts", "summaries")
    for suffix in ("ai", "ad", "au")
] + [f"DROP TABLE IF EXISTS {table}_fts" for table in ("observations", "prompts", "summaries")]
