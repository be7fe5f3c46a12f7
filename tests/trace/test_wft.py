"""weft's compact trace format (.wft) read by weft-trace and weft-trace-scan.

The traces here are encoded by hand, in Python, from the description at the
top of src/trace/codec.h - not by weft - so that the format as documented is
what the reader reads. hand_trace() is a 10 us run on 2 workers:

worker 0 (raw clock = 1000 + ns; ns_per_tick 1)
     0  the root ULT 1 runs (its first run: last worker -1)
   100  ULT 1 creates ULT 2
   500  1 yields, 2 runs                      run 1: 500 ns
  1500  2 takes mutex 0x1000 after 300 ns
  2000  2 exits, the loop                     run 2: 1500 ns
  2100  1 runs again (last ran on 0)
  4000  1 sleeps (park, reason sleep)         run 1: 1900 ns
  4100  the loop sleeps ... 7000 wakes        idle 2900 ns
worker 1
   200  sleeps ... 9000 wakes                 idle 8800 ns
"""

import os
import struct
import subprocess
import unittest

from wtt import SCAN, fixture, have_matplotlib, png_size, run_tool, scan, temp_dir, write_temp

SWITCH, CREATE, NAME, UNPARK, STEAL, SLEEP, WAKE, LOCK = range(1, 9)
AFTER_REQUEUE, AFTER_PARK, AFTER_EXIT = 1, 2, 4
BLOCK_SLEEP = 8
WIDTHS = [0, 1, 4, 8]


def zigzag(v):
    return (v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1


def record(dt, kind, code=0, x=0, a=0, b=0, c=0):
    tag = kind
    out = b""
    for i, v in enumerate((zigzag(dt), code, zigzag(x), a, b, c)):
        k = 0 if v == 0 else 1 if v <= 0xff else 2 if v <= 0xffffffff else 3
        tag |= k << (4 + 2 * i)
        out += v.to_bytes(WIDTHS[k], "little")
    return struct.pack("<H", tag) + out


def stream(records):
    """Records [(ts, kind, fields...)] of one stream: timestamps as deltas."""
    out, last = b"", 0
    for ts, kind, *fields in records:
        out += record(ts - last, kind, *fields)
        last = ts
    return out


def chunk(stream_id, data):
    return struct.pack("<IiII", 0x43544657, stream_id, len(data), 0) + data


META = ("version=test\nprogram=hand\npid=77\nworkers=2\nsched=steal\nclock=monotonic\n"
        "t0=1000\nns_per_tick=1\nduration_ns=10000\ndropped=0\ncomplete=1\n")


def hand_trace(meta=META, split=False):
    w0 = [(1000, SWITCH, 0, -1, 0, 1),
          (1100, CREATE, 0, -1, 2, 1),
          (1500, SWITCH, AFTER_REQUEUE, -1, 1, 2),
          (2500, LOCK, 1, 0, 0x1000, 300),
          (3000, SWITCH, AFTER_EXIT, 0, 2, 0),
          (3100, SWITCH, 0, 0, 0, 1),
          (5000, SWITCH, AFTER_PARK | BLOCK_SLEEP << 8, 0, 1, 0, 0),
          (5100, SLEEP),
          (8000, WAKE)]
    w1 = [(1200, SLEEP), (10000, WAKE)]
    body = b"WEFT-TRC" + struct.pack("<II", 1, 0)
    if split:  # worker 0's records in two chunks, worker 1's between them
        body += chunk(0, stream(w0[:4])) + chunk(1, stream(w1)) + chunk(0, stream(w0[4:]))
    else:
        body += chunk(0, stream(w0)) + chunk(1, stream(w1))
    if meta is not None:
        body += chunk(-2, meta.encode())
    return body


def write_bytes(testcase, name, data):
    path = os.path.join(temp_dir(testcase), name)
    with open(path, "wb") as f:
        f.write(data)
    return path


class WftRead(unittest.TestCase):
    def summary(self, data):
        r = run_tool("summary", "--json", write_bytes(self, "t.wft", data))
        self.assertEqual(r.returncode, 0, r.stderr)
        import json
        return json.loads(r.stdout)

    def test_summary_figures(self):
        for split in (False, True):
            rep = self.summary(hand_trace(split=split))
            self.assertEqual(rep["notes"], [])
            tr = rep["trace"]
            self.assertEqual((tr["program"], tr["pid"], tr["workers"], tr["sched"], tr["clock"],
                              tr["duration_ns"]), ("hand", 77, 2, "steal", "monotonic", 10000))
            w0, w1 = rep["workers"]
            self.assertEqual((w0["busy_ns"], w0["idle_ns"], w0["scheduler_ns"]),
                             (500 + 1500 + 1900, 2900, 10000 - 3900 - 2900))
            self.assertEqual((w0["runs"], w0["yields"], w0["parks"], w0["exits"],
                              w0["creates"], w0["sleeps"]), (3, 1, 1, 1, 1, 1))
            self.assertEqual((w1["busy_ns"], w1["idle_ns"], w1["runs"]), (0, 8800, 0))
            lk = rep["locks"][0]
            self.assertEqual((lk["address"], lk["kind"], lk["contended"], lk["wait_total_ns"]),
                             ("0x1000", "mutex", 1, 300))
            self.assertEqual(rep["blocked"]["yield"]["total_ns"], 2100 - 500)
            self.assertEqual(rep["blocked"]["sleep"]["still_blocked_at_end"], 1)
            ults = {u["ult"]: u for u in rep["ults"]}
            self.assertEqual((ults[2]["busy_ns"], ults[2]["creator"], ults[2]["exited"]),
                             (1500, 1, True))
            self.assertEqual(ults[1]["busy_ns"], 2400)

    def test_csv_rows(self):
        path = write_bytes(self, "t.wft", hand_trace())
        r = subprocess.run([SCAN, "csv", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [line for line in r.stdout.splitlines() if not line.startswith("#")]
        self.assertEqual(rows[0], "time_ns,worker,event,ult,name,arg1,arg2,detail")
        self.assertIn("0,0,run,1,,-1,0,", rows)
        self.assertIn("100,0,create,2,,1,-1,", rows)
        self.assertIn("500,0,stop,1,,0,0,yield", rows)
        self.assertIn("1500,0,lock,2,,4096,300,mutex", rows)
        self.assertIn("2000,0,stop,2,,0,0,exit", rows)
        self.assertIn("4000,0,stop,1,,0,0,sleep", rows)
        self.assertEqual(rows[-3:], ["10000,0,end,0,,0,0,", "10000,1,end,0,,0,0,",
                                     "10000,-1,end,0,,0,0,"])
        self.assertIn("# program=hand", r.stdout)

    def test_convert(self):
        d = temp_dir(self)
        src = os.path.join(d, "t.wft")
        with open(src, "wb") as f:
            f.write(hand_trace())
        for name in ("t.csv", "t.json"):
            out = os.path.join(d, name)
            r = run_tool("convert", src, "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(d, "t.csv")) as f:
            self.assertIn("500,0,stop,1,,0,0,yield", f.read())
        r = run_tool("check", os.path.join(d, "t.json"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # check given the .wft reads the JSON beside it ...
        r = run_tool("check", src)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("t.json", r.stdout)
        # ... and without one says how to make it.
        os.remove(os.path.join(d, "t.json"))
        r = run_tool("check", src)
        self.assertEqual(r.returncode, 2)
        self.assertIn("weft-trace convert", r.stderr)
        # The prefix finds the .wft; check names the JSON beside a .wft.
        r = run_tool("summary", os.path.join(d, "t"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("program hand", r.stdout)

    @unittest.skipUnless(have_matplotlib(), "matplotlib is not installed (python3-matplotlib)")
    def test_timeline(self):
        path = write_bytes(self, "t.wft", hand_trace())
        out = os.path.join(temp_dir(self), "t.png")
        r = run_tool("timeline", path, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("3 ULT runs", r.stdout)
        self.assertIsNotNone(png_size(out))


class WftUnfinished(unittest.TestCase):
    """What a program that died while tracing leaves - the chunks flushed so
    far, the last perhaps cut off, no meta chunk - is read, with a note."""

    def check(self, data):
        path = write_bytes(self, "t.wft", data)
        r = run_tool("summary", "--json", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        import json
        rep = json.loads(r.stdout)
        self.assertEqual(len(rep["notes"]), 1, rep["notes"])
        self.assertIn("unfinished trace", rep["notes"][0])
        self.assertEqual(rep["trace"]["clock"], "raw")
        self.assertEqual(rep["trace"]["workers"], 2)  # the streams in the file
        return rep

    def test_no_meta_chunk(self):
        rep = self.check(hand_trace(meta=None))
        # Times from the first record (raw 1000), as the meta chunk's t0.
        w0 = rep["workers"][0]
        self.assertEqual((w0["busy_ns"], w0["idle_ns"], w0["runs"]), (3900, 2900, 3))
        self.assertEqual(rep["trace"]["duration_ns"], 9000)  # the last record

    def test_cut_inside_the_last_chunk(self):
        data = hand_trace(meta=None, split=True)
        rep = self.check(data[:len(data) - 5])  # worker 0's second chunk is cut off
        self.assertEqual(rep["workers"][0]["runs"], 2)  # its first chunk: 2 runs
        # The cut meta chunk of a finished trace: the same.
        data = hand_trace()
        self.check(data[:len(data) - 30])

    def test_csv_of_it(self):
        path = write_bytes(self, "t.wft", hand_trace(meta=None))
        r = subprocess.run([SCAN, "csv", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("# clock=raw", r.stdout)
        self.assertIn("500,0,stop,1,,0,0,yield", r.stdout)


class WftInput(unittest.TestCase):
    """Damaged .wft files are exit status 2 with a message, never a crash."""

    def fails(self, data, want, *cmd):
        path = write_bytes(self, "t.wft", data)
        for args in (("summary", path), ("timeline", path, "-o", path + ".png")) + cmd:
            r = run_tool(*args)
            self.assertEqual(r.returncode, 2, "%s: %s %s" % (args, r.stdout, r.stderr))
            self.assertIn(want, r.stderr, args)
        r = subprocess.run([SCAN, "csv", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stdout)

    def test_meta_without_workers(self):
        self.fails(hand_trace(meta="program=x\nclock=tsc\n"), "not a complete weft trace")

    def test_truncated(self):
        data = hand_trace()
        self.fails(data[:12], "not a complete weft trace")  # magic, half a version
        self.fails(data[:5], "not a weft trace CSV")  # not even the magic: read as CSV

    def test_record_cut_inside_a_chunk(self):
        data = bytearray(hand_trace())
        # Worker 0's chunk claims 3 bytes fewer: its last record is cut.
        n = struct.unpack_from("<I", data, 16 + 8)[0]
        struct.pack_into("<I", data, 16 + 8, n - 3)
        # ... and the 3 bytes become a chunk header's worth of garbage.
        self.fails(bytes(data), "not a complete weft trace")

    def test_stream_out_of_range(self):
        data = bytearray(hand_trace())
        struct.pack_into("<i", data, 16 + 4, 5)  # worker 5 of 2
        self.fails(bytes(data), "not a complete weft trace")

    def test_wrong_version(self):
        data = bytearray(hand_trace())
        struct.pack_into("<I", data, 8, 99)
        self.fails(bytes(data), "not a complete weft trace")

    def test_convert_input_and_output(self):
        d = temp_dir(self)
        r = run_tool("convert", fixture("basic.csv"), "-o", os.path.join(d, "x.json"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("is not a .wft trace", r.stderr)
        path = write_bytes(self, "t.wft", hand_trace())
        r = run_tool("convert", path, "-o", os.path.join(d, "x.txt"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("must end in .json or .csv", r.stderr)
        bad = bytearray(hand_trace())
        struct.pack_into("<i", bad, 16 + 4, 5)  # worker 5 of 2
        r = run_tool("convert", write_bytes(self, "bad.wft", bytes(bad)), "-o",
                     os.path.join(d, "y.csv"))
        self.assertEqual(r.returncode, 2)
        self.assertEqual(sorted(os.listdir(d)), [])  # nothing half-written left

    def test_scan_usage(self):
        for args in ((), ("frob", "x"), ("summary",), ("summary", "--top", "0", "x"),
                     ("summary", "--top"), ("summary", "a", "b"), ("summary", "--bogus", "x"),
                     ("timeline", "--start", "5", "--end", "5", fixture("basic.csv"))):
            r = subprocess.run([SCAN] + list(args), capture_output=True, text=True)
            self.assertEqual(r.returncode, 2, args)
            self.assertTrue(r.stderr, args)
        r = subprocess.run([SCAN, "summary", "/nonexistent.wft"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("No such file", r.stderr)
        r = subprocess.run([SCAN, "csv", fixture("basic.csv")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("is not a .wft trace", r.stderr)
        self.assertEqual(subprocess.run([SCAN, "--help"], capture_output=True).returncode, 0)


if __name__ == "__main__":
    unittest.main()
