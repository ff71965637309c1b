from django.urls import path

from procedural import apis

urlpatterns = [
    path("procedures", apis.ProcedureListApi.as_view(), name="procedure-list"),
    path("procedures/match", apis.ProcedureMatchApi.as_view(), name="procedure-match"),
    path("procedures/<int:procedure_id>", apis.ProcedureDetailApi.as_view(), name="procedure-detail"),
    path("procedures/<int:procedure_id>/history", apis.ProcedureHistoryApi.as_view(), name="procedure-history"),
    path("procedures/<int:procedure_id>/outcomes", apis.ProcedureOutcomeApi.as_view(), name="procedure-outcomes"),
]
