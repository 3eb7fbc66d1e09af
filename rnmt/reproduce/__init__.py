"""``rnmt reproduce``: miniature reproductions of the papers' main tables.

Each paper's systems (``configs/reproduce/<paper>.yaml``) are trained from their paper
configs at a reduced size on one corpus, under the same training-time budget, with a
shared vocabulary and fixed seeds; each is decoded with the paper's beam settings and
scored with sacrebleu, and ``results/<paper>/README.md`` puts them in a table shaped like
the paper's, next to the orderings the paper reports. See docs/reproduce.md.
"""

from rnmt.reproduce.run import Settings, reproduce_paper, reproduce_papers
from rnmt.reproduce.spec import PAPERS, Claim, PaperSpec, SystemSpec, load_paper

__all__ = ["PAPERS", "Claim", "PaperSpec", "SystemSpec", "load_paper", "Settings", "reproduce_paper",
           "reproduce_papers"]
