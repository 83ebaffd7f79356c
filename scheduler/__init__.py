"""The compute scheduler: resources, cost model, planner, partitioned runs, the job queue.

It runs "units of work with a cost" and knows nothing of models or datasets. Heavy modules
(onnxruntime, NVML, dask) are imported only when used.
"""

from modeldesk.scheduler.cost import CostModel
from modeldesk.scheduler.jobs import JobQueue
from modeldesk.scheduler.partition import Cancelled, run_partitioned
from modeldesk.scheduler.planner import DeviceShare, Plan, plan
from modeldesk.scheduler.registry import register_job_kind
from modeldesk.scheduler.resources import detect_resources, format_resources

__all__ = [
    "detect_resources",
    "format_resources",
    "CostModel",
    "plan",
    "Plan",
    "DeviceShare",
    "run_partitioned",
    "Cancelled",
    "JobQueue",
    "register_job_kind",
]
