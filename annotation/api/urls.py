from django.urls import path

from annotation.api import assignments, campaigns
from core.api.auth_views import TokenLogoutApi, TokenObtainApi

urlpatterns = [
    path("auth/token/", TokenObtainApi.as_view(), name="api-token"),
    path("auth/logout/", TokenLogoutApi.as_view(), name="api-logout"),
    path("campaigns/", campaigns.CampaignListApi.as_view(), name="campaign-list"),
    path("campaigns/<slug:slug>/", campaigns.CampaignDetailApi.as_view(), name="campaign-detail"),
    path("campaigns/<slug:slug>/annotators/", campaigns.CampaignAnnotatorsApi.as_view(), name="campaign-annotators"),
    path("campaigns/<slug:slug>/annotators/<str:username>/", campaigns.CampaignAnnotatorRemoveApi.as_view(),
         name="campaign-annotator-remove"),
    path("campaigns/<slug:slug>/invites/", campaigns.CampaignInviteApi.as_view(), name="campaign-invites"),
    path("campaigns/<slug:slug>/crowd/", campaigns.CampaignCrowdApi.as_view(), name="campaign-crowd"),
    path("campaigns/<slug:slug>/imports/", campaigns.CampaignImportApi.as_view(), name="campaign-import"),
    path("campaigns/<slug:slug>/sources/<str:external_id>/practice/", campaigns.CampaignPracticeApi.as_view(),
         name="campaign-source-practice"),
    path("campaigns/<slug:slug>/progress/", campaigns.CampaignProgressApi.as_view(), name="campaign-progress"),
    path("campaigns/<slug:slug>/next/", assignments.AssignmentNextApi.as_view(), name="assignment-next"),
    path("assignments/", assignments.AssignmentListApi.as_view(), name="assignment-list"),
    path("assignments/<int:pk>/", assignments.AssignmentDetailApi.as_view(), name="assignment-detail"),
    path("assignments/<int:pk>/draft/", assignments.AssignmentDraftApi.as_view(), name="assignment-draft"),
    path("assignments/<int:pk>/submit/", assignments.AssignmentSubmitApi.as_view(), name="assignment-submit"),
    path("annotations/<int:pk>/", assignments.AnnotationDetailApi.as_view(), name="annotation-detail"),
    path("annotations/<int:pk>/reopen/", assignments.AnnotationReopenApi.as_view(), name="annotation-reopen"),
]
