"""The execution plan: how a run computes, chosen once, with reasons (docs/architecture.md).

`resolve_plan` makes it, `ExecutionPlan.apply` applies it, `write_plan`/`read_plan` keep it
beside a run's checkpoints.
"""

from rnmt.plan.plan import (
                            DECODING_FIELDS,
                            FIELDS,
                            PLAN_FILE,
                            PLAN_VERSION,
                            Choice,
                            ExecutionPlan,
                            read_plan,
                            write_plan,
)
from rnmt.plan.resolve import precision_choice, resolve_plan

__all__ = ["Choice", "ExecutionPlan", "FIELDS", "DECODING_FIELDS", "PLAN_FILE", "PLAN_VERSION", "precision_choice",
           "read_plan", "resolve_plan", "write_plan"]
