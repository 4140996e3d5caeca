"""The consent page (``/oauth/authorize/``): the signed-in person lets an MCP client use one assistant or KB.

django-oauth-toolkit's authorization view checks the request (client, redirect URI, PKCE S256, ``resource``) and
issues the code; this page adds what MCP needs: the ``resource`` must be one of this site's MCP addresses
(``/mcp/`` when the client sent none), and the person picks the one target the token will reach, among the
assistants they own and the KBs they may read (for ``/mcp/kb/<id>/``: that KB, if they may read it). The choice
is re-checked when the form comes back, and becomes the token's scope (assistants/mcp_auth/oauth.py). A redirect URI
that registration would refuse now (assistants/mcp_auth/redirects.py), stored by a client registered before that
rule, is ``consent_redirect_invalid`` (400; the Validator's check, assistants/mcp_auth/oauth.py, and here before a
denial): the page neither shows it nor sends anyone there.
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from django.shortcuts import render
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.http import OAuth2ResponseRedirect
from oauth2_provider.models import get_application_model
from oauth2_provider.views import AuthorizationView
from oauthlib.oauth2.rfc6749.errors import InvalidRequestError

from assistants.errors import AssistantsError
from assistants.mcp_auth.oauth import MCP_SCOPE, target_scope
from assistants.mcp_auth.redirects import LOOPBACK_HOSTS, redirect_uri_problem
from assistants.mcp_auth.resources import origin_of_request, our_resource, resource_url
from assistants.services import assistants_of
from core.errors import ApplicationError, fail
from knowledge.access import kbs_for_user
from knowledge.selectors import kb_get_for_user

MAX_CHOICES = 200
TEMPLATE = "assistants/mcp_consent.html"


@dataclass(frozen=True)
class Choice:
    value: str
    kind: str
    name: str
    description: str


def choices_for(user, kb_id: int | None) -> list[Choice]:
    """What ``user`` may let a client use: the assistants they own and the KBs they may read (or the one KB)."""
    if kb_id is not None:
        kb = kb_get_for_user(user=user, kb_id=kb_id)
        return [Choice(target_scope("kb", kb.pk), "kb", kb.name, kb.description)]
    assistants = [Choice(target_scope("assistant", a.pk), "assistant", a.name, a.description)
                  for a in assistants_of(user=user).order_by("name", "id")[:MAX_CHOICES]]
    kbs = [Choice(target_scope("kb", kb.pk), "kb", kb.name, kb.description)
           for kb in kbs_for_user(user=user).order_by("name", "id")[:MAX_CHOICES]]
    return assistants + kbs


def _resource_of(request, sent: str) -> tuple[str, int | None]:
    """The resource asked for (``/mcp/`` when none was) and its KB id; ``consent_resource_invalid`` otherwise."""
    origin = origin_of_request(request)
    resources = sent.split()
    if not resources:
        return resource_url(origin, None), None
    kb_id = our_resource(resources[0], origin) if len(resources) == 1 else False
    if kb_id is False:
        raise fail(AssistantsError.CONSENT_RESOURCE_INVALID, resource=sent[:200])
    return resource_url(origin, kb_id), kb_id



def form_action_to(response, redirect_uri: str):
    """The page's CSP lets its form's answer redirect to the client (``form-action`` covers redirects after a
    submission, CSP Level 3 §6.4.1): the redirect URI's origin, the toolkit having checked it against the client's
    registered ones; any port on the loopback, where a native client listens on one it picks (RFC 8252 §7.3)."""
    parts = urlsplit(redirect_uri or "")
    if parts.scheme in ("http", "https") and parts.hostname:
        loopback = parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        port = ":*" if loopback else (f":{parts.port}" if parts.port else "")
        response._csp_update = {"form-action": [f"{parts.scheme}://{host}{port}"]}
    return response


class Consent(AuthorizationView):
    template_name = TEMPLATE

    def _refused(self, exc: ApplicationError, **context):
        return render(self.request, TEMPLATE, {"refusal": exc, **context}, status=exc.status_code)

    def redirect(self, redirect_to, application):
        """Back to the client: https, or http on the loopback (the toolkit's setting allows https only)."""
        host = urlsplit(redirect_to).hostname
        return OAuth2ResponseRedirect(redirect_to, ["https", "http"] if host in LOOPBACK_HOSTS else ["https"])

    def render_to_response(self, context, **response_kwargs):
        response = super().render_to_response(context, **response_kwargs)
        return form_action_to(response, self.oauth2_data.get("redirect_uri", "") if self.oauth2_data else "")

    def validate_authorization_request(self, request):
        """The toolkit's checks, then PKCE S256 only, refused here rather than after the consent (RFC 9700 §2.1.1)."""
        scopes, credentials = super().validate_authorization_request(request)
        if credentials.get("code_challenge_method") != "S256":
            raise OAuthToolkitError(error=InvalidRequestError(
                description='PKCE with code_challenge_method "S256" is required.', state=credentials.get("state")),
                redirect_uri=credentials.get("redirect_uri"))
        return scopes, credentials

    def get(self, request, *args, **kwargs):
        try:
            resource, kb_id = _resource_of(request, " ".join(request.GET.getlist("resource")))
            self.choices = choices_for(request.user, kb_id)
        except ApplicationError as exc:
            return self._refused(exc)
        self.resource, self.kb_id = resource, kb_id
        return super().get(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(choices=getattr(self, "choices", []), mcp_resource=getattr(self, "resource", ""),
                       kb_id=getattr(self, "kb_id", None))
        return context

    def form_valid(self, form):
        request = self.request
        application = get_application_model().objects.filter(client_id=form.cleaned_data["client_id"]).first()
        try:
            # The toolkit checks the redirect URI when it issues the code (Validator.validate_redirect_uri), not
            # before it sends a denial there.
            if redirect_uri_problem(form.cleaned_data.get("redirect_uri")):
                raise fail(AssistantsError.CONSENT_REDIRECT_INVALID)
            resource, kb_id = _resource_of(request, form.cleaned_data.get("resource") or "")
        except ApplicationError as exc:
            return self._refused(exc, application=application)
        form.cleaned_data["resource"] = resource
        if not form.cleaned_data.get("allow"):
            return super().form_valid(form)  # the client is told access_denied (RFC 6749 §4.1.2.1)
        try:
            choices = choices_for(request.user, kb_id)
            if not choices:
                raise fail(AssistantsError.CONSENT_TARGET_INVALID, "none")
            target = request.POST.get("target", "")
            if target not in {c.value for c in choices}:
                raise fail(AssistantsError.CONSENT_TARGET_INVALID)
        except ApplicationError as exc:
            return form_action_to(render(request, TEMPLATE, {
                "form": form, "application": application, "mcp_resource": resource, "kb_id": kb_id, "target_error": exc,
                "choices": choices_for(request.user, kb_id) if exc.code != "kb_not_found" else []},
                status=exc.status_code), form.cleaned_data.get("redirect_uri", ""))
        form.cleaned_data["scope"] = f"{MCP_SCOPE} {target}"
        return super().form_valid(form)
