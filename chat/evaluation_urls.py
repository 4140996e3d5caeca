"""A KB's labelled questions and its evaluation run (in the "api" namespace: config/api_urls.py)."""
from django.urls import path

from chat import evaluation_api as evaluation

urlpatterns = [
    path("kbs/<int:kb_id>/eval-questions/", evaluation.EvalQuestionListView.as_view(), name="evalquestion-list"),
    path("kbs/<int:kb_id>/eval-questions/<int:question_id>/", evaluation.EvalQuestionDetailView.as_view(), name="evalquestion-detail"),
    path("kbs/<int:kb_id>/evaluate/", evaluation.EvaluateView.as_view(), name="evaluate"),
]
