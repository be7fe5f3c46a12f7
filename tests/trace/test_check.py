"""weft-trace check: fixtures/valid.json passes; each test then breaks one
thing in a copy of it and expects exit status 1 and a message naming the
defect. Input that is not a trace at all is exit status 2.

The fixture's layout (times in us): worker 0 (tid 0) runs main [0, 1.0),
beta [1.1, 3.0), alpha [3.1, 4.0), beta [5.1, 6.0), idle [8.1, 9.1) with
sleep [8.2, 9.0) inside, a zero-length slice at 9.05, main [9.1, 9.8);
worker 1 (tid 1) idle [0, 1.1), alpha [1.1, 2.0), idle [2.1, 10.0) with sleep
[2.6, 9.5) inside. Wake flow 1 goes from 2.5 (in beta, tid 0) to 3.1 (alpha's
start), flow 2 from 3.8 (in alpha) to 5.1 (beta's start).
"""

import copy
import json
import unittest

from wtt import fixture, run_tool, write_temp

with open(fixture("valid.json")) as f:
    VALID = json.load(f)


def event(doc, **match):
    """The first event of doc with all the given key/values."""
    for ev in doc["traceEvents"]:
        if all(ev.get(k) == v for k, v in match.items()):
            return ev
    raise KeyError(match)


class CheckCase(unittest.TestCase):
    def check(self, doc):
        path = write_temp(self, "t.json", json.dumps(doc))
        return run_tool("check", path)

    def assert_rejected(self, doc, *messages):
        r = self.check(doc)
        self.assertEqual(r.returncode, 1, "check accepted it:\n" + r.stdout + r.stderr)
        for m in messages:
            self.assertIn(m, r.stdout)
        return r

    def broken(self):
        return copy.deepcopy(VALID)


class CheckValid(CheckCase):
    def test_valid_fixture(self):
        r = run_tool("check", fixture("valid.json"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("25 events, valid", r.stdout)

    def test_bare_list(self):
        r = self.check(VALID["traceEvents"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_prefix_reads_the_json(self):
        r = run_tool("check", fixture("valid"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_the_csv_of_the_pair_reads_the_json(self):
        # Given out.csv, check reads out.json beside it.
        path = write_temp(self, "out.json", json.dumps(VALID))
        with open(path[:-len(".json")] + ".csv", "w") as f:
            f.write("time_ns,worker,event,ult,name,arg1,arg2,detail\n")
        r = run_tool("check", path[:-len(".json")] + ".csv")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("25 events, valid", r.stdout)

    def test_empty_trace(self):
        r = self.check({"traceEvents": []})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_flow_end_binding_to_the_next_slice(self):
        # Without bp "e" a flow end binds to the next slice on its thread.
        doc = self.broken()
        f = event(doc, ph="f", id=1)
        del f["bp"]
        f["ts"] = 3.05
        r = self.check(doc)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class CheckNesting(CheckCase):
    def test_partial_overlap(self):
        # Starts inside worker 1's sleep [2.6, 9.5) and ends after it.
        doc = self.broken()
        doc["traceEvents"].append({"ph": "X", "pid": 4242, "tid": 1, "ts": 9.0, "dur": 0.8,
                                   "name": "late", "cat": "ult"})
        self.assert_rejected(doc, "overlaps slice", "without nesting", "tid 1")

    def test_overlap_of_neighbours(self):
        # main [0, 1.0) made longer than the gap before beta at 1.1.
        doc = self.broken()
        event(doc, ph="X", name="main", ts=0)["dur"] = 1.2
        self.assert_rejected(doc, "overlaps slice")

    def test_touching_slices_are_fine(self):
        doc = self.broken()
        event(doc, ph="X", name="main", ts=0)["dur"] = 1.1  # ends where beta starts
        self.assertEqual(self.check(doc).returncode, 0)

    def test_same_slice_on_another_thread_is_fine(self):
        doc = self.broken()
        doc["traceEvents"].append({"ph": "X", "pid": 4242, "tid": 7, "ts": 0.5, "dur": 5,
                                   "name": "elsewhere"})
        self.assertEqual(self.check(doc).returncode, 0)


class CheckFlows(CheckCase):
    def test_dangling_flow_end(self):
        doc = self.broken()
        doc["traceEvents"].append({"ph": "f", "bp": "e", "id": 99, "name": "wake",
                                   "cat": "wake", "pid": 4242, "tid": 0, "ts": 3.5})
        self.assert_rejected(doc, "flow end without a start")

    def test_flow_end_matching_another_category(self):
        doc = self.broken()
        event(doc, ph="f", id=1)["cat"] = "other"
        self.assert_rejected(doc, "flow end without a start")

    def test_flow_end_before_its_start(self):
        doc = self.broken()
        event(doc, ph="s", id=1)["ts"] = 3.5  # inside alpha [3.1, 4.0), after the end
        self.assert_rejected(doc, "flow end before its start")

    def test_flow_start_outside_a_slice(self):
        # 1.05 on tid 0: after main [0, 1.0), before beta [1.1, 3.0).
        doc = self.broken()
        event(doc, ph="s", id=1)["ts"] = 1.05
        self.assert_rejected(doc, "flow start outside every X slice", "tid 0")

    def test_flow_start_at_a_slice_end(self):
        # A slice is closed at its end time: 3.0 is beta's end, not inside it.
        doc = self.broken()
        event(doc, ph="s", id=1)["ts"] = 3.0
        self.assert_rejected(doc, "flow start outside every X slice")

    def test_flow_end_outside_a_slice(self):
        # Flow 2 ends at 4.5 on tid 0: between alpha (ends 4.0) and beta (5.1).
        doc = self.broken()
        event(doc, ph="f", id=2)["ts"] = 4.5
        self.assert_rejected(doc, "flow end outside every X slice")

    def test_flow_on_a_thread_without_slices(self):
        # A wake from a foreign thread (tid 1000 has no slices) is dropped.
        doc = self.broken()
        event(doc, ph="s", id=2)["tid"] = 1000
        self.assert_rejected(doc, "flow start outside every X slice", "tid 1000")

    def test_flow_in_a_nested_slice(self):
        # 9.2 on tid 1 is inside idle [2.1, 10.0) and sleep [2.6, 9.5).
        doc = self.broken()
        doc["traceEvents"].append({"ph": "s", "id": 5, "name": "wake", "cat": "wake",
                                   "pid": 4242, "tid": 1, "ts": 9.2})
        self.assertEqual(self.check(doc).returncode, 0)

    def test_flow_at_a_zero_length_slice(self):
        doc = self.broken()
        doc["traceEvents"].append({"ph": "s", "id": 6, "name": "wake", "cat": "wake",
                                   "pid": 4242, "tid": 0, "ts": 9.05})
        self.assertEqual(self.check(doc).returncode, 0)

    def test_flow_end_without_a_next_slice(self):
        doc = self.broken()
        f = event(doc, ph="f", id=2)
        del f["bp"]
        f["ts"] = 20.0
        self.assert_rejected(doc, "no slice beginning at or after it")


class CheckFields(CheckCase):
    def test_missing_key(self):
        doc = self.broken()
        del event(doc, ph="X", name="beta", ts=1.1)["dur"]
        self.assert_rejected(doc, "ph X without 'dur'")

    def test_missing_flow_id(self):
        doc = self.broken()
        del event(doc, ph="s", id=2)["id"]
        self.assert_rejected(doc, "ph s without 'id'")

    def test_missing_instant_name(self):
        doc = self.broken()
        del event(doc, ph="i", name="steal")["name"]
        self.assert_rejected(doc, "ph i without 'name'")

    def test_number_as_string(self):
        doc = self.broken()
        event(doc, ph="X", name="alpha", ts=3.1)["ts"] = "3.1"
        self.assert_rejected(doc, "'ts' is not a number")

    def test_negative_duration(self):
        doc = self.broken()
        event(doc, ph="X", name="alpha", ts=3.1)["dur"] = -0.1
        self.assert_rejected(doc, "negative dur")

    def test_unknown_ph(self):
        doc = self.broken()
        doc["traceEvents"].append({"ph": "Q", "ts": 1, "pid": 1, "tid": 1, "name": "q"})
        self.assert_rejected(doc, "unknown or missing ph 'Q'")

    def test_missing_ph(self):
        doc = self.broken()
        del event(doc, ph="i", name="lock")["ph"]
        self.assert_rejected(doc, "unknown or missing ph None")

    def test_bad_metadata(self):
        doc = self.broken()
        event(doc, ph="M", name="thread_name", tid=1)["name"] = "thread_title"
        self.assert_rejected(doc, "unknown metadata name 'thread_title'")

    def test_metadata_without_args(self):
        doc = self.broken()
        del event(doc, ph="M", name="process_name")["args"]
        self.assert_rejected(doc, "metadata without an args object")

    def test_event_not_an_object(self):
        doc = self.broken()
        doc["traceEvents"].append(17)
        self.assert_rejected(doc, "not an object")

    def test_first_problems_listed(self):
        doc = self.broken()
        doc["traceEvents"] += [{"ph": "Q", "ts": i} for i in range(12)]
        self.assert_rejected(doc, "12 problems in 37 events", "... and 2 more")
        r = run_tool("check", "--max-problems", "2", write_temp(self, "t.json", json.dumps(doc)))
        self.assertIn("... and 10 more", r.stdout)


class CheckInput(CheckCase):
    def test_not_json(self):
        with open(fixture("basic.csv")) as f:
            path = write_temp(self, "t.json", f.read())
        r = run_tool("check", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("is not JSON", r.stderr)

    def test_csv_without_its_json_names_the_json(self):
        r = run_tool("check", fixture("basic.csv"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("is the CSV trace", r.stderr)
        self.assertIn("basic.json", r.stderr)

    def test_object_without_trace_events(self):
        r = self.check({"events": []})
        self.assertEqual(r.returncode, 2)
        self.assertIn("without a traceEvents list", r.stderr)

    def test_scalar(self):
        r = self.check(3)
        self.assertEqual(r.returncode, 2)

    def test_missing_file(self):
        r = run_tool("check", "/nonexistent/x.json")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no such file", r.stderr)


if __name__ == "__main__":
    unittest.main()
