"""Helpers shared by the weft-trace tests: where the tool and the fixtures
are, and running the tool the way a user does (a separate process, exit
status and output checked)."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
# CMake passes the tool's path; run by hand, the one in this source tree.
TOOL = os.environ.get("WEFT_TRACE_TOOL") or os.path.join(HERE, "..", "..", "tools", "weft-trace")

# weft-trace-scan, the C reader behind weft-trace: CMake passes its path.
SCAN = os.environ.get("WEFT_TRACE_SCAN") or "weft-trace-scan"

# The columns of every CSV trace, for traces the tests write themselves.
CSV_HEADER = "time_ns,worker,event,ult,name,arg1,arg2,detail\n"


def fixture(name):
    return os.path.join(FIXTURES, name)


def run_tool(*args, timeout=120):
    """Run weft-trace with args under this interpreter; the CompletedProcess."""
    return subprocess.run([sys.executable, TOOL] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


def scan(*args, timeout=120):
    """Run weft-trace-scan with args; its JSON output, parsed (it must succeed)."""
    import json
    r = subprocess.run([SCAN] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        raise AssertionError("weft-trace-scan %s exited %d: %s" % (args, r.returncode, r.stderr))
    return json.loads(r.stdout)


def write_temp(testcase, name, text):
    """Write text to a file called name in a directory removed after the test."""
    d = tempfile.TemporaryDirectory(prefix="weft-trace-test-")
    testcase.addCleanup(d.cleanup)
    path = os.path.join(d.name, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def temp_dir(testcase):
    d = tempfile.TemporaryDirectory(prefix="weft-trace-test-")
    testcase.addCleanup(d.cleanup)
    return d.name


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


def png_size(path):
    """(width, height) of a PNG file, or None if it is not one: the 8-byte
    signature, then the IHDR chunk with the size as two big-endian ints."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
