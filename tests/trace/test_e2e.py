"""End to end: run trace_workload with WEFT_TRACE set, then check what weft
wrote with weft-trace.

Usage: test_e2e.py WORKLOAD OUT_PREFIX   (CMake passes both; WEFT_TRACE_TOOL
names the tool). The environment (WEFT_SCHED, ...) is passed on to the
workload. Each check is a unittest test; they share one run of the workload.
"""

import json
import os
import subprocess
import sys
import unittest

from wtt import have_matplotlib, png_size, run_tool

# The workload's named ULTs (trace_workload.c).
NAMES = {"locker-w0-0", "locker-w1-0", "locker-w0-1", "locker-w1-1", "producer", "consumer",
         "roamer-0", "roamer-1", "roamer-2", "roamer-3", "sleeper"}

WORKLOAD = PREFIX = None
RUN = None  # the workload's CompletedProcess, once run


def run_workload():
    """Run the workload once (first test to need it), tracing into PREFIX."""
    global RUN
    if RUN is None:
        for ext in (".json", ".csv", ".wft", ".png", ".conv.csv"):
            if os.path.exists(PREFIX + ext):
                os.remove(PREFIX + ext)
        # All three formats of the same run.
        env = dict(os.environ, WEFT_TRACE=PREFIX, WEFT_TRACE_FORMAT="json,csv,wft")
        RUN = subprocess.run([WORKLOAD], env=env, capture_output=True, text=True, timeout=90)
        print("workload exited %d: %s%s" % (RUN.returncode, RUN.stdout, RUN.stderr),
              file=sys.stderr)
    return RUN


class EndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        r = run_workload()
        if r.returncode != 0:
            raise AssertionError("trace_workload failed (%d):\n%s%s"
                                 % (r.returncode, r.stdout, r.stderr))
        for ext in (".json", ".csv", ".wft"):
            if not os.path.isfile(PREFIX + ext):
                raise AssertionError("WEFT_TRACE=%s wrote no %s: is tracing compiled in?"
                                     % (PREFIX, PREFIX + ext))
        s = run_tool("summary", "--json", "--top", "1000", PREFIX + ".csv")
        if s.returncode != 0:
            raise AssertionError("summary failed (%d): %s" % (s.returncode, s.stderr))
        cls.rep = json.loads(s.stdout)
        with open(PREFIX + ".json") as f:
            cls.doc = json.load(f)

    def test_check_passes(self):
        r = run_tool("check", PREFIX + ".json")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_metadata(self):
        tr = self.rep["trace"]
        self.assertEqual(tr["workers"], 2)
        self.assertIn(tr["sched"], ("steal", "share"))
        if os.environ.get("WEFT_SCHED"):
            self.assertEqual(tr["sched"], os.environ["WEFT_SCHED"])
        self.assertIn(tr["clock"], ("tsc", "monotonic"))
        self.assertEqual(tr["dropped"], 0)
        self.assertIn("trace_workload", tr["program"])
        self.assertGreater(tr["duration_ns"], 0)
        other = self.doc.get("otherData", {})
        self.assertEqual(other.get("workers"), 2)
        self.assertEqual(other.get("pid"), tr["pid"])
        self.assertEqual(other.get("sched"), tr["sched"])

    def test_rows_fit_the_format(self):
        self.assertEqual(self.rep["notes"], [])

    def test_named_ults(self):
        names = {u["name"] for u in self.rep["ults"]}
        self.assertLessEqual(NAMES, names)
        for u in self.rep["ults"]:
            if u["name"] in NAMES:
                self.assertGreater(u["runs"], 0, u)
                self.assertGreater(u["busy_ns"], 0, u)
                self.assertTrue(u["exited"], u)

    def test_mutex_contention(self):
        mutexes = [lk for lk in self.rep["locks"] if lk["kind"] == "mutex"]
        self.assertTrue(mutexes, self.rep["locks"])
        self.assertGreater(mutexes[0]["contended"], 0)
        self.assertGreater(mutexes[0]["wait_total_ns"], 0)
        self.assertEqual(sum(mutexes[0]["buckets"]), mutexes[0]["contended"])
        self.assertGreater(self.rep["blocked"].get("mutex", {}).get("count", 0), 0)
        self.assertGreater(self.rep["lock_share"]["share"], 0)

    def test_block_reasons(self):
        blocked = self.rep["blocked"]
        for reason in ("mutex", "cond", "join", "sleep", "yield"):
            self.assertGreater(blocked.get(reason, {}).get("count", 0), 0, reason)
        for reason, b in blocked.items():
            self.assertEqual(b["still_blocked_at_end"], 0, reason)

    def test_both_workers_busy(self):
        ws = self.rep["workers"]
        self.assertEqual([w["worker"] for w in ws], [0, 1])
        for w in ws:
            self.assertGreater(w["busy_ns"], 0, w)
            self.assertGreater(w["runs"], 0, w)

    def test_time_adds_up(self):
        dur = self.rep["trace"]["duration_ns"]
        for w in self.rep["workers"]:
            total = w["busy_ns"] + w["scheduler_ns"] + w["idle_ns"]
            self.assertLess(abs(total - dur), 0.03 * dur,
                            "worker %d: %d ns accounted of %d" % (w["worker"], total, dur))

    def test_json_and_csv_agree(self):
        # One X slice of cat "ult" per run row, with the same total length.
        slices = [ev for ev in self.doc["traceEvents"]
                  if ev.get("ph") == "X" and ev.get("cat") == "ult"]
        runs = sum(w["runs"] for w in self.rep["workers"])
        self.assertEqual(len(slices), runs)
        busy_us = sum(ev["dur"] for ev in slices)
        busy = self.rep["totals"]["busy_ns"]
        self.assertLess(abs(busy_us * 1000 - busy), 0.001 * busy + 1000)
        named = {ev["name"] for ev in slices}
        self.assertLessEqual(NAMES, named)

    def test_wft_and_csv_agree(self):
        s = run_tool("summary", "--json", "--top", "1000", PREFIX + ".wft")
        self.assertEqual(s.returncode, 0, s.stderr)
        rep = json.loads(s.stdout)
        self.assertEqual(rep["trace"].pop("path"), PREFIX + ".wft")
        want = json.loads(json.dumps(self.rep))
        want["trace"].pop("path")
        self.assertEqual(rep, want)

    def test_wft_converts_to_the_same_csv(self):
        out = PREFIX + ".conv.csv"
        r = run_tool("convert", PREFIX + ".wft", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as a, open(PREFIX + ".csv", "rb") as b:
            self.assertTrue(a.read() == b.read(), "%s differs from %s" % (out, PREFIX + ".csv"))

    def test_wft_is_compact(self):
        # At most 16 bytes per event (CSV row), file and meta included.
        per_row = os.path.getsize(PREFIX + ".wft") / self.rep["trace"]["rows"]
        self.assertLessEqual(per_row, 16.0)
        self.assertLess(os.path.getsize(PREFIX + ".wft"), os.path.getsize(PREFIX + ".csv") / 2)

    def test_json_alone_gives_the_same_figures(self):
        # The JSON read by itself (no CSV or .wft beside it): the same
        # figures, but for what the JSON does not hold (rows that are not
        # slices or instants, the other threads' wakes).
        d = os.path.dirname(PREFIX)
        alone = os.path.join(d, os.path.basename(PREFIX) + "-alone.json")
        with open(PREFIX + ".json", "rb") as a, open(alone, "wb") as b:
            b.write(a.read())
        try:
            s = run_tool("summary", "--json", "--top", "1000", alone)
            self.assertEqual(s.returncode, 0, s.stderr)
            rep = json.loads(s.stdout)
        finally:
            os.remove(alone)
        want = json.loads(json.dumps(self.rep))
        for r in (rep, want):
            for key in ("path", "rows", "foreign_rows"):
                r["trace"].pop(key)
            for w in r["workers"]:
                w.pop("unparks")
        self.assertEqual(rep, want)

    def test_text_summary(self):
        r = run_tool("summary", PREFIX + ".csv")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Contended locks", r.stdout)

    @unittest.skipUnless(have_matplotlib(), "matplotlib is not installed (python3-matplotlib)")
    def test_timeline_png(self):
        for ext, extra in ((".csv", ()), (".csv", ("--load",)), (".wft", ())):
            out = PREFIX + ".png"
            r = run_tool("timeline", PREFIX + ext, "-o", out, *extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            size = png_size(out)
            self.assertIsNotNone(size, "not a PNG: " + out)
            self.assertGreaterEqual(size[0], 600)
            self.assertGreaterEqual(size[1], 150)
            self.assertGreater(os.path.getsize(out), 5000)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: test_e2e.py WORKLOAD OUT_PREFIX [unittest args]")
    WORKLOAD, PREFIX = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[3:])
