"""Whether failures of a lesson's kind went down after its approval (searches/selectors/lessons.py),
checked against a recomputation over every kernel in the database, from the definition: judged kernels
of the viewer's visible searches on the lesson's family, size class, device and language, the model's
own work only (no fork copies, no duplicates, no cancelled ones)."""

import random
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from memory import services as memory
from memory.keys import IdeaKey, shape_class
from searches import services
from searches.models import Kernel
from searches.selectors.lessons import lesson_effect
from searches.selectors.memory_scope import visible_search_ids

from .test_engine import kicks, problem  # noqa: F401  (fixtures)
from .test_engine_llm_lessons import validated

pytestmark = pytest.mark.django_db

STATUSES = ("correct", "incorrect", "incorrect", "compile_error", "pending", "failed")
CODES = ("", "offset_inputs", "calls_reference")


def recompute(lesson, viewer) -> dict:
    sides = {"before": [0, 0], "after": [0, 0]}
    for k in Kernel.objects.select_related("search", "problem"):
        search = k.search
        if search.private and search.created_by != viewer:
            continue
        if k.origin == "fork" or k.duplicate_of_id or k.evaluated_at is None or k.status in ("pending", "evaluating"):
            continue
        if k.status == "failed" and k.reason_code == "cancelled":
            continue
        device = "cpu" if search.device == "cpu" else k.device_name
        language = search.language or {"cpu": "c", "cuda": "cuda_nvrtc"}[search.device]
        if (k.problem.family, shape_class(k.problem.min_bytes), device, language) != (
                lesson.family, lesson.shape_class, lesson.device_model, lesson.language):
            continue
        side = sides["after" if k.evaluated_at >= lesson.decided_at else "before"]
        side[1] += 1
        side[0] += k.status == lesson.verdict and k.reason_code == lesson.reason_code
    return {name: (failures, judged) for name, (failures, judged) in sides.items()}


def test_the_before_and_after_rates_equal_a_recomputation_from_the_database(problem):
    ada, bob = (get_user_model().objects.create_user(name) for name in ("ada", "bob"))
    matmul = validated("matmul-cpu", "matmul")
    searches = [services.search_start(problem=p, user=u, proposer="playbook", device="cpu", rounds=1,
                                      parents_per_round=1, ideas_per_parent=1, kernels_per_idea=1, private=private)
                for p, u, private in ((problem, ada, False), (problem, bob, True), (problem, ada, True),
                                      (matmul, ada, False))]
    lesson = memory.lesson_propose(text="Offsets overflow exp().", search_id=searches[0].id, kernel_id=None,
                                   key=IdeaKey("softmax", "small", "cpu", "c", "other"), verdict="incorrect",
                                   reason_code="offset_inputs")
    lesson = memory.lesson_approve(lesson=lesson, user=ada)
    rng = random.Random(7)
    made = []
    for i in range(160):
        search = rng.choice(searches)
        status = rng.choice(STATUSES)
        kernel = Kernel.objects.create(
            problem=search.problem, search=search, status=status, origin=rng.choice(("llm", "repair", "fork")),
            reason_code="cancelled" if status == "failed" and i % 2 else rng.choice(CODES),
            evaluated_at=None if status == "pending" else lesson.decided_at + timedelta(hours=rng.uniform(-5, 5)),
            duplicate_of=made[-1] if made and i % 11 == 0 else None, name=f"k{i}")
        made.append(kernel)

    for viewer in (ada, bob):
        effect = lesson_effect(lesson, visible_search_ids=visible_search_ids(viewer))
        expected = recompute(lesson, viewer)
        assert (effect["before"]["failures"], effect["before"]["judged"]) == expected["before"]
        assert (effect["after"]["failures"], effect["after"]["judged"]) == expected["after"]
        assert effect["after"]["rate"] == expected["after"][0] / expected["after"][1]
        assert effect["went_down"] == (expected["after"][0] / expected["after"][1]
                                       < expected["before"][0] / expected["before"][1])
        assert expected["before"][1] > 10 and expected["after"][0] > 0  # the draw exercised both sides
    # Bob's private search counts for Bob alone.
    assert (lesson_effect(lesson, visible_search_ids=visible_search_ids(bob))["before"]["judged"]
            != lesson_effect(lesson, visible_search_ids=visible_search_ids(ada))["before"]["judged"])


def test_a_lesson_not_yet_approved_has_no_after(problem):
    search = services.search_start(problem=problem, user=None, proposer="playbook", device="cpu", rounds=1,
                                   parents_per_round=1, ideas_per_parent=1, kernels_per_idea=1)
    lesson = memory.lesson_propose(text="x", key=IdeaKey("softmax", "small", "cpu", "c", "other"),
                                   search_id=search.id, kernel_id=None, verdict="incorrect")
    Kernel.objects.create(problem=problem, search=search, status="incorrect", evaluated_at=timezone.now())
    effect = lesson_effect(lesson, visible_search_ids=visible_search_ids(None))
    assert effect == {"before": {"failures": 1, "judged": 1, "rate": 1.0}, "after": None, "went_down": None}
