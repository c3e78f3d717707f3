"""Stream scoring policies, one module each (its name, default tolerance and score function as a `Policy`),
registered below in the order runs list them (harness/streaming/policies/base.py holds the registry)."""

from harness.streaming.policies import mlperf_sww, optimal, tf_compat
from harness.streaming.policies.base import Policy, policy, policy_names, register, unregister

for _policy in (optimal.POLICY, tf_compat.POLICY, mlperf_sww.POLICY):
    register(_policy)

__all__ = ["Policy", "policy", "policy_names", "register", "unregister"]
