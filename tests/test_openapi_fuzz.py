"""Schemathesis against the served application: every documented operation, fuzzed, answers as its schema says.

The ASGI application daphne serves (``config.asgi``) runs in-process on the throwaway test
database, with a KB owner's API token and a KB holding an ingested document, a member, a
labelled question and a conversation, so the fuzzer reaches the handlers and not only 404s.
The database is transactional: the SSE chat view writes from worker threads, which a test
transaction would hide.
"""
from __future__ import annotations

import pytest
import schemathesis
from django.core.management import call_command
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
GUIDE = "# 退货政策\n\n七天无理由退货，商品需保持完好。\n\n## 运费\n\n满99元包邮，偏远地区除外。\n"


@pytest.fixture
def platform(transactional_db, alice, bob, make_kb, ingest):
    """A KB owner's token and the ids of what they own, for the path parameters."""
    from accounts.tokens import token_issue
    from tests.helpers import api_token

    from chat.models import Conversation, Message, Role as ChatRole
    from knowledge.models import EvalQuestion, Role
    from knowledge.services.kbs import membership_set

    kb = make_kb(alice, "fuzz")
    document = ingest(kb, {"guide.md": GUIDE}, user=alice)[0]
    conversation = Conversation.objects.create(user=alice, title="退货", kb_ids=[kb.pk])
    Message.objects.create(conversation=conversation, role=ChatRole.USER, content="退货运费谁出？")
    answer = Message.objects.create(conversation=conversation, role=ChatRole.ASSISTANT, content="买家。", hit=True)
    ids = {
        "kb_id": kb.pk,
        "document_id": document.pk,
        "chunk_id": document.chunks.first().pk,
        "membership_id": membership_set(kb=kb, role=Role.VIEWER, user=bob).pk,
        "question_id": EvalQuestion.objects.create(kb=kb, text="运费", relevant=["guide.md"]).pk,
        "conversation_id": conversation.pk,
        "message_id": answer.pk,
    }
    # A second token of the owner's, so that revoking one (DELETE /api/auth/tokens/{id}/) reaches the handler.
    ids["token_id"] = token_issue(user=alice, name="spare")[0].pk
    return {"token": api_token(alice), "ids": ids}


def served_schema() -> dict:
    """The document ``/api/schema/`` serves (the same generator, called without a request).

    Built at import, without a server or a database: schemathesis needs the schema to
    collect one test per operation, and its fixture-loaded schemas fail under pytest 9.
    """
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


schema = schemathesis.openapi.from_dict(served_schema())


def test_schema_generates_without_warnings(tmp_path):
    """What `manage.py spectacular --validate --fail-on-warn` checks: valid OpenAPI, nothing guessed."""
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))


# Every operation is fuzzed, multipart upload and deletions included: each test item starts
# from fresh data. Bounds: 15 examples an operation (about 2 minutes for the 35 items on two
# cores); no deadline, as a search's first call loads models.
@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case, platform):
    """Zero server errors; every status, content type and body as the schema documents it."""
    from config.asgi import application

    # Random ids would only ever reach the 404 path; the fixture's ids reach the handlers.
    for name, value in platform["ids"].items():
        if name in case.path_parameters:
            case.path_parameters[name] = value
    case.call_and_validate(app=application, headers={"Authorization": f"Token {platform['token']}"}, checks=CHECKS)
