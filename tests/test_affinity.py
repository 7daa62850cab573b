"""A GPU worker is bound to the CPUs next to its GPU, read from sysfs; anything unknown leaves it where it was."""

from __future__ import annotations

import os

import pytest

from hyperloom.tools.runtime.affinity import bind_near, local_cpus, parse_cpulist, sysfs_address


def test_cpulists_and_bus_ids_read_as_sysfs_writes_them():
    assert parse_cpulist("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpulist("") == set()
    assert sysfs_address("00000000:1B:00.0") == "0000:1b:00.0"  # nvidia-smi's long domain
    assert sysfs_address("0000:c1:00.0") == "0000:c1:00.0"


def test_a_worker_is_bound_to_its_gpus_node_and_left_alone_when_sysfs_does_not_say(tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    device = tmp_path / "0000:1b:00.0"
    device.mkdir()
    (device / "local_cpulist").write_text(f"{allowed[0]}\n")
    assert local_cpus("0000:1B:00.0", tmp_path) == {allowed[0]}
    assert local_cpus("0000:99:00.0", tmp_path) == set() and bind_near("0000:99:00.0", tmp_path) == [] and bind_near(None, tmp_path) == []
    (device / "local_cpulist").write_text("100000-100003\n")  # cores this process may not use: nothing to bind to
    assert bind_near("0000:1b:00.0", tmp_path) == []
    if len(allowed) < 2:
        pytest.skip("binding to fewer cores needs a machine with two")
    (device / "local_cpulist").write_text(f"{allowed[0]}\n")
    try:
        assert bind_near("0000:1b:00.0", tmp_path) == [allowed[0]] and os.sched_getaffinity(0) == {allowed[0]}
    finally:
        os.sched_setaffinity(0, allowed)
