"""Written answers grouped by what they say, for one decision per group: blank, identical, then similar.

Offline and repeatable: each answer is normalised (Unicode NFKC, case folded,
punctuation dropped, spaces collapsed); answers equal after that are one
group; the rest are compared as TF-IDF vectors of character n-grams within
word boundaries (scikit-learn's TfidfVectorizer, `char_wb`, 3 to 5 characters,
which forgives a typo or a changed ending) and joined by average-linkage
agglomerative clustering at a cosine-similarity threshold the grader sees and
can change. The same answers and threshold always give the same groups (no
randomness anywhere). A group is a suggestion: one decision grades every
member, and any member can still be graded apart.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

THRESHOLD = 0.6
"""The default: answers at least this similar (cosine of their TF-IDF vectors, averaged over a group) share a group."""


def normalised(text: str) -> str:
    """An answer as the grouping compares it."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", folded)).strip()


@dataclass(frozen=True)
class Grouping:
    """Which answers share a group, and how each group was made."""

    groups: tuple[tuple[int, ...], ...]
    """Indices into the answers given, each group in input order; groups by their first member."""
    kinds: tuple[str, ...]
    """Per group: `blank`, `identical`, `similar` or `single`."""
    threshold: float


def group(texts: Sequence[str], blank: Sequence[bool] | None = None, threshold: float = THRESHOLD) -> Grouping:
    """Group the answers (blank[i]: the answer is blank or left as the handout's prompt)."""
    blank = blank or [not t.strip() for t in texts]
    keys = [normalised(t) for t in texts]
    empties = tuple(i for i in range(len(texts)) if blank[i] or not keys[i])
    same: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        if i not in empties:
            same.setdefault(key, []).append(i)
    distinct = list(same)
    labels = _clusters(distinct, threshold) if len(distinct) > 1 else [0] * len(distinct)
    by_label: dict[int, list[int]] = {}
    for key, label in zip(distinct, labels, strict=True):
        by_label.setdefault(int(label), []).extend(same[key])
    groups: list[tuple[tuple[int, ...], str]] = [(empties, "blank")] if empties else []
    for members in by_label.values():
        distinct_here = len({keys[i] for i in members})
        kind = "single" if len(members) == 1 else "identical" if distinct_here == 1 else "similar"
        groups.append((tuple(sorted(members)), kind))
    groups.sort(key=lambda g: (g[1] != "blank", g[1] == "single", g[0][0] if g[0] else -1))
    return Grouping(tuple(g for g, _ in groups), tuple(k for _, k in groups), threshold)


def _clusters(texts: list[str], threshold: float) -> list[int]:
    """Cluster labels of distinct normalised answers (average linkage on cosine distance, cut at 1 - threshold)."""
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_distances

    vectors = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True).fit_transform(texts)
    distances = cosine_distances(vectors)
    model = AgglomerativeClustering(n_clusters=None, metric="precomputed", linkage="average",
                                    distance_threshold=max(1e-9, 1.0 - threshold))
    return [int(label) for label in model.fit_predict(distances)]
