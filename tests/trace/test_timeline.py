"""weft-trace timeline: writes a PNG (checked by its signature and size), the
load view for large runs or with --load, and the load figures themselves
(computed by weft-trace-scan, run here directly)."""

import importlib.machinery
import importlib.util
import os
import unittest

from wtt import CSV_HEADER, TOOL, fixture, have_matplotlib, png_size, run_tool, scan, \
    temp_dir, write_temp


def load_tool():
    """tools/weft-trace as a module (it has no .py suffix)."""
    loader = importlib.machinery.SourceFileLoader("weft_trace", TOOL)
    spec = importlib.util.spec_from_loader("weft_trace", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


@unittest.skipUnless(have_matplotlib(), "matplotlib is not installed (python3-matplotlib)")
class TimelinePng(unittest.TestCase):
    def draw(self, *args, trace=None):
        out = os.path.join(temp_dir(self), "t.png")
        r = run_tool("timeline", trace or fixture("basic.csv"), "-o", out, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        size = png_size(out)
        self.assertIsNotNone(size, "not a PNG: " + out)
        return size, r

    def test_lanes(self):
        (w, h), r = self.draw()
        self.assertGreaterEqual(w, 600)
        self.assertGreaterEqual(h, 150)
        self.assertIn("8 ULT runs", r.stdout)
        self.assertNotIn("load view", r.stdout)

    def test_load_view_adds_a_panel(self):
        (_, h_lanes), _ = self.draw()
        (_, h_both), r = self.draw("--load")
        self.assertGreater(h_both, h_lanes)
        self.assertIn("load view", r.stdout)

    def test_window(self):
        _, r = self.draw("--start", "0.004", "--end", "0.007")
        self.assertIn("3 ULT runs", r.stdout)  # main 4100, beta 5100, main 6100

    def test_many_slices_give_the_load_view_only(self):
        _, r = self.draw("--max-slices", "3")
        self.assertIn("load over time only", r.stderr)
        self.assertIn("load view", r.stdout)

    def test_many_workers(self):
        rows = "".join("%d,%d,run,%d,,-1,0,\n%d,%d,stop,%d,,0,0,exit\n"
                       % (10 * w, w, w + 1, 10 * w + 500, w, w + 1) for w in range(16))
        path = write_temp(self, "t.csv", "# workers=16\n# duration_ns=1000\n" + CSV_HEADER + rows)
        self.draw(trace=path)

    def test_bad_window(self):
        r = run_tool("timeline", fixture("basic.csv"), "-o", os.path.join(temp_dir(self), "x.png"),
                     "--start", "5", "--end", "1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--end must be after --start", r.stderr)

    def test_unwritable_output(self):
        r = run_tool("timeline", fixture("basic.csv"), "-o", "/nonexistent/dir/x.png")
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/dir/x.png", r.stderr)

    def test_output_required(self):
        self.assertEqual(run_tool("timeline", fixture("basic.csv")).returncode, 2)


class TimelineFigures(unittest.TestCase):
    """The load figures and the window, from weft-trace-scan (which reads the
    trace for weft-trace), and the colours, from the tool's own function."""

    @classmethod
    def setUpClass(cls):
        cls.wt = load_tool()

    def test_load_bins(self):
        # basic.csv in 10 bins of 1000 ns (its runs are listed in test_summary.py):
        # worker 0 runs main 0-1000, beta 1100-3000, alpha 3100-4000, ...
        tl = scan("timeline", "--load", "--bins", "10", fixture("basic.csv"))
        self.assertEqual(tl["load"]["width_ns"], 1000)
        bins = tl["load"]["bins"]
        self.assertEqual([round(x, 3) for x in bins["0"]],
                         [1.0, 0.9, 1.0, 0.9, 0.9, 0.9, 0.9, 1.0, 0.0, 0.7])
        self.assertEqual([round(x, 3) for x in bins["1"]],
                         [0.0, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
        self.assertEqual(tl["n_slices"], 8)

    def test_window_clips(self):
        tl = scan("timeline", "--start", "4500", "--end", "6500", fixture("basic.csv"))
        runs = [(t0, t1, u) for w, state, t0, t1, u in tl["lanes"] if w == 0 and state == "run"]
        self.assertEqual(runs, [(4500, 5000, 1), (5100, 6000, 3), (6100, 6500, 1)])
        self.assertIsNone(tl["load"])
        self.assertEqual(tl["names"]["1"], "main")

    def test_too_many_runs_keep_only_the_load(self):
        tl = scan("timeline", "--max-slices", "7", fixture("basic.csv"))
        self.assertIsNone(tl["lanes"])
        self.assertEqual(len(tl["load"]["bins"]["0"]), 200)

    def test_colours_are_stable_and_spread(self):
        c = self.wt.ult_colour
        self.assertEqual(c(42), c(42))
        self.assertEqual(len({c(u) for u in range(1, 9)}), 8)  # neighbours differ
        self.assertNotIn(self.wt.SCHED_COLOUR, {c(u) for u in range(1000)})


if __name__ == "__main__":
    unittest.main()
