"""Per-KB answer settings and FAQ direct answers, through the real websocket / SSE and the fake LLM at the wire."""
from __future__ import annotations

import pytest
from chat_helpers import connect, receive_until_end
from test_chat_sse import auth, parse, read_body, start

from chat.models import Message
from chat.services import AnswerSettings, answer_settings_for, in_thread

pytestmark = [pytest.mark.django_db(transaction=True)]

QUESTION = "知库专业版的价格是多少？"
FAQ_CSV = (
    "问题,答案\n"
    "如何重置登录密码？,在登录页点击「忘记密码」，输入注册手机号并获取验证码后即可设置新密码。\n"
    "发票多久能开出来？,电子发票在订单完成后 3 个工作日内发送到您的邮箱。\n"
)
FAQ_ANSWER = "在登录页点击「忘记密码」，输入注册手机号并获取验证码后即可设置新密码。"


async def ask(kb_ids: list[int], token: str, question: str = QUESTION) -> list[dict]:
    communicator, connected = await connect(f"/ws/chat/?token={token}")
    assert connected
    await communicator.send_json_to({"type": "ask", "conversation": None, "kb_ids": kb_ids, "question": question})
    events = await receive_until_end(communicator)
    await communicator.disconnect()
    return events


@in_thread
def configure(kb, **values) -> None:
    for key, value in values.items():
        setattr(kb, key, value)
    kb.save(update_fields=list(values))


@pytest.fixture
def faq_kb(make_kb, alice, ingest):
    kb = make_kb(alice, "FAQ KB", score_threshold=0.0)
    ingest(kb, {"faq.csv": FAQ_CSV})
    return kb


@pytest.fixture
def two_models(settings, llm_on):
    settings.ZHIKU_LLM_MODELS = ["fake-large"]
    return llm_on


# --- per-KB answer settings reach the chat turn -----------------------------------------------

async def test_the_kbs_model_and_system_prompt_reach_the_wire(chat_kb, alice_token, two_models):
    await configure(chat_kb, answer_model="fake-large", system_prompt="你是知库销售顾问，回答要热情。")
    events = await ask([chat_kb.pk], alice_token)

    finish = events[-1]
    assert (finish["mode"], finish["answered_by"], finish["model"]) == ("llm", "llm", "fake-large")
    sent = two_models.stream_requests[0]
    assert sent["model"] == "fake-large"
    system = sent["messages"][0]["content"]
    assert system.startswith("你是知库销售顾问，回答要热情。")
    # The rules the answer's mechanics need are kept after the KB's own prompt.
    assert "[[NOT_FOUND]]" in system and "[1]" in system and "你是知库（zhiku）" not in system


async def test_without_answer_settings_the_sites_model_and_prompt_are_used(chat_kb, alice_token, two_models):
    events = await ask([chat_kb.pk], alice_token)

    assert events[-1]["model"] == "fake-model"
    sent = two_models.stream_requests[0]
    assert sent["model"] == "fake-model" and sent["messages"][0]["content"].startswith("你是知库（zhiku）")


async def test_a_model_no_longer_offered_falls_back_to_the_sites(chat_kb, alice_token, two_models, settings):
    await configure(chat_kb, answer_model="fake-large")
    settings.ZHIKU_LLM_MODELS = []
    await ask([chat_kb.pk], alice_token)
    assert two_models.stream_requests[0]["model"] == "fake-model"


async def test_an_extractive_kb_sends_nothing_to_the_llm(chat_kb, alice_token, llm_on):
    await configure(chat_kb, answer_mode="extractive")
    events = await ask([chat_kb.pk], alice_token)

    finish = events[-1]
    assert (finish["mode"], finish["answered_by"], finish["model"]) == ("extractive", "extractive", None)
    assert "9800" in finish["answer"]
    assert llm_on.requests == []


async def test_max_sources_caps_the_sources_given_and_shown(chat_kb, alice_token):
    uncapped = await ask([chat_kb.pk], alice_token)
    assert len(uncapped[2]["sources"]) > 1
    await configure(chat_kb, max_sources=1)
    capped = await ask([chat_kb.pk], alice_token)
    assert [s["chunk_id"] for s in capped[2]["sources"]] == [uncapped[2]["sources"][0]["chunk_id"]]


async def test_multi_kb_chat_uses_the_first_kbs_model_and_is_extractive_if_any_kb_says_so(
        chat_kb, faq_kb, alice_token, two_models):
    await configure(chat_kb, answer_model="fake-large")
    await configure(faq_kb, answer_model="")
    await ask([chat_kb.pk, faq_kb.pk], alice_token)
    assert two_models.stream_requests[-1]["model"] == "fake-large"

    requests_before = len(two_models.requests)
    await configure(faq_kb, answer_mode="extractive")
    events = await ask([chat_kb.pk, faq_kb.pk], alice_token)
    assert events[-1]["mode"] == "extractive" and len(two_models.requests) == requests_before


def test_answer_settings_rules_for_several_kbs(make_kb, alice):
    first = make_kb(alice, "one", answer_model="", system_prompt="甲", max_sources=3, faq_direct_threshold=0.8)
    second = make_kb(alice, "two", system_prompt="乙", max_sources=6, answer_mode="extractive")
    both = answer_settings_for([first, second])
    assert both == AnswerSettings(extractive=True, model="", system_prompt="甲", max_sources=6,
                                  faq_thresholds={first.pk: 0.8})
    third = make_kb(alice, "three")  # no cap
    assert answer_settings_for([first, third]).max_sources is None
    assert answer_settings_for([first, third]).extractive is False


# --- FAQ direct answer ----------------------------------------------------------------------

@pytest.mark.usefixtures("judge_only")

async def test_faq_direct_answer_is_the_faqs_answer_verbatim_with_no_llm_request(faq_kb, alice_token, llm_on):
    await configure(faq_kb, faq_direct_threshold=0.0)
    communicator, head = await start({"kb_ids": [faq_kb.pk], "question": "忘记登录密码了怎么重置？"}, auth(alice_token))
    frames = parse(await read_body(communicator))
    assert head["status"] == 200

    sources, finish = frames[2][1], frames[-1][1]
    assert [s["chunk_type"] for s in sources["sources"]] == ["faq"]
    assert finish["answer"] == FAQ_ANSWER and "问：" not in finish["answer"]
    assert (finish["mode"], finish["answered_by"], finish["hit"]) == ("faq", "faq", True)
    assert [c["chunk_id"] for c in finish["citations"]] == [sources["sources"][0]["chunk_id"]]
    assert finish["confidence"] == pytest.approx(sources["sources"][0]["scores"]["relevance"], abs=1e-4)
    assert llm_on.requests == []
    row = await in_thread(Message.objects.get)(pk=finish["message"])
    assert (row.content, row.answer_mode) == (FAQ_ANSWER, "faq")


async def test_below_the_faq_threshold_the_llm_answers(faq_kb, alice_token, llm_on):
    await configure(faq_kb, faq_direct_threshold=1.0)
    events = await ask([faq_kb.pk], alice_token, "忘记登录密码了怎么重置？")
    assert events[-1]["answered_by"] == "llm" and len(llm_on.stream_requests) == 1


async def test_faq_direct_answer_is_off_by_default(faq_kb, alice_token, llm_on):
    events = await ask([faq_kb.pk], alice_token, "忘记登录密码了怎么重置？")
    assert events[-1]["mode"] == "llm" and len(llm_on.stream_requests) == 1


async def test_a_text_chunk_ranked_first_is_never_a_direct_answer(chat_kb, alice_token):
    await configure(chat_kb, faq_direct_threshold=0.0)
    events = await ask([chat_kb.pk], alice_token)
    assert events[-1]["mode"] == "extractive" and events[-1]["answered_by"] == "extractive"


# --- the settings through the API and the settings page ------------------------------------------

def test_owner_sets_answer_settings_through_the_api(client_for, alice, kb, settings):
    settings.ZHIKU_LLM_BASE_URL, settings.ZHIKU_LLM_MODEL, settings.ZHIKU_LLM_MODELS = "http://127.0.0.1:9/v1", "small", ["large"]
    body = {"answer_mode": "extractive", "answer_model": "large", "system_prompt": "简短回答。", "max_sources": 3,
            "faq_direct_threshold": 0.85}
    response = client_for(alice).patch(f"/api/kbs/{kb.pk}/", body, format="json")
    assert response.status_code == 200, response.content
    assert {k: response.json()[k] for k in body} == body
    kb.refresh_from_db()
    assert (kb.answer_model, kb.max_sources, kb.faq_direct_threshold) == ("large", 3, 0.85)

    cleared = client_for(alice).patch(f"/api/kbs/{kb.pk}/", {"max_sources": None, "faq_direct_threshold": None,
                                                              "answer_model": ""}, format="json")
    assert cleared.status_code == 200
    assert (cleared.json()["max_sources"], cleared.json()["faq_direct_threshold"], cleared.json()["answer_model"]) == (None, None, "")


@pytest.mark.parametrize("body, code", [
    ({"answer_model": "gpt-unknown"}, "unknown_answer_model"),
    ({"answer_mode": "creative"}, "invalid"),
    ({"max_sources": 0}, "invalid"),
    ({"faq_direct_threshold": 1.5}, "invalid"),
])
def test_bad_answer_settings_are_400(client_for, alice, kb, settings, body, code):
    settings.ZHIKU_LLM_BASE_URL, settings.ZHIKU_LLM_MODEL = "http://127.0.0.1:9/v1", "small"
    response = client_for(alice).patch(f"/api/kbs/{kb.pk}/", body, format="json")
    assert response.status_code == 400
    assert code in response.content.decode()
    kb.refresh_from_db()
    assert (kb.answer_model, kb.answer_mode, kb.max_sources, kb.faq_direct_threshold) == ("", "llm", None, None)


def test_without_an_llm_no_answer_model_can_be_chosen(client_for, alice, kb):
    response = client_for(alice).patch(f"/api/kbs/{kb.pk}/", {"answer_model": "fake-model"}, format="json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "unknown_answer_model"


def test_an_editor_cannot_change_answer_settings(client_for, alice, bob, kb):
    from knowledge.services.kbs import membership_set

    membership_set(kb=kb, user=bob, role="editor")
    response = client_for(bob).patch(f"/api/kbs/{kb.pk}/", {"system_prompt": "x"}, format="json")
    assert response.status_code == 403
    kb.refresh_from_db()
    assert kb.system_prompt == ""


def test_settings_page_offers_the_configured_models(client, alice, kb, settings):
    settings.ZHIKU_LLM_BASE_URL, settings.ZHIKU_LLM_MODEL, settings.ZHIKU_LLM_MODELS = "http://127.0.0.1:9/v1", "small", ["large"]
    kb.answer_model, kb.faq_direct_threshold = "large", 0.9
    kb.save()
    client.force_login(alice)
    page = client.get(f"/kbs/{kb.pk}/settings/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    for field in ("f-answer_mode", "f-answer_model", "f-system_prompt", "f-max_sources", "f-faq_direct_threshold"):
        assert f'id="{field}"' in page
    assert '<option value="large" selected>large</option>' in page and '<option value="small"' in page
    assert 'value="0.9"' in page



# --- an answer announced by 「如下：」 ------------------------------------------------------------

POLICY_MD = (
    "# 差旅及费用报销制度\n\n## 第四章 住宿标准\n\n"
    "第九条 出差城市分为三类：一类城市为北京、上海、广州、深圳，二类城市为其他省会城市。\n\n"
    "第十条 员工出差住宿费实行限额报销，每人每晚标准如下（单位：元）：\n\n"
    "| 职级 | 一类城市 | 二类城市 |\n| --- | --- | --- |\n| 总监 | 700 | 550 |\n| 经理 | 550 | 450 |\n\n"
    "## 第五章 住宿超标\n\n第十一条 住宿费在标准以内的据实报销，超出标准部分由个人承担。\n"
)


async def test_a_sentence_announcing_a_table_is_answered_with_the_table(make_kb, alice, alice_token, ingest):
    """The table is a chunk of its own that the question's words miss; the chat turn brings it with its sentence."""
    kb = await in_thread(make_kb)(alice, "差旅", score_threshold=0.0)
    await in_thread(ingest)(kb, {"policy.md": POLICY_MD})
    finish = (await ask([kb.pk], alice_token, "出差去北京住宿每晚能报多少？"))[-1]
    assert finish["mode"] == "extractive"
    assert ("每人每晚标准如下（单位：元）：\n\n| 职级 | 一类城市 | 二类城市 |\n| --- | --- | --- |\n| 总监 | 700 | 550 |\n"
            "| 经理 | 550 | 450") in finish["answer"]  # a GFM table (chat/gfm.py)
