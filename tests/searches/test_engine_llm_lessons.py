"""The pitfall ledger through the engine: the real `anthropic` SDK against the local fake Messages API.
A repair's `lesson` is stored as proposed; only an approved lesson of a similar problem, from a search
the new search's owner may see, reaches a later search's requests. Every assertion on what the model
was told reads the requests the fake server received."""

import pytest
from django.contrib.auth import get_user_model

from memory import services as memory
from memory.keys import IdeaKey
from memory.models import Lesson
from searches import services
from searches.catalog import get as catalog_get
from searches.engine import loop
from searches.models import Kernel
from tests.fakes.anthropic_server import FakeAnthropic, asked_counts, ideas_call, kernel_call, task_of

from .test_engine import problem, runner_verdict  # noqa: F401  (fixture)
from .test_engine_llm import judge, kernel_source, kicks  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)  # proposer calls run on threads

LESSON = "Subtract the row max before exp():\n offset inputs overflow a max-free softmax."
STORED = "Subtract the row max before exp(): offset inputs overflow a max-free softmax."
SOFTMAX_CPU = IdeaKey(family="softmax", shape_class="small", device_model="cpu", language="c", technique="other")


class Replies:
    """Ideas and kernels as tool calls; a repair carries `lesson` on its first turn only."""

    def __init__(self):
        self.count = 0
        self.lessons = 0

    def __call__(self, seen):
        self.count += 1
        task = task_of(seen)
        if task == "ideas":
            return ideas_call(*asked_counts(seen), prefix=f"Idea set {self.count},")
        reply = kernel_call(kernel_source(f"{task} {self.count}"))
        if task == "repair" and "Repair 1 of" in seen.user_text and self.count % 2:
            reply["lesson"] = LESSON
            self.lessons += 1
        return reply


@pytest.fixture
def fake(settings, monkeypatch):
    with FakeAnthropic(responder=Replies()) as server:
        settings.ANTHROPIC_BASE_URL = server.url
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-engine-test")
        yield server


def start(problem, user=None, **knobs):
    options = dict(proposer="anthropic", device="cpu", rounds=1, parents_per_round=1, ideas_per_parent=1,
                   kernels_per_idea=2, bank_size=0, repair_attempts=1, model="claude-sonnet-4-6")
    options.update(knobs)
    return services.search_start(problem=problem, user=user, **options)


def validated(key: str, family: str):
    entry = catalog_get(key)
    other = services.problem_create(user=None, name=entry.name, source=entry.source, device="cpu",
                                    catalog_key=entry.key, family=family)
    services.problem_record_validation(problem=other, job=other.jobs.get(), result={
        "schema": 1, "status": "ok", "reason": "", "outputs": [{"shape": [8, 8], "dtype": "float32"}],
        "family": family, "flops": 1.0, "min_bytes": 1.0,
        "baseline": {"eager_ms": 2.0, "compile_ms": 1.5, "compile_mode": "default"}, "environment": {}})
    other.refresh_from_db()
    return other


def users():
    model = get_user_model()
    return model.objects.create_user("ada", password="pw"), model.objects.create_user("bob", password="pw")


def requests_after(fake, first: int):
    return fake.requests[first:]


def test_a_repairs_lesson_is_proposed_then_reaches_a_later_search_only_once_approved(problem, fake):
    first = start(problem)
    loop.advance(first.id)
    judge()
    loop.advance(first.id)  # ideas, then two kernels
    judge(status_for=lambda kernel: "incorrect", reason_for=lambda kernel: "wrong on the offset inputs")
    loop.advance(first.id)  # two repairs; one reply carries a lesson, the other none
    repairs = [s for s in fake.requests if task_of(s) == "repair"]
    assert len(repairs) == 2 and Kernel.objects.filter(search=first, origin="repair").count() == 2
    assert fake.responder.lessons == 1  # the reply without one made its kernel all the same
    assert "add it as `lesson`" in repairs[0].user_text
    [tool] = [t for t in repairs[0].body["tools"] if t["name"] == "submit_kernel"]
    assert "lesson" in tool["input_schema"]["properties"]

    [lesson] = Lesson.objects.all()
    assert (lesson.status, lesson.text, lesson.search_id, lesson.verdict) == ("proposed", STORED, first.id, "incorrect")
    assert (lesson.family, lesson.shape_class, lesson.device_model, lesson.language) == ("softmax", "small", "cpu", "c")
    assert Kernel.objects.get(pk=lesson.kernel_id).status == "incorrect"

    seen = len(fake.requests)
    second = start(problem)
    loop.advance(second.id)  # proposed, not approved: absent
    assert all("Lessons approved by your team" not in s.system_text for s in requests_after(fake, seen))

    memory.lesson_approve(lesson=lesson, user=None, text="Subtract the row max before exp(); offsets overflow it.")
    seen = len(fake.requests)
    third = start(validated("softmax-cpu", "softmax"))  # another problem of the family and size class
    loop.advance(third.id)
    judge()
    loop.advance(third.id)  # its ideas call and kernels carry the lesson too
    later = requests_after(fake, seen)
    assert {task_of(s) for s in later} == {"starting kernel", "ideas", "kernel"}
    for request in later:
        assert "Lessons approved by your team" in request.system_text
        assert "1. learned from a kernel judged incorrect:\n<<<BEGIN lesson_1 " in request.system_text
        assert "Subtract the row max before exp(); offsets overflow it.\n<<<END lesson_1 " in request.system_text
        assert STORED not in request.system_text  # the person's words, not the model's
    lesson.refresh_from_db()
    assert lesson.shown_count == len(later) == 4

    seen = len(fake.requests)
    unrelated = start(validated("matmul-cpu", "matmul"))
    loop.advance(unrelated.id)
    assert all("Lessons approved" not in s.system_text for s in requests_after(fake, seen))


def test_rejected_proposed_and_other_peoples_private_lessons_stay_out_of_prompts(problem, fake):
    ada, bob = users()
    ada_search, bob_private = start(problem, user=ada), start(problem, user=bob, private=True)

    def lesson(text, search, decide=None):
        made = memory.lesson_propose(text=text, key=SOFTMAX_CPU, search_id=search.id, kernel_id=None,
                                     verdict="compile_error")
        return decide(lesson=made, user=ada) if decide else made

    lesson("Approved: NVRTC has no <math.h>.", ada_search, memory.lesson_approve)
    lesson("Rejected: never use shared memory.", ada_search, memory.lesson_reject)
    lesson("Proposed: always unroll by 8.", ada_search)
    lesson("Bob's private: his own pitfall.", bob_private, memory.lesson_approve)
    other_device = memory.lesson_propose(text="Other device: H200 only.", search_id=ada_search.id, kernel_id=None,
                                         key=IdeaKey("softmax", "small", "NVIDIA H200", "c", "other"), verdict="oom")
    memory.lesson_approve(lesson=other_device, user=ada)

    seen = len(fake.requests)
    loop.advance(start(problem, user=ada).id)
    [request] = requests_after(fake, seen)
    assert "Approved: NVRTC has no <math.h>." in request.system_text
    for absent in ("Rejected:", "Proposed:", "Bob's private", "Other device"):
        assert absent not in request.system_text

    seen = len(fake.requests)
    loop.advance(start(problem, user=bob).id)  # Bob's own private search teaches Bob's searches
    [request] = requests_after(fake, seen)
    assert "Bob's private: his own pitfall." in request.system_text and "Approved: NVRTC" in request.system_text
    assert Lesson.objects.get(text__startswith="Bob's").shown_count == 1
    assert Lesson.objects.get(text__startswith="Approved").shown_count == 2
    assert Lesson.objects.filter(shown_count__gt=0).count() == 2
