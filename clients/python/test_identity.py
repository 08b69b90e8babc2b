"""Tests of identity: the rank of a process that torch.distributed names
(torch.multiprocessing.spawn's ranks).

Run with: /usr/bin/python3 -m unittest discover -s clients/python
"""

from __future__ import annotations

import os
import sys
import types
import unittest
from unittest import mock

from pipetop_publish import identity
from test_pipetop_publish import PublisherCase


def fake_dist(rank: int, world: int, initialized: bool = True) -> types.ModuleType:
    d = types.ModuleType("torch.distributed")
    d.is_available = lambda: True  # type: ignore[attr-defined]
    d.is_initialized = lambda: initialized  # type: ignore[attr-defined]
    d.get_rank = lambda: rank  # type: ignore[attr-defined]
    d.get_world_size = lambda: world  # type: ignore[attr-defined]
    return d


class TestTorchRank(unittest.TestCase):
    def test_spawned_rank(self) -> None:
        env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29512"}
        with mock.patch.dict(sys.modules, {"torch.distributed": fake_dist(1, 2)}), \
                mock.patch.object(identity.multiprocessing, "parent_process", lambda: object()):
            self.assertEqual(identity.who(env),
                             {"launcher": "spawn", "rank": 1, "world_size": 2, "run": "127.0.0.1:29512"})
            # init_method tcp://: no MASTER_* in the environment; the ranks
            # of one spawn share their parent.
            self.assertEqual(identity.who({})["run"], "spawn:%d" % os.getppid())
            # The launcher's environment wins (torchrun's ranks).
            self.assertEqual(identity.who({"RANK": "0", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "j"})["launcher"], "torchrun")

    def test_not_a_rank(self) -> None:
        with mock.patch.dict(sys.modules, {"torch.distributed": fake_dist(0, 2, initialized=False)}):
            self.assertEqual(identity.who({}), {})
        with mock.patch.dict(sys.modules, {"torch.distributed": fake_dist(3, 2)}):
            self.assertEqual(identity.who({}), {})
        with mock.patch.dict(sys.modules, {"torch.distributed": fake_dist(0, 2)}), \
                mock.patch.object(identity.multiprocessing, "parent_process", lambda: None):
            # Initialised in a process no spawn started, without MASTER_*:
            # a rank without a run.
            self.assertEqual(identity.who({}), {"launcher": "torch.distributed", "rank": 0, "world_size": 2})
        saved = sys.modules.pop("torch.distributed", None)
        try:
            self.assertEqual(identity.who({}), {})
        finally:
            if saved is not None:
                sys.modules["torch.distributed"] = saved


class TestHelloOfSpawnedRank(PublisherCase):
    def test_hello_and_summary_carry_the_rank(self) -> None:
        env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29513"}
        with mock.patch.dict(sys.modules, {"torch.distributed": fake_dist(1, 2)}), mock.patch.dict(os.environ, env):
            pub = self.publisher()
        h = self.viewer(pub).frame()["hello"]
        self.assertEqual((h["rank"], h["world_size"], h["run"]), (1, 2, "127.0.0.1:29513"))
        self.assertEqual(pub.rank_of["rank"], 1)  # kept for the summary after the group is gone


if __name__ == "__main__":
    unittest.main()
