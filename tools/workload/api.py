"""The workload tools' entry points: workload_freeze, workload_bench and workload_integrate (one MCP tool `workload`, action
freeze|bench|integrate)."""

from __future__ import annotations

from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.workload.bench import bench_workload
from hyperloom.tools.workload.freeze import freeze_workload
from hyperloom.tools.workload.integrate import integrate
from hyperloom.tools.workload.models import (
    IntegrateRequest,
    IntegrateResult,
    WorkloadBenchRequest,
    WorkloadBenchResult,
    WorkloadFreezeRequest,
    WorkloadFreezeResult,
)


def workload_freeze(request: WorkloadFreezeRequest, workspace: Workspace, progress: ProgressFn | None = None) -> WorkloadFreezeResult:
    return freeze_workload(request, workspace, progress)


def workload_bench(request: WorkloadBenchRequest, workspace: Workspace, progress: ProgressFn | None = None) -> WorkloadBenchResult:
    return bench_workload(request, workspace, progress)


def workload_integrate(request: IntegrateRequest, workspace: Workspace, progress: ProgressFn | None = None) -> IntegrateResult:
    return integrate(request, workspace, progress)
