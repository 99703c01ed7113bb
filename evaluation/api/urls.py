from django.urls import path

from evaluation.api import exports, quality, reports, stoprule

urlpatterns = [
    path("campaigns/<slug:slug>/export/", exports.CampaignExportApi.as_view(), name="campaign-export"),
    path("campaigns/<slug:slug>/report/", reports.CampaignReportApi.as_view(), name="campaign-report"),
    path("campaigns/<slug:slug>/leaderboard.csv", reports.CampaignLeaderboardCsvApi.as_view(),
         name="campaign-leaderboard-csv"),
    path("campaigns/<slug:slug>/quality/", quality.CampaignQualityApi.as_view(), name="campaign-quality"),
    path("campaigns/<slug:slug>/quality/setup/", quality.CampaignQualitySetupApi.as_view(),
         name="campaign-quality-setup"),
    path("campaigns/<slug:slug>/quality/exclusions/", quality.CampaignExclusionApi.as_view(),
         name="campaign-quality-exclusions"),
    path("campaigns/<slug:slug>/settledness/", stoprule.CampaignSettlednessApi.as_view(),
         name="campaign-settledness"),
    path("planner/", stoprule.StudyPlanApi.as_view(), name="study-planner"),
]
