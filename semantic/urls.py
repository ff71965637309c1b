from django.urls import path

from api import converters  # noqa: F401  (registers extid)
from semantic import apis

urlpatterns = [
    path("facts", apis.FactListCreateApi.as_view(), name="fact-list"),
    path("facts/search", apis.FactSearchApi.as_view(), name="fact-search"),
    path("facts/<uuid:fact_id>", apis.FactDetailApi.as_view(), name="fact-detail"),
    path("facts/<uuid:fact_id>/confirm", apis.FactConfirmApi.as_view(), name="fact-confirm"),
    path("facts/<uuid:fact_id>/history", apis.FactHistoryApi.as_view(), name="fact-history"),
    path("facts/<uuid:fact_id>/review", apis.FactReviewApi.as_view(), name="fact-review"),
    path("fact-changes/<int:change_id>/revert", apis.FactChangeRevertApi.as_view(), name="fact-change-revert"),
    path("entities/aliases", apis.EntityAliasListCreateApi.as_view(), name="entity-alias-list"),
    path("entities/aliases/<int:alias_id>", apis.EntityAliasDetailApi.as_view(), name="entity-alias-detail"),
    path("entities/<extid:entity>/graph", apis.EntityGraphApi.as_view(), name="entity-graph"),
]
