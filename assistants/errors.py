"""The assistants' error codes, registered in the one registry (core/errors.py) when the app loads."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import Conflict, NotAuthenticated, NotFound, PermissionDenied, Throttled, ValidationFailed, register

# --- assistants -------------------------------------------------------------------------------------------------
register("assistant_not_found", NotFound, _("Assistant not found."))
register("assistant_name_taken", Conflict, _("You already have an assistant named %(name)r."))
register("assistant_no_kbs", ValidationFailed, _("An assistant needs at least one knowledge base."))
register("assistant_unavailable", PermissionDenied,
         _("This assistant's owner can no longer read any of its knowledge bases."))
register("invalid_assistant", ValidationFailed, _("An assistant needs a name."),
         origins=_("allowed_origins is a list of at most %(limit)s origins, each scheme://host[:port], e.g. https://intranet.example.com."),
         suggested=_("suggested_questions is a list of at most %(limit)s questions of at most %(chars)s characters each."),
         share_access=_("share_access is off, public or members."),
         kb_ids=_("An assistant searches at most %(limit)s knowledge bases."))

# --- API keys ---------------------------------------------------------------------------------------------------
register("key_missing", NotAuthenticated, _("Send the key as Authorization: Bearer <key>."))
register("key_invalid", NotAuthenticated, _("The API key is not valid, or it was revoked."))
register("key_wrong_kind", PermissionDenied, _("This key cannot be used here; it needs a key of %(needed)s."))
register("key_not_found", NotFound, _("API key not found."))
register("key_rate_limited", Throttled, _("This key is over its %(limit)s requests a minute; retry in %(retry)s s."))

# --- embedding and share links ----------------------------------------------------------------------------------
register("origin_not_allowed", PermissionDenied, _("The origin %(origin)r may not embed this assistant."))
register("share_not_found", NotFound, _("This share link does not exist or was turned off."))
register("share_members_only", NotAuthenticated, _("Sign in to use this assistant."))

# --- the OpenAI-compatible API and Dify's external knowledge (assistants/openai_*.py, assistants/dify.py) --------
register("invalid_chat_request", ValidationFailed, _("The body must be a JSON object with a messages list."),
         messages=_("messages must be a non-empty list of at most %(limit)s messages."),
         item=_("Each message is an object with a role (system, developer, user, assistant or tool) and a text content."),
         no_user=_("messages holds no user message: the last user message is the question."),
         stream=_("stream must be true or false."),
         stream_options=_("stream_options must be an object."),
         model=_("model must be a string."),
         max_tokens=_("%(param)s must be a whole number from 1 to %(limit)s."))
register("invalid_response_request", ValidationFailed, _("The body must be a JSON object with an input."),
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
register("model_not_found", NotFound,
         _("The model %(model)r does not exist or this key cannot use it; this key's model is %(assistant)r."))
register("previous_response_not_found", NotFound, _("Previous response with id %(id)r not found."))
register("invalid_retrieval_request", ValidationFailed,
         _("The body must be a JSON object with knowledge_id, query and retrieval_setting."),
         knowledge_id=_("knowledge_id must be a knowledge base's id, as a string."),
         retrieval_setting=_("retrieval_setting must be an object with top_k (1 to %(limit)s) and score_threshold (0 to 1)."),
         metadata_condition=_("metadata_condition must be an object with logical_operator and or or and at most "
                              "%(limit)s conditions."),
         condition=_("Each condition names a metadata field and one of the operators %(operators)s, with a value "
                     "unless the operator is empty or not empty."))
register("embed_ticket_invalid", PermissionDenied,
         _("The chat's visitor ticket is missing or not valid; reload the page."))
register("visitor_rate_limited", Throttled,
         _("Too many questions: at most %(limit)s a minute; retry in %(retry)s s."))

# --- MCP clients signed in with OAuth (assistants/mcp_auth/) -----------------------------------------------------
register("token_invalid", NotAuthenticated,
         _("The access token is not valid, has expired, or was revoked; sign in again."))
register("token_wrong_resource", NotAuthenticated,
         _("This key or token was issued for another MCP address; use it there, or sign in again for this one."))
register("consent_resource_invalid", ValidationFailed,
         _("The client asked for access to %(resource)r, which is not an MCP address of this site."))
register("consent_redirect_invalid", ValidationFailed,
         _("This client's return address is not one this site sends people to (https, or http on this computer, "
           "without spaces, backslashes or control characters). The client must register again."))
register("consent_target_invalid", ValidationFailed,
         _("Choose one of the assistants or knowledge bases listed."),
         none=_("You have no assistant or knowledge base that this client could use."))
register("mcp_grant_not_found", NotFound, _("This sign-in does not exist or was already revoked."))

# --- the MCP server (assistants/mcp_server.py) ------------------------------------------------------------------
register("invalid_metadata_filter", ValidationFailed,
         _("metadata is an object of at most %(keys)s keys of at most %(key_chars)s characters, each value a text of "
           "at most %(value_chars)s characters, a number or true/false."))
