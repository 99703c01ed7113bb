from django.urls import path

from frontend import views_research as views
from frontend import views_testbed

urlpatterns = [
    path("research/", views.research_home, name="research-home"),
    path("research/import/", views.research_import, name="research-import"),
    path("research/campaigns/<slug:slug>/", views.campaign_dashboard, name="research-dashboard"),
    path("research/campaigns/<slug:slug>/jobs/<int:job_id>/retry/", views.campaign_job_retry_view,
         name="research-job-retry"),
    path("research/campaigns/<slug:slug>/lens-rescore/", views.campaign_lens_rescore_view,
         name="research-lens-rescore"),
    path("research/campaigns/<slug:slug>/metrics-score/", views.campaign_metrics_score_view,
         name="research-metrics-score"),
    path("research/testbed/", views_testbed.testbed_index, name="research-testbed"),
    path("research/testbed/<int:job_id>/", views_testbed.testbed_detail, name="research-testbed-detail"),
]
