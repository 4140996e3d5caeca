"""Error codes of the assistants' console API (assistants/api.py, assistants/sse.py), registered when the app loads."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import ValidationFailed, register

register("invalid_try_body", ValidationFailed,
         _('The body must be {"question": "...", "conversation": <id or null>}: the question, and the preview '
           'conversation to continue (optional).'))
