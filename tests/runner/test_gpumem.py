"""Whose fault an out-of-memory failure is (runner/gpumem.py): the parse of PyTorch's message."""

from runner import gpumem

# From a KernelBench level-1 run on the H200 (2026-12-02): an honest starting kernel for
# 23_Softmax failed while four searches of 6-12 GB problems ran on the device.
H200_MESSAGE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total capacity "
                "of 139.80 GiB of which 3.04 GiB is free. Including non-PyTorch memory, this process has 12.51 GiB "
                "memory in use. Of the allocated memory 12.00 GiB is allocated by PyTorch, and 0 bytes is reserved "
                "by PyTorch but unallocated.")


def test_a_full_device_with_the_candidate_inside_its_share_is_the_devices_fault():
    why = gpumem.others_fault(H200_MESSAGE, cap=115016)
    assert why is not None
    assert "held 12810 MB" in why and "6144 MB more" in why and "3113 MB of 143155 MB free" in why


def test_asking_past_its_share_is_the_candidates_own_oom():
    assert gpumem.others_fault(H200_MESSAGE, cap=16000) is None  # 12.5 GiB held + 6 GiB asked > 16000 MB
    greedy = H200_MESSAGE.replace("Tried to allocate 6.00 GiB", "Tried to allocate 200.00 GiB")
    assert gpumem.others_fault(greedy, cap=115016) is None


def test_room_on_the_device_or_another_wording_stays_the_candidates():
    roomy = H200_MESSAGE.replace("of which 3.04 GiB is free", "of which 40.00 GiB is free")
    assert gpumem.others_fault(roomy, cap=115016) is None  # fragmentation of its own memory, say
    assert gpumem.others_fault("CUDA error: out of memory", cap=115016) is None
    assert gpumem.others_fault("cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 6,442,450,944 bytes",
                               cap=115016) is None
