"""Schemathesis against the served application: every documented operation, fuzzed, answers as its schema says.

The ASGI application daphne serves (``config.asgi``) runs in-process on the throwaway test
database, with a KB owner's API token and a KB holding an ingested document, a member, a
labelled question and a conversation, so the fuzzer reaches the handlers and not only 404s.
The database is transactional: the SSE chat view writes from worker threads, which a test
transaction would hide.

Requests the schema calls valid (Schemathesis' positive cases) must also be accepted: a 400,
413, 415 or 422 for one means a limit the server checks and the schema leaves out, unless its
code is one of the rules a schema cannot state (``RULES_BEYOND_THE_SCHEMA``). Requests it calls
invalid (the negative cases) must be refused: a 2xx for one means the server takes what the schema
says it does not (an empty ``?until=``, a repeated ``page_size``, ``0`` for a boolean; issue 45).
"""
from __future__ import annotations

import pytest
import schemathesis
from django.core.management import call_command
from hypothesis import HealthCheck, settings
from schemathesis.checks import negative_data_rejection, not_a_server_error
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from core.errors import FAILURES

# Refusals of a schema-valid request that no schema can state: rules across fields, what exists or is
# configured on the platform, and what a file holds. Any other refusal of one is a limit missing from the schema.
RULES_BEYOND_THE_SCHEMA = {
    "POST /api/auth/token/": {"invalid_credentials"},  # no such user, or the wrong password
    "POST /api/kbs/": {"invalid_threshold", "unknown_answer_model", "unknown_embedding_model"},
    "PUT /api/kbs/{kb_id}/": {"invalid_threshold", "unknown_answer_model"},
    "PATCH /api/kbs/{kb_id}/": {"invalid_threshold", "unknown_answer_model"},
    "POST /api/kbs/{kb_id}/members/": {"unknown_user", "unknown_group"},
    # A field's name may not be one a record gives of itself (title, page…) nor start or end with a space.
    "PATCH /api/kbs/{kb_id}/documents/{document_id}/": {"unknown_group", "invalid_document_fields"},
    "POST /api/kbs/{kb_id}/documents/": {"unknown_group", "invalid_chunking", "duplicate_name", "unsupported_type",
                                         "empty_file"},
    # What a file holds decides these: every code a parse can end with (knowledge/errors.py, core.errors.FAILURES).
    "POST /api/kbs/{kb_id}/documents/preview/": {"invalid_chunking", *(set(FAILURES) - {"ingest_error", "ingest_crashed"})},
    "PATCH /api/kbs/{kb_id}/calibration/": {"target_unreachable", "invalid_threshold"},
    "POST /api/kbs/{kb_id}/eval-questions/": {"too_many_questions"},
    "POST /api/assistants/": {"invalid_threshold", "unknown_answer_model"},
    "PATCH /api/assistants/{assistant_id}/": {"invalid_threshold", "unknown_answer_model"},
    # A source's kind checks its own settings (sources/kinds/*.py: clean_settings), and a kind may be absent here.
    "POST /api/kbs/{kb_id}/sources/": {"source_kind_unknown", "source_settings_invalid", "source_url_invalid",
                                       "source_address_refused", "source_unreachable", "source_invalid"},
    "PATCH /api/sources/{source_id}/": {"source_settings_invalid", "source_url_invalid", "source_address_refused",
                                        "source_unreachable", "source_invalid"},
    "GET /api/audit/": {"invalid_time_range"},  # since must come before until (the parameter's description says so)
    # A channel's kind decides which settings and credentials it needs, and what each must look like (bots/kinds.py).
    "POST /api/assistants/{assistant_id}/channels/": {"bot_channel_invalid"},
    "PATCH /api/assistants/{assistant_id}/channels/{channel_id}/": {"bot_channel_invalid"},
    # People (accounts/api/): Django's username and password validators, e-mail syntax, who exists.
    "POST /api/people/users/": {"invalid_username", "invalid_password", "invalid_email"},
    "PATCH /api/people/users/{user_id}/": {"invalid_email"},
    "POST /api/people/users/{user_id}/password/": {"invalid_password"},
    "POST /api/people/groups/{group_id}/members/": {"unknown_user"},
    "POST /api/people/groups/{group_id}/managers/": {"unknown_user"},
    "POST /api/people/invitations/": {"invalid_invitation", "invalid_email"},
}
# Refused in every string, documented once (docs/api.md): NUL and lone surrogates cannot be stored.
REFUSED_EVERYWHERE = {"invalid_characters"}


def schema_valid_requests_are_accepted(ctx, response, case):
    """A positive case answered 400/413/415/422 must carry one of its operation's rules beyond the schema."""
    if case.meta is None or not case.meta.generation.mode.is_positive or response.status_code not in (400, 413, 415, 422):
        return None
    code = response.json()["error"]["code"]
    allowed = REFUSED_EVERYWHERE | RULES_BEYOND_THE_SCHEMA.get(case.operation.label, set())
    assert code in allowed, (f"{case.operation.label}: a request valid by the schema was refused with "
                             f"{response.status_code} {code}: {response.text[:500]}")
    return None


def schema_violations_are_refused(ctx, response, case):
    """Schemathesis' negative-data check, but for a case whose only invalid part is a path id: the test puts the
    fixture's real ids there (below), which makes it a valid request."""
    if case.meta is None or not case.meta.generation.mode.is_negative:
        return None
    if not any(case.meta.is_negative_at(where) for where in ParameterLocation if where is not ParameterLocation.PATH):
        return None
    return negative_data_rejection(ctx, response, case)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          schema_valid_requests_are_accepted, schema_violations_are_refused]
# The rules across fields each input states (core.api.fields.Rule: ``x-rules``, as JSON Schema where one can say it).
RULES_STATED = {
    ("/api/kbs/{kb_id}/members/", "post"): {"user_xor_group"},
    ("/api/kbs/{kb_id}/calibration/", "patch"): {"threshold_or_target", "invalid_threshold"},
    ("/api/messages/{message_id}/feedback/", "post"): {"invalid_reason_code"},
    ("/api/people/groups/{group_id}/members/", "post"): {"person_required"},
    ("/api/chat/stream/", "post"): {"no_kbs"},
    ("/api/kbs/", "post"): {"invalid_threshold"},
    ("/api/kbs/{kb_id}/documents/", "post"): {"invalid_chunking"},
}
GUIDE = "# 退货政策\n\n七天无理由退货，商品需保持完好。\n\n## 运费\n\n满99元包邮，偏远地区除外。\n"


@pytest.fixture
def platform(transactional_db, alice, bob, make_kb, ingest):
    """A KB owner's token and the ids of what they own, for the path parameters."""
    from accounts.tokens import token_issue
    from chat.models import Conversation, Message
    from chat.models import Role as ChatRole
    from knowledge.models import EvalQuestion, Role
    from knowledge.services.kbs import membership_set
    from tests.helpers import api_token

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
    # An assistant over the KB with a key, so that its operations reach their handlers too.
    from assistants.services import assistant_create, assistant_key_create

    assistant = assistant_create(owner=alice, name="fuzz", kb_ids=[kb.pk])
    ids["assistant_id"] = assistant.pk
    ids["key_id"] = assistant_key_create(user=alice, assistant=assistant)[0].pk
    # A source (the sources tests' memory kind) with one finished run, so its operations reach their handlers.
    from sources.models import RunStatus, SourceRun
    from sources.services.sources import source_create
    from tests.sources.memory_kind import SITES, MemorySite

    SITES["fuzz"] = MemorySite(items={"a": ("fuzz-a.md", "# A\n\n七天无理由退货。")})
    source = source_create(kb=kb, user=alice, kind="memtest", name="fuzz", settings={"site": "fuzz"})
    ids["source_id"] = source.pk
    ids["run_id"] = SourceRun.objects.create(source=source, status=RunStatus.SUCCEEDED).pk
    # The people API (accounts/api/) is called by a staff member, with a group holding a member and a manager
    # and an invitation, so its operations reach their handlers; every other operation by the KB owner.
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from accounts.models import GroupManager
    from accounts.people.invitations import Grant, invitation_create

    staff = get_user_model().objects.create_user(username="staff", password="pw-staff", is_staff=True)
    group = Group.objects.create(name="fuzz-team")
    group.user_set.add(bob)
    GroupManager.objects.create(group=group, user=bob)
    ids["group_id"], ids["user_id"] = group.pk, bob.pk
    ids["invitation_id"] = invitation_create(actor=staff, grants=[Grant(kb=kb, role=Role.VIEWER)])[0].pk
    return {"token": api_token(alice), "staff_token": api_token(staff), "ids": ids}


def served_schema() -> dict:
    """The document ``/api/schema/`` serves (the same generator, called without a request).

    Built at import, without a server or a database: schemathesis needs the schema to
    collect one test per operation, and its fixture-loaded schemas fail under pytest 9.
    """
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


SERVED = served_schema()
schema = schemathesis.openapi.from_dict(SERVED)


def test_schema_generates_without_warnings(tmp_path):
    """What `manage.py spectacular --validate --fail-on-warn` checks: valid OpenAPI, nothing guessed."""
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))


def test_the_schema_states_the_limits_the_server_checks():
    """The limits the audit found missing, and the budgets of every list and map (docs/api.md, "Input budgets")."""
    paths, components = SERVED["paths"], SERVED["components"]["schemas"]
    chunk_list = {p["name"]: p["schema"] for p in paths["/api/kbs/{kb_id}/chunks/"]["get"]["parameters"]}
    assert chunk_list["q"]["minLength"] == 1 and chunk_list["document"]["minimum"] == 1
    assert (chunk_list["page"]["minimum"], chunk_list["page_size"]["minimum"], chunk_list["page_size"]["maximum"]) == (1, 1, 100)
    search = components["SearchInput"]
    assert search["additionalProperties"] is False and search["properties"]["query"]["minLength"] == 1
    assert search["properties"]["kb_ids"]["maxItems"] == 20
    filters = components["SearchFiltersInput"]
    assert filters["additionalProperties"] is False
    assert {name: filters["properties"][name].get("maxItems", filters["properties"][name].get("maxProperties"))
            for name in filters["properties"]} == {"document_ids": 1000, "source_names": 100, "chunk_types": 4, "metadata": 32}
    assert components["ChunkCreateInput"]["properties"]["content"]["minLength"] == 1  # blank is empty_chunk
    assert components["EvalQuestionInput"]["properties"]["text"]["minLength"] == 1
    patched = components["PatchedDocumentUpdateInput"]
    assert patched["minProperties"] == 1 and paths["/api/kbs/{kb_id}/documents/{document_id}/"]["patch"]["requestBody"]["required"]
    files = components["DocumentUploadInput"]["properties"]["files"]
    assert files["items"]["format"] == "binary" and files["maxItems"] == 20
    eval_body = paths["/api/kbs/{kb_id}/eval-questions/"]["post"]["requestBody"]["content"]
    assert list(eval_body) == ["application/json"] and eval_body["application/json"]["schema"]["maxItems"] == 500
    assert "400" in paths["/api/kbs/"]["get"]["responses"]  # page_size out of range


def request_schema(path: str, method: str) -> dict:
    content = SERVED["paths"][path][method]["requestBody"]["content"]
    body = next(iter(content.values()))["schema"]
    ref = body.get("$ref")
    return SERVED["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else body


def test_the_schema_states_the_rules_across_fields():
    """Issue 45: requests the schema allowed were refused by rules it did not state (15 in an audit's run)."""
    for (path, method), codes in RULES_STATED.items():
        stated = {rule["code"] for rule in request_schema(path, method).get("x-rules", [])}
        assert codes <= stated, (path, method, stated)
    members = request_schema("/api/kbs/{kb_id}/members/", "post")
    assert {"oneOf": [{"required": [n]} for n in ("user_id", "username", "group_id", "group")]} in members["allOf"]
    # In the language active at import, Chinese by default (config/openapi.py translates the descriptions).
    assert "Rules across fields" in members["description"] or "跨字段规则" in members["description"]
    assert "400" in SERVED["paths"]["/api/kbs/{kb_id}/"]["delete"]["responses"]      # unknown_parameter, anywhere


def test_the_non_space_pattern_is_what_trimming_keeps():
    """``pattern`` on trimmed text: matches exactly the strings DRF does not trim to blank, in any regex dialect."""
    import re

    from core.api.schema import NON_SPACE

    assert all(re.search(NON_SPACE, chr(c)) is None for c in range(0x3001) if chr(c).isspace())
    assert all(re.search(NON_SPACE, chr(c)) for c in range(0x10000) if not chr(c).isspace() and not 0xD800 <= c < 0xE000)
    assert "\\s" not in NON_SPACE and "\\S" not in NON_SPACE  # dialects disagree on these classes


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
    token = platform["staff_token"] if case.path.startswith("/api/people/") else platform["token"]
    case.call_and_validate(app=application, headers={"Authorization": f"Token {token}"}, checks=CHECKS)
