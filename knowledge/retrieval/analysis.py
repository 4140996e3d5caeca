"""Text analysis for BM25: normalisation, jieba segmentation, stop words, KB dictionary and synonyms.

The same ``Analyzer.tokenize`` runs at ingestion (tokens stored per chunk) and at
query time, so both sides always agree. ``Analyzer.fingerprint`` identifies
everything that changes the output, so stored tokens can be known stale.

Choices, measured on the bench corpora (CPU of the dev machine, one core):

* Traditional → simplified folding uses OpenCC's own t2s tables
  (``TSPhrases.txt`` then ``TSCharacters.txt``, first candidate, as
  ``opencc.OpenCC('t2s')`` does), applied with one compiled phrase regex plus
  ``str.translate`` instead of the library's pure-Python parse tree. Output was
  identical to ``OpenCC('t2s').convert`` on every passage and query of
  cmrc2018/dev and drcd/dev (0 differing texts of 4,318), at ~8.3 M chars/s
  on traditional text against ~0.54 M chars/s for ``OpenCC.convert``; text with
  no traditional character is returned after a single regex scan.
* Identifiers such as ``ERR_1042``, ``v2.3.1``, ``SKU-123`` or ``a/b.conf``
  are cut out before jieba (which would split them at ``_`` or the last dot)
  and emitted whole plus their alphanumeric parts, so ``1042`` still finds
  ``ERR_1042``. Plain ASCII words and numbers are left to jieba.
* Words are kept whole: jieba's search-mode sub-words (``cut_for_search``: 锂电池 → 锂电, 电池, 锂电池) in the
  stored tokens, with or without the query's, lowered MRR@10 on docs-zh/faq (0.826 → 0.818, 0.810 with the
  query's) and on drcd/dev with the query's (0.968 → 0.965) in ``scripts/tune_retrieval.py quality``, for +0.009
  on devdata/manual-zh (the table in docs/chat.md).
* Per-KB dictionaries never touch ``jieba.dt``: an analyzer with user words or
  synonyms gets its own ``jieba.Tokenizer`` whose prefix dictionary is a copy of
  the default one (~10 ms and ~15 MB instead of ~0.55 s to load it again).

Effect on BM25 (``BM25Index`` over passage text, every dev question): MRR@10
0.988 on cmrc2018/dev and 0.951 on drcd/dev, against 0.982 and 0.934 for the
reference tokens of bench/README.md (R@1 0.983 / 0.917 against 0.972 / 0.895).

Speed of ``tokenize`` (normalise + segment + filter), default dictionary, one
core: ~345 k chars/s on drcd/dev passages (traditional: folding first makes
jieba faster than on the raw text), ~290 k chars/s on cmrc2018/dev, ~255 k
chars/s (~100 k tokens/s) on the scale corpus; jieba is ~80% of the time.
Ingesting 600 passages of ~450 chars takes about 1 s. A KB analyzer (own
dictionary) builds in ~45 ms. Measure again with ``python -m
knowledge.retrieval.analysis CORPUS.jsonl`` or ``scripts/bench_bm25.py``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata

import jieba
import opencc

from .stopwords import STOPWORDS, STOPWORDS_DIGEST

# Bump when tokenize() changes behaviour in a way the config does not capture.
ANALYZER_VERSION = 1

NORMALIZED_CACHE = 1024
"""Folded texts an analyzer keeps (a chat turn folds ~130 texts, mostly chunks it folded in earlier turns): at most
~8 MB with the limit below."""
NORMALIZED_MAX_CHARS = 2048
"""Longer texts (whole documents at ingestion) are folded every time, not kept."""


@dataclass(frozen=True)
class AnalyzerConfig:
    """What makes one knowledge base's analysis differ from another's."""

    user_words: tuple[str, ...] = ()
    """KB dictionary words, added to this analyzer's own jieba tokenizer."""
    synonyms: tuple[tuple[str, ...], ...] = ()
    """Synonym groups; every member maps to the group's first member, on both sides.

    Members are single tokens (added to the KB dictionary so jieba keeps them
    whole); a member containing a space can never match.
    """
    fold_traditional: bool = True


# --- traditional → simplified -------------------------------------------------


class _T2S:
    """OpenCC t2s with the library's own tables, applied by regex + str.translate."""

    def __init__(self) -> None:
        folder = os.path.join(os.path.dirname(opencc.__file__), "dictionary")
        chars = self._load(os.path.join(folder, "TSCharacters.txt"))
        self._phrases = self._load(os.path.join(folder, "TSPhrases.txt"))
        single = {k: v for k, v in chars.items() if len(k) == 1}
        self._table = str.maketrans(single)
        # Longest alternative first, so the regex takes the longest phrase at a position
        # (the same leftmost-longest matching as OpenCC's segmentation).
        self._phrase_re = re.compile(
            "|".join(re.escape(p) for p in sorted(self._phrases, key=len, reverse=True))
        )
        # The gate: a text holding none of these characters is left as it is. Every single-character key, and
        # the characters of the phrases that change without holding one (沈默 → 沉默). A set, not a regex
        # character class: over a passage with no traditional character (most simplified text) the class of
        # ~4,000 characters took ~0.5 ms a passage, the set ~0.01 ms (docs/scaling.md, "The judge's text").
        loose = {c for p, v in self._phrases.items() if p != v and not any(ch in single for ch in p) for c in p[:1]}
        self._trad_chars = frozenset(single) | frozenset(loose)

    @staticmethod
    def _load(path: str) -> dict[str, str]:
        table: dict[str, str] = {}
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.rstrip("\n")
                if not line:
                    continue
                key, value = line.split("\t")
                table[key] = value.split(" ")[0]  # first candidate, as OpenCC does
        return table

    def __call__(self, text: str) -> str:
        if self._trad_chars.isdisjoint(text):
            return text
        out: list[str] = []
        pos = 0
        for m in self._phrase_re.finditer(text):
            out.append(text[pos : m.start()].translate(self._table))
            out.append(self._phrases[m.group()])
            pos = m.end()
        out.append(text[pos:].translate(self._table))
        return "".join(out)


@functools.lru_cache(maxsize=1)
def _t2s() -> _T2S:
    return _T2S()


def to_simplified(text: str) -> str:
    """Traditional → simplified Chinese, matching ``opencc.OpenCC('t2s').convert``."""
    return _t2s()(text)


# --- tokenisation ---------------------------------------------------------------

# An ASCII identifier with at least one connector: ERR_1042, v2.3.1, sku-123,
# a/b.conf, user@example.com, c++ (trailing + or #). Applied to lowercased text.
_COMPOUND_RE = re.compile(r"[a-z0-9]+(?:[._\-/:@&+#]+[a-z0-9]+)+[+#]*")
_ALNUM_RUN_RE = re.compile(r"[a-z0-9]+")
_NUMBER_RE = re.compile(r"[0-9]+(?:\.[0-9]+)*")  # 3.14, 2.3.1: kept whole only


def _has_word_char(token: str) -> bool:
    # Punctuation and whitespace tokens carry no meaning; "_" is not alnum either.
    for ch in token:
        if ch.isalnum():
            return True
    return False


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:  # pragma: no cover - vendored installs
        return "unknown"


class Analyzer:
    """Normalises and tokenises text for BM25, identically for documents and queries."""

    def __init__(self, config: AnalyzerConfig = AnalyzerConfig()) -> None:
        self.config = config
        self._t2s = _t2s() if config.fold_traditional else None
        # Texts come back turn after turn (the same chunks are judged and quoted again): their folded form is kept.
        self._normalized = functools.lru_cache(maxsize=NORMALIZED_CACHE)(self._normalize)

        words = sorted({w for w in (self.normalize(w).strip() for w in config.user_words) if w})
        synonym_map: dict[str, str] = {}
        groups: list[list[str]] = []
        for group in config.synonyms:
            members = [m for m in (self.normalize(m).strip() for m in group) if m]
            if not members:
                continue
            groups.append(members)
            for member in members:
                synonym_map.setdefault(member, members[0])  # the first group wins
        self._synonyms = synonym_map
        # Words the KB owner named explicitly are never dropped as stop words.
        self._protected = frozenset(words) | frozenset(synonym_map)

        if words or synonym_map:
            self._jieba = _private_tokenizer()
            for word in sorted(set(words) | set(synonym_map) | set(synonym_map.values())):
                if not any(ch.isspace() for ch in word):  # jieba never matches across spaces
                    self._jieba.add_word(word)
        else:
            self._jieba = jieba.dt

        self.fingerprint: str = hashlib.sha256(
            json.dumps(
                {
                    "version": ANALYZER_VERSION,
                    "jieba": _package_version("jieba"),
                    "opencc": _package_version("opencc-python-reimplemented"),
                    "stopwords": STOPWORDS_DIGEST,
                    "fold_traditional": config.fold_traditional,
                    "user_words": words,
                    "synonyms": groups,
                },
                ensure_ascii=False,
                sort_keys=True,
            ).encode("utf-8")
        ).hexdigest()[:16]

    def __repr__(self) -> str:
        return f"<Analyzer {self.fingerprint} words={len(self.config.user_words)} synonyms={len(self._synonyms)}>"

    def normalize(self, text: str) -> str:
        """NFKC (full-width → half-width), lowercase, traditional → simplified."""
        return self._normalized(text) if len(text) <= NORMALIZED_MAX_CHARS else self._normalize(text)

    def _normalize(self, text: str) -> str:
        text = unicodedata.normalize("NFKC", text).lower()
        if self._t2s is not None:
            text = self._t2s(text)
        return text

    def tokenize(self, text: str) -> list[str]:
        """Tokens of ``text`` for BM25: the same function for documents and queries."""
        text = self.normalize(text)
        raw: list[str] = []
        pos = 0
        cut = self._jieba.lcut
        for m in _COMPOUND_RE.finditer(text):
            if m.start() > pos:
                raw.extend(cut(text[pos : m.start()]))
            whole = m.group()
            raw.append(whole)
            if not _NUMBER_RE.fullmatch(whole):
                raw.extend(_ALNUM_RUN_RE.findall(whole))
            pos = m.end()
        if pos < len(text):
            raw.extend(cut(text[pos:]))

        synonyms, protected = self._synonyms, self._protected
        tokens: list[str] = []
        for tok in raw:
            if tok in synonyms:
                tokens.append(synonyms[tok])
            elif tok in protected:
                tokens.append(tok)
            elif tok not in STOPWORDS and _has_word_char(tok):
                tokens.append(tok)
        return tokens

    def query_tokens(self, text: str) -> list[str]:
        """Tokens of a query; the same as ``tokenize``, named for the call site."""
        return self.tokenize(text)


def single_char_filtered(tokens: Sequence[str]) -> list[str]:
    """Tokens longer than one character: what the keyword path's low-score retry searches with (pipeline.py)."""
    return [t for t in tokens if len(t) > 1]


_DEFAULT_PREFIX_LOCK = threading.Lock()


def _private_tokenizer() -> jieba.Tokenizer:
    """A jieba tokenizer with a private copy of the default prefix dictionary.

    The copy comes from ``jieba.dt``; nothing in the project may call the global
    ``jieba.add_word``, or those words would leak into every KB's copy.
    """
    with _DEFAULT_PREFIX_LOCK:
        jieba.dt.check_initialized()
        tokenizer = jieba.Tokenizer()
        tokenizer.FREQ = dict(jieba.dt.FREQ)
        tokenizer.total = jieba.dt.total
        tokenizer.initialized = True
    return tokenizer


@functools.lru_cache(maxsize=32)
def get_analyzer(config: AnalyzerConfig = AnalyzerConfig()) -> Analyzer:
    """The analyzer for ``config``, built once per process (jieba setup is costly)."""
    return Analyzer(config)


def _benchmark(paths: Iterable[str]) -> None:  # pragma: no cover - manual measurement
    import time

    analyzer = get_analyzer(AnalyzerConfig())
    analyzer.tokenize("预热")
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            texts = [json.loads(line)["text"] for line in fh]
        chars = sum(map(len, texts))
        start = time.perf_counter()
        n_tokens = sum(len(analyzer.tokenize(t)) for t in texts)
        elapsed = time.perf_counter() - start
        print(
            f"{path}: {len(texts)} texts, {chars / elapsed:,.0f} chars/s, "
            f"{n_tokens / elapsed:,.0f} tokens/s"
        )


if __name__ == "__main__":  # pragma: no cover
    import sys

    if len(sys.argv) < 2:
        sys.exit("usage: python -m knowledge.retrieval.analysis CORPUS.jsonl [...]")
    _benchmark(sys.argv[1:])
