"""Tests for turnback.diff.forked: a large turn's diffs split with a forked child, real fork."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from turnback.diff import forked
from turnback.diff.forked import Share, diff_all
from turnback.diff.textdiff import diff_file
from turnback.results import FileDiff

pytestmark = pytest.mark.skipif(
    not forked.can_fork(), reason="forks only on Linux with 2+ CPUs, not in portable mode"
)

PARENT = os.getpid()


def pid_share(index: int, *, in_child: str = "") -> Share:
    """A share whose diff names the process that computed it; `in_child` says what it
    does when that is not the test's process: "die", "hang" or nothing."""

    def run() -> FileDiff:
        if os.getpid() != PARENT:
            if in_child == "die":
                os._exit(3)
            if in_child == "hang":
                time.sleep(60)
        text = f"{index}\n".encode()
        return diff_file(f"{index}-{os.getpid()}", text, text + b"more\n")

    return Share(1000, lambda: run)


def pids(results: list[FileDiff]) -> list[int]:
    return [int(result.path.split("-")[1]) for result in results]


def zombies() -> set[str]:
    """This process's children that exited and were never waited for."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z" and int(fields[1]) == PARENT:
            found.add(entry.name)
    return found


@pytest.fixture
def fork_always(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "FORK_FROM_BYTES", 0)


@pytest.fixture
def no_new_zombies() -> Iterator[None]:
    """Fails the test if it leaves a child unwaited (another test's are not its own)."""
    before = zombies()
    yield
    assert zombies() <= before


# Ensures the last files are diffed by another process and come back whole and in order.
def test_child_diffs_the_last_files(fork_always: None, no_new_zombies: None) -> None:
    results = diff_all([pid_share(i) for i in range(6)])
    assert [r.path.split("-")[0] for r in results] == [str(i) for i in range(6)]
    assert pids(results)[:3] == [PARENT] * 3
    assert PARENT not in pids(results)[3:]
    assert all(r.additions == 1 and r.diff for r in results)


# Ensures a child that dies before answering costs nothing but time: its files are
# diffed by the server.
def test_child_that_dies_is_replaced(fork_always: None, no_new_zombies: None) -> None:
    results = diff_all([pid_share(i, in_child="die") for i in range(4)])
    assert pids(results) == [PARENT] * 4
    assert [r.path.split("-")[0] for r in results] == ["0", "1", "2", "3"]


# Ensures a stuck child is killed after the grace period and its files diffed here.
def test_stuck_child_is_killed(
    fork_always: None, no_new_zombies: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forked, "CHILD_GRACE", 0.5)
    start = time.monotonic()
    results = diff_all([pid_share(i, in_child="hang") for i in range(4)])
    assert time.monotonic() - start < 10
    assert pids(results) == [PARENT] * 4


# Ensures a small turn never forks: the fork would cost more than it saves.
def test_small_turn_stays_in_process() -> None:
    results = diff_all([pid_share(i) for i in range(6)])
    assert pids(results) == [PARENT] * 6


# Ensures a huge turn goes in rounds, each with a child, so only a round's bytes are held.
def test_huge_turn_goes_in_rounds(fork_always: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "ROUND_BYTES", 4000)  # four shares of 1,000 bytes a round
    results = diff_all([pid_share(i) for i in range(10)])
    assert [r.path.split("-")[0] for r in results] == [str(i) for i in range(10)]
    by = pids(results)
    assert by[:2] == by[4:6] == [PARENT] * 2 and by[8] == PARENT
    assert len({by[2], by[6], by[9]} - {PARENT}) == 3  # three children, one per round


# Ensures the split gives the child a little more than half the bytes (it reads none of
# them after the fork, the server reads its own), and each side at least a file.
def test_split_shares_the_bytes(fork_always: None) -> None:
    def sized(size: int) -> Share:
        return Share(size, lambda: lambda: diff_file("f", b"", b""))

    assert forked._split_at([sized(10)] * 4, 40) == 2
    assert forked._split_at([sized(10)] * 25, 250) == 11  # the child's 140 = 56 %
    assert forked._split_at([sized(100), sized(1), sized(1)], 102) == 1
    assert forked._split_at([sized(1), sized(1), sized(100)], 102) == 2
    assert forked._split_at([sized(10)], 10) is None
