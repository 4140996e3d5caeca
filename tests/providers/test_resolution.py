"""Which model a choice string names, and where: the environment first, then the console's endpoints (providers/catalog.py);
the keys' encryption ring and its rotation (providers/secrets.py)."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from chat.llm import llm_config, llm_config_for
from knowledge.services.kbs import llm_models
from providers.catalog import choice_get, model_choices
from providers.models import ModelEndpoint
from providers.probe import endpoint_test
from providers.secrets import InvalidToken, secret_decrypt
from providers.services import default_model_set, endpoint_create, endpoint_update

pytestmark = pytest.mark.django_db


@pytest.fixture
def env(settings):
    settings.ZHIKU_LLM_BASE_URL, settings.ZHIKU_LLM_MODEL = "http://env.example/v1", "small"
    settings.ZHIKU_LLM_MODELS, settings.ZHIKU_LLM_API_KEY = ["large"], "env-key"


@pytest.fixture
def endpoints():
    a = endpoint_create(name="阿里云", kind="qwen", api_key="key-a", model_names=["large", "qwen-plus"])
    b = endpoint_create(name="Backup", base_url="http://b.example/v1/", api_key="key-b", model_names=["qwen-plus", "glm-4"])
    endpoint_create(name="Off", base_url="http://off.example/v1", model_names=["off-model"], enabled=False)
    return a, b


def test_env_vars_still_work_when_no_endpoint_is_configured(env):
    assert llm_models() == ["small", "large"]
    config = llm_config()
    assert (config.base_url, config.model, config.api_key) == ("http://env.example/v1", "small", "env-key")
    large = llm_config_for("large")
    assert (large.base_url, large.model, large.api_key) == ("http://env.example/v1", "large", "env-key")
    assert llm_config_for("unknown") is None


def test_no_llm_at_all_is_none():
    assert llm_config() is None and llm_models() == [] and llm_config_for("x") is None


def test_choices_are_unique_environment_first_then_endpoints_in_order(env, endpoints):
    assert llm_models() == ["small", "large", "阿里云/large", "qwen-plus", "Backup/qwen-plus", "glm-4"]
    assert len({c.choice for c in model_choices()}) == len(model_choices())
    # A later endpoint never changes what an existing choice names.
    endpoint_create(name="Later", base_url="http://later.example/v1", model_names=["glm-4"])
    assert choice_get("glm-4").endpoint_name == "Backup" and choice_get("Later/glm-4").endpoint_name == "Later"


def test_each_choice_resolves_to_its_endpoints_url_and_key(env, endpoints):
    a, b = endpoints
    plus = llm_config_for("qwen-plus")
    assert (plus.base_url, plus.model, plus.api_key) == ("https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen-plus", "key-a")
    backup = llm_config_for("Backup/qwen-plus")
    assert (backup.base_url, backup.model, backup.api_key) == ("http://b.example/v1", "qwen-plus", "key-b")
    assert llm_config_for("阿里云/large").api_key == "key-a" and llm_config_for("large").api_key == "env-key"
    # The qualified form of a choice listed bare names the same model; a disabled endpoint offers nothing.
    assert choice_get("阿里云/qwen-plus") == choice_get("qwen-plus")
    assert llm_config_for("off-model") is None and llm_config_for("Off/off-model") is None


def test_the_console_default_takes_over_from_the_environment_until_cleared(env, endpoints):
    a, b = endpoints
    default_model_set(choice="Backup/qwen-plus")
    config = llm_config()
    assert (config.base_url, config.model, config.api_key) == ("http://b.example/v1", "qwen-plus", "key-b")
    assert llm_config_for("") == config and [c.choice for c in model_choices() if c.is_default] == ["Backup/qwen-plus"]
    # Disabling the default endpoint clears the default: the environment's model again.
    endpoint_update(endpoint=ModelEndpoint.objects.get(pk=b.pk), enabled=False)
    assert llm_config().model == "small" and not ModelEndpoint.objects.filter(is_default=True).exists()
    with pytest.raises(Exception) as refused:
        default_model_set(choice="large")  # an environment model other than ZHIKU_LLM_MODEL cannot be the default
    assert refused.value.code == "unknown_model"


def test_without_environment_a_console_default_is_the_only_llm(endpoints):
    assert llm_config() is None and llm_models()[0] == "large"
    default_model_set(choice="glm-4")
    assert llm_config().base_url == "http://b.example/v1"


def test_a_kb_stores_the_choice_as_listed(env, endpoints, make_kb, alice):
    kb = make_kb(alice, "kb", answer_model="阿里云/qwen-plus")
    assert kb.answer_model == "qwen-plus"
    with pytest.raises(Exception) as refused:
        make_kb(alice, "kb2", answer_model="Off/off-model")
    assert refused.value.code == "unknown_answer_model"


# --- the encryption ring ----------------------------------------------------------------------------------

def test_zhiku_secrets_key_takes_over_and_rotation_moves_every_key_to_it(settings):
    endpoint = endpoint_create(name="e", base_url="http://e.example/v1", api_key="sk-secret")
    under_secret_key = ModelEndpoint.objects.get(pk=endpoint.pk).api_key_encrypted
    settings.ZHIKU_SECRETS_KEY = "a-new-long-random-secret-for-endpoint-keys"
    assert secret_decrypt(under_secret_key) == "sk-secret"  # the old key still opens it
    call_command("endpoint_keys_rotate")
    rotated = ModelEndpoint.objects.get(pk=endpoint.pk).api_key_encrypted
    assert rotated != under_secret_key
    settings.SECRET_KEY = "another-django-secret-key-entirely"
    assert secret_decrypt(rotated) == "sk-secret"  # readable with ZHIKU_SECRETS_KEY alone
    with pytest.raises(InvalidToken):
        secret_decrypt(under_secret_key)


def test_a_fernet_key_is_used_as_it_is_and_secret_key_fallbacks_still_decrypt(settings):
    from cryptography.fernet import Fernet

    fernet_key = Fernet.generate_key().decode()
    settings.ZHIKU_SECRETS_KEY = fernet_key
    endpoint = endpoint_create(name="e", base_url="http://e.example/v1", api_key="sk-secret")
    token = ModelEndpoint.objects.get(pk=endpoint.pk).api_key_encrypted
    assert Fernet(fernet_key.encode()).decrypt(token.encode()) == b"sk-secret"

    settings.ZHIKU_SECRETS_KEY = ""
    old = settings.SECRET_KEY
    plain = endpoint_create(name="f", base_url="http://f.example/v1", api_key="sk-other")
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "the-rotated-django-secret", [old]
    assert secret_decrypt(ModelEndpoint.objects.get(pk=plain.pk).api_key_encrypted) == "sk-other"


def test_a_key_no_secret_opens_is_reported_not_raised(settings):
    endpoint = endpoint_create(name="e", base_url="http://e.example/v1", api_key="sk-secret", model_names=["m"])
    settings.SECRET_KEY = "a-different-secret-without-fallbacks"
    assert llm_config_for("m").api_key == ""
    result = endpoint_test(endpoint=ModelEndpoint.objects.get(pk=endpoint.pk))
    assert (result.ok, result.code) == (False, "invalid_api_key")
    with pytest.raises(CommandError, match="e"):
        call_command("endpoint_keys_rotate")


def test_resolving_a_choice_costs_two_queries_however_many_endpoints(env, endpoints, django_assert_num_queries):
    for i in range(5):
        endpoint_create(name=f"more-{i}", base_url="http://more.example/v1", api_key="k", model_names=[f"m{i}", "glm-4"])
    with django_assert_num_queries(1):
        assert len(model_choices()) == 6 + 10
    with django_assert_num_queries(2):  # the choices, then the one key
        assert llm_config_for("more-3/glm-4").api_key == "k"


def test_a_turn_given_a_config_keeps_it_for_environment_models_and_uses_endpoints_for_theirs(env, endpoints):
    from chat.llm import LLMConfig
    from chat.services import USE_SETTINGS, AnswerSettings, answer_config

    given = LLMConfig(base_url="http://given.example/v1", model="small", api_key="given-key")
    assert answer_config(given, AnswerSettings()) is given
    assert answer_config(given, AnswerSettings(model="large")) == LLMConfig(base_url="http://given.example/v1",
                                                                            model="large", api_key="given-key")
    assert answer_config(given, AnswerSettings(model="Backup/qwen-plus")).api_key == "key-b"
    assert answer_config(given, AnswerSettings(model="gone")) is given
    assert answer_config(given, AnswerSettings(extractive=True, model="glm-4")) is None
    assert answer_config(None, AnswerSettings(model="glm-4")) is None
    assert answer_config(USE_SETTINGS, AnswerSettings(model="glm-4")).base_url == "http://b.example/v1"
    assert answer_config(USE_SETTINGS, AnswerSettings(model="gone")).model == "small"
