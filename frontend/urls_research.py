from django.urls import path

from frontend import views_allocation, views_operations, views_planner, views_practice, views_testbed
from frontend import views_research as views

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
    path("research/campaigns/<slug:slug>/metrics/<str:metric>/", views.campaign_metric_card_view,
         name="research-metric-card"),
    path("research/campaigns/<slug:slug>/people/", views_operations.campaign_people_view, name="research-people"),
    path("research/campaigns/<slug:slug>/accounts/", views_operations.campaign_account_view,
         name="research-account"),
    path("research/campaigns/<slug:slug>/invites/", views_operations.campaign_invite_view, name="research-invite"),
    path("research/campaigns/<slug:slug>/quality/", views_operations.campaign_quality_view,
         name="research-quality"),
    path("research/campaigns/<slug:slug>/crowd/", views_operations.campaign_crowd_view, name="research-crowd"),
    path("research/campaigns/<slug:slug>/allocation-setting/", views_operations.campaign_allocation_setting_view,
         name="research-allocation-setting"),
    path("research/campaigns/<slug:slug>/practice/", views_practice.campaign_practice_view,
         name="research-practice"),
    path("research/campaigns/<slug:slug>/items/<int:pk>/", views_operations.campaign_item_view,
         name="research-item"),
    path("research/campaigns/<slug:slug>/allocation/", views_allocation.campaign_allocation_view,
         name="research-allocation"),
    path("research/campaigns/<slug:slug>/allocation/<int:job_id>/", views_allocation.campaign_allocation_detail,
         name="research-allocation-detail"),
    path("research/planner/", views_planner.planner_view, name="research-planner"),
    path("research/testbed/", views_testbed.testbed_index, name="research-testbed"),
    path("research/testbed/corpora/", views_testbed.testbed_corpus_view, name="research-testbed-corpus"),
    path("research/testbed/<int:job_id>/", views_testbed.testbed_detail, name="research-testbed-detail"),
]
