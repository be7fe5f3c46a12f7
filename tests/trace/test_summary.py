"""weft-trace summary on hand-written CSV traces.

fixtures/basic.csv is a 10 us run on 2 workers with ULTs main (1), alpha (2)
and beta (3). Its expected figures, worked out by hand from the rows:

worker 0                                      worker 1
  0- 1000 run main          busy 1000           0- 1100 loop (start)   sched 1100
  1000-1100 after stop      sched 100          1100- 2000 run alpha     busy 900
  1100-3000 run beta        busy 1900          2000- 2100 after stop    sched 100
  3000-3100 after stop      sched 100          2100- 2600 loop (idle)   sched 500
  3100-4000 run alpha       busy 900           2600- 9500 asleep        idle 6900
  4000-4100 after stop      sched 100          9500-10000 loop (wake)   sched 500
  4100-5000 run main        busy 900           => busy 900, sched 2200, idle 6900
  5000-5100 after stop      sched 100
  5100-6000 run beta        busy 900
  6000-6100 after stop      sched 100
  6100-8000 run main        busy 1900
  8000-8100 after stop      sched 100
  8100-8200 loop (idle)     sched 100
  8200-9000 asleep          idle 800
  9000-9100 loop (wake)     sched 100
  9100-9800 run main        busy 700
  9800-9900 after stop      sched 100
  9900-10000 loop (idle)    sched 100
  => busy 8200, sched 1000 (switch 700 + loop 300), idle 800

Stopped until the next run: main yields 1000 -> runs 4100 (3100), alpha
mutex 2000 -> 3100 (1100), beta cond 3000 -> 5100 (2100), main join 5000 ->
6100 (1100), main sleep 8000 -> 9100 (1100). Lock share = (mutex 1100 + cond
2100) / (3200 + busy 9100) = 3200 / 12300.

Locks: 0x1000 (4096) mutex, acquired contended at 3100 (1100 ns) and 4500
(500 ns); 0x3000 (12288) rwlock at 5500 (300 ns). Buckets of 1000 ns.
"""

import json
import os
import unittest

from wtt import CSV_HEADER, fixture, run_tool, temp_dir, write_temp


def summary_json(path, *extra):
    r = run_tool("summary", "--json", path, *extra)
    if r.returncode != 0:
        raise AssertionError("summary exited %d: %s" % (r.returncode, r.stderr))
    return json.loads(r.stdout)


class SummaryWorkers(unittest.TestCase):
    """Busy / scheduler / idle per worker, and the event counts."""

    def setUp(self):
        self.rep = summary_json(fixture("basic.csv"))
        self.w = {w["worker"]: w for w in self.rep["workers"]}

    def test_trace_metadata(self):
        tr = self.rep["trace"]
        self.assertEqual(tr["workers"], 2)
        self.assertEqual(tr["sched"], "steal")
        self.assertEqual(tr["clock"], "monotonic")
        self.assertEqual(tr["pid"], 4242)
        self.assertEqual(tr["program"], "fixture")
        self.assertEqual(tr["duration_ns"], 10000)
        self.assertEqual(tr["dropped"], 0)
        self.assertEqual(tr["rows"], 38)
        self.assertEqual(tr["foreign_rows"], 1)

    def test_time_per_worker(self):
        w0, w1 = self.w[0], self.w[1]
        self.assertEqual((w0["busy_ns"], w0["scheduler_ns"], w0["idle_ns"]), (8200, 1000, 800))
        self.assertEqual((w0["switch_ns"], w0["loop_ns"]), (700, 300))
        self.assertEqual((w1["busy_ns"], w1["scheduler_ns"], w1["idle_ns"]), (900, 2200, 6900))
        self.assertEqual((w1["switch_ns"], w1["loop_ns"]), (100, 2100))

    def test_percentages(self):
        self.assertEqual((self.w[0]["busy_pct"], self.w[0]["scheduler_pct"],
                          self.w[0]["idle_pct"]), (82.0, 10.0, 8.0))
        self.assertEqual((self.w[1]["busy_pct"], self.w[1]["scheduler_pct"],
                          self.w[1]["idle_pct"]), (9.0, 22.0, 69.0))

    def test_each_worker_accounts_for_the_whole_trace(self):
        for w in self.rep["workers"]:
            self.assertEqual(w["busy_ns"] + w["scheduler_ns"] + w["idle_ns"], 10000, w)

    def test_totals(self):
        t = self.rep["totals"]
        self.assertEqual((t["busy_ns"], t["scheduler_ns"], t["idle_ns"]), (9100, 3200, 7700))
        self.assertEqual(t["busy_pct"], 45.5)  # of 2 workers x 10000 ns

    def test_counts(self):
        keys = ("runs", "yields", "parks", "exits", "steals", "migrations", "sleeps", "creates",
                "unparks")
        self.assertEqual({k: self.w[0][k] for k in keys},
                         dict(runs=7, yields=1, parks=3, exits=3, steals=0, migrations=1,
                              sleeps=1, creates=3, unparks=3))
        self.assertEqual({k: self.w[1][k] for k in keys},
                         dict(runs=1, yields=0, parks=1, exits=0, steals=1, migrations=0,
                              sleeps=1, creates=0, unparks=0))


class SummaryBlocked(unittest.TestCase):
    """Time stopped per reason, and the lock share next to busy time."""

    def setUp(self):
        self.rep = summary_json(fixture("basic.csv"))

    def test_blocked_per_reason(self):
        got = {r: (b["count"], b["total_ns"], b["still_blocked_at_end"])
               for r, b in self.rep["blocked"].items()}
        self.assertEqual(got, {"yield": (1, 3100, 0), "mutex": (1, 1100, 0), "cond": (1, 2100, 0),
                               "join": (1, 1100, 0), "sleep": (1, 1100, 0)})

    def test_lock_share(self):
        ls = self.rep["lock_share"]
        self.assertEqual((ls["lock_wait_ns"], ls["busy_ns"]), (3200, 9100))
        self.assertAlmostEqual(ls["share"], 3200 / 12300, places=5)

    def test_blocked_until_the_end(self):
        # A ULT that stops and never runs again is blocked until the trace ends.
        path = write_temp(self, "t.csv", "# workers=1\n# duration_ns=5000\n" + CSV_HEADER +
                          "0,0,run,7,w,-1,0,\n"
                          "1000,0,stop,7,w,64,0,sem\n"
                          "1000,0,idle,0,,0,0,\n"
                          "5000,0,end,0,,0,0,\n")
        rep = summary_json(path)
        self.assertEqual(rep["blocked"], {"sem": {"count": 1, "total_ns": 4000,
                                                  "still_blocked_at_end": 1}})
        self.assertEqual(rep["lock_share"]["share"], 0.0)  # sem is not a lock wait


class SummaryPreempted(unittest.TestCase):
    """A preempted ULT is ready, not blocked: its wait counts as a yield's."""

    def test_preempted_is_ready(self):
        path = write_temp(self, "t.csv", "# workers=1\n# duration_ns=400\n" + CSV_HEADER +
                          "0,0,run,1,,-1,0,\n"
                          "100,0,stop,1,,0,0,preempted\n"
                          "100,0,run,2,,-1,0,\n"
                          "200,0,stop,2,,4096,0,mutex\n"
                          "200,0,run,1,,0,0,\n"
                          "300,0,stop,1,,0,0,exit\n"
                          "300,0,run,2,,0,0,\n"
                          "400,0,stop,2,,0,0,exit\n")
        rep = summary_json(path)
        ults = {u["ult"]: u for u in rep["ults"]}
        self.assertEqual((ults[1]["blocked_ns"], ults[2]["blocked_ns"]), (0, 100))
        self.assertEqual(rep["blocked"]["preempted"]["total_ns"], 100)
        self.assertEqual(rep["workers"][0]["yields"], 1)
        r = run_tool("summary", path)
        self.assertIn("ready after preemption", r.stdout)
        self.assertNotIn("blocked in preempted", r.stdout)


class SummaryLocks(unittest.TestCase):
    """Per-lock contention: counts, waits, and counts per time bucket."""

    def setUp(self):
        self.rep = summary_json(fixture("basic.csv"))

    def test_lock_table(self):
        locks = self.rep["locks"]
        self.assertEqual([lk["address"] for lk in locks], ["0x1000", "0x3000"])
        m, rw = locks
        self.assertEqual((m["kind"], m["contended"], m["wait_total_ns"], m["wait_mean_ns"],
                          m["wait_max_ns"]), ("mutex", 2, 1600, 800, 1100))
        self.assertEqual((rw["kind"], rw["contended"], rw["wait_total_ns"], rw["wait_mean_ns"],
                          rw["wait_max_ns"]), ("rwlock", 1, 300, 300, 300))

    def test_buckets(self):
        self.assertEqual(self.rep["lock_buckets"], {"count": 10, "width_ns": 1000})
        m, rw = self.rep["locks"]
        self.assertEqual(m["buckets"], [0, 0, 0, 1, 1, 0, 0, 0, 0, 0])
        self.assertEqual(rw["buckets"], [0, 0, 0, 0, 0, 1, 0, 0, 0, 0])

    def test_bucket_count_option(self):
        rep = summary_json(fixture("basic.csv"), "--buckets", "2")
        self.assertEqual([lk["buckets"] for lk in rep["locks"]], [[2, 0], [0, 1]])

    def test_sorted_by_total_wait(self):
        # One lock with many short waits, one with a single long wait.
        rows = "".join("%d,0,lock,1,,16,10,mutex\n" % t for t in range(0, 100, 10))
        rows += "50,0,lock,1,,0x20,500,rwlock\n"
        path = write_temp(self, "t.csv", "# workers=1\n# duration_ns=100\n" + CSV_HEADER + rows)
        locks = summary_json(path)["locks"]
        self.assertEqual([(lk["address"], lk["contended"], lk["wait_total_ns"]) for lk in locks],
                         [("0x20", 1, 500), ("0x10", 10, 100)])
        self.assertEqual(locks[1]["buckets"], [1] * 10)


class SummaryUlts(unittest.TestCase):
    """Per-ULT figures and names (from create rows and name rows)."""

    def test_ults(self):
        ults = summary_json(fixture("basic.csv"))["ults"]
        got = [(u["ult"], u["name"], u["runs"], u["busy_ns"], u["busy_by_worker"],
                u["migrations"], u["steals"], u["blocked_ns"], u["creator"], u["exited"])
               for u in ults]
        self.assertEqual(got, [
            (1, "main", 4, 4500, {"0": 4500}, 0, 0, 2200, 0, True),
            (3, "beta", 2, 2800, {"0": 2800}, 0, 0, 2100, 1, True),
            (2, "alpha", 2, 1800, {"0": 900, "1": 900}, 1, 1, 1100, 1, True),
        ])


class SummaryText(unittest.TestCase):
    """The plain-text report shows the same figures."""

    def test_text_report(self):
        r = run_tool("summary", fixture("basic.csv"))
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        for want in ("program fixture", "2 workers", "sched steal", "duration 10.00 us",
                     "8.20 us   82.0%", "6.90 us   69.0%", "0x1000  mutex        2",
                     "0 0 0 1 1 0 0 0 0 0", "blocked in cond", "2.10 us",
                     "lock share: 3.20 us", "26.02%", "alpha"):
            self.assertIn(want, out)
        self.assertNotIn("Notes", out)

    def test_top_limits_the_tables(self):
        r = run_tool("summary", "--top", "1", fixture("basic.csv"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("0x1000", r.stdout)
        self.assertNotIn("0x3000", r.stdout)
        self.assertNotIn("alpha", r.stdout)

    def test_prefix_reads_the_csv(self):
        # WEFT_TRACE=prefix writes prefix.csv; the prefix alone is enough.
        r = run_tool("summary", fixture("basic"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("program fixture", r.stdout)

    def test_the_json_of_the_pair_reads_the_csv(self):
        # WEFT_TRACE=out writes out.json and out.csv; given out.json, summary
        # reads out.csv beside it.
        d = temp_dir(self)
        with open(fixture("basic.csv")) as f:
            csv = f.read()
        for name, text in (("out.csv", csv), ("out.json", '{"traceEvents": []}')):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        r = run_tool("summary", os.path.join(d, "out.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("program fixture", r.stdout)

    def test_a_json_not_from_weft(self):
        d = temp_dir(self)
        path = os.path.join(d, "out.json")
        with open(path, "w") as f:
            f.write('{"traceEvents": []}')
        r = run_tool("summary", path)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("is not a JSON trace weft wrote", r.stderr)


class SummaryRobustness(unittest.TestCase):
    """Traces that bend the format still give figures, with notes; input that
    is not a trace is exit status 2 with a message."""

    def test_no_end_rows_no_duration(self):
        # Worker 0's first row stops ULT 1: it ran from the start. No end rows
        # and no duration_ns: the trace ends at its last row (1000).
        rep = summary_json(fixture("no_end.csv"))
        w = rep["workers"][0]
        self.assertEqual(rep["trace"]["duration_ns"], 1000)
        self.assertEqual((w["busy_ns"], w["scheduler_ns"], w["idle_ns"]), (900, 100, 0))
        self.assertEqual(len(rep["notes"]), 1)
        self.assertIn("first row is a stop of ULT 1", rep["notes"][0])

    def test_rows_out_of_place_are_noted(self):
        path = write_temp(self, "t.csv", "# workers=1\n# duration_ns=300\n" + CSV_HEADER +
                          "0,0,run,1,,-1,0,\n"
                          "100,0,run,2,,-1,0,\n"       # no stop of 1
                          "200,0,wake,0,,0,0,\n"       # no sleep
                          "250,0,frobnicate,0,,0,0,\n"  # unknown event
                          "300,0,end,0,,0,0,\n")
        rep = summary_json(path)
        w = rep["workers"][0]
        self.assertEqual(w["busy_ns"], 300)
        notes = "\n".join(rep["notes"])
        self.assertIn("ULT 2 runs at 100 ns while ULT 1 still runs", notes)
        self.assertIn("wake at 200 ns without a sleep", notes)
        self.assertIn("unknown event 'frobnicate'", notes)

    def test_run_rows_are_checked(self):
        # ULT 1 runs on 0, then on 1 without a migrate row; ULT 2's first run
        # claims it last ran on worker 0; ULT 3 moves properly.
        path = write_temp(self, "t.csv", "# workers=2\n# duration_ns=100\n" + CSV_HEADER +
                          "0,0,run,1,,-1,0,\n"
                          "10,0,stop,1,,0,0,yield\n"
                          "10,0,run,3,,-1,0,\n"
                          "20,1,run,1,,0,0,\n"
                          "20,0,stop,3,,0,0,yield\n"
                          "30,0,run,2,,0,0,\n"
                          "40,1,stop,1,,0,0,exit\n"
                          "40,1,migrate,3,,0,1,\n"
                          "40,1,run,3,,0,0,\n")
        notes = summary_json(path)["notes"]
        self.assertEqual(len(notes), 2, notes)
        self.assertIn("run of ULT 1 on worker 1 at 20 ns after it ran on 0, without a migrate row",
                      notes[0])
        self.assertIn("run of ULT 2 on worker 0 at 30 ns: last ran on 0, the rows say -1",
                      notes[1])

    def test_dropped_events_warn(self):
        path = write_temp(self, "t.csv", "# workers=1\n# dropped=7\n# duration_ns=10\n" +
                          CSV_HEADER + "5,0,dropped,0,,7,0,\n10,0,end,0,,0,0,\n")
        self.assertEqual(summary_json(path)["trace"]["dropped"], 7)
        r = run_tool("summary", path)
        self.assertIn("WARNING: 7 events were dropped", r.stdout)

    def test_missing_file(self):
        r = run_tool("summary", "/nonexistent/trace.csv")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no such file", r.stderr)

    def test_not_a_trace(self):
        r = run_tool("summary", fixture("not_a_trace.csv"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("is not a weft trace CSV", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_json_alone(self):
        # No valid.csv beside it: the JSON's slices and instants are read as
        # the rows they were made from. valid.json holds part of basic.csv's
        # run: worker 1 whole, and the first contended lock.
        rep = summary_json(fixture("valid.json"))
        w1 = rep["workers"][1]
        self.assertEqual((w1["busy_ns"], w1["scheduler_ns"], w1["idle_ns"], w1["runs"],
                          w1["steals"], w1["sleeps"]), (900, 2200, 6900, 1, 1, 1))
        self.assertEqual(rep["trace"]["path"], fixture("valid.json"))
        self.assertEqual(rep["trace"]["duration_ns"], 10000)
        lk = rep["locks"][0]
        self.assertEqual((lk["address"], lk["contended"], lk["wait_total_ns"]), ("0x1000", 1, 1100))
        self.assertEqual(rep["ults_total"], 3)
        self.assertEqual(rep["notes"], [])

    def test_not_json(self):
        path = write_temp(self, "t.json", '{"otherData": {"weft_version": "1"}, "traceEvents": [')
        r = run_tool("summary", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("is not JSON", r.stderr)
        path = write_temp(self, "t.json", '{"otherData": {"weft_version": "1"}, "traceEvents": '
                          '[{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "ult", "args": {}}]}')
        r = run_tool("summary", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("an event weft-trace cannot read", r.stderr)

    def test_bad_row(self):
        path = write_temp(self, "t.csv", CSV_HEADER + "0,0,run,1,,-1,0,\nx,0,stop,1,,0,0,yield\n")
        r = run_tool("summary", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("line 3", r.stderr)

    def test_short_row(self):
        path = write_temp(self, "t.csv", CSV_HEADER + "0,0,run\n")
        r = run_tool("summary", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("expected 8 columns", r.stderr)

    def test_usage_errors(self):
        self.assertEqual(run_tool().returncode, 2)
        self.assertEqual(run_tool("frob").returncode, 2)
        self.assertEqual(run_tool("summary", "--top", "0", fixture("basic.csv")).returncode, 2)
        r = run_tool("--help")
        self.assertEqual(r.returncode, 0)
        for cmd in ("summary", "timeline", "check"):
            self.assertIn(cmd, r.stdout)
            self.assertEqual(run_tool(cmd, "-h").returncode, 0)


class SummaryLarge(unittest.TestCase):
    """A generated trace of 2 workers x 20,000 runs: figures add up exactly."""

    def test_generated(self):
        rows = []
        for w in (0, 1):
            t = 0
            for i in range(20000):
                u = 10 + (i % 50) * 2 + w
                rows.append((t, w, "run,%d,u%d,%d,0," % (u, u, -1 if i < 50 else w)))
                t += 700
                rows.append((t, w, "stop,%d,u%d,%d,0,%s" % (u, u, 64 * (i % 3),
                                                         "yield" if i % 2 else "mutex")))
                t += 300
                if i % 100 == 99:
                    rows.append((t, w, "idle,0,,0,0,"))
                    rows.append((t + 100, w, "sleep,0,,0,0,"))
                    rows.append((t + 1100, w, "wake,0,,0,0,"))
                    t += 1200
                if i % 10 == 0:
                    rows.append((t, w, "lock,%d,u%d,4096,%d,mutex" % (u, u, 50 + i % 7)))
            rows.append((t, w, "end,0,,0,0,"))
        end = max(r[0] for r in rows)
        rows.sort(key=lambda r: r[0])  # stable: per-worker order kept
        text = "# workers=2\n# duration_ns=%d\n" % end + CSV_HEADER + "".join(
            "%d,%d,%s\n" % r for r in rows)
        rep = summary_json(write_temp(self, "big.csv", text), "--top", "1000")
        per_worker_end = 20000 * 1000 + 200 * 1200
        for w in rep["workers"]:
            self.assertEqual(w["busy_ns"], 20000 * 700)
            self.assertEqual(w["idle_ns"], 200 * 1000)
            self.assertEqual(w["busy_ns"] + w["scheduler_ns"] + w["idle_ns"], end)
            self.assertEqual(w["end_ns"], per_worker_end)
            self.assertEqual((w["runs"], w["yields"], w["parks"], w["sleeps"]),
                             (20000, 10000, 10000, 200))
        self.assertEqual(rep["locks"][0]["contended"], 4000)
        self.assertEqual(sum(rep["locks"][0]["buckets"]), 4000)
        self.assertEqual(len(rep["ults"]), 100)
        self.assertEqual(rep["ults_total"], 100)
        self.assertEqual(rep["notes"], [])


if __name__ == "__main__":
    unittest.main()
