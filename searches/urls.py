from django.urls import path

from .views import compare, home, ideas, kernels, leaderboards, lessons, problems, searches, share, suites
from .views.docs import doc_page
from .views.lineage import search_lineage_view

urlpatterns = [
    path("", home.home, name="home"),
]

# === problems ===========================================================================

urlpatterns += [
    path("problems/", problems.problem_list, name="problem_list"),
    path("problems/new/", problems.problem_create, name="problem_create"),
    path("problems/<uuid:code>/", problems.problem_detail, name="problem_detail"),
    path("problems/<uuid:code>/edit/", problems.problem_edit, name="problem_edit"),
    path("problems/<uuid:code>/validate/", problems.problem_revalidate, name="problem_revalidate"),
    path("problems/<uuid:code>/validation.json", problems.problem_validation_status, name="problem_validation_status"),
]

# === suites =============================================================================

urlpatterns += [
    path("suites/", suites.suite_list, name="suite_list"),
    path("suites/import/", suites.suite_import, name="suite_import"),
    path("suites/<uuid:code>/", suites.suite_detail, name="suite_detail"),
    path("suites/<uuid:code>/validate/", suites.suite_validate, name="suite_validate"),
    path("suites/<uuid:code>/search/", suites.suite_search, name="suite_search"),
    path("suites/<uuid:code>/scores.json", suites.suite_export, {"fmt": "json"}, name="suite_json"),
    path("suites/<uuid:code>/scores.csv", suites.suite_export, {"fmt": "csv"}, name="suite_csv"),
    path("suites/<uuid:code>/share/", share.share_suite, name="share_suite"),
]

# === searches, kernels, compare, leaderboards, share links ==============================

urlpatterns += [
    path("searches/", searches.search_list, name="search_list"),
    path("problems/<uuid:code>/search/new/", searches.search_new, name="search_new"),
    path("problems/<uuid:problem_code>/kernels/new/", searches.kernel_new, name="problem_kernel_new"),
    path("searches/<uuid:code>/", searches.search_detail, name="search_detail"),
    path("searches/<uuid:code>/lineage/", search_lineage_view, name="search_lineage"),
    path("searches/<uuid:code>/insights/", searches.search_insights, name="search_insights"),
    path("searches/<uuid:code>/pause/", searches.search_control, {"action": "pause"}, name="search_pause"),
    path("searches/<uuid:code>/resume/", searches.search_control, {"action": "resume"}, name="search_resume"),
    path("searches/<uuid:code>/cancel/", searches.search_control, {"action": "cancel"}, name="search_cancel"),
    path("searches/<uuid:code>/fork/", searches.search_fork, name="search_fork"),
    path("searches/<uuid:code>/ideas/", searches.idea_add, name="idea_add"),
    path("searches/<uuid:code>/kernels/new/", searches.kernel_new, name="search_kernel_new"),
    path("searches/<uuid:code>/share/", share.share_search, name="share_search"),
    path("kernels/<uuid:code>/", kernels.kernel_detail, name="kernel_detail"),
    path("kernels/<uuid:code>/status/", kernels.kernel_status, name="kernel_status"),
    path("kernels/<uuid:code>/export.py", kernels.kernel_export, name="kernel_export"),
    path("kernels/<uuid:code>/bundle.zip", kernels.kernel_bundle, name="kernel_bundle"),
    path("kernels/<uuid:code>/rerun/", kernels.kernel_rerun, name="kernel_rerun"),
    path("kernels/<uuid:code>/profile/", kernels.kernel_profile, name="kernel_profile"),
    path("kernels/<uuid:code>/approve/", kernels.kernel_approve, name="kernel_approve"),
    path("kernels/<uuid:code>/share/", share.share_kernel, name="share_kernel"),
    path("ideas/", ideas.idea_bank, name="idea_bank"),
    path("ideas/kernels/", ideas.idea_bank_kernels, name="idea_bank_kernels"),
    path("compare/", compare.compare, name="compare"),
    path("compare/share/", share.share_compare, name="share_compare"),
    path("leaderboards/", leaderboards.leaderboard_index, name="leaderboard_index"),
    path("problems/<uuid:code>/leaderboard/", leaderboards.leaderboard, name="leaderboard"),
    path("problems/<uuid:code>/leaderboard.json", leaderboards.leaderboard_export, {"fmt": "json"},
         name="leaderboard_json"),
    path("problems/<uuid:code>/leaderboard.csv", leaderboards.leaderboard_export, {"fmt": "csv"}, name="leaderboard_csv"),
    path("problems/<uuid:code>/leaderboard/share/", share.share_leaderboard, name="share_leaderboard"),
    path("share-links/<int:pk>/revoke/", share.share_revoke, name="share_revoke"),
    path("s/<str:token>/", share.shared, name="shared"),
    path("s/<str:token>/kernels/<uuid:code>/", share.shared_kernel, name="shared_kernel"),
    path("s/<str:token>/scores.json", share.shared_suite_export, {"fmt": "json"}, name="shared_suite_json"),
    path("s/<str:token>/scores.csv", share.shared_suite_export, {"fmt": "csv"}, name="shared_suite_csv"),
    path("docs/<slug:name>/", doc_page, name="doc"),
]

# === the team's memory ==================================================================

urlpatterns += [
    path("lessons/", lessons.lesson_list, name="lesson_list"),
    path("lessons/<uuid:code>/decide/", lessons.lesson_decide, name="lesson_decide"),
]
