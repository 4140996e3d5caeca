"""Model endpoints through the REST API: the key encrypted at rest and never returned, staff only, bad input 4xx,
the connection test against a real OpenAI-compatible server on loopback, the offered models and the default."""
from __future__ import annotations

import pytest
from django.db import connection

from providers.models import ModelEndpoint
from providers.secrets import secret_decrypt

KEY = "sk-right-key-123"
BASE = "/api/model-endpoints/"


def raw_key_column(endpoint_id: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT api_key_encrypted FROM providers_modelendpoint WHERE id = %s", [endpoint_id])
        return cursor.fetchone()[0]


@pytest.fixture
def api(client_for, staff):
    return client_for(staff)


def create(api, **values):
    body = {"name": "DeepSeek", "kind": "deepseek", "api_key": KEY, "model_names": ["deepseek-chat"], **values}
    response = api.post(BASE, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_the_key_is_encrypted_in_the_row_and_decrypts_back(api):
    made = create(api)
    raw = raw_key_column(made["id"])
    assert raw and raw != KEY and KEY not in raw
    assert secret_decrypt(raw) == KEY
    # A preset fills in its usual base URL.
    assert made["base_url"] == "https://api.deepseek.com/v1" and made["has_key"] is True


def test_the_key_is_never_returned(api):
    made = create(api)
    bodies = [api.get(BASE).content, api.get(f"{BASE}{made['id']}/").content,
              api.patch(f"{BASE}{made['id']}/", {"enabled": False}, format="json").content,
              api.get("/api/models/").content, api.get("/api/schema/").content]
    assert all(KEY.encode() not in body for body in bodies)
    assert "api_key" not in api.get(f"{BASE}{made['id']}/").json()


def test_a_blank_key_keeps_the_stored_one_a_new_one_replaces_it_clear_key_removes_it(api):
    made = create(api)
    url = f"{BASE}{made['id']}/"
    assert api.patch(url, {"api_key": "", "model_names": ["deepseek-chat", "deepseek-reasoner"]}, format="json").status_code == 200
    assert secret_decrypt(raw_key_column(made["id"])) == KEY
    assert api.patch(url, {"api_key": "sk-new-one"}, format="json").json()["has_key"] is True
    assert secret_decrypt(raw_key_column(made["id"])) == "sk-new-one"
    cleared = api.patch(url, {"clear_key": True}, format="json").json()
    assert cleared["has_key"] is False and raw_key_column(made["id"]) == ""
    assert api.delete(url).status_code == 204
    assert not ModelEndpoint.objects.filter(pk=made["id"]).exists()


def test_non_staff_are_refused(client_for, alice, api, api_client):
    made = create(api)
    user = client_for(alice)
    assert user.get(BASE).status_code == 403
    assert user.post(BASE, {"name": "x", "base_url": "http://127.0.0.1:9/v1"}, format="json").status_code == 403
    assert user.patch(f"{BASE}{made['id']}/", {"enabled": False}, format="json").status_code == 403
    assert user.delete(f"{BASE}{made['id']}/").status_code == 403
    assert user.post(f"{BASE}{made['id']}/test/", {}, format="json").status_code == 403
    assert user.put("/api/models/default/", {"choice": ""}, format="json").status_code == 403
    assert user.get(BASE).json()["error"]["code"] == "permission_denied"
    assert api_client.get(BASE).status_code == 401
    # Everyone signed in may see which models are offered (no URL, no key).
    offered = user.get("/api/models/").json()
    assert offered["results"] == [{"choice": "deepseek-chat", "model": "deepseek-chat", "endpoint": "DeepSeek", "is_default": False}]
    assert ModelEndpoint.objects.get(pk=made["id"]).enabled is True


@pytest.mark.parametrize("body, status, code", [
    ({"name": "a/b", "base_url": "http://127.0.0.1:9/v1"}, 400, "invalid_endpoint_name"),
    ({"name": "x", "base_url": "ftp://example.com/v1"}, 400, "invalid_base_url"),
    ({"name": "x", "base_url": "http:///v1"}, 400, "invalid_base_url"),
    ({"name": "x", "kind": "other"}, 400, "invalid_base_url"),
    ({"name": "x", "kind": "deepseek", "model_names": ["deepseek chat"]}, 400, "invalid_model_names"),
    ({"name": "x", "kind": "deepseek", "api_key": "sk abc"}, 400, "invalid_api_key"),
    ({"name": "x", "kind": "gpt"}, 400, "invalid"),
    ({"name": "", "kind": "deepseek"}, 400, "invalid"),
    ({"name": "x", "kind": "deepseek", "colour": "red"}, 400, "unknown_field"),
])
def test_bad_input_is_refused_with_its_code(api, body, status, code):
    response = api.post(BASE, body, format="json")
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert not ModelEndpoint.objects.exists()


def test_conflicts_unknown_ids_and_unknown_defaults(api):
    made = create(api)
    taken = api.post(BASE, {"name": "DeepSeek", "kind": "deepseek"}, format="json")
    assert (taken.status_code, taken.json()["error"]["code"]) == (409, "endpoint_name_taken")
    assert api.get(f"{BASE}{made['id'] + 99}/").json()["error"]["code"] == "endpoint_not_found"
    assert api.post(f"{BASE}{made['id'] + 99}/test/", {}, format="json").status_code == 404
    assert api.patch(f"{BASE}{made['id']}/", {}, format="json").json()["error"]["code"] == "nothing_to_update"
    unknown = api.put("/api/models/default/", {"choice": "gpt-9"}, format="json")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (400, "unknown_model")


# --- the connection test ----------------------------------------------------------------------------

def test_the_connection_test_asks_for_one_token_with_the_stored_key(api, fake_llm):
    made = create(api, name="Fake", kind="other", base_url=fake_llm.url, model_names=["fake-model"])
    result = api.post(f"{BASE}{made['id']}/test/", {}, format="json").json()
    assert (result["ok"], result["code"], result["model"], result["http_status"]) == (True, "", "fake-model", 200)
    assert fake_llm.authorizations == [f"Bearer {KEY}"]
    sent = fake_llm.requests[-1]
    assert (sent["model"], sent["max_tokens"], sent.get("stream")) == ("fake-model", 1, None)


def test_without_model_names_the_connection_test_lists_the_models(api, fake_llm):
    made = create(api, name="Fake", kind="other", base_url=fake_llm.url, model_names=[])
    result = api.post(f"{BASE}{made['id']}/test/", {}, format="json").json()
    assert result["ok"] is True and result["models"] == fake_llm.model_ids and result["model"] == ""


def test_a_wrong_key_is_reported_as_401(api, fake_llm):
    made = create(api, name="Fake", kind="other", base_url=fake_llm.url, api_key="sk-wrong-key-456", model_names=["fake-model"])
    response = api.post(f"{BASE}{made['id']}/test/", {}, format="json", HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 200
    result = response.json()
    assert (result["ok"], result["code"], result["http_status"]) == (False, "endpoint_unauthorized", 401)
    assert "Incorrect API key provided." in result["message"] and "sk-wrong-key-456" not in response.content.decode()


def test_an_unreachable_url_and_a_wrong_path_are_reported(api, fake_llm, closed_url):
    down = create(api, name="Down", kind="other", base_url=closed_url)
    result = api.post(f"{BASE}{down['id']}/test/", {}, format="json").json()
    assert (result["ok"], result["code"], result["http_status"]) == (False, "endpoint_unreachable", None)
    assert "ConnectError" in result["message"]
    wrong = create(api, name="Wrong path", kind="other", base_url=fake_llm.url.removesuffix("/v1") + "/v2", model_names=[])
    result = api.post(f"{BASE}{wrong['id']}/test/", {}, format="json").json()
    assert (result["ok"], result["code"], result["http_status"]) == (False, "endpoint_http_error", 404)


def test_an_endpoint_that_never_answers_is_a_timeout(api, fake_llm, settings):
    settings.ZHIKU_LLM_TEST_TIMEOUT = 0.5
    fake_llm.stall_headers = True
    made = create(api, name="Slow", kind="other", base_url=fake_llm.url, model_names=["fake-model"])
    result = api.post(f"{BASE}{made['id']}/test/", {}, format="json").json()
    assert (result["ok"], result["code"], result["http_status"]) == (False, "endpoint_timeout", None)
    assert len(fake_llm.requests) == 1  # the test does not retry


def test_a_server_error_is_reported_with_its_status(api, fake_llm):
    fake_llm.status = 503
    made = create(api, name="Fake", kind="other", base_url=fake_llm.url, model_names=["fake-model"])
    result = api.post(f"{BASE}{made['id']}/test/", {"model": "fake-model"}, format="json").json()
    assert (result["ok"], result["code"], result["http_status"]) == (False, "endpoint_http_error", 503)
    assert "fake failure" in result["message"]


# --- the offered models and the default ---------------------------------------------------------------

def test_the_default_is_chosen_among_console_models_and_cleared_back_to_the_environment(api, settings):
    settings.ZHIKU_LLM_BASE_URL, settings.ZHIKU_LLM_MODEL = "http://127.0.0.1:9/v1", "env-model"
    made = create(api, model_names=["deepseek-chat", "deepseek-reasoner"])
    assert api.get("/api/models/").json()["default"] == "env-model"
    chosen = api.put("/api/models/default/", {"choice": "deepseek-reasoner"}, format="json").json()
    assert chosen["default"] == "deepseek-reasoner"
    endpoint = ModelEndpoint.objects.get(pk=made["id"])
    assert (endpoint.is_default, endpoint.default_model) == (True, "deepseek-reasoner")
    # Dropping the default model from the endpoint clears the default: the environment's is used again.
    api.patch(f"{BASE}{made['id']}/", {"model_names": ["deepseek-chat"]}, format="json")
    assert api.get("/api/models/").json()["default"] == "env-model"
    api.put("/api/models/default/", {"choice": "deepseek-chat"}, format="json")
    assert api.put("/api/models/default/", {"choice": ""}, format="json").json()["default"] == "env-model"
    assert not ModelEndpoint.objects.filter(is_default=True).exists()


def test_the_connection_test_resolves_the_endpoints_name_once_and_connects_there(api, fake_llm, monkeypatch):
    import socket
    import sys

    real = socket.getaddrinfo
    lookups = []

    def rebinding(host, port_, *args, **kwargs):
        # The platform's one resolution (netguard) is answered the server's address; any other lookup (a client
        # resolving the name again to connect) an address nothing listens on.
        if host == "models.rebind.test":
            ours = sys._getframe(1).f_globals.get("__name__") == "core.net.netguard"
            lookups.append("netguard" if ours else "other")
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1" if ours else "127.0.0.3", port_))]
        return real(host, port_, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    base = fake_llm.url.replace("127.0.0.1", "models.rebind.test")
    made = create(api, name="Rebind", kind="other", base_url=base, model_names=["fake-model"])
    result = api.post(f"{BASE}{made['id']}/test/", {}, format="json").json()
    assert result["ok"], result
    assert lookups == ["netguard"]
