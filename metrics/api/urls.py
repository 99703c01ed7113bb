from django.urls import path, re_path

from core.redirects import moved
from metrics.api import allocation, suite, views

urlpatterns = [
    path("learned/versions/", views.LearnedVersionListApi.as_view(), name="learned-version-list"),
    path("learned/versions/<int:version_id>/", views.LearnedVersionDetailApi.as_view(), name="learned-version-detail"),
    path("learned/versions/<int:version_id>/events/", views.LearnedVersionEventsApi.as_view(),
         name="learned-version-events"),
    path("learned/versions/<int:version_id>/promote/", views.LearnedVersionPromoteApi.as_view(),
         name="learned-version-promote"),
    path("learned/versions/<int:version_id>/cancel/", views.LearnedVersionCancelApi.as_view(),
         name="learned-version-cancel"),
    path("lens/versions/", moved, {"to": "learned-version-list"}, name="lens-versions-moved"),
    path("lens/versions/<path:rest>", moved, {"to": "learned-version-list"}, name="lens-versions-moved-page"),
    path("lens/score/", views.LensScoreApi.as_view(), name="lens-score"),
    path("lens/campaigns/<slug:slug>/rescore/", views.CampaignLensRescoreApi.as_view(), name="lens-campaign-rescore"),
    path("lens/campaigns/<slug:slug>/leaderboard/", views.CampaignLensLeaderboardApi.as_view(),
         name="lens-campaign-leaderboard"),
    re_path(r"^metrics/score/?$", suite.MetricScoreApi.as_view(), name="metric-score"),
    path("campaigns/<slug:slug>/metrics/", suite.CampaignMetricsApi.as_view(), name="campaign-metrics"),
    path("campaigns/<slug:slug>/metrics/points/", suite.CampaignMetricPointsApi.as_view(),
         name="campaign-metric-points"),
    path("campaigns/<slug:slug>/metrics/<str:metric>/card/", suite.CampaignMetricCardApi.as_view(),
         name="campaign-metric-card"),
    path("campaigns/<slug:slug>/metrics/score/", suite.CampaignMetricScoreQueueApi.as_view(),
         name="campaign-metric-score"),
    path("campaigns/<slug:slug>/metrics/scores.csv", suite.CampaignScoresCsvApi.as_view(),
         name="campaign-metric-scores-csv"),
    path("campaigns/<slug:slug>/allocation/", allocation.CampaignAllocationApi.as_view(), name="campaign-allocation"),
    path("campaigns/<slug:slug>/allocation/<int:job_id>/", allocation.CampaignAllocationJobApi.as_view(),
         name="campaign-allocation-job"),
    path("campaigns/<slug:slug>/allocation/<int:job_id>/summary.json",
         allocation.CampaignAllocationSummaryApi.as_view(), name="campaign-allocation-summary"),
]
