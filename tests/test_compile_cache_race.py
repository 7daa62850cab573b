"""The compile cache under concurrent writers: workers on two GPUs built the same candidate at once on the 2xH200."""

from __future__ import annotations

import threading

from hyperloom.tools.compile import cache


def test_writers_storing_the_same_keys_at_once_all_succeed_and_leave_one_entry_each(tmp_path):
    built = tmp_path / "code.bin"
    built.write_bytes(b"\x7fELF" + b"x" * 4096)
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for index in range(40):
                cache.store(f"{index:064x}", built, {"ok": True, "kernels": []})
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    folder = cache.cache_dir("compile")
    assert errors == []
    assert sorted(p.name for p in folder.iterdir()) == [f"{i:064x}" for i in range(40)]  # no staging folder left behind
    assert all((folder / f"{i:064x}" / cache.CODE_OBJECT).read_bytes() == built.read_bytes() for i in range(40))
