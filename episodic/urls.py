from django.urls import path

from api import converters  # noqa: F401  (registers extid and session_id)
from episodic import apis

urlpatterns = [
    path("episodes", apis.EpisodeListCreateApi.as_view(), name="episode-list"),
    path("episodes/search", apis.EpisodeSearchApi.as_view(), name="episode-search"),
    path("sessions/<session_id:session>", apis.SessionDetailApi.as_view(), name="session-detail"),
    path("sessions/<extid:session>/scratchpad", apis.ScratchpadApi.as_view(), name="session-scratchpad"),
]
