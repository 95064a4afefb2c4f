"""Text analysis for the keyword index: identifier splitting, stop words, English+Italian stems.

SQLite's FTS5 tokenizers cannot split `getUserById` or stem Italian, so the words are analysed
here, in Python, and the FTS table indexes the resulting space-separated terms. The same function
runs as the SQL function `cairn_terms()` inside the index triggers (so every write path is indexed)
and on the query side (so a query is read exactly as the documents were).
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from functools import lru_cache

import snowballstemmer

SQL_FUNCTION = "cairn_terms"

# Runs of letters, digits and `_`; `-`, `.`, `/` and everything else separate words.
_WORD = re.compile(r"\w+", re.UNICODE)
# camelCase / PascalCase / ACRONYMWord / letter-digit boundaries inside one word.
_PARTS = re.compile(r"[^\W\d_]?[^\W\d_A-Z]+|[A-Z]+(?![a-z])|[A-Z][^\W\d_A-Z]*|\d+", re.UNICODE)

# Common function words of English and Italian: they match nearly every document, so they add
# noise to BM25 (and would make every query "match" something). Written for Cairn.
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "being",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "for",
        "from",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "me",
        "my",
        "no",
        "nor",
        "not",
        "of",
        "on",
        "or",
        "our",
        "ours",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "too",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "am",
        "any",
        "all",
        "also",
        "just",
        "about",
        "above",
        "after",
        "again",
        "against",
        "before",
        "below",
        "between",
        "both",
        "down",
        "during",
        "each",
        "few",
        "further",
        "more",
        "most",
        "other",
        "off",
        "once",
        "only",
        "out",
        "over",
        "own",
        "same",
        "should",
        "some",
        "such",
        "through",
        "under",
        "until",
        "up",
        "very",
        "s",
        "t",
        "don",
        "now",
        "ll",
        "re",
        "ve",
        "d",
        "m",
        "o",
        "y",
        "let",
        "lets",
        "il",
        "lo",
        "la",
        "i",
        "gli",
        "le",
        "un",
        "uno",
        "una",
        "di",
        "da",
        "in",
        "con",
        "su",
        "per",
        "tra",
        "fra",
        "e",
        "ed",
        "o",
        "ma",
        "se",
        "che",
        "chi",
        "cui",
        "non",
        "del",
        "dello",
        "della",
        "dei",
        "degli",
        "delle",
        "al",
        "allo",
        "alla",
        "ai",
        "agli",
        "alle",
        "dal",
        "dallo",
        "dalla",
        "dai",
        "dagli",
        "dalle",
        "nel",
        "nello",
        "nella",
        "nei",
        "negli",
        "nelle",
        "sul",
        "sullo",
        "sulla",
        "sui",
        "sugli",
        "sulle",
        "col",
        "coi",
        "come",
        "dove",
        "quando",
        "perche",
        "questo",
        "questa",
        "questi",
        "queste",
        "quello",
        "quella",
        "quelli",
        "quelle",
        "sono",
        "sei",
        "siamo",
        "siete",
        "ho",
        "hai",
        "ha",
        "abbiamo",
        "avete",
        "hanno",
        "era",
        "erano",
        "essere",
        "avere",
        "mi",
        "ti",
        "si",
        "ci",
        "vi",
        "ne",
        "mio",
        "mia",
        "tuo",
        "tua",
        "suo",
        "sua",
        "nostro",
        "vostro",
        "loro",
        "anche",
        "ancora",
        "gia",
        "piu",
        "molto",
        "poi",
        "cosa",
        "qui",
        "li",
    ]
)

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


def _word_terms(word: str) -> list[str]:
    whole, groups = _word_parts(word)
    out = [whole] if whole else []
    for group in groups:
        out.extend(group)
    return out


def analyse(text: str | None) -> list[str]:
    """All index terms of `text`, in order (duplicates kept: term frequency matters to BM25)."""
    if not text:
        return []
    terms: list[str] = []
    for match in _WORD.finditer(text[:MAX_ANALYSED_CHARS]):
        terms.extend(_word_terms(match.group()))
    return terms


def index_text(*texts: str | None) -> str:
    """The analysed form stored in the FTS index (space-separated terms)."""
    return " ".join(term for text in texts for term in analyse(text))


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
    return '"' + term.replace('"', '""') + '"'


def match_expression(terms: list[str]) -> str | None:
    """An FTS5 MATCH expression: any of the quoted terms (BM25 rewards documents with more)."""
    if not terms:
        return None
    return " OR ".join(quote(t) for t in terms)


def _sql_terms(*texts: object) -> str:
    return index_text(*(t if isinstance(t, str) else None for t in texts))


def register(conn: sqlite3.Connection) -> None:
    """Make `cairn_terms(text, ...)` available to the index triggers on this connection."""
    conn.create_function(SQL_FUNCTION, -1, _sql_terms, deterministic=True)
