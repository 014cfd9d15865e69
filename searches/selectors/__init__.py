"""Reads: the queries behind pages, exports and the engine. No writes here.

One module per entity (problems, suites, searches, kernels, leaderboards, sharing, the queue, health); this module
lists them all, so callers write `selectors.search_tree(...)`.
"""

from .health import (  # noqa: F401
    health_banner,
    search_stalls,
)
from .ideas import (  # noqa: F401
    bank_table,
    bank_cell_kernels,
)
from .kernel_view import (  # noqa: F401
    kernel_view,
    kernel_view_keys,
)
from .kernels import (  # noqa: F401
    speed_of_light,
    kernel_is_ranked,
    kernel_is_trusted,
    trusted_q,
    kernel_runs,
    kernel_primary_run,
    kernel_pending_rerun,
    kernel_profile,
    kernel_by_code,
    kernel_signature,
    kernel_compare_problem,
    kernel_template,
    provenance,
)
from .memory_scope import (  # noqa: F401
    searches_visible_to,
    search_key,
    visible_search_ids,
)
from .leaderboards import (  # noqa: F401
    leaderboard_devices,
    leaderboard,
    leaderboard_rows,
    leaderboard_problems,
)
from .lessons import (  # noqa: F401
    lessons_for_search,
    lesson_effect,
    lessons_page,
    lesson_for_user,
)
from .problems import (  # noqa: F401
    problem_list,
    problem_versions,
    problem_latest_version,
    problem_validation_state,
    devices_served,
    default_device,
    problem_by_reference,
)
from .queue import (  # noqa: F401
    queue_recent_job_seconds,
    queue_position,
    queue_for_kernels,
    queue_wait_text,
    queue_phase_seconds,
    job_progress,
    kernel_progress,
)
from .searches import (  # noqa: F401
    search_proposer_unavailable,
    playbook_support,
    search_leaderboard,
    search_counts,
    TREE_EXTRAS,
    search_tree,
    search_best_speedup_by_round,
    search_idea_stats,
    search_speedup_over_time,
    search_idea_outcomes,
    search_parent_choices,
    search_planned_candidates,
    RANKED_KERNELS,
    search_list,
    search_provenance,
)
from .speedups import (  # noqa: F401
    ranks_by_paired,
    best_order,
    best_key,
    pick_best,
    baseline_of,
    baseline_times,
    with_baselines,
)
from .sharing import (  # noqa: F401
    share_token_hash,
    share_link_by_token,
    share_links_for,
    share_link_shows_kernel,
)
from .suites import (  # noqa: F401
    FAST_P,
    OUTCOMES as SUITE_OUTCOMES,
    rows_score,
    suite_list,
    suite_members,
    suite_device,
    suite_search_counts,
    suite_progress,
    suite_scores,
    suite_scores_export,
)
