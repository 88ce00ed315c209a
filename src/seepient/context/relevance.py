"""Ranking short documents (skill descriptions) against a request with Okapi BM25, offline and dependency-free.

BM25 scores are not comparable between collections, so a document's score is divided by the score the
document would get against its own terms: the result, between 0 and 1, is how much of what the document
is about the request covers, and one threshold works for a catalogue of 3 skills as for one of 300.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_WORD = re.compile(r"[a-z0-9]+")

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing done down during each either etc every few for from
    further had has have having he her here hers him his how however i if in into is it its itself just
    like may me might more most must my no nor not now of off on once one only or other our ours out over
    own per please same she should so some such than that the their theirs them then there these they
    this those through to too under until up upon us very via was we were what when where whether which
    while who whom whose why will with within without would yes you your yours
    use used uses using when whenever user users ask asks asked want wants need needs needed help helps
    skill skills task tasks thing things make makes way ways work works working something anything
    write writes writing written run runs running create creates add adds update updates new change changes
    edit edits fix fixes code file files project follow following sure
    """.split()
)


def stem(word: str) -> str:
    """A light suffix stripper: enough to meet ``pdfs``/``pdf`` and ``merging``/``merge``, no more."""
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
    elif word.endswith("es") and len(word) > 4 and word[-3] in "sxz":
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeioulsz":
        word = word[:-1]
    return word


def terms(text: str) -> list[str]:
    """Lower-cased, stemmed words of ``text`` without stop words and single characters."""
    return [stem(w) for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOPWORDS]


@dataclass(frozen=True)
class Ranked:
    """``relevance`` is the share of the document's own BM25 weight the query covers (0 to 1)."""

    index: int
    relevance: float
    score: float
    matched: tuple[str, ...]


class Bm25Index:
    """Okapi BM25 (k1, b) over pre-tokenised documents, with the non-negative IDF of Lucene."""

    def __init__(self, documents: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75) -> None:
        self._k1 = k1
        self._b = b
        self._freqs = [Counter(doc) for doc in documents]
        self._lengths = [len(doc) for doc in documents]
        count = len(documents)
        self._average = (sum(self._lengths) / count) if count else 0.0
        document_freq: Counter[str] = Counter()
        for freqs in self._freqs:
            document_freq.update(freqs.keys())
        self._idf = {term: math.log(1 + (count - n + 0.5) / (n + 0.5)) for term, n in document_freq.items()}
        self._postings: dict[str, list[int]] = {}
        for position, freqs in enumerate(self._freqs):
            for term in freqs:
                self._postings.setdefault(term, []).append(position)
        self._self_scores = [self._score(i, freqs.keys()) for i, freqs in enumerate(self._freqs)]

    def __len__(self) -> int:
        return len(self._freqs)

    def _term_score(self, position: int, term: str) -> float:
        tf = self._freqs[position][term]
        if not tf:
            return 0.0
        norm = 1 - self._b + self._b * (self._lengths[position] / self._average if self._average else 1.0)
        return self._idf[term] * tf * (self._k1 + 1) / (tf + self._k1 * norm)

    def _score(self, position: int, query: Iterable[str]) -> float:
        return sum(self._term_score(position, term) for term in query)

    def rank(self, query: Sequence[str]) -> list[Ranked]:
        """Documents sharing at least one term with ``query``, best first. Repeated query terms count once."""
        unique = set(query)
        candidates: dict[int, list[str]] = {}
        for term in unique:
            for position in self._postings.get(term, ()):
                candidates.setdefault(position, []).append(term)
        ranked = []
        for position, matched in candidates.items():
            score = self._score(position, matched)
            best = self._self_scores[position]
            relevance = score / best if best > 0 else 0.0
            ranked.append(Ranked(position, relevance, score, tuple(sorted(matched))))
        ranked.sort(key=lambda r: (-r.relevance, -r.score, r.index))
        return ranked
