#!/usr/bin/env python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Instructions per event of one outbox-relay run, by component, from the per-thread
callgrind files that tests/bench/callgrind-relay writes (cg.PID-01, cg.PID-02, ...).

    cg-breakdown.py --events N CALLGRIND_DIR_OR_FILES...

Prints one table per relay process found. The components are inclusive costs of the relay's
own entry points (so they do not depend on how the compiler inlined static helpers):

  paho            relay_mqtt_publish() on the main thread + every paho thread
  rendering       relay_publish_dispatch() - relay_mqtt_publish(): topic, source, JSON, props
  BSON walk       relay_event_parse(): the event contract and the data check
  mongoc reading  mongoc_cursor_next() and relay_store_read_entity() on the main thread (the
                  sweep) + the change stream reader thread
  applying        relay_changes_step() minus the two above: change events, the table
  clears          relay_writer_flush() + relay_writer_checkpoint() + the clearer thread
  loop            the rest of relay_run(): completions, metrics, waiting
  start/other     outside relay_run() (start-up, exit) and other threads (signals, HTTP)

Needs callgrind_annotate (valgrind). Standard library only.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$")


def inclusive_costs(path):
    """{function name: inclusive Ir} and the thread's total Ir."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    costs, total = {}, 0
    for line in out.splitlines():
        if "PROGRAM TOTALS" in line:
            total = int(line.split()[0].replace(",", ""))
            continue
        m = LINE.match(line)
        if not m:
            continue
        name = m.group(2)
        name = re.sub(r"\s+\[[^\]]*\]$", "", name)  # the object file
        name = name.split(":", 1)[1] if ":" in name else name
        ir = int(m.group(1).replace(",", ""))
        costs[name] = max(costs.get(name, 0), ir)
    return costs, total


def classify(costs):
    if "relay_run" in costs:
        return "main"
    if "run_job" in costs:
        return "clearer"
    if "mongoc_change_stream_next" in costs:
        return "reader"
    if any(k.startswith("MQTT") for k in costs) or "Thread_lock_mutex" in costs:
        return "paho"
    return "other"


def breakdown(files):
    c = collections.Counter()
    for path in files:
        costs, total = inclusive_costs(path)
        kind = classify(costs)
        g = lambda name: costs.get(name, 0)
        if kind == "main":
            publish = g("relay_mqtt_publish")
            reading = g("mongoc_cursor_next") + g("relay_store_read_entity")
            parse = g("relay_event_parse")
            clears = g("relay_writer_flush") + g("relay_writer_checkpoint")
            c["paho"] += publish
            c["rendering"] += g("relay_publish_dispatch") - publish
            c["BSON walk"] += parse
            c["mongoc reading"] += reading
            c["applying"] += g("relay_changes_step") - reading - parse
            c["clears"] += clears
            c["loop"] += (g("relay_run") - g("relay_publish_dispatch") -
                          g("relay_changes_step") - clears)
            c["start/other"] += total - g("relay_run")
        elif kind == "clearer":
            c["clears"] += total
        elif kind == "reader":
            c["mongoc reading"] += total
        elif kind == "paho":
            c["paho"] += total
        else:
            c["start/other"] += total
        c["total"] += total
    return c


ORDER = ["paho", "rendering", "BSON walk", "mongoc reading", "applying", "clears", "loop",
         "start/other", "total"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, required=True, help="events the run published")
    ap.add_argument("paths", nargs="+", help="callgrind files or directories holding them")
    a = ap.parse_args()
    files = []
    for p in a.paths:
        if os.path.isdir(p):
            files += [os.path.join(p, f) for f in sorted(os.listdir(p))]
        else:
            files.append(p)
    by_pid = collections.defaultdict(list)
    for f in files:
        m = re.search(r"cg\.(\d+)-\d+$", f)
        if m and os.path.getsize(f) > 0:
            by_pid[m.group(1)].append(f)
    if not by_pid:
        sys.exit("cg-breakdown: no cg.PID-NN files (run the relay through callgrind-relay)")
    for pid, group in sorted(by_pid.items()):
        c = breakdown(group)
        print(f"relay process {pid}: {len(group)} threads, {a.events} events")
        print(f"  {'component':<16} {'instr/event':>12} {'share':>7}")
        for k in ORDER:
            share = 100.0 * c[k] / c["total"] if c["total"] else 0
            print(f"  {k:<16} {c[k] / a.events:>12,.0f} {share:>6.1f}%")


if __name__ == "__main__":
    main()
