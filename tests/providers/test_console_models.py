"""The console's model pages (staff), rendered with the Django client: add, edit, test, default, delete; the key never
shown; non-staff refused; Chinese by default, English on request. And the Django admin, with the key masked."""
from __future__ import annotations

import pytest

from providers.models import ModelEndpoint
from providers.secrets import secret_decrypt

KEY = "sk-right-key-123"

pytestmark = pytest.mark.django_db


@pytest.fixture
def console(client, staff):
    client.force_login(staff)
    return client


def add(console, **values):
    form = {"name": "Fake", "kind": "other", "base_url": "http://127.0.0.1:9/v1", "api_key": KEY,
            "model_names": "fake-model\nfake-large", "enabled": "on", **values}
    response = console.post("/models/new/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    return ModelEndpoint.objects.get(name=form["name"])


def test_anonymous_is_sent_to_sign_in_and_non_staff_are_refused(client, alice):
    endpoint = ModelEndpoint.objects.create(name="e", base_url="http://e.example/v1")
    pages = ["/models/", "/models/new/", f"/models/{endpoint.pk}/", f"/models/{endpoint.pk}/delete/"]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")
    client.force_login(alice)
    for page in pages:
        assert client.get(page).status_code == 403
    assert client.post(f"/models/{endpoint.pk}/test/").status_code == 403
    assert client.post(f"/models/{endpoint.pk}/delete/").status_code == 403
    assert client.post("/models/new/", {"name": "x", "kind": "deepseek"}).status_code == 403
    assert "/models/" not in client.get("/").content.decode()  # no header link either
    assert ModelEndpoint.objects.count() == 1


def test_staff_add_an_endpoint_and_the_key_is_never_shown_again(console):
    endpoint = add(console)
    assert secret_decrypt(endpoint.api_key_encrypted) == KEY and endpoint.model_names == ["fake-model", "fake-large"]
    listing = console.get("/models/").content.decode()
    edit = console.get(f"/models/{endpoint.pk}/?saved=1").content.decode()
    for page in (listing, edit):
        assert KEY not in page and endpoint.api_key_encrypted not in page
    assert "已设置" in listing and 'id="endpoint-table"' in listing and "fake-large" in listing
    assert 'id="key-status">已设置' in edit and 'name="api_key"' in edit and 'value=""' in edit and "已保存" in edit
    assert '<a href="/models/" class="current">模型</a>' in listing


def test_a_blank_key_field_keeps_the_stored_key(console):
    endpoint = add(console)
    response = console.post(f"/models/{endpoint.pk}/", {"name": "Fake 2", "kind": "other", "base_url": "http://127.0.0.1:9/v1",
                                                        "api_key": "", "model_names": "fake-model", "enabled": "on"})
    assert response.status_code == 302 and response["Location"] == f"/models/{endpoint.pk}/?saved=1"
    endpoint.refresh_from_db()
    assert (endpoint.name, endpoint.model_names, secret_decrypt(endpoint.api_key_encrypted)) == ("Fake 2", ["fake-model"], KEY)
    console.post(f"/models/{endpoint.pk}/", {"name": "Fake 2", "kind": "other", "base_url": "http://127.0.0.1:9/v1",
                                             "clear_key": "on", "model_names": "fake-model"})
    endpoint.refresh_from_db()
    assert endpoint.api_key_encrypted == "" and endpoint.enabled is False


def test_bad_input_is_shown_on_the_form_and_nothing_is_saved(console):
    response = console.post("/models/new/", {"name": "a/b", "kind": "other", "base_url": "ftp://x", "model_names": ""},
                            HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 200
    assert "without a slash" in response.content.decode()
    response = console.post("/models/new/", {"name": "ok", "kind": "other", "base_url": "ftp://x", "model_names": ""},
                            HTTP_ACCEPT_LANGUAGE="en")
    assert "http:// or https://" in response.content.decode()
    assert not ModelEndpoint.objects.exists()


def test_the_connection_test_shows_success_and_failure(console, fake_llm):
    good = add(console, name="Good", base_url=fake_llm.url)
    page = console.post(f"/models/{good.pk}/test/", {"model": "fake-large"}).content.decode()
    assert 'data-ok="true"' in page and "连接正常" in page and "fake-large" in page
    assert fake_llm.requests[-1]["model"] == "fake-large" and fake_llm.authorizations[-1] == f"Bearer {KEY}"
    bad = add(console, name="Bad", base_url=fake_llm.url, api_key="sk-wrong-key-456")
    page = console.post(f"/models/{bad.pk}/test/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert 'data-ok="false"' in page and "Connection failed" in page and "endpoint_unauthorized" in page and "HTTP 401" in page
    assert "sk-wrong-key-456" not in page


def test_the_connection_test_of_an_unreachable_endpoint_is_a_page_not_a_500(console, closed_url):
    down = add(console, name="Down", base_url=closed_url)
    response = console.post(f"/models/{down.pk}/test/")
    assert response.status_code == 200 and "endpoint_unreachable" in response.content.decode()


def test_choosing_the_default_model(console):
    endpoint = add(console)
    assert console.post("/models/default/", {"default": "fake-large"}).status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.is_default, endpoint.default_model) == (True, "fake-large")
    listing = console.get("/models/").content.decode()
    assert '<option value="fake-large" selected>' in listing
    refused = console.post("/models/default/", {"default": "nope"})
    assert refused["Location"] == "/models/?error=default"
    assert 'id="default-error"' in console.get(refused["Location"]).content.decode()
    console.post("/models/default/", {"default": ""})
    assert not ModelEndpoint.objects.filter(is_default=True).exists()


def test_deleting_an_endpoint_asks_first(console):
    endpoint = add(console)
    assert 'id="endpoint-delete-confirm"' in console.get(f"/models/{endpoint.pk}/delete/").content.decode()
    assert ModelEndpoint.objects.filter(pk=endpoint.pk).exists()
    assert console.post(f"/models/{endpoint.pk}/delete/")["Location"] == "/models/"
    assert not ModelEndpoint.objects.filter(pk=endpoint.pk).exists()
    assert console.get(f"/models/{endpoint.pk}/").status_code == 404


def test_the_pages_speak_english_on_request(console):
    endpoint = add(console)
    listing = console.get("/models/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Language models" in listing and "Default chat model" in listing and ">set<" in listing and "已设置" not in listing
    form = console.get("/models/new/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Base URL" in form and "https://api.deepseek.com/v1" in form and "API key" in form
    assert "语言模型" in console.get(f"/models/{endpoint.pk}/").content.decode()


def test_the_kb_settings_page_offers_the_endpoints_models(console, staff, make_kb):
    add(console)
    kb = make_kb(staff, "kb", answer_model="fake-large")
    page = console.get(f"/kbs/{kb.pk}/settings/").content.decode()
    assert '<option value="fake-large" selected>fake-large · Fake</option>' in page
    assert '<option value="fake-model" >fake-model · Fake</option>' in page


# --- the Django admin ------------------------------------------------------------------------------

def test_the_admin_masks_the_key_and_saves_through_the_services(client, make_user):
    admin = make_user("root", superuser=True)
    client.force_login(admin)
    response = client.post("/admin/providers/modelendpoint/add/", {
        "name": "Admin made", "kind": "zhipu", "base_url": "", "api_key": KEY, "model_names_text": "glm-4-flash",
        "enabled": "on"})
    assert response.status_code == 302, response.content.decode()[:3000]
    endpoint = ModelEndpoint.objects.get(name="Admin made")
    assert endpoint.base_url == "https://open.bigmodel.cn/api/paas/v4" and secret_decrypt(endpoint.api_key_encrypted) == KEY
    for page in (client.get("/admin/providers/modelendpoint/"), client.get(f"/admin/providers/modelendpoint/{endpoint.pk}/change/")):
        assert page.status_code == 200
        assert KEY not in page.content.decode() and endpoint.api_key_encrypted not in page.content.decode()
    client.post(f"/admin/providers/modelendpoint/{endpoint.pk}/change/", {
        "name": "Admin made", "kind": "zhipu", "base_url": "https://open.bigmodel.cn/api/paas/v4", "api_key": "",
        "model_names_text": "glm-4-flash\nglm-4-plus", "enabled": "on"})
    endpoint.refresh_from_db()
    assert endpoint.model_names == ["glm-4-flash", "glm-4-plus"] and secret_decrypt(endpoint.api_key_encrypted) == KEY
