"""Stop words dropped from documents and queries before BM25."""

from __future__ import annotations

import hashlib

# Function words, pronouns, particles and question words. Question words
# (什么, 哪些, 如何...) never occur in the passage that answers the question,
# so keeping them only adds noise to BM25 and to the "not found" signals
# (什么/可以 go for the same reason). Negations (不, 没有) are kept:
# they change meaning and are rare enough to carry some weight.
_ZH = """
的 地 得 之 了 着 过 是 为 在 和 与 及 以及 或 或者 而 而且 并 并且 且 也 都 就 还 又 再 才 只
把 被 让 给 对 对于 从 向 往 于 以 其 由 所 等 等等 即 将 已 已经 很 最 更 太 比较
有 我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 大家 自己 人家
这 那 这个 那个 这些 那些 这里 那里 这儿 那儿 这样 那样 这么 那么 此 该 各 每 某
什么 啥 怎么 怎样 怎么样 怎么办 如何 哪 哪个 哪些 哪里 哪儿 为什么 为何 何 谁 多少 几
吗 呢 吧 啊 呀 哦 嘛 哈 啦 么 呗 嗯 诶
可以 可 能 能够 会 要 想 应该 需要 请 请问 一个 一些 一下 一种 一样 一直
因为 所以 但 但是 可是 然而 如果 假如 虽然 然后 就是 还是 不过 只是 关于 至于 通过 根据 按照
"""

_EN = """
a an the of to in on at by for from with as and or but if then than so
is are was were be been being am do does did done has have had
it its this that these those there here
i me my we our you your he him his she her they them their
what which who whom whose when where why how
can could will would shall should may might must
into about over under up down out off not no
"""

STOPWORDS_ZH: frozenset[str] = frozenset(_ZH.split())
STOPWORDS_EN: frozenset[str] = frozenset(_EN.split())
STOPWORDS: frozenset[str] = STOPWORDS_ZH | STOPWORDS_EN

# Part of the analyzer fingerprint: editing the list makes stored tokens stale.
STOPWORDS_DIGEST: str = hashlib.sha256("\n".join(sorted(STOPWORDS)).encode("utf-8")).hexdigest()[:16]
