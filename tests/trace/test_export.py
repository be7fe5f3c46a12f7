"""weft-trace export: bad input and bad output names are errors (exit 2),
never a crash, and leave no file behind. (That a good export is a valid
Perfetto trace is test_perfetto.py's part: it needs Perfetto's protos.)"""

import os
import unittest

from wtt import CSV_HEADER, fixture, run_tool, temp_dir, write_temp


class ExportInput(unittest.TestCase):
    def test_output_name_must_say_perfetto(self):
        d = temp_dir(self)
        out = os.path.join(d, "t.json")
        r = run_tool("export", fixture("basic.csv"), "-o", out)
        self.assertEqual(r.returncode, 2)
        self.assertIn(".pftrace", r.stderr)
        self.assertFalse(os.path.exists(out))

    def test_missing_or_foreign_input(self):
        d = temp_dir(self)
        out = os.path.join(d, "t.pftrace")
        self.assertEqual(run_tool("export", os.path.join(d, "none.csv"), "-o", out).returncode, 2)
        path = write_temp(self, "x.csv", "not,a,trace\n")
        r = run_tool("export", path, "-o", out)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a weft trace CSV", r.stderr)
        self.assertEqual(os.listdir(d), [])

    def test_bad_row_leaves_nothing(self):
        d = temp_dir(self)
        out = os.path.join(d, "t.pftrace")
        path = write_temp(self, "t.csv", CSV_HEADER + "0,0,run,1,,-1,0,\nx,0,stop,1,,0,0,yield\n")
        r = run_tool("export", path, "-o", out)
        self.assertEqual(r.returncode, 2)
        self.assertIn("line 3", r.stderr)
        self.assertEqual(os.listdir(d), [])

    def test_unwritable_output(self):
        r = run_tool("export", fixture("basic.csv"), "-o", "/nonexistent/dir/t.pftrace")
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/dir/t.pftrace", r.stderr)

    def test_good_export_writes_the_file(self):
        d = temp_dir(self)
        out = os.path.join(d, "t.pftrace")
        r = run_tool("export", fixture("basic.csv"), "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(os.path.getsize(out), 0)
        self.assertEqual(os.listdir(d), ["t.pftrace"])


if __name__ == "__main__":
    unittest.main()
