"""Issue 8, "one access rule, stated once": ``knowledge.access`` and what depends on it.

The matrix checks that every form of the rule (per user, per search scope as
a Q, per search scope as the stores' SQL, on documents and on chunks) gives
the same answer as the rule written out in plain Python. The rest are the
fixes: labelled questions naming a restricted document, and cached search
results after group and restriction changes (against a real Redis).
"""
from __future__ import annotations

import json

import pytest
import redis
from django.contrib.auth.models import Group
from django.db import connection

from knowledge.access import (
    caller_role,
    documents_readable_q,
    kb_role,
    kbs_for_user,
    role_at_least,
    scope_chunks_sql,
    scope_documents_q,
    scope_documents_sql,
    scope_for,
    with_caller_role,
)
from knowledge.keyword_store import keyword_store
from knowledge.models import Chunk, Document, EvalQuestion, KnowledgeBase, Role
from knowledge.services.calibration import recalibrate_kb
from knowledge.services.kbs import membership_set
from tests.helpers import document_with_chunk, redis_available

REDIS_URL = "redis://127.0.0.1:6379/13"

needs_redis = pytest.mark.skipif(not redis_available(REDIS_URL), reason="needs Redis at 127.0.0.1:6379 (make test starts one)")

RANKED = [None, Role.VIEWER, Role.EDITOR, Role.OWNER]


# --- the matrix (the ``matrix`` fixture: tests/knowledge/conftest.py) ---------------------

def _expected_role(user, kb) -> Role | None:
    """The role rule in plain Python, from the memberships the fixture made."""
    if user.is_superuser or kb.owner_id == user.pk:
        return Role.OWNER
    group_ids = set(user.groups.values_list("pk", flat=True))
    roles = [Role(m.role) for m in kb.memberships.all() if m.user_id == user.pk or m.group_id in group_ids]
    return max(roles, key=RANKED.index, default=None)


def _expected_readable(user, kbs, documents) -> set[int]:
    """The document rule in plain Python."""
    group_ids = set(user.groups.values_list("pk", flat=True))
    roles = {kb.pk: _expected_role(user, kb) for kb in kbs}
    return {d.pk for d, groups in documents
            if roles[d.kb_id] is not None and (role_at_least(roles[d.kb_id], Role.EDITOR) or not groups or groups & group_ids)}


def _sql_readable(scope, kb_id: int) -> set[int]:
    condition, params = scope_documents_sql(scope, kb_id, alias="d")
    with connection.cursor() as cur:
        cur.execute(f"SELECT d.id FROM knowledge_document d WHERE d.kb_id = %s AND {condition}", [kb_id, *params])
        return {row[0] for row in cur.fetchall()}


def _sql_chunks_readable(scope, kb_id: int) -> set[int]:
    """Documents of the KB with a chunk ``scope_chunks_sql`` lets through (the chunk store's form, for any KB)."""
    condition, params = scope_chunks_sql(scope, chunk="c", document="d")
    with connection.cursor() as cur:
        cur.execute(f"SELECT DISTINCT d.id FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id"
                    f" WHERE c.kb_id = %s AND {condition}", [kb_id, *params])
        return {row[0] for row in cur.fetchall()}


@pytest.mark.django_db
def test_roles_agree_with_the_rule_on_the_matrix(matrix):
    users, kbs, _ = matrix
    for name, user in users.items():
        annotated = {kb.pk: kb for kb in with_caller_role(KnowledgeBase.objects.all(), user=user)}
        for kb in kbs:
            expected = _expected_role(user, kb)
            assert kb_role(user=user, kb=kb) == expected, (name, kb.name)
            assert caller_role(annotated[kb.pk], user=user) == expected, (name, kb.name)
        for min_role in (Role.VIEWER, Role.EDITOR, Role.OWNER):
            expected_kbs = {kb.pk for kb in kbs if role_at_least(_expected_role(user, kb), min_role)}
            assert set(kbs_for_user(user=user, min_role=min_role).values_list("pk", flat=True)) == expected_kbs, (name, min_role)


@pytest.mark.django_db
def test_orm_and_sql_forms_of_the_document_rule_agree_on_the_matrix(matrix):
    users, kbs, documents = matrix
    for name, user in users.items():
        expected = _expected_readable(user, kbs, documents)
        by_user = set(Document.objects.filter(documents_readable_q(user=user)).values_list("pk", flat=True))
        chunks = set(Chunk.objects.filter(documents_readable_q(user=user, prefix="document__")).values_list("document_id", flat=True))
        assert by_user == chunks == expected, name
        for kb in kbs:
            if kb_role(user=user, kb=kb) is None:
                continue  # a search of a KB the caller cannot read is refused before any scope is built
            scope = scope_for(user=user, kbs=[kb])
            in_kb = {pk for pk in expected if Document.objects.get(pk=pk).kb_id == kb.pk}
            scoped_documents = set(Document.objects.filter(scope_documents_q(scope, kb.pk, prefix=""), kb=kb).values_list("pk", flat=True))
            scoped_chunks = set(Chunk.objects.filter(scope_documents_q(scope, kb.pk), kb=kb).values_list("document_id", flat=True))
            assert scoped_documents == scoped_chunks == _sql_readable(scope, kb.pk) == in_kb, (name, kb.name)
            assert _sql_chunks_readable(scope, kb.pk) == in_kb, (name, kb.name)


@pytest.mark.django_db
def test_a_readable_filter_never_repeats_a_row(matrix):
    """The rule is correlated EXISTS, not joins: a document restricted to two of the caller's groups is listed once."""
    users, (kb1, _), _ = matrix
    users["vhr"].groups.add(Group.objects.get(name="sales"))
    rows = list(Document.objects.filter(documents_readable_q(user=users["vhr"]), kb=kb1).values_list("source_name", flat=True))
    assert sorted(rows) == ["one-hr+sales.md", "one-hr.md", "one-open.md"]


# --- fix 1: labelled questions naming a restricted document ---------------------------------

@pytest.fixture
def questions(kb, alice, ingest):
    """Alice's KB with open documents and an hr-only one, and questions naming them (every way a label can)."""
    _, salary, _ = ingest(kb, {"price.md": "# 价格\n\n专业版每年 999 元。\n", "salary.md": "# 工资\n\n工资每月十日发放。\n",
                               "install.md": "# 安装\n\n运行 pip install zhiku 即可安装。\n"})
    salary.restricted_to_groups.set([Group.objects.create(name="hr")])
    Document.objects.filter(pk=salary.pk).update(external_id="HR-7")
    labels = {"open": ["price.md"], "unanswerable": [], "by source name": ["salary.md"], "by stem": ["salary"],
              "by id": [str(salary.pk)], "by external id": ["HR-7"], "both": ["price", "salary.md"]}
    for text, relevant in labels.items():
        EvalQuestion.objects.create(kb=kb, text=text, relevant=relevant, created_by=alice)
    return kb


def _question_texts(client, kb) -> list[str]:
    response = client.get(f"/api/kbs/{kb.pk}/eval-questions/")
    assert response.status_code == 200, response.content
    return [q["text"] for q in response.json()]


@pytest.mark.django_db
def test_a_viewer_does_not_see_questions_naming_a_document_they_cannot_read(questions, make_user, client_for):
    carol = make_user("carol")
    membership_set(kb=questions, user=carol, role=Role.VIEWER)
    assert _question_texts(client_for(carol), questions) == ["open", "unanswerable"]


@pytest.mark.django_db
def test_group_members_and_editors_see_every_question(questions, alice, make_user, client_for):
    everything = ["open", "unanswerable", "by source name", "by stem", "by id", "by external id", "both"]
    in_group = make_user("hannah", groups=[Group.objects.get(name="hr")])
    editor = make_user("ed")
    membership_set(kb=questions, user=in_group, role=Role.VIEWER)
    membership_set(kb=questions, user=editor, role=Role.EDITOR)
    for user in (alice, in_group, editor):
        assert _question_texts(client_for(user), questions) == everything, user.username


@pytest.mark.django_db
def test_a_viewers_reports_do_not_name_restricted_documents(questions, make_user, client_for):
    """A viewer reads the calibration (counts and a curve); the evaluation run, which names documents, is for editors."""
    row = recalibrate_kb(questions.pk)  # fitted on every document, the restricted one too
    assert row.status == "ready", row.error
    carol = make_user("carol")
    membership_set(kb=questions, user=carol, role=Role.VIEWER)
    client = client_for(carol)
    calibration = client.get(f"/api/kbs/{questions.pk}/calibration/")
    assert calibration.status_code == 200
    text = json.dumps(calibration.json(), ensure_ascii=False)
    assert not [secret for secret in ("salary", "HR-7", "工资") if secret in text]
    assert client.post(f"/api/kbs/{questions.pk}/evaluate/", {}, format="json").status_code == 403


# --- fix 4: group and restriction changes expire what the caller had cached -----------------------

@pytest.fixture
def cached(settings, kb, ingest):
    """Alice's KB with an open and a salary document, searched through a real Redis (database 13, emptied)."""
    settings.REDIS_URL = REDIS_URL
    settings.CACHES = {"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL}}
    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    ingest(kb, {"price.md": "# 价格\n\n专业版每年 999 元，企业版请联系销售。\n",
                "salary.md": "# 工资\n\n员工工资每月十日发放，年终奖按绩效计算。\n"})
    keyword_store().invalidate_local()
    yield kb
    client.flushdb()


def _search(client, kb):
    response = client.post("/api/search/", {"query": "工资每月几号发放", "kb_ids": [kb.pk]}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    return body["cached"], [r["document"]["source_name"] for r in body["results"]]


def _salary(kb) -> Document:
    return Document.objects.get(kb=kb, source_name="salary.md")


@needs_redis
@pytest.mark.django_db
def test_leaving_the_group_a_document_is_restricted_to_expires_the_cached_result(cached, make_user, client_for):
    hr = Group.objects.create(name="hr")
    _salary(cached).restricted_to_groups.set([hr])
    carol = make_user("carol", groups=[hr])
    membership_set(kb=cached, user=carol, role=Role.VIEWER)
    client = client_for(carol)
    _search(client, cached)
    was_cached, sources = _search(client, cached)
    assert was_cached is True and "salary.md" in sources

    carol.groups.remove(hr)
    was_cached, sources = _search(client, cached)
    assert was_cached is False and "salary.md" not in sources


@needs_redis
@pytest.mark.django_db
def test_leaving_the_group_that_holds_the_kb_is_a_404_not_a_cached_result(cached, make_user, client_for):
    readers = Group.objects.create(name="readers")
    membership_set(kb=cached, group=readers, role=Role.VIEWER)
    carol = make_user("carol", groups=[readers])
    client = client_for(carol)
    _search(client, cached)
    assert _search(client, cached)[0] is True

    carol.groups.remove(readers)
    response = client.post("/api/search/", {"query": "工资每月几号发放", "kb_ids": [cached.pk]}, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "kb_not_found"


@needs_redis
@pytest.mark.django_db
@pytest.mark.parametrize("restrict", [
    pytest.param(lambda document, hr: document.restricted_to_groups.set([hr]), id="document.set"),
    pytest.param(lambda document, hr: document.restricted_to_groups.add(hr), id="document.add"),
    pytest.param(lambda document, hr: hr.restricted_documents.add(document), id="group.add"),
])
def test_restricting_a_document_expires_the_cached_result(cached, make_user, client_for, restrict):
    carol = make_user("carol")
    membership_set(kb=cached, user=carol, role=Role.VIEWER)
    client = client_for(carol)
    _search(client, cached)
    was_cached, sources = _search(client, cached)
    assert was_cached is True and "salary.md" in sources

    restrict(_salary(cached), Group.objects.create(name="hr"))
    was_cached, sources = _search(client, cached)
    assert was_cached is False and "salary.md" not in sources


@needs_redis
@pytest.mark.django_db
def test_moving_a_restriction_to_another_group_expires_the_cached_result(cached, make_user, client_for):
    sales, hr = Group.objects.create(name="sales"), Group.objects.create(name="hr")
    _salary(cached).restricted_to_groups.set([sales])
    carol = make_user("carol", groups=[sales])
    membership_set(kb=cached, user=carol, role=Role.VIEWER)
    client = client_for(carol)
    _search(client, cached)
    was_cached, sources = _search(client, cached)
    assert was_cached is True and "salary.md" in sources

    _salary(cached).restricted_to_groups.set([hr])
    was_cached, sources = _search(client, cached)
    assert was_cached is False and "salary.md" not in sources


@pytest.mark.django_db
@pytest.mark.parametrize("change", [
    pytest.param(lambda document, hr, sales: document.restricted_to_groups.remove(hr), id="document.remove"),
    pytest.param(lambda document, hr, sales: document.restricted_to_groups.clear(), id="document.clear"),
    pytest.param(lambda document, hr, sales: document.restricted_to_groups.set([sales]), id="document.set"),
    pytest.param(lambda document, hr, sales: hr.restricted_documents.remove(document), id="group.remove"),
    pytest.param(lambda document, hr, sales: hr.restricted_documents.clear(), id="group.clear"),
    pytest.param(lambda document, hr, sales: sales.restricted_documents.set([document]), id="group.set"),
])
def test_every_restriction_change_bumps_the_kb_version(kb, change):
    """Restriction changes widen access too; whichever side of the relation makes them, the KB's caches expire."""
    hr, sales = Group.objects.create(name="hr"), Group.objects.create(name="sales")
    document = document_with_chunk(kb, "salary.md", [hr])
    before = KnowledgeBase.objects.get(pk=kb.pk).version
    change(document, hr, sales)
    assert KnowledgeBase.objects.get(pk=kb.pk).version > before


@pytest.mark.django_db
def test_a_restriction_left_as_it_was_does_not_bump_the_version(kb):
    hr = Group.objects.create(name="hr")
    document = document_with_chunk(kb, "salary.md", [hr])
    before = KnowledgeBase.objects.get(pk=kb.pk).version
    document.restricted_to_groups.set([hr])
    document.restricted_to_groups.add(hr)
    assert KnowledgeBase.objects.get(pk=kb.pk).version == before
