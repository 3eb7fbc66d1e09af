"""The machine line of reproduction records: the CPU's bf16 instructions are read from the
kernel's flag list, and records without them (older ones) still print."""

from rnmt.reproduce.machine import cpu_bf16, machine_line


def test_cpu_bf16_reads_the_flag_line():
    assert cpu_bf16("flags\t\t: fpu sse2 avx512f avx512_bf16 amx_bf16 amx_tile") == "avx512_bf16 + amx_bf16"
    assert cpu_bf16("flags\t\t: fpu sse2 avx512f avx512_bf16") == "avx512_bf16, no AMX"
    assert cpu_bf16("flags\t\t: fpu sse2 avx2") == "no bf16 instructions"
    assert cpu_bf16("") == ""


def test_machine_line_names_bf16_only_when_recorded():
    info = {"cpu": "Some CPU", "cores": 2, "threads": 1, "jobs": 2, "torch": "2.13.0", "date": "2026-11-23"}
    assert machine_line(info) == ("Some CPU, 2 cores available, 1 torch threads per run, 2 runs side by side, "
                                  "PyTorch 2.13.0, 2026-11-23")
    line = machine_line({**info, "cpu_bf16": "avx512_bf16, no AMX"})
    assert line.startswith("Some CPU (avx512_bf16, no AMX), 2 cores available")


def test_the_commit_can_be_named_for_a_tree_without_its_own_git_directory(monkeypatch):
    from rnmt.reproduce.run import code_commit

    monkeypatch.setenv("RNMT_COMMIT", "0abba95")
    assert code_commit() == "0abba95"  # without asking git (no subprocess in this tier)
