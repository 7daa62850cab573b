"""One campaign: opened (freezing first if needed) or resumed, run to a stop rule, closed. What the CLI's foreground
runs (through api.py), and each workload of a pass, in turn (api.py) or as a Ray task (spread.py)."""

from __future__ import annotations

from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.campaign import Campaign
from hyperloom.tools.optimize.stops import Control
from hyperloom.tools.optimize.models import OptimizeReport, OptimizeRequest
from hyperloom.tools.optimize.report import close
from hyperloom.tools.optimize.session import open_campaign
from hyperloom.tools.workload.levers import lever


def run_campaign(request: OptimizeRequest, workspace: Workspace, progress: ProgressFn | None = None,
                 control: Control | None = None) -> OptimizeReport:
    """Open (freezing first if needed) or resume one campaign, run it to a stop rule, close it."""
    control = control or Control()
    for name in request.levers or []:  # a lever no catalog has, refused before anything is frozen or built
        lever(name)
    with open_campaign(request, workspace) as session:  # one that does not apply here, refused before the session is made
        reason = Campaign(session, request, workspace, control, progress).run()
        return close(session, workspace, error=reason if reason.startswith("error") else None)
