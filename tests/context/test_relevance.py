"""BM25 ranking normalised to a 0..1 relevance, and the light stemmer it relies on."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seepient.context.relevance import Bm25Index, stem, terms


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("pdfs", "pdf"),
        ("merging", "merg"),
        ("merge", "merg"),
        ("merged", "merg"),
        ("migrations", "migration"),
        ("libraries", "library"),
        ("classes", "class"),
        ("running", "run"),
        ("tests", "test"),
        ("status", "status"),
        ("go", "go"),
    ],
)
def test_stem(word, expected):
    assert stem(word) == expected


def test_terms_drop_stop_words_and_single_characters():
    assert terms("Use it when the user asks to merge PDFs, a.k.a. documents") == ["merg", "pdf", "document"]


def test_a_document_queried_with_its_own_terms_is_fully_relevant():
    index = Bm25Index([terms("merge pdf documents"), terms("deploy the docker image")])
    (best, *_) = index.rank(terms("documents merging pdf"))
    assert best.index == 0 and best.relevance == pytest.approx(1.0)


def test_more_shared_terms_rank_higher_and_rare_terms_weigh_more():
    docs = [terms("pdf forms merge"), terms("pdf text extraction"), terms("docker images pdf")]
    index = Bm25Index(docs)
    ranked = index.rank(terms("merge pdf forms"))
    assert ranked[0].index == 0 and len(ranked) == 3
    assert ranked[0].relevance > ranked[1].relevance
    # "pdf" is in every document, "extraction" in one: the rare term says more.
    rare = {r.index: r.score for r in index.rank(terms("extraction"))}
    common = {r.index: r.score for r in index.rank(terms("pdf"))}
    assert rare[1] > common[1]


def test_no_shared_term_means_no_result():
    assert Bm25Index([terms("deploy docker")]).rank(terms("merge pdf")) == []
    assert Bm25Index([]).rank(terms("anything")) == []


_words = st.sampled_from(
    ["pdf", "merge", "docker", "image", "deploy", "test", "form", "schema", "release", "notes"]
)


@given(
    st.lists(st.lists(_words, min_size=1, max_size=12), min_size=1, max_size=8), st.lists(_words, max_size=10)
)
def test_relevance_is_always_between_zero_and_one(documents, query):
    for ranked in Bm25Index(documents).rank(query):
        assert 0.0 < ranked.relevance <= 1.0 + 1e-9
        assert set(ranked.matched) <= set(query)
