"""A loop that publishes its steps through pipetop_publish for the given
seconds: data_wait 2 ms, forward 3 ms a step. The runner's tests run it."""

import sys
import time

from pipetop_publish import Publisher

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
with Publisher("steps") as pub:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with pub.stage("data_wait"):
            time.sleep(0.002)
        with pub.stage("forward"):
            time.sleep(0.003)
        pub.step(samples=8)
