from django.urls import path

from episodic import apis

urlpatterns = [
    path("episodes", apis.EpisodeListCreateApi.as_view(), name="episode-list"),
    path("episodes/search", apis.EpisodeSearchApi.as_view(), name="episode-search"),
    path("sessions/<str:session>", apis.SessionDetailApi.as_view(), name="session-detail"),
    path("sessions/<str:session>/scratchpad", apis.ScratchpadApi.as_view(), name="session-scratchpad"),
]
