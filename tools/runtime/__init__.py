"""Runtime backends (hip, cuda, c): load, allocate, copy, launch, time; each trial in a worker process."""
