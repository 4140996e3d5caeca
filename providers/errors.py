"""The model endpoints' error codes, in the one registry (core/errors.py); imported by the app's AppConfig.ready."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import Conflict as C
from core.errors import NotFound as N
from core.errors import PermissionDenied as P
from core.errors import ValidationFailed as V
from core.errors import register as _code

# --- language-model endpoints (providers/) ---------------------------------------------------------------------
_code("endpoint_not_found", N, _("Model endpoint not found."))
_code("endpoint_name_taken", C, _("A model endpoint named %(name)r already exists."))
_code("invalid_endpoint_name", V, _("An endpoint needs a name of at most %(limit)s characters, without a slash."))
_code("invalid_endpoint_kind", V, _("kind must be one of %(kinds)s."))
_code("invalid_base_url", V, _("The base URL must be an http:// or https:// URL with a host, at most %(limit)s characters."),
      required=_("This kind of endpoint has no usual address: give its base URL."))
_code("invalid_model_names", V, _("Give at most %(count)s model names, each at most %(limit)s characters, without spaces."))
_code("invalid_api_key", V, _("The API key must be at most %(limit)s characters, without spaces or control characters."),
      unreadable=_("The stored API key cannot be decrypted (the secret key changed): enter the key again."))
_code("unknown_model", V, _("%(model)r is not one of the offered models: %(models)s."),
      endpoint=_("%(model)r is not one of this endpoint's models: %(models)s."))
# The outcome of a connection test (answered inside its 200 result, never as the request's error).
_code("endpoint_unreachable", None, _("The endpoint could not be reached: %(error)s."), status=None)
_code("endpoint_timeout", None, _("The endpoint did not answer within %(seconds)s seconds."), status=None)
_code("endpoint_unauthorized", None, _("The endpoint refused the key (HTTP %(status)s): %(detail)s"), status=None)
_code("endpoint_http_error", None, _("The endpoint answered HTTP %(status)s: %(detail)s"), status=None)
_code("endpoint_bad_answer", None, _("The endpoint's answer is not an OpenAI-compatible one: %(error)s"), status=None)

del V, N, P, C
