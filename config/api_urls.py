"""The "api" URL namespace under /api/: sign-in and tokens (accounts/), knowledge bases (knowledge/), evaluation
(chat/). Each app lists its own routes; the namespace is assembled here, above them all, so no app imports another's."""
from accounts.api import token_urls
from chat import evaluation_urls
from knowledge.api import urls as knowledge_urls

app_name = "api"

urlpatterns = [*token_urls.urlpatterns, *knowledge_urls.urlpatterns, *evaluation_urls.urlpatterns]
