"""The Lessons page: a login, the lessons of searches the person may see, filters, and the decision
forms (POST with the CSRF token the page carries), each decision recorded with who and when."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from memory import services as memory
from memory.keys import IdeaKey
from memory.models import Lesson
from searches import services
from searches.models import Kernel, Search
from searches.selectors import lessons as lesson_selectors

from .test_engine import kicks, problem  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db
CPU = IdeaKey("softmax", "small", "cpu", "c", "other")


@pytest.fixture
def world(problem):
    ada, bob = (get_user_model().objects.create_user(name, password="pw") for name in ("ada", "bob"))

    def search(user, private=False):
        return services.search_start(problem=problem, user=user, proposer="playbook", device="cpu", rounds=1,
                                     parents_per_round=1, ideas_per_parent=1, kernels_per_idea=1, private=private)

    ada_search, bob_private = search(ada), search(bob, private=True)
    broken = Kernel.objects.create(problem=problem, search=ada_search, status="incorrect", reason_code="offset_inputs",
                                   evaluated_at=timezone.now(), name="broken one")
    lessons = {
        "offsets": memory.lesson_propose(text="Offsets overflow exp().", key=CPU, search_id=ada_search.id,
                                         kernel_id=broken.id, verdict="incorrect", reason_code="offset_inputs"),
        "gpu": memory.lesson_propose(text="Use 128-bit loads.", search_id=ada_search.id, kernel_id=None,
                                     key=IdeaKey("softmax", "small", "NVIDIA H200", "cuda_nvrtc", "other"),
                                     verdict="compile_error"),
        "private": memory.lesson_propose(text="Bob: a secret pitfall.", key=CPU, search_id=bob_private.id,
                                         kernel_id=None, verdict="incorrect"),
    }
    return {"ada": ada, "bob": bob, "lessons": lessons}


def logged_in(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def decide(client, lesson, **fields):
    page = client.get("/lessons/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    return client.post(f"/lessons/{lesson.code}/decide/", {"csrfmiddlewaretoken": token, **fields})


def test_the_page_needs_a_login_and_lists_only_lessons_of_searches_the_person_may_see(client, world):
    assert client.get("/lessons/").status_code == 302
    ada_page = logged_in(world["ada"]).get("/lessons/").content.decode()
    assert "Offsets overflow exp()." in ada_page and "Use 128-bit loads." in ada_page
    assert "Bob: a secret pitfall." not in ada_page
    assert 'href="/lessons/"' in ada_page  # the nav links it
    bob_page = logged_in(world["bob"]).get("/lessons/").content.decode()
    assert "Bob: a secret pitfall." in bob_page and "Offsets overflow exp()." in bob_page
    # The failure it came from, with the effect so far: the one broken kernel, before any approval.
    assert "100% so far (1 of 1 kernels judged on similar problems)" in ada_page and "broken one" in ada_page


def test_filters_by_status_family_and_device(world):
    client = logged_in(world["ada"])
    memory.lesson_approve(lesson=world["lessons"]["gpu"], user=world["ada"])
    approved = client.get("/lessons/?status=approved").content.decode()
    assert "Use 128-bit loads." in approved and "Offsets overflow" not in approved
    cpu = client.get("/lessons/?device=cpu").content.decode()
    assert "Offsets overflow" in cpu and "Use 128-bit loads." not in cpu
    assert "No lessons match these filters" in client.get("/lessons/?family=matmul").content.decode()


def test_approve_edit_and_reject_through_the_forms_record_the_person(world):
    ada, lesson = world["ada"], world["lessons"]["offsets"]
    client = logged_in(ada)
    assert client.post(f"/lessons/{lesson.code}/decide/", {"action": "reject"}).status_code == 403  # no token
    response = decide(client, lesson, action="edit", text="Subtract the row max before exp().", status="proposed")
    assert response.status_code == 302 and response["Location"] == f"/lessons/?status=proposed#lesson-{lesson.code}"
    lesson.refresh_from_db()
    assert (lesson.status, lesson.edited_text, lesson.edited_by) == ("proposed", "Subtract the row max before exp().", ada)
    decide(client, lesson, action="approve", text="Subtract the row max before exp().")
    lesson.refresh_from_db()
    assert (lesson.status, lesson.decided_by, lesson.text) == ("approved", ada, "Offsets overflow exp().")
    Kernel.objects.create(problem=lesson.search.problem, search=lesson.search, status="correct",
                          evaluated_at=timezone.now(), name="judged after")
    page = " ".join(client.get("/lessons/").content.decode().split())
    assert '100% before approval (1 of 1 kernels judged) → 0% after (0 of 1) <span class="badge ok">went down</span>' in page
    assert "Approved by ada" in page and "The model's words: “Offsets overflow exp().”" in page
    decide(client, lesson, action="reject")
    lesson.refresh_from_db()
    assert (lesson.status, lesson.decided_by) == ("rejected", ada)
    decide(client, lesson, action="edit", text="   ")
    assert "Could not save: A lesson needs words" in client.get("/lessons/").content.decode()


def test_a_lesson_of_another_persons_private_search_cannot_be_decided(world):
    private = world["lessons"]["private"]
    assert decide(logged_in(world["ada"]), private, action="approve").status_code == 404
    private.refresh_from_db()
    assert private.status == Lesson.Status.PROPOSED
    decide(logged_in(world["bob"]), private, action="approve")
    private.refresh_from_db()
    assert private.status == Lesson.Status.APPROVED


def test_a_search_started_private_from_its_form_keeps_its_lessons_to_its_owner(world, problem):
    client = Client()
    client.force_login(world["ada"])
    knobs = {"proposer": "playbook", "device": "cpu", "rounds": 1, "parents_per_round": 1, "ideas_per_parent": 1,
             "kernels_per_idea": 1, "bank_size": 0, "private": "on"}
    assert "Keep its lessons to me" in client.get(f"/problems/{problem.code}/search/new/").content.decode()
    assert client.post(f"/problems/{problem.code}/search/new/", knobs).status_code == 302
    search = Search.objects.filter(created_by=world["ada"]).latest("id")
    assert search.private
    memory.lesson_propose(text="Ada: kept to herself.", key=CPU, search_id=search.id, kernel_id=None, verdict="oom")
    assert "Ada: kept to herself." not in logged_in(world["bob"]).get("/lessons/").content.decode()
    assert "Ada: kept to herself." in logged_in(world["ada"]).get("/lessons/").content.decode()


def test_the_page_is_paged_with_proposed_lessons_first(world, monkeypatch):
    monkeypatch.setattr(lesson_selectors, "LESSONS_PER_PAGE", 1)
    memory.lesson_approve(lesson=world["lessons"]["gpu"], user=world["ada"])
    client = logged_in(world["ada"])
    first = client.get("/lessons/").content.decode()
    assert "Offsets overflow exp()." in first and "Use 128-bit loads." not in first  # waiting for a decision: first
    assert "1–1 of 2 lessons" in first and 'href="?page=2"' in first
    assert "Use 128-bit loads." in client.get("/lessons/?page=2").content.decode()
