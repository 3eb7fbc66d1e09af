"""The settings of one distillation, and which of them make it what it is.

A resumed distillation must decode with the same teacher and search, filter with the same
thresholds and train the same students: those settings (`IDENTITY`) are recorded in the
output directory's ``distill.json`` and compared on every start (`rnmt.distill.setup`).
The rest (threads, jobs, device, speed rounds) may change between starts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from rnmt.errors import UserError


@dataclass
class DistillOptions:
    beam: int = 5  # the teacher's beam over the training sources
    nbest: int = 1  # > 1: keep the hypothesis of the n-best list with the best chrF against the reference
    chunk_lines: int = 500  # source lines per decoding chunk (the unit kept across a kill)
    max_lines: Optional[int] = None  # distil only the first N training pairs (a short check)
    min_ratio: float = 0.33  # target/source length ratio in whitespace words, kept within [min, max]
    max_ratio: float = 3.0
    drop_worst: float = 5.0  # percent of pairs with the teacher's highest cross-entropy per subword dropped
    mix_original: float = 0.0  # weight of the original corpus beside the distilled one (0: distilled only)
    finetune_steps: int = 0  # > 0: fine-tune each student on the original data this many updates
    finetune_lr: Optional[float] = None  # the fine-tuning's train.lr (None: the student config's)
    seeds: List[int] = field(default_factory=lambda: [1])
    baseline: bool = True  # train each student config on the original data too
    overrides: List[str] = field(default_factory=list)  # --set for every student and baseline run
    int8: bool = False  # export int8 weights (where rnmt.export exists)
    # build DIR/shortlist.json from the distilled pairs and export the students with --shortlists
    shortlist: bool = False
    # not part of the identity:
    threads: int = 1  # decoding threads (the report's speeds are always timed on `speed_threads`)
    jobs: int = 1  # training runs side by side, each in its own process
    speed_threads: int = 1
    speed_rounds: int = 2  # alternating timing rounds; each model's fastest counts
    bootstrap: int = 1000
    device: str = "cpu"

    def check(self) -> None:
        for name, low in (("beam", 1), ("nbest", 1), ("chunk_lines", 1), ("threads", 1), ("jobs", 1),
                          ("speed_threads", 1), ("speed_rounds", 1), ("bootstrap", 1), ("finetune_steps", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                flag = "--" + name.replace("_", "-")  # the command's spelling, as every message here
                raise UserError(f"{flag} must be an integer of at least {low}, got {value!r}")
        if self.nbest > self.beam:
            raise UserError(f"--nbest {self.nbest} is more than the beam ({self.beam}) can give")
        if self.max_lines is not None and self.max_lines < 1:
            raise UserError(f"--max-lines must be at least 1, got {self.max_lines}")
        if not 0 < self.min_ratio < self.max_ratio:
            raise UserError(f"length ratios must satisfy 0 < --min-ratio < --max-ratio, got "
                            f"{self.min_ratio} and {self.max_ratio}")
        if not 0 <= self.drop_worst < 100:
            raise UserError(f"--drop-worst is a percentage in [0, 100), got {self.drop_worst}")
        if not 0 <= self.mix_original <= 1000:
            raise UserError(f"--mix-original is a corpus weight in [0, 1000], got {self.mix_original}")
        if self.finetune_lr is not None:
            if isinstance(self.finetune_lr, bool) or not isinstance(self.finetune_lr, (int, float)) or \
                    not 0 < self.finetune_lr < math.inf:
                raise UserError(f"--finetune-lr must be a positive learning rate, got {self.finetune_lr!r}")
            if not self.finetune_steps:
                raise UserError("--finetune-lr sets the fine-tuning's learning rate: it needs --finetune-steps N")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds) or min(self.seeds) < 0:
            raise UserError(f"--seeds must be distinct non-negative integers, got {self.seeds}")

    def identity(self) -> Dict[str, Any]:
        """The settings a resumed distillation must keep."""
        values = asdict(self)
        # finetune_lr and shortlist came later: absent when unset, so distillations recorded before them resume
        later = {"finetune_lr": None, "shortlist": False}
        return {key: values[key] for key in IDENTITY if key not in later or values[key] != later[key]}


IDENTITY = ("beam", "nbest", "chunk_lines", "max_lines", "min_ratio", "max_ratio", "drop_worst", "mix_original",
            "finetune_steps", "finetune_lr", "seeds", "baseline", "overrides", "int8", "shortlist")
