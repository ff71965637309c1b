from django.urls import path

from episodic import apis
from tenants.api import converters  # noqa: F401  (registers extid and session_id)

urlpatterns = [
    path("episodes", apis.EpisodeListCreateApi.as_view(), name="episode-list"),
    path("episodes/search", apis.EpisodeSearchApi.as_view(), name="episode-search"),
    path("sessions/<session_id:session>", apis.SessionDetailApi.as_view(), name="session-detail"),
    path("sessions/<extid:session>/scratchpad", apis.ScratchpadApi.as_view(), name="session-scratchpad"),
]
