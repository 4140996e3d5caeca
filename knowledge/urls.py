"""Pages people use in the browser: the home page listing the caller's knowledge bases."""
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404

from knowledge.access import kb_role, kbs_for_user
from knowledge.errors import NotFound
from knowledge.errors import PermissionDenied as AppPermissionDenied
from knowledge.models import Role
from knowledge.selectors import kb_get_for_user


def home(request: HttpRequest) -> HttpResponse:
    """The caller's knowledge bases with links to the admin and the API docs (anonymous: a login link)."""
    kbs = []
    if request.user.is_authenticated:
        kbs = list(kbs_for_user(user=request.user).select_related("owner").order_by("name")[:200])
    return render(request, "home.html", {"kbs": kbs})


@login_required
def hit_test(request: HttpRequest, kb_id: int) -> HttpResponse:
    """命中测试: an editor of the KB searches it and sees every stage's ranks and scores."""
    try:
        kb = kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
    except NotFound:
        raise Http404("Knowledge base not found.") from None
    except AppPermissionDenied as exc:
        raise PermissionDenied(exc.message) from None
    is_owner = kb_role(user=request.user, kb=kb) == Role.OWNER
    return render(request, "knowledge/hit_test.html", {"kb": kb, "is_owner": is_owner})


urlpatterns = [
    path("", home, name="home"),
    path("kbs/<int:kb_id>/hit-test/", hit_test, name="hit-test"),
]
