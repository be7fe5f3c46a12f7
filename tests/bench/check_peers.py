#!/usr/bin/env python3
"""`weft-bench peers --quick`: every peer built into weft-bench measures
its rows without an error, and the report names the peers left out.

Usage: check_peers.py WEFT_BENCH PEER...   (PEER: the systems that must
have rows, e.g. state-threads go go-chan; none when none was built)
Exit status 0 when every row of weft-asm and of each PEER has a positive
median and no error, each PEER has at least one row, and (with go) a
weft-peer-go that cannot be run gives an error row, not a crash."""
import json
import os
import subprocess
import sys


def main():
    bench, peers = sys.argv[1], sys.argv[2:]
    systems = ["weft-asm", "pthread"] + peers
    out = subprocess.run(
        [bench, "peers", "--quick", "--json", "--systems", ",".join(systems)],
        capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        print(f"FAIL: weft-bench peers exited {out.returncode}: {out.stderr[-2000:]}")
        return 1
    rows, meta = [], None
    for line in out.stdout.splitlines():
        d = json.loads(line)
        if "meta" in d:
            meta = d["meta"]
        else:
            rows.append(d)
    if not meta or "peers" not in meta:
        print("FAIL: the report does not say which peers were built in")
        return 1
    print("peers:", meta["peers"])
    bad = 0
    for want in ["weft-asm"] + peers:
        mine = [r for r in rows if r["system"] == want]
        if not mine:
            print(f"FAIL: no row for {want}")
            bad += 1
        for r in mine:
            if r.get("error") or not (r.get("median") or 0) > 0:
                print(f"FAIL: {r['bench']} / {want}: {r.get('error') or 'no median'}")
                bad += 1
            else:
                print(f"ok   {r['bench']:26} {want:14} {r['median']:.4g} {r['unit']}")
    for name, left_out in (("state-threads", "State Threads LEFT OUT"),
                           ("go", "Go LEFT OUT")):
        if name not in peers and left_out not in meta["peers"]:
            print(f"FAIL: {name} was not expected, but the report does not say it was left out")
            bad += 1
    if "go" in peers:
        # A Go peer that cannot be run is an error row, not a crash.
        env = dict(os.environ, WEFT_BENCH_GO_PEER="/nonexistent/weft-peer-go")
        out = subprocess.run([bench, "micro", "--quick", "--json", "--only", "create_join",
                              "--systems", "go"], capture_output=True, text=True, timeout=120,
                             env=env)
        rows = [json.loads(line) for line in out.stdout.splitlines() if '"meta"' not in line]
        if out.returncode != 0 or not rows or not all("nonexistent" in (r.get("error") or "")
                                                      for r in rows):
            print(f"FAIL: a missing weft-peer-go: exit {out.returncode}, rows {rows}")
            bad += 1
        else:
            print("ok   a missing weft-peer-go is an error row:", rows[0]["error"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
