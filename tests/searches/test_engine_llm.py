"""The engine with the Anthropic proposer: the real `anthropic` SDK against the local fake
Messages API, the real loop and services on the database. Verdicts are recorded through
`kernel_record_verdict` in the runner's format (test_engine_llm_e2e.py runs the real runner).
Every assertion on what the model was told reads the request the fake server received."""

import json
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from evaluation import leases
from evaluation.models import EvaluationJob, Worker
from searches import services
from searches.engine import context, kick, loop
from searches.models import Idea, Kernel, ProposerCall
from tests.fakes.anthropic_server import Behaviour, FakeAnthropic, asked_counts, ideas_call, kernel_call, task_of

from .test_engine import problem, runner_verdict  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)  # proposer calls run on threads

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "devices"
# Each reply its own source (a tag in code, not a comment: identical sources are judged once, engine/dedup.py).
KERNEL = "import torch\nfrom torch import nn\n\nTAG = '{tag}'\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"


def kernel_source(tag: str) -> str:
    return KERNEL.replace("{tag}", tag)


class Scripted:
    """Ideas as tool calls with K briefs, new titles on every call (a repeat is asked again);
    each kernel tagged with its brief (or its task)."""

    def __init__(self):
        self.ideas_asked = 0
        self.kernels = 0

    def __call__(self, seen):
        task = task_of(seen)
        if task == "ideas":
            self.ideas_asked += 1
            count, briefs = asked_counts(seen)
            return ideas_call(count, briefs, prefix="Idea" if self.ideas_asked == 1 else f"Idea set {self.ideas_asked},")
        self.kernels += 1
        return kernel_call(kernel_source(f"{task} {self.kernels}"))


@pytest.fixture
def fake(settings, monkeypatch):
    with FakeAnthropic(responder=Scripted()) as server:
        settings.ANTHROPIC_BASE_URL = server.url
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-engine-test")
        yield server


@pytest.fixture(autouse=True)
def kicks():
    kick.set_kicker(lambda search_id: None)
    yield
    kick.set_kicker(None)


def start(problem, **knobs):
    options = dict(proposer="anthropic", device="cpu", rounds=1, parents_per_round=1, ideas_per_parent=1,
                   kernels_per_idea=1, bank_size=0, repair_attempts=1, model="claude-sonnet-4-6")
    options.update(knobs)
    return services.search_start(problem=problem, user=None, **options)


def judge(status_for=lambda kernel: "correct", reason_for=lambda kernel: "", median_for=lambda kernel: 1.0):
    while (job := leases.claim("test-worker", "cpu")) is not None:
        verdict = runner_verdict(status_for(job.kernel), median_for(job.kernel))
        if verdict["status"] != "correct":
            verdict["reason"] = reason_for(job.kernel) or verdict["reason"]
        services.kernel_record_verdict(kernel=job.kernel, job=job, result=verdict)


def facts_worker(device: str, name: str) -> Worker:
    facts = json.loads((FIXTURES / name).read_text())
    return Worker.objects.create(name=f"{device}-facts", device=device, device_name=facts["name"],
                                 device_facts=facts, heartbeat_at=timezone.now())


def test_a_cuda_search_tells_the_model_the_stored_h200_facts_and_forces_no_tool_with_effort(problem, fake):
    facts_worker("cuda", "h200.json")
    Worker.objects.create(name="older-cuda", device="cuda", device_facts={"name": "NVIDIA H100"})  # no heartbeat
    search = start(problem, device="cuda", effort="high")
    loop.advance(search.id)
    [seen] = fake.requests
    system = seen.system_text
    for line in ("- device: NVIDIA H200", "- streaming multiprocessors: 132", "- compute capability: 9.0",
                 "- shared memory per block (opt-in): 227 KiB", "- shared memory per SM: 228 KiB",
                 "- L2 cache: 60 MiB", "- SM clock: 1980 MHz", "- measured memory bandwidth: 4250 GB/s",
                 "- measured matrix rates: fp32 51 TFLOP/s, tf32 353 TFLOP/s, fp16 677 TFLOP/s, bf16 677 TFLOP/s"):
        assert line in system
    assert "- 32-bit registers per block: 65536" in system  # a missing key is left out: tests/proposers/test_pack.py
    assert "Language of this search: CUDA through NVRTC (cupy)" in system
    assert "Baselines on this target: PyTorch eager 2 ms, torch.compile 1.5 ms" in system
    # Effort set: the API refuses a forced tool, so the model may choose (the fake refuses it too).
    assert seen.body["tool_choice"] == {"type": "auto"}
    assert Kernel.objects.get(search=search).origin == "seed"


def test_a_thinking_budget_reaches_every_call_and_a_too_small_one_is_refused(problem, fake):
    with pytest.raises(ValidationError, match="at least 1024 tokens"):
        start(problem, thinking_tokens=500)
    search = start(problem, thinking_tokens=2048)
    loop.advance(search.id)
    [seen] = fake.requests
    assert seen.body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and seen.body["stream"] is True
    [call] = ProposerCall.objects.filter(search=search)
    assert call.ok and call.reply.startswith("[thinking]\n")
    assert Kernel.objects.get(search=search).status == "pending"


def test_k_briefs_each_kernel_call_sees_only_its_own_and_the_second_call_reads_the_cache(problem, fake):
    facts_worker("cpu", "cpu.json")
    search = start(problem, kernels_per_idea=3)
    loop.advance(search.id)
    judge()
    loop.advance(search.id)
    ideas_request = next(s for s in fake.requests if task_of(s) == "ideas")
    assert "give exactly 3 implementation briefs" in ideas_request.user_text
    assert ideas_request.body["tool_choice"] == {"type": "tool", "name": "propose_ideas"}
    assert "- cores: 2" in ideas_request.system_text and "- widest vector registers: 512 bits" in ideas_request.system_text
    [idea] = Idea.objects.filter(search=search, round=1)
    assert idea.briefs == [f"brief 1.{b}: block size {64 << (b - 1)}" for b in (1, 2, 3)]
    kernel_requests = [s for s in fake.requests if task_of(s) == "kernel"]  # in flight together: any order
    assert len(kernel_requests) == 3
    shown = [[brief for brief in idea.briefs if brief in seen.user_text] for seen in kernel_requests]
    assert sorted(shown) == [[brief] for brief in idea.briefs]
    # The stable context (rules, problem, target, bank) was written by the ideas call and read after.
    calls = list(ProposerCall.objects.filter(search=search).order_by("id"))
    ideas, first_kernel = calls[1], calls[2]
    assert ideas.purpose == "ideas" and ideas.cache_write_tokens > 0
    assert first_kernel.cache_read_tokens == ideas.cache_write_tokens + ideas.cache_read_tokens > 0
    assert first_kernel.cache_write_tokens == 0


@pytest.mark.slow
def test_every_failure_verdict_is_repaired_with_its_reason_as_a_child(problem, fake):
    search = start(problem, kernels_per_idea=3, repair_attempts=2)
    loop.advance(search.id)
    judge()
    loop.advance(search.id)
    verdicts = {0: "incorrect", 1: "rejected", 2: "timeout"}
    reasons = {0: "wrong on the offset inputs: err 3.2 (1 allowed; PyTorch's fp32 gets 0.01)",
               1: "uses PyTorch for relu, linear; allowed when the search allows library calls",
               2: "the evaluation took longer than 300 s"}
    judge(status_for=lambda k: verdicts[k.variant] if k.variant is not None else "correct",
          reason_for=lambda k: reasons.get(k.variant, ""))
    loop.advance(search.id)
    repair_requests = [s for s in fake.requests if task_of(s) == "repair"]
    assert len(repair_requests) == 3
    broken = list(Kernel.objects.filter(search=search, round=1, variant__isnull=False).order_by("id"))
    for kernel in broken:  # sent together: matched by what they ask
        [seen] = [s for s in repair_requests if f"Repair 1 of 2 of #{kernel.id}:" in s.user_text]
        assert f"Repair 1 of 2 of #{kernel.id}: the kernel above (#{kernel.id}) was judged {kernel.status}" in seen.user_text
        assert reasons[kernel.variant] in seen.user_text  # verbatim
    repairs = list(Kernel.objects.filter(search=search, origin="repair").order_by("repair_of_id"))
    assert [(r.parent_id, r.repair_of_id, r.name) for r in repairs] == [
        (k.id, k.id, f"repair 1 of #{k.id}") for k in broken]
    # The second turn: a repair that failed again is repaired once more, then no further.
    judge(status_for=lambda k: "incorrect" if k.repair_of_id == broken[0].id else "correct",
          reason_for=lambda k: "wrong on the uniform inputs: err 2")
    loop.advance(search.id)
    second = Kernel.objects.get(search=search, repair_of=repairs[0])
    assert second.parent_id == repairs[0].id and second.name == f"repair 2 of #{broken[0].id}"
    [turn_two] = [s for s in fake.requests if f"Repair 2 of 2 of #{broken[0].id}" in s.user_text]
    assert "The attempts before it in this chain" in turn_two.user_text
    assert f"#{broken[0].id}: {broken[0].status}: {reasons[broken[0].variant]}" in turn_two.user_text  # turn 1's
    judge(status_for=lambda k: "incorrect")
    loop.advance(search.id)
    assert not Kernel.objects.filter(repair_of=second).exists()
    search.refresh_from_db()
    assert search.status == "completed"
    assert "repairs: 2 of 4 fixed" in context.idea_outcome(Idea.objects.get(search=search, round=1))


def test_a_malformed_tool_call_is_asked_again_once_then_becomes_a_no_code_node(problem, fake):
    search = start(problem)
    fake.script = [Behaviour(tool_input={"code": "class ModelNew: ..."}), Behaviour(tool_input={"source": 42})]
    loop.advance(search.id)
    [seed] = Kernel.objects.filter(search=search)
    assert seed.status == "no_code"
    assert seed.reason == ("the model's reply was unusable twice; the last: the submit_kernel call had no `source` "
                           "defining class ModelNew")
    first, second = fake.requests
    assert "submit_kernel call had no `source`" in second.user_text and "submit_kernel call" not in first.user_text
    [call] = ProposerCall.objects.filter(search=search)
    assert call.output_tokens == fake.usage_given["output"]  # both replies are paid for


def test_a_budget_reached_mid_repair_stops_cleanly(problem, fake):
    search = start(problem, kernels_per_idea=2, repair_attempts=3, max_candidates=4)
    loop.advance(search.id)
    judge()
    loop.advance(search.id)
    judge(status_for=lambda k: "runtime_error" if k.variant is not None else "correct")
    loop.advance(search.id)  # one repair makes the 4th candidate: the budget, no second repair
    judge(status_for=lambda k: "runtime_error")
    loop.advance(search.id)
    search.refresh_from_db()
    assert (search.status, search.stop_reason) == ("completed", "budget reached: 4 of at most 4 candidates")
    assert Kernel.objects.filter(search=search, origin="repair").count() == 1
    assert not EvaluationJob.objects.filter(kernel__search=search, purpose="search", status="queued").exists()


def test_no_new_ideas_ends_the_search_saying_so(problem, fake):
    search = start(problem, rounds=5, kernels_per_idea=2)
    fake.script = [Behaviour(), Behaviour(), Behaviour(), Behaviour(),  # seed, ideas, two kernels
                   Behaviour(tool_input={"ideas": []})]  # a well-formed answer: nothing new
    for _ in range(3):
        loop.advance(search.id)
        judge()
    search.refresh_from_db()
    assert (search.status, search.stop_reason) == (
        "completed", "the proposer had no new ideas after round 1 — 3 of 10 candidates")


def test_stale_rounds_end_the_search_with_that_reason(problem, fake):
    search = start(problem, rounds=6, stale_rounds=2)
    for _ in range(4):
        loop.advance(search.id)
        judge(median_for=lambda k: 1.0)
    loop.advance(search.id)
    search.refresh_from_db()
    assert (search.status, search.stop_reason) == ("completed", "no improvement in 2 rounds")
    assert search.current_round == 2


@pytest.mark.slow
def test_an_idea_already_tried_is_asked_again_once_then_left_out(problem, fake):
    """Two parents whose ideas calls both answer "Idea 1": the second is asked again naming the
    repeat; ideas are implemented once each."""
    search = start(problem, rounds=2, parents_per_round=2, bank_size=0)
    fresh = fake.responder

    def responder(seen):  # round 2's second parent (the 3rd and 4th ideas requests): "Idea 1" again, twice
        if task_of(seen) == "ideas" and fresh.ideas_asked >= 2:
            fresh.ideas_asked += 1
            return ideas_call(1)
        return fresh(seen)

    fake.responder = responder
    for _ in range(6):
        loop.advance(search.id)
        judge(median_for=lambda kernel: 1.0 / (1 + kernel.id))
    titles = list(Idea.objects.filter(search=search).values_list("title", flat=True))
    assert len(titles) == len(set(titles))  # no idea twice
    asked = [s.user_text for s in fake.requests if task_of(s) == "ideas"]
    assert any("Your previous reply repeated ideas already tried in this search (or itself): Idea 1." in t
               for t in asked)
