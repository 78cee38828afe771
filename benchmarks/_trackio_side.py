"""trackio's side of bench_sdk.py, run by the peers' interpreter (not a benchmark).

trackio pins Pillow below wisp's test stack and brings uvloop and httptools (which would change
how uvicorn serves wisp's own server), so it lives in a virtual environment of its own
(``make bench`` makes ``.venv/peers`` from the ``bench`` extra) and is measured here, in one
process, the same way bench_sdk.py measures wisp and MLflow: medians of 40 ``init()`` and
``finish()``, and ``log()`` of the same 5-float dict with an explicit step.  Prints one line,
``figures: {JSON}`` (trackio prints its own lines too, some at exit).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import tempfile
import time


def main() -> None:
    os.environ["TRACKIO_DIR"] = os.path.join(tempfile.mkdtemp(), "trackio")
    import trackio

    starts, stops = [], []
    with contextlib.redirect_stdout(io.StringIO()):
        trackio.init(project="b").finish()  # warm, as the others
        for _ in range(40):
            t0 = time.perf_counter()
            run = trackio.init(project="b")
            t1 = time.perf_counter()
            run.finish()
            stops.append((time.perf_counter() - t1) * 1000)
            starts.append((t1 - t0) * 1000)
        run = trackio.init(project="b")
        lat = []
        for i in range(2000):
            d = {"a": 0.1 * i, "b": 1.0, "c": 2.0, "d": 3.0, "e": 4.0}
            t0 = time.perf_counter_ns()
            run.log(d, step=i)
            lat.append(time.perf_counter_ns() - t0)
        run.finish()
    lat.sort()
    got = {
        "init_ms": statistics.median(starts),
        "finish_ms": statistics.median(stops),
        "log_p50_us": lat[len(lat) // 2] / 1000,
    }
    print("figures:", json.dumps(got), flush=True)


if __name__ == "__main__":
    main()
