"""Pages people use in the browser: the home page listing the caller's knowledge bases."""
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path

from knowledge.selectors import kb_list_readable


def home(request: HttpRequest) -> HttpResponse:
    """The caller's knowledge bases with links to the admin and the API docs (anonymous: a login link)."""
    kbs = []
    if request.user.is_authenticated:
        kbs = list(kb_list_readable(user=request.user).select_related("owner").order_by("name")[:200])
    return render(request, "home.html", {"kbs": kbs})


urlpatterns = [
    path("", home, name="home"),
]
