"""The keyword analyser: identifiers split, English+Italian stems, quoting that never breaks FTS5."""

from __future__ import annotations

import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from worker.terms import (
    index_text,
    query_groups,
    query_terms,
    quote,
    split_text,
)


def test_identifiers_are_split_and_kept_whole() -> None:
    for spelling in ("getUserById", "get_user_by_id", "GetUserByID"):
        terms = index_text(spelling).split()
        assert "getuserbyid" in terms, spelling
        assert {"get", "user", "id"} <= set(terms), spelling
    assert {"src", "auth", "login", "handler", "py"} <= set(
        index_text("src/auth/login_handler.py").split()
    )
    assert {"http", "server", "error"} <= set(index_text("HTTPServerError").split())


def test_split_text_splits_like_the_index_but_leaves_stemming_to_postgresql() -> None:
    # The PostgreSQL keyword index stems with its own 'english' and 'italian' configurations:
    # the words reach it split and folded exactly as index_text splits them, and unstemmed.
    assert split_text("getUserById returned the Caffè HTTPServer_config") == (
        "getuserbyid get user id returned caffe httpserverconfig http server config"
    )
    assert "return" in index_text("returned").split()  # the SQLite index holds the stem
    assert split_text("the of", None, "") == ""  # stop words only: nothing to index


def test_english_and_italian_stems_meet() -> None:
    assert set(index_text("funzioni").split()) & set(index_text("funzione").split())
    assert set(index_text("deploying").split()) & set(index_text("deployment").split())
    assert index_text("Caffè") == index_text("caffè") == index_text("CAFFÈ")
    assert set(index_text("caffe").split()) <= set(index_text("Caffè").split())


def test_stop_words_vanish_and_query_terms_are_distinct() -> None:
    assert index_text("the of and il della") == ""
    # English stem, then the Italian reading of "caching" (an alternative, kept once each).
    assert query_terms("cache cache CACHE caching", 10) == ["cach", "caching"]
    assert len(query_terms(" ".join(f"word{i}x" for i in range(100)), 7)) == 7
    assert query_groups("deploying funzioni", 10) == [
        ("deploy", "deploying"),
        ("funzioni", "funzion"),
    ]


def test_quote_escapes_double_quotes() -> None:
    assert quote('a"b') == '"a""b"'


@given(st.text(max_size=80))
def test_any_text_quoted_is_a_valid_match_expression(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 2')"
    )
    conn.execute("INSERT INTO t(body) VALUES (?)", (index_text("some getUserById text"),))
    conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (quote(text),)).fetchall()


def _index(rows: list[tuple[str, str]]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(title, body, tokenize='unicode61')")
    conn.executemany("INSERT INTO t(title, body) VALUES (?, ?)", rows)
    return conn


def _scores(conn: sqlite3.Connection, expression: str) -> dict[int, float]:
    sql = "SELECT rowid, bm25(t, 3, 1) FROM t WHERE t MATCH ?"
    return {int(r[0]): float(r[1]) for r in conn.execute(sql, (expression,))}


def test_the_c_stemmer_is_used_and_stems_exactly_like_pure_python_snowball() -> None:
    """PyStemmer (a dependency) makes snowballstemmer ~20-50x faster; the index must not depend
    on which implementation ran, or a database built with one would not match the other's
    queries."""
    import snowballstemmer
    from snowballstemmer.english_stemmer import EnglishStemmer
    from snowballstemmer.italian_stemmer import ItalianStemmer

    assert type(snowballstemmer.stemmer("english")).__module__ == "Stemmer"
    words = [
        "deploying",
        "deployment",
        "caching",
        "funzioni",
        "funzione",
        "configurazione",
        "università",
        "perché",
        "running",
        "generously",
        "authentication",
        "refactored",
        "nginx",
        "dependencies",
        "cachés",
        "città",
        "rapidamente",
        "lavoravano",
        "getUserById",
    ]
    for language, pure in (("english", EnglishStemmer()), ("italian", ItalianStemmer())):
        fast = snowballstemmer.stemmer(language)
        for word in words:
            assert fast.stemWord(word.lower()) == pure.stemWord(word.lower()), (language, word)
