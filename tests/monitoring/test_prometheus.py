#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The relay's metrics and the shipped Prometheus rules, on a real Prometheus (Debian's
package): a relay with real mosquitto and the MongoDB test server (or a real replica set),
scraped every second; the broker is stopped, the "events stuck" alert must go pending then
firing through Prometheus's HTTP API, and resolve when the broker is back. Also: the latency
histograms count acknowledgements, the stored-events scan makes the age gauge see an event
the change stream cannot show, and every metric the rules and the dashboard use is one the
relay exports.

usage: test_prometheus.py OUTBOX_RELAY RULES DASHBOARD [TEST_NAME ...]  (under with-servers)
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "relay",
                                "e2e"))
from relaytest import db_name  # noqa: E402 (the run's database names)
from relaytest import (MONGO_URI, WORKDIR, Entities, Relay, Subscriber,  # noqa: E402
                       event, pymongo, requires, run_tests, wait_until)

try:
    import yaml
except ImportError:  # pragma: no cover
    yaml = None

RELAY_BIN, RULES, DASHBOARD = sys.argv[1:4]
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None
STARTED = []  # processes to stop at the end (a restarted broker, Prometheus)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode("utf-8")


def metrics(port):
    return http_get("http://127.0.0.1:%d/metrics" % port)


def sample(text, name, labels=""):
    """The value of the sample `name{labels}` (labels as rendered), or None."""
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else None


def start_relay(name, coll_names, extra=()):
    port = free_port()
    db = db_name("mon_%s_%s" % (name, RUN))
    relay = Relay(RELAY_BIN, db, coll_names, "mon-%s-%s" % (name, RUN),
                  extra=["--metrics-listen", "127.0.0.1:%d" % port] + list(extra))
    check(relay.wait_log("change stream open"), "relay did not open its stream")
    return relay, port, client[db]


def test_histograms_and_stored_age():
    """Acknowledged events land in both histograms of their collection; an event appended
    without raising eventSeq (invisible to the stream) is counted by the scan."""
    relay, port, db = start_relay("hist", ["orders"], ["--pending-scan-interval-ms", "200"])
    try:
        ents = Entities(db["orders"])
        sub = Subscriber("outbox/orders/#")
        for i in range(5):
            ents.create("o%d" % i, 2)
        check(wait_until(lambda: sub.count() >= 10, 30), "events did not arrive")
        lbl = '{collection="orders"}'
        check(wait_until(lambda: sample(metrics(port), "outbox_relay_commit_to_ack_seconds_count",
                                        lbl) == 10, 10), metrics(port))
        text = metrics(port)
        check(sample(text, "outbox_relay_publish_round_trip_seconds_count", lbl) == 10, text)
        check(sample(text, "outbox_relay_commit_to_ack_seconds_bucket",
                     '{collection="orders",le="+Inf"}') == 10, text)
        check(sample(text, "outbox_relay_commit_to_ack_seconds_bucket",
                     '{collection="orders",le="0.001"}') <= 10, text)
        check(0 < sample(text, "outbox_relay_commit_to_ack_seconds_sum", lbl) < 600, text)
        sub.close()
        # Invisible to the stream: events pushed without raising eventSeq.
        old = event(3)
        old["time"] = old["time"].replace(year=old["time"].year - 1)
        db["orders"].update_one({"_id": "o0"}, {"$push": {"events": old}})
        check(wait_until(lambda: (sample(metrics(port),
                                         "outbox_relay_oldest_pending_event_age_seconds") or 0)
                         > 300 * 86400, 15), metrics(port))
        check(sample(metrics(port), "outbox_relay_stored_pending_events", lbl) == 1,
              metrics(port))
        check(sample(metrics(port), "outbox_relay_pending_scan_seconds") is not None, "no scan")
    finally:
        relay.stop()


def exported_names(text):
    names = set()
    for m in re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M):
        names.add(m.group(1))
        if m.group(2) == "histogram":
            names.update(m.group(1) + s for s in ("_bucket", "_sum", "_count"))
    return names


def test_rules_and_dashboard_use_exported_metrics():
    """Every outbox_relay_* metric named by the rules and the dashboard is exported by a
    running relay, and every outbox_relay:* name is a recording rule."""
    relay, port, _ = start_relay("names", ["orders"])
    try:
        exported = exported_names(metrics(port))
    finally:
        relay.stop()
    rules = yaml.safe_load(open(RULES))
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    dash = json.load(open(DASHBOARD))
    check(dash["panels"], "dashboard without panels")
    exprs += [t["expr"] for p in dash["panels"] for t in p["targets"]]
    used = set()
    for e in exprs:
        used.update(re.findall(r"\boutbox_relay[a-zA-Z0-9_:]*", e))
    missing = sorted(n for n in used if n not in exported and n not in recorded)
    check(not missing, "not exported by the relay nor recorded: %s" % missing)
    check(any(n.startswith("outbox_relay:") for n in used), "no recording rule used")


def test_rules_pass_promtool():
    out = subprocess.run(["promtool", "check", "rules", RULES], capture_output=True, text=True)
    check(out.returncode == 0, out.stdout + out.stderr)
    tests = os.path.join(os.path.dirname(RULES), "tests", "outbox-relay.rules.test.yml")
    out = subprocess.run(["promtool", "test", "rules", tests], capture_output=True, text=True)
    check(out.returncode == 0 and "SUCCESS" in out.stdout, out.stdout + out.stderr)


def fast_rules(path):
    """The shipped rules with the test's thresholds: stuck after 2 s (for 2 s), broker
    disconnected for 2 s. Everything else as shipped."""
    rules = yaml.safe_load(open(RULES))
    for g in rules["groups"]:
        for r in g["rules"]:
            if r.get("alert") == "OutboxEventsStuck":
                check("> 300" in r["expr"], r["expr"])
                r["expr"] = r["expr"].replace("> 300", "> 2")
                r["for"] = "2s"
            elif r.get("alert") == "OutboxRelayBrokerDisconnected":
                r["for"] = "2s"
    with open(path, "w") as f:
        yaml.safe_dump(rules, f)


def start_prometheus(relay_port):
    base = os.path.join(WORKDIR, "prometheus-%s" % RUN)
    os.makedirs(base, exist_ok=True)
    fast_rules(os.path.join(base, "rules.yml"))
    with open(os.path.join(base, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "rule_files: [rules.yml]\n"
                "scrape_configs:\n  - job_name: outbox-relay\n    static_configs:\n"
                "      - targets: ['127.0.0.1:%d']\n" % relay_port)
    port = free_port()
    log = open(os.path.join(base, "prometheus.log"), "ab")
    proc = subprocess.Popen(["prometheus", "--config.file=%s/prometheus.yml" % base,
                             "--storage.tsdb.path=%s/data" % base,
                             "--web.listen-address=127.0.0.1:%d" % port], stdout=log,
                            stderr=log, cwd=base)
    STARTED.append(proc)
    api = "http://127.0.0.1:%d/api/v1/" % port

    def ready():
        try:
            return '"health":"up"' in http_get(api + "targets")
        except OSError:
            return False
    check(wait_until(ready, 60, 0.2), "Prometheus did not scrape the relay (see %s)" % base)
    return proc, api


def alert_state(api, name):
    alerts = json.loads(http_get(api + "alerts"))["data"]["alerts"]
    states = [a["state"] for a in alerts if a["labels"].get("alertname") == name]
    return states[0] if states else None


def broker(stop):
    """Stops the fixture's mosquitto, or starts it again on the same port."""
    if stop:
        pid = int(os.environ["OUTBOX_TEST_MOSQUITTO_PID"])
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not os.path.exists("/proc/%d" % pid) or
                   open("/proc/%d/stat" % pid).read().split()[2] == "Z", 10)
        return
    log = open(os.path.join(WORKDIR, "mosquitto-mon.log"), "ab")
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    proc = subprocess.Popen([binary, "-c", os.environ["OUTBOX_TEST_MOSQUITTO_CONF"]],
                            stdout=log, stderr=log)
    STARTED.append(proc)
    os.environ["OUTBOX_TEST_MOSQUITTO_PID"] = str(proc.pid)


def test_events_stuck_alert_on_real_prometheus():
    """Broker stopped: OutboxEventsStuck goes pending, then firing; broker back: resolved."""
    requires("fixture broker")
    relay, port, db = start_relay("alert", ["orders"], ["--pending-scan-interval-ms", "500"])
    try:
        _, api = start_prometheus(port)
        ents = Entities(db["orders"])
        ents.create("warmup", 1)
        check(wait_until(lambda: ents.pending() == 0, 30), "warm-up event not published")
        check(alert_state(api, "OutboxEventsStuck") is None, "stuck before the outage")
        broker(stop=True)
        t0 = time.time()
        for i in range(5):
            ents.create("e%d" % i, 1)
        seen = set()
        check(wait_until(lambda: seen.add(alert_state(api, "OutboxEventsStuck")) or
                         "firing" in seen, 60, 0.2), "never fired: %s" % seen)
        check("pending" in seen, "went firing without pending: %s" % seen)
        check(wait_until(lambda: alert_state(api, "OutboxRelayBrokerDisconnected") == "firing",
                         30), "broker alert did not fire")
        print("  fired %.1f s after the broker stopped" % (time.time() - t0))
        broker(stop=False)
        check(wait_until(lambda: ents.pending() == 0, 60), "events not published after the outage")
        check(wait_until(lambda: alert_state(api, "OutboxEventsStuck") is None, 60),
              "did not resolve")
        check(wait_until(lambda: alert_state(api, "OutboxRelayBrokerDisconnected") is None, 60),
              "broker alert did not resolve")
    finally:
        relay.stop()


TESTS = [test_rules_pass_promtool, test_histograms_and_stored_age,
         test_rules_and_dashboard_use_exported_metrics,
         test_events_stuck_alert_on_real_prometheus]


def main():
    if not MONGO_URI:
        print("monitoring: OUTBOX_TEST_MONGODB_URI not set (run under with-servers)")
        return 77
    missing = [b for b in ("prometheus", "promtool") if not shutil.which(b)]
    if missing or yaml is None:
        print("skip: %s not installed (Debian's prometheus package and "
              "python3-yaml; scripts/setup-deps installs them)" %
              ", ".join(missing + ([] if yaml else ["python3-yaml"])))
        return 77
    def stop_started():
        for p in STARTED:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
    return run_tests("monitoring", TESTS, sys.argv[4:], cleanup=stop_started)

if __name__ == "__main__":
    sys.exit(main())
