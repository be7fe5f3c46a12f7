"""weft-trace export: a traced run of trace_workload converted to Perfetto's
protobuf format, read back with Perfetto's own schema - the Python classes
generated from Perfetto's published protos (the `perfetto` package on PyPI,
with Google's `protobuf` runtime) - and checked against the CSV it came
from.

Usage: test_perfetto.py WORKLOAD OUT_PREFIX   (WEFT_TRACE_TOOL names the
tool; WEFT_TRACE_PYTHON the interpreter that runs it, as a user's shell
would: Debian's python3). Exit 77 (ctest: skipped) when the perfetto or
protobuf package is not installed for this interpreter
(scripts/install-deps.sh installs both)."""

import csv
import os
import subprocess
import sys

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:
    print("SKIP: Perfetto's protos are not importable here (%s): pip install perfetto protobuf"
          % e)
    sys.exit(77)

TOOL = os.environ["WEFT_TRACE_TOOL"]
TOOL_PYTHON = os.environ.get("WEFT_TRACE_PYTHON", sys.executable)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    workload, prefix = sys.argv[1], sys.argv[2]
    for ext in (".csv", ".json", ".wft", ".pftrace", ".wft.pftrace", ".csv.pftrace"):
        if os.path.exists(prefix + ext):
            os.remove(prefix + ext)
    # The runtime writes prefix.pftrace itself; weft-trace export makes one
    # from the CSV and one from the .wft of the same run.
    r = subprocess.run([workload], env=dict(os.environ, WEFT_TRACE=prefix,
                                            WEFT_TRACE_FORMAT="csv,wft,pftrace"),
                       capture_output=True, text=True, timeout=90)
    if r.returncode != 0 or not os.path.isfile(prefix + ".csv"):
        fail("trace_workload exited %d without %s.csv: %s%s"
             % (r.returncode, prefix, r.stdout, r.stderr))
    r = subprocess.run([TOOL_PYTHON, TOOL, "export", prefix + ".csv", "-o",
                        prefix + ".csv.pftrace"], capture_output=True, text=True, timeout=120)
    print(r.stdout + r.stderr, end="")
    if r.returncode != 0:
        fail("weft-trace export exited %d" % r.returncode)
    # The same run's .wft exports to the same bytes.
    r = subprocess.run([TOOL_PYTHON, TOOL, "export", prefix + ".wft", "-o",
                        prefix + ".wft.pftrace"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail("weft-trace export of the .wft exited %d: %s" % (r.returncode, r.stderr))
    for other in (".csv.pftrace", ".wft.pftrace"):
        with open(prefix + ".pftrace", "rb") as a, open(prefix + other, "rb") as b:
            if a.read() != b.read():
                fail("%s.pftrace (the runtime's) and %s%s (weft-trace export's) differ"
                     % (prefix, prefix, other))

    # The CSV: workers, ULT names, runs.
    workers, runs, unparks, names = set(), 0, 0, {}
    with open(prefix + ".csv") as f:
        rows = (line for line in f if not line.startswith("#"))
        for row in csv.DictReader(rows):
            w, ev, ult = int(row["worker"]), row["event"], int(row["ult"])
            if w >= 0:
                workers.add(w)
            if row["name"]:
                names[ult] = row["name"]
            runs += ev == "run"
            unparks += ev == "unpark"

    trace = pb.Trace()
    with open(prefix + ".pftrace", "rb") as f:
        trace.ParseFromString(f.read())  # raises on anything that is not a Trace
    if not trace.packet:
        fail("no packets")
    if not trace.packet[0].sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
        fail("the first packet does not clear the sequence's incremental state")

    tracks, iids, flows, open_, names_seen = {}, {}, set(), {}, set()
    last_ts, slices, ended_flows, counters = 0, 0, 0, 0
    for i, p in enumerate(trace.packet):
        if p.trusted_packet_sequence_id != 1:
            fail("packet %d on sequence %d" % (i, p.trusted_packet_sequence_id))
        for en in p.interned_data.event_names:
            iids[en.iid] = en.name
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            if td.parent_uuid and td.parent_uuid not in tracks:
                fail("track %d's parent %d is not described before it" % (td.uuid, td.parent_uuid))
            tracks[td.uuid] = td
            continue
        if not p.HasField("track_event"):
            fail("packet %d has neither a track descriptor nor a track event" % i)
        if p.timestamp < last_ts:
            fail("packet %d goes back in time (%d < %d)" % (i, p.timestamp, last_ts))
        last_ts = p.timestamp
        te = p.track_event
        if te.track_uuid not in tracks:
            fail("packet %d is on track %d, never described" % (i, te.track_uuid))
        if te.HasField("name_iid") and te.name_iid not in iids:
            fail("packet %d names iid %d, never interned" % (i, te.name_iid))
        # A name is interned (name_iid) or the event's own (name: "ult ID").
        name = te.name if te.HasField("name") else iids.get(te.name_iid)
        stack = open_.setdefault(te.track_uuid, [])
        if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            if not name:
                fail("packet %d begins a slice without a name" % i)
            stack.append(name)
            names_seen.add(name)
            slices += 1
        elif te.type == pb.TrackEvent.TYPE_SLICE_END:
            if not stack:
                fail("packet %d ends a slice on track %d where none is open" % (i, te.track_uuid))
            stack.pop()
        elif te.type == pb.TrackEvent.TYPE_COUNTER:
            counters += 1
            if not 0 <= te.counter_value <= len(workers):
                fail("busy workers %d of %d" % (te.counter_value, len(workers)))
        flows.update(te.flow_ids)
        for fid in te.terminating_flow_ids:
            if fid not in flows:
                fail("packet %d ends flow %d, never started" % (i, fid))
            ended_flows += 1
    for uuid, stack in open_.items():
        if stack:
            fail("track %d ends with slices open: %s" % (uuid, stack))

    thread_tracks = [t for t in tracks.values() if t.HasField("thread")]
    worker_names = {t.thread.thread_name for t in thread_tracks}
    for w in workers:
        if "worker %d" % w not in worker_names:
            fail("no track for worker %d (tracks: %s)" % (w, sorted(worker_names)))
    run_slices = slices - sum(1 for p in trace.packet
                              if p.HasField("track_event")
                              and p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN
                              and not p.track_event.HasField("name")
                              and iids.get(p.track_event.name_iid) in ("idle", "sleep"))
    if run_slices != runs:
        fail("%d run slices for %d run rows" % (run_slices, runs))
    for ult, name in names.items():
        if name not in names_seen:
            fail("ULT %d's name %r names no slice" % (ult, name))
    if len(flows) != unparks or not ended_flows or not counters:
        fail("%d flows for %d unparks, %d ended, %d counter values"
             % (len(flows), unparks, ended_flows, counters))
    print("ok: %d packets, %d tracks, %d slices (%d runs), %d flows (%d ended), %d names"
          % (len(trace.packet), len(tracks), slices, runs, len(flows), ended_flows, len(iids)))


if __name__ == "__main__":
    main()
