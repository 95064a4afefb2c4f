"""Text analysis for the keyword index: identifier splitting, stop words, English+Italian stems.

SQLite's FTS5 tokenizers cannot split `getUserById` or stem Italian, so the words are analysed
here, in Python, and the FTS table indexes the resulting space-separated terms. The same functions
run as SQL functions inside the index triggers (store/sql_terms.py, so every write path is indexed)
and on the query side (retrieval, so a query is read exactly as the documents were). A leaf: it
imports nothing from worker.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

import snowballstemmer

# Runs of letters, digits and `_`; `-`, `.`, `/` and everything else separate words.
_WORD = re.compile(r"\w+", re.UNICODE)
# camelCase / PascalCase / ACRONYMWord / letter-digit boundaries inside one word.
_PARTS = re.compile(r"[^\W\d_]?[^\W\d_A-Z]+|[A-Z]+(?![a-z])|[A-Z][^\W\d_A-Z]*|\d+", re.UNICODE)

# Common function words of English and Italian: they match nearly every document, so they add
# noise to BM25 (and would make every query "match" something). Written for Cairn.
_STOP_WORDS_TEXT = """
    a abbiamo about above after again against agli ai al all alla alle allo also am an anche
    ancora and any are as at avere avete be been before being below between both but by can
    che chi ci coi col come con cosa could cui d da dagli dai dal dalla dalle dallo degli
    dei del della delle dello di did do does doing don dove down during e each ed era erano
    essere few for fra from further gia gli ha had hai hanno has have having he her here
    hers him his ho how i if il in into is it its itself just la le let lets li ll lo loro m
    ma me mi mia mio molto more most my ne negli nei nel nella nelle nello no non nor nostro
    not now o of off on once only or other our ours out over own per perche piu poi quando
    quella quelle quelli quello questa queste questi questo qui re s same se sei she should
    si siamo siete so some sono su sua such sugli sui sul sulla sulle sullo suo t than that
    the their theirs them then there these they this those through ti to too tra tua tuo un
    una under uno until up us ve very vi vostro was we were what when where which while who
    whom why will with would y you your yours yourself
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())

_EN = snowballstemmer.stemmer("english")
_IT = snowballstemmer.stemmer("italian")

# Inputs longer than this are indexed by their head only (bodies are capped well below it).
MAX_ANALYSED_CHARS = 200_000
MAX_QUERY_CHARS = 10_000


def _fold(word: str) -> str:
    """Lower-case without diacritics (Caffè -> caffe), so accents never block a match."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@lru_cache(maxsize=65536)
def _word_parts(word: str) -> tuple[str | None, tuple[tuple[str, ...], ...]]:
    """(folded whole identifier if compound, alternatives per part: its English/Italian stems)."""
    parts = [p for chunk in word.split("_") for p in _PARTS.findall(chunk)]
    whole: str | None = None
    if len(parts) > 1:
        folded_whole = _fold(word.replace("_", ""))
        whole = folded_whole if folded_whole not in STOP_WORDS else None
    groups: list[tuple[str, ...]] = []
    for part in parts:
        lowered = part.lower()
        folded = _fold(part)
        if folded in STOP_WORDS or not folded:
            continue
        if folded.isdigit():
            groups.append((folded,))
            continue
        english = _fold(_EN.stemWord(lowered))
        italian = _fold(_IT.stemWord(lowered))
        groups.append((english,) if italian == english else (english, italian))
    return whole, tuple(groups)


@lru_cache(maxsize=131072)
def _word_terms(word: str) -> tuple[str, ...]:
    whole, groups = _word_parts(word)
    out = [whole] if whole else []
    for group in groups:
        out.extend(group)
    return tuple(out)


@lru_cache(maxsize=131072)
def _word_text(word: str) -> str:
    """A word's terms, space-separated ('' for a stop word): the unit index_text joins. Words
    repeat (Zipf), so caching the finished string makes analysis a dictionary lookup per word."""
    return " ".join(_word_terms(word))


@lru_cache(maxsize=131072)
def _word_split(word: str) -> str:
    """A word as split words, unstemmed: the folded whole identifier if compound, then its
    parts (the splitting of `_word_parts`), stop words dropped."""
    whole, _groups = _word_parts(word)
    parts = [_fold(p) for chunk in word.split("_") for p in _PARTS.findall(chunk)]
    return " ".join([*([whole] if whole else []), *(p for p in parts if p and p not in STOP_WORDS)])


def split_text(*texts: str | None) -> str:
    """The words of `texts` as a PostgreSQL keyword index reads them: identifiers split exactly
    as `index_text` splits them, folded and without stop words, but not stemmed (PostgreSQL's
    'english' and 'italian' text search configurations stem them)."""
    return _joined(_word_split, texts)


def analyse(text: str | None) -> list[str]:
    """All index terms of `text`, in order (duplicates kept: term frequency matters to BM25)."""
    if not text:
        return []
    terms: list[str] = []
    for word in _WORD.findall(text[:MAX_ANALYSED_CHARS]):
        terms.extend(_word_terms(word))
    return terms


def _joined(word_text: Callable[[str], str], texts: tuple[str | None, ...]) -> str:
    """`word_text` of every word of `texts`, space-separated (empty results left out)."""
    parts = [
        word_text(word)
        for text in texts
        if text
        for word in _WORD.findall(text[:MAX_ANALYSED_CHARS])
    ]
    return " ".join(filter(None, parts))


def index_text(*texts: str | None) -> str:
    """The analysed form stored in the FTS index (space-separated terms)."""
    return _joined(_word_text, texts)


def query_terms(text: str, max_terms: int) -> list[str]:
    """Distinct terms of a query, in order of first appearance, at most `max_terms`."""
    seen: dict[str, None] = {}
    for term in analyse(text[:MAX_QUERY_CHARS]):
        if term not in seen:
            seen[term] = None
            if len(seen) >= max_terms:
                break
    return list(seen)


def query_groups(text: str, max_groups: int) -> list[tuple[str, ...]]:
    """Distinct word parts of a query, each as its alternative terms (English/Italian stems):
    a part is present in a document when any alternative is."""
    seen: dict[tuple[str, ...], None] = {}
    for match in _WORD.finditer(text[:MAX_QUERY_CHARS]):
        for group in _word_parts(match.group())[1]:
            if group not in seen:
                seen[group] = None
                if len(seen) >= max_groups:
                    return list(seen)
    return list(seen)


def quote(term: str) -> str:
    """One FTS5 string literal: user text can never be read as FTS syntax."""
    # SQLite reads the expression as a C string: a NUL would end it mid-literal.
    return '"' + term.replace("\x00", "").replace('"', '""') + '"'


def new_terms(extra: str | None, *base: str) -> list[str]:
    """Terms of `extra` that `base` does not already contain (tags picked from a memory's own
    words add nothing; a tag that is not in the text does)."""
    have = set(analyse(" ".join(base)))
    return [t for t in analyse(extra) if t not in have]
