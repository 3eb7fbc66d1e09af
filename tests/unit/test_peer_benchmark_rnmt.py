"""benchmarks/run.py: rnmt's rows under its default precision and under forced ones."""

from pathlib import Path

from tests.support import load_benchmark

run = load_benchmark("run")


def test_rnmt_rows_name_the_precision_they_force():
    default = run.RNMT("python")
    fp32 = run.RNMT("python", "none")
    bf16 = run.RNMT("python", "bf16")
    assert (default.name, fp32.name, bf16.name) == ("rnmt", "rnmt-fp32", "rnmt-bf16")
    assert fp32.label == "rnmt (fp32)" and default.label == "rnmt"
    assert run.RNMT.name == "rnmt"  # the class default is untouched by an instance

    class S:  # the few settings overrides() reads
        data, batch_tokens, emb, hidden, dropout = Path("d"), 4000, 256, 512, 0.1
        total_steps, log_every, threads, seed = 120, 10, 2, 1

    assert "train.amp=none" in fp32.overrides(S())
    assert "train.amp=auto" in default.overrides(S())
