"""Print zarr-python's guess_chunks for shapes given as JSON on stdin.

Input: [[shape, typesize], ...]; output: [chunks, ...] as JSON.
"""
import json
import sys

from zarr.util import guess_chunks

cases = json.load(sys.stdin)
print(json.dumps([list(guess_chunks(tuple(s), t)) for s, t in cases]))
