"""benchmarks/time_to_quality.py: which checkpoints it scores and which systems it names."""

from __future__ import annotations

from pathlib import Path

from tests.support import load_benchmark

ttq = load_benchmark("time_to_quality")


def test_each_mark_takes_the_last_checkpoint_saved_before_it():
    saved = [ttq.Checkpoint(Path(f"c{u}"), u, s) for u, s in [(100, 50.0), (200, 110.0), (300, 170.0), (400, 250.0)]]
    chosen = ttq.pick(saved, budget=240.0, points=4)  # marks at 60, 120, 180, 240 s
    assert [c.update for c in chosen] == [100, 200, 300]  # 400 came after the budget
    assert [c.update for c in ttq.pick(saved, budget=240.0, points=8)] == [100, 200, 300]  # no repeats
    assert ttq.pick(saved, budget=40.0, points=2) == []


def test_every_rnmt_system_names_its_precision():
    # train.amp's default (auto) is bf16 on some CPUs: a system labelled fp32 must force it.
    for system in ttq.SYSTEMS.values():
        if isinstance(system, ttq.Rnmt):
            amp = [s for s in system.sets if s.startswith("train.amp=")]
            assert amp == ["train.amp=bf16" if "bf16" in system.label else "train.amp=none"], system.name
    assert set(ttq.DEFAULT_SYSTEMS) <= set(ttq.SYSTEMS)
