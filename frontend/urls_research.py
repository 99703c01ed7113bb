from django.urls import path

from frontend import views_research as views

urlpatterns = [
    path("research/", views.research_home, name="research-home"),
    path("research/import/", views.research_import, name="research-import"),
    path("research/campaigns/<slug:slug>/", views.campaign_dashboard, name="research-dashboard"),
    path("research/campaigns/<slug:slug>/jobs/<int:job_id>/retry/", views.campaign_job_retry_view,
         name="research-job-retry"),
    path("research/campaigns/<slug:slug>/lens-rescore/", views.campaign_lens_rescore_view,
         name="research-lens-rescore"),
]
