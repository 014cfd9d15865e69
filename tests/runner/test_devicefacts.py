"""The facts of the served device: the keys the Workers page and the proposer read, CPU facts from
/proc and /sys, and GPU facts read in a child so the caller never loads torch or CUDA."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner.common import ceilings
from runner.host import devicefacts

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "tests" / "fixtures" / "devices" / "h200.json"

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Example Xeon 9999
flags\t\t: fpu sse2 sse4_2 avx avx2 fma avx512f avx512bw amx_tile ht

processor\t: 1
model name\t: Example Xeon 9999
flags\t\t: fpu sse2
"""
ARM_CPUINFO = "processor\t: 0\nFeatures\t: fp asimd asimdhp sve\nCPU part\t: 0xd40\n"


def fake_sys(tmp_path, caches):
    cache = tmp_path / "cpu0" / "cache"
    for i, (level, kind, size) in enumerate(caches):
        index = cache / f"index{i}"
        index.mkdir(parents=True)
        (index / "level").write_text(f"{level}\n")
        (index / "type").write_text(f"{kind}\n")
        (index / "size").write_text(f"{size}\n")
    return tmp_path


def test_cpu_facts_read_the_first_processor_its_caches_and_its_vector_width(tmp_path):
    sys_cpu = fake_sys(tmp_path, [(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
                                  (3, "Unified", "300M")])
    facts = devicefacts.cpu_facts(cpuinfo=CPUINFO, sys_cpu=sys_cpu)
    assert set(devicefacts.CPU_KEYS) <= set(facts)
    assert facts["name"] == "Example Xeon 9999"
    assert facts["caches"] == {"L1d": 48 * 1024, "L1i": 32 * 1024, "L2": 2 * 1024 ** 2, "L3": 300 * 1024 ** 2}
    assert facts["vector_width_bits"] == 512
    # only the vector flags, in a fixed order, and only the first processor's
    assert facts["flags"] == ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "amx_tile"]
    assert facts["cores"] >= 1


def test_an_arm_cpu_without_a_model_name_still_gets_a_name_and_its_simd_width(tmp_path):
    facts = devicefacts.cpu_facts(cpuinfo=ARM_CPUINFO, sys_cpu=tmp_path)
    assert facts["name"]
    assert facts["vector_width_bits"] == 128
    assert facts["flags"] == ["asimd", "asimdhp", "sve"]
    assert facts["caches"] == {}


def test_vector_width_is_unknown_without_any_simd_flag():
    assert devicefacts.vector_width_bits({"fpu", "ht"}) is None
    assert devicefacts.vector_width_bits({"avx"}) == 256


def test_ceilings_come_from_the_known_models_and_are_null_for_any_other():
    facts = devicefacts.ceiling_facts("NVIDIA H100 80GB HBM3")
    assert facts["bandwidth_gbs"] == ceilings.KNOWN["H100"].bandwidth / 1e9
    assert facts["tflops"] == {"fp32": 67.0, "tf32": 495.0, "fp16": 990.0, "bf16": 990.0}
    assert devicefacts.ceiling_facts("NVIDIA L4") == {"bandwidth_gbs": None, "tflops": None, "ceilings_source": None}


@pytest.mark.slow  # the child imports torch: ~5 s on a shared 2-core machine
def test_reading_facts_never_loads_torch_in_the_caller_and_a_host_without_cuda_says_why():
    code = ("import json, sys\nfrom runner import devicefacts\n"
            "facts = {d: devicefacts.read(d) for d in ('cpu', 'cuda')}\n"
            "assert not {'torch', 'cupy'} & set(sys.modules), 'the caller loaded torch'\n"
            "print(json.dumps(facts))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads(done.stdout.splitlines()[-1])
    assert facts["cpu"]["device"] == "cpu" and facts["cpu"]["name"]
    from tests.conftest import cuda_available

    if cuda_available():
        assert facts["cuda"].get("error") is None and facts["cuda"]["sm_count"] > 0
    else:
        assert facts["cuda"]["device"] == "cuda" and facts["cuda"]["error"]


def test_an_unknown_device_is_an_error_record_not_an_exception():
    assert devicefacts.read("tpu")["error"] == "no facts for device 'tpu'"


def test_the_h200_record_captured_on_the_device_has_every_key_the_readers_use():
    facts = json.loads(H200.read_text())
    assert set(devicefacts.GPU_KEYS) <= set(facts)
    assert facts["name"] == "NVIDIA H200" and facts["compute_capability"] == "9.0"
    assert facts["sm_count"] == 132 and facts["memory_bytes"] > 140 * 10 ** 9
    assert facts["tflops"] == devicefacts.ceiling_facts(facts["name"])["tflops"]
    assert all(facts[key] for key in devicefacts.GPU_KEYS)


@pytest.mark.gpu
def test_on_a_gpu_host_every_fact_is_read():
    facts = devicefacts.read("cuda")
    assert facts.get("error") is None, facts
    missing = [key for key in devicefacts.GPU_KEYS if facts.get(key) is None and key not in
               ("bandwidth_gbs", "tflops", "ceilings_source")]
    assert not missing, missing
