from django.urls import path

from evaluation.api import exports, reports

urlpatterns = [
    path("campaigns/<slug:slug>/export/", exports.CampaignExportApi.as_view(), name="campaign-export"),
    path("campaigns/<slug:slug>/report/", reports.CampaignReportApi.as_view(), name="campaign-report"),
    path("campaigns/<slug:slug>/leaderboard.csv", reports.CampaignLeaderboardCsvApi.as_view(),
         name="campaign-leaderboard-csv"),
]
