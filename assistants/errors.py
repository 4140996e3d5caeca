"""The assistants' error codes, registered in the one registry (core/errors.py) when the app loads."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import Conflict, ErrorCode, NotAuthenticated, NotFound, PermissionDenied, Throttled, ValidationFailed, register


class AssistantsError(ErrorCode):
    """The assistants' codes: assistants, keys, every publishing path."""

    ASSISTANT_NOT_FOUND = "assistant_not_found"
    ASSISTANT_NAME_TAKEN = "assistant_name_taken"
    ASSISTANT_NO_KBS = "assistant_no_kbs"
    ASSISTANT_UNAVAILABLE = "assistant_unavailable"
    INVALID_ASSISTANT = "invalid_assistant"
    KEY_MISSING = "key_missing"
    KEY_INVALID = "key_invalid"
    KEY_WRONG_KIND = "key_wrong_kind"
    KEY_NOT_FOUND = "key_not_found"
    KEY_RATE_LIMITED = "key_rate_limited"
    ORIGIN_NOT_ALLOWED = "origin_not_allowed"
    SHARE_NOT_FOUND = "share_not_found"
    SHARE_MEMBERS_ONLY = "share_members_only"
    INVALID_CHAT_REQUEST = "invalid_chat_request"
    INVALID_RESPONSE_REQUEST = "invalid_response_request"
    MODEL_NOT_FOUND = "model_not_found"
    PREVIOUS_RESPONSE_NOT_FOUND = "previous_response_not_found"
    INVALID_RETRIEVAL_REQUEST = "invalid_retrieval_request"
    EMBED_TICKET_INVALID = "embed_ticket_invalid"
    VISITOR_RATE_LIMITED = "visitor_rate_limited"
    TOKEN_INVALID = "token_invalid"
    TOKEN_WRONG_RESOURCE = "token_wrong_resource"
    CONSENT_RESOURCE_INVALID = "consent_resource_invalid"
    CONSENT_REDIRECT_INVALID = "consent_redirect_invalid"
    CONSENT_TARGET_INVALID = "consent_target_invalid"
    MCP_GRANT_NOT_FOUND = "mcp_grant_not_found"
    INVALID_METADATA_FILTER = "invalid_metadata_filter"
    INVALID_TRY_BODY = "invalid_try_body"


# --- assistants -------------------------------------------------------------------------------------------------
register(AssistantsError.ASSISTANT_NOT_FOUND, NotFound, _("Assistant not found."))
register(AssistantsError.ASSISTANT_NAME_TAKEN, Conflict, _("You already have an assistant named %(name)r."))
register(AssistantsError.ASSISTANT_NO_KBS, ValidationFailed, _("An assistant needs at least one knowledge base."))
register(AssistantsError.ASSISTANT_UNAVAILABLE, PermissionDenied,
         _("This assistant's owner can no longer read any of its knowledge bases."))
register(AssistantsError.INVALID_ASSISTANT, ValidationFailed, _("An assistant needs a name."),
         origins=_("allowed_origins is a list of at most %(limit)s origins, each scheme://host[:port], e.g. https://intranet.example.com."),
         suggested=_("suggested_questions is a list of at most %(limit)s questions of at most %(chars)s characters each."),
         share_access=_("share_access is off, public or members."),
         kb_ids=_("An assistant searches at most %(limit)s knowledge bases."))

# --- API keys ---------------------------------------------------------------------------------------------------
register(AssistantsError.KEY_MISSING, NotAuthenticated, _("Send the key as Authorization: Bearer <key>."))
register(AssistantsError.KEY_INVALID, NotAuthenticated, _("The API key is not valid, or it was revoked."))
register(AssistantsError.KEY_WRONG_KIND, PermissionDenied, _("This key cannot be used here; it needs a key of %(needed)s."))
register(AssistantsError.KEY_NOT_FOUND, NotFound, _("API key not found."))
register(AssistantsError.KEY_RATE_LIMITED, Throttled, _("This key is over its %(limit)s requests a minute; retry in %(retry)s s."))

# --- embedding and share links ----------------------------------------------------------------------------------
register(AssistantsError.ORIGIN_NOT_ALLOWED, PermissionDenied, _("The origin %(origin)r may not embed this assistant."))
register(AssistantsError.SHARE_NOT_FOUND, NotFound, _("This share link does not exist or was turned off."))
register(AssistantsError.SHARE_MEMBERS_ONLY, NotAuthenticated, _("Sign in to use this assistant."))

# --- the OpenAI-compatible API and Dify's external knowledge (assistants/openai_*.py, assistants/dify.py) --------
register(AssistantsError.INVALID_CHAT_REQUEST, ValidationFailed, _("The body must be a JSON object with a messages list."),
         messages=_("messages must be a non-empty list of at most %(limit)s messages."),
         item=_("Each message is an object with a role (system, developer, user, assistant or tool) and a text content."),
         no_user=_("messages holds no user message: the last user message is the question."),
         stream=_("stream must be true or false."),
         stream_options=_("stream_options must be an object."),
         model=_("model must be a string."),
         max_tokens=_("%(param)s must be a whole number from 1 to %(limit)s."))
register(AssistantsError.INVALID_RESPONSE_REQUEST, ValidationFailed, _("The body must be a JSON object with an input."),
         input=_("input must be a text or a non-empty list of at most %(limit)s message items."),
         item=_("Each input item is a message: an object with a role (user, assistant, system or developer) and a "
                "content that is a text or a list of input_text parts."),
         no_user=_("input holds no user message: the last user message is the question."),
         stream=_("stream must be true or false."),
         store=_("store must be true or false."),
         model=_("model must be a string."),
         instructions=_("instructions must be a string."),
         previous_response_id=_("previous_response_id must be a string."),
         max_tokens=_("%(param)s must be a whole number from 1 to %(limit)s."))
register(AssistantsError.MODEL_NOT_FOUND, NotFound,
         _("The model %(model)r does not exist or this key cannot use it; this key's model is %(assistant)r."))
register(AssistantsError.PREVIOUS_RESPONSE_NOT_FOUND, NotFound, _("Previous response with id %(id)r not found."))
register(AssistantsError.INVALID_RETRIEVAL_REQUEST, ValidationFailed,
         _("The body must be a JSON object with knowledge_id, query and retrieval_setting."),
         knowledge_id=_("knowledge_id must be a knowledge base's id, as a string."),
         retrieval_setting=_("retrieval_setting must be an object with top_k (1 to %(limit)s) and score_threshold (0 to 1)."),
         metadata_condition=_("metadata_condition must be an object with logical_operator and or or and at most "
                              "%(limit)s conditions."),
         condition=_("Each condition names a metadata field and one of the operators %(operators)s, with a value "
                     "unless the operator is empty or not empty."))
register(AssistantsError.EMBED_TICKET_INVALID, PermissionDenied,
         _("The chat's visitor ticket is missing or not valid; reload the page."))
register(AssistantsError.VISITOR_RATE_LIMITED, Throttled,
         _("Too many questions: at most %(limit)s a minute; retry in %(retry)s s."))

# --- MCP clients signed in with OAuth (assistants/mcp_auth/) -----------------------------------------------------
register(AssistantsError.TOKEN_INVALID, NotAuthenticated,
         _("The access token is not valid, has expired, or was revoked; sign in again."))
register(AssistantsError.TOKEN_WRONG_RESOURCE, NotAuthenticated,
         _("This key or token was issued for another MCP address; use it there, or sign in again for this one."))
register(AssistantsError.CONSENT_RESOURCE_INVALID, ValidationFailed,
         _("The client asked for access to %(resource)r, which is not an MCP address of this site."))
register(AssistantsError.CONSENT_REDIRECT_INVALID, ValidationFailed,
         _("This client's return address is not one this site sends people to (https, or http on this computer, "
           "without spaces, backslashes or control characters). The client must register again."))
register(AssistantsError.CONSENT_TARGET_INVALID, ValidationFailed,
         _("Choose one of the assistants or knowledge bases listed."),
         none=_("You have no assistant or knowledge base that this client could use."))
register(AssistantsError.MCP_GRANT_NOT_FOUND, NotFound, _("This sign-in does not exist or was already revoked."))

# --- the MCP server (assistants/mcp_server.py) ------------------------------------------------------------------
register(AssistantsError.INVALID_METADATA_FILTER, ValidationFailed,
         _("metadata is an object of at most %(keys)s keys of at most %(key_chars)s characters, each value a text of "
           "at most %(value_chars)s characters, a number or true/false."))

# --- the console's REST API (assistants/api.py, assistants/sse.py) ----------------------------------------------
register(AssistantsError.INVALID_TRY_BODY, ValidationFailed,
         _('The body must be {"question": "...", "conversation": <id or null>}: the question, and the preview '
           'conversation to continue (optional).'))
