"""The worker's room: what runs inside the workload's worker process (hyperloom.core.warm_main), called by entry name
from the controller (tools/workload/process.py). runner.py holds the entries; what crosses is declared in
tools/workload/wire.py."""
