"""The model endpoints' error codes, in the one registry (core/errors.py); imported by the app's AppConfig.ready."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import Conflict as C
from core.errors import ErrorCode
from core.errors import NotFound as N
from core.errors import PermissionDenied as P
from core.errors import ValidationFailed as V
from core.errors import register as _code


class ProvidersError(ErrorCode):
    """The model endpoints' codes, and a connection test's outcomes."""

    ENDPOINT_NOT_FOUND = "endpoint_not_found"
    ENDPOINT_NAME_TAKEN = "endpoint_name_taken"
    INVALID_ENDPOINT_NAME = "invalid_endpoint_name"
    INVALID_ENDPOINT_KIND = "invalid_endpoint_kind"
    INVALID_BASE_URL = "invalid_base_url"
    INVALID_MODEL_NAMES = "invalid_model_names"
    INVALID_API_KEY = "invalid_api_key"
    UNKNOWN_MODEL = "unknown_model"
    ENDPOINT_UNREACHABLE = "endpoint_unreachable"
    ENDPOINT_TIMEOUT = "endpoint_timeout"
    ENDPOINT_UNAUTHORIZED = "endpoint_unauthorized"
    ENDPOINT_HTTP_ERROR = "endpoint_http_error"
    ENDPOINT_BAD_ANSWER = "endpoint_bad_answer"


# --- language-model endpoints (providers/) ---------------------------------------------------------------------
_code(ProvidersError.ENDPOINT_NOT_FOUND, N, _("Model endpoint not found."))
_code(ProvidersError.ENDPOINT_NAME_TAKEN, C, _("A model endpoint named %(name)r already exists."))
_code(ProvidersError.INVALID_ENDPOINT_NAME, V, _("An endpoint needs a name of at most %(limit)s characters, without a slash."))
_code(ProvidersError.INVALID_ENDPOINT_KIND, V, _("kind must be one of %(kinds)s."))
_code(ProvidersError.INVALID_BASE_URL, V, _("The base URL must be an http:// or https:// URL with a host, at most %(limit)s characters."),
      required=_("This kind of endpoint has no usual address: give its base URL."))
_code(ProvidersError.INVALID_MODEL_NAMES, V, _("Give at most %(count)s model names, each at most %(limit)s characters, without spaces."))
_code(ProvidersError.INVALID_API_KEY, V, _("The API key must be at most %(limit)s characters, without spaces or control characters."),
      unreadable=_("The stored API key cannot be decrypted (the secret key changed): enter the key again."))
_code(ProvidersError.UNKNOWN_MODEL, V, _("%(model)r is not one of the offered models: %(models)s."),
      endpoint=_("%(model)r is not one of this endpoint's models: %(models)s."))
# The outcome of a connection test (answered inside its 200 result, never as the request's error).
_code(ProvidersError.ENDPOINT_UNREACHABLE, None, _("The endpoint could not be reached: %(error)s."), status=None)
_code(ProvidersError.ENDPOINT_TIMEOUT, None, _("The endpoint did not answer within %(seconds)s seconds."), status=None)
_code(ProvidersError.ENDPOINT_UNAUTHORIZED, None, _("The endpoint refused the key (HTTP %(status)s): %(detail)s"), status=None)
_code(ProvidersError.ENDPOINT_HTTP_ERROR, None, _("The endpoint answered HTTP %(status)s: %(detail)s"), status=None)
_code(ProvidersError.ENDPOINT_BAD_ANSWER, None, _("The endpoint's answer is not an OpenAI-compatible one: %(error)s"), status=None)

del V, N, P, C
