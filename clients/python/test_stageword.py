"""Tests for the stage word (stageword): its block, the inside flag a
viewer's refusal sets (also in forked children), and the server taking
that refusal from a viewer's second hello. Each case runs a fresh
interpreter: the block and the flag are the process's own.

Run with: /usr/bin/python3 -m unittest discover -s clients/python
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def run(code: str, reader: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=HERE)
    env.pop("PIPETOP_STACKS_READER", None)
    if reader:
        env["PIPETOP_STACKS_READER"] = reader
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=60)


class StageWordTest(unittest.TestCase):
    def test_without_a_reader_the_process_samples_itself(self) -> None:
        out = run("""
            from pipetop_publish import stageword
            print(stageword.setup(("forward",)), stageword.inside())
        """)
        self.assertEqual(out.stdout.split(), ["None", "True"], out.stderr)

    def test_words(self) -> None:
        out = run("""
            import ctypes, json
            from pipetop_publish import stageword
            word = stageword.setup(("forward", "backward"))
            seen = []
            for name in ("backward", None, "forward", "nonesuch"):
                stageword.set_stage(name)
                seen.append(ctypes.c_int64.from_address(word["addr"] + 8).value)
            stageword.set_worker(2)
            stageword.set_fetch(12345)
            stageword.set_typical(77)
            print(json.dumps({"word": word, "seen": seen, "words": stageword.words(), "inside": stageword.inside()}))
        """, reader="4242")
        got = json.loads(out.stdout)
        self.assertEqual(got["word"]["stages"], ["forward", "backward"])
        self.assertEqual(got["word"]["addr"] % 8, 0)
        self.assertEqual(got["seen"], [2, 0, 1, 0])
        self.assertEqual(got["words"][0], int.from_bytes(b"pipetop1", "little"))
        self.assertEqual(got["words"][2:5], [3, 12345, 77])
        self.assertFalse(got["inside"])

    def test_a_worker_elsewhere_samples_itself(self) -> None:
        out = run("""
            from pipetop_publish import stageword
            stageword.set_worker(0, stageword.address())
            forked = stageword.inside()
            stageword.set_worker(0, stageword.address() + 64)
            print(forked, stageword.inside())
        """, reader="4242")
        self.assertEqual(out.stdout.split(), ["False", "True"], out.stderr)
        self.assertEqual(out.stderr, "")

    def test_refusal_reaches_forked_children_and_is_said_once(self) -> None:
        out = run("""
            import os, time
            from pipetop_publish import stageword
            stageword.setup(("forward",))
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.read(r, 1)
                os.write(1, b"child %s\\n" % str(stageword.inside()).encode())
                os._exit(0)
            print("before", stageword.inside(), stageword.words()[stageword.INSIDE], flush=True)
            stageword.ask_inside("ptrace_scope 3")
            print("word", stageword.words()[stageword.INSIDE], flush=True)
            stageword.ask_inside("again")
            os.write(w, b"x")
            os.waitpid(pid, 0)
        """, reader="4242")
        self.assertEqual(out.stdout.split(), ["before", "False", "0", "word", "1", "child", "True"], out.stderr)
        self.assertEqual(out.stderr.count("stack samples from inside the process: ptrace_scope 3"), 1, out.stderr)
        self.assertNotIn("again", out.stderr)

    def test_threads_named_for_the_reader_outside(self) -> None:
        out = run("""
            import threading
            from pipetop_publish import pythreads
            stop = threading.Event()
            a = threading.Thread(target=stop.wait, name="metrics-logger")
            b = threading.Thread(target=stop.wait, name="renamed")
            a.start(); b.start()
            with open("/proc/self/task/%d/comm" % b.native_id, "w") as f:
                f.write("own-name")
            before = open("/proc/self/comm").read().strip()
            pythreads.name_all(set())
            comm = lambda t: open("/proc/self/task/%d/comm" % t.native_id).read().strip()
            print(comm(a), comm(b), open("/proc/self/comm").read().strip() == before)
            stop.set()
        """)
        self.assertEqual(out.stdout.split(), ["metrics-logger", "own-name", "True"], out.stderr)

    def test_a_viewer_refusal_through_the_server(self) -> None:
        out = run("""
            import json, os, socket, tempfile, time
            from pipetop_publish import stageword
            from pipetop_publish.publisher import Publisher
            word = stageword.setup(("forward",))
            path = os.path.join(tempfile.mkdtemp(), "t.sock")
            pub = Publisher(name="t", stages=("forward",), socket_path=path, stage_word=word)
            c = socket.socket(socket.AF_UNIX)
            c.connect(path)
            hello = json.loads(c.makefile().readline())["hello"]
            print(hello["stage_word"] == word, stageword.inside(), flush=True)
            for inside in ("", "refused: test"):
                h = {"role": "viewer", "accepts": ["stacks"]}
                if inside:
                    h["stacks_inside"] = inside
                c.sendall((json.dumps({"type": "hello", "v": 1, "hello": h}) + "\\n").encode())
                time.sleep(0.3)
                print(stageword.inside(), flush=True)
            pub.close()
        """, reader="4242")
        self.assertEqual(out.stdout.split(), ["True", "False", "False", "True"], out.stderr)
        self.assertIn("stack samples from inside the process: refused: test", out.stderr)


if __name__ == "__main__":
    unittest.main()
