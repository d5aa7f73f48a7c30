#!/usr/bin/env python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The outbox-relay command line, run as a process: --help, --version, --check-config, exit
codes and messages, precedence end to end, the man page and config example, and the running
daemon's HTTP endpoint, SIGHUP log reopening and config reload, SIGTERM shutdown, with servers that are not
there (port 1), so no server is needed.

usage: test-cli.py PATH-TO-outbox-relay MAN-PAGE CONFIG-EXAMPLE
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

EXE = sys.argv[1]
MAN_PAGE = sys.argv[2]
CONF_EXAMPLE = sys.argv[3]
REQUIRED = ["--mongodb-uri", "mongodb://localhost/", "--database", "app",
            "--collection", "c1", "--mqtt-uri", "tcp://localhost:1883"]
failures = []
passes = 0


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTBOX_")}
    # mongoc's automatic init (before main, so before the relay's logger exists) warns on
    # stderr in its own format when /dev/shm/mongoc-<pid> is left from a SIGKILLed process
    # with the same pid. This test checks the format of every stderr line of the relay.
    env["MONGOC_DISABLE_SHM"] = "1"
    env.update(extra)
    return env


def run(args, **env):
    return subprocess.run([EXE] + args, capture_output=True, text=True, timeout=30,
                          env=clean_env(**env))


def check(name, cond, detail=""):
    global passes
    print(("ok   " if cond else "FAIL ") + name)
    if cond:
        passes += 1
    else:
        failures.append(name)
        if detail:
            print("     " + str(detail).replace("\n", "\n     "))


def option_keys(dump):
    """The option names of a --check-config dump: all but the "concerns.*" lines (the MongoDB
    concerns the relay decides for its own operations: not options)."""
    keys = [line.split(" = ")[0].strip() for line in dump.splitlines()]
    return [k for k in keys if not k.startswith("concerns.")]


MAKE_CERTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures",
                          "make-test-certs")


def test_help():
    r = run(["--help"])
    check("--help exits 0", r.returncode == 0, r.stderr)
    check("--help prints usage", r.stdout.startswith("Usage: outbox-relay"), r.stdout[:200])
    dump = run(REQUIRED + ["--check-config"]).stdout
    keys = option_keys(dump)
    missing = [k for k in keys if "--" + k not in r.stdout]
    check("--help lists every option", keys and not missing, missing)
    for var in ("OUTBOX_MONGODB_URI", "OUTBOX_MQTT_PASSWORD_FILE", "OUTBOX_COLLECTIONS"):
        check("--help names " + var, var in r.stdout)
    check("-h is --help", run(["-h"]).stdout == r.stdout)
    # Issue 29, 14: a client id made from the name is not the name itself.
    check("--check-config shows the client id's random suffix",
          re.search(r"^client-id += \S+-<8 random hex digits per process>$", dump, re.M), dump)
    dump = run(REQUIRED + ["--check-config", "--client-id", "mine"]).stdout
    check("--check-config shows a given client id as it is",
          re.search(r"^client-id += mine$", dump, re.M), dump)


def test_docs():
    dump = run(REQUIRED + ["--check-config"]).stdout
    keys = option_keys(dump)
    with open(MAN_PAGE) as f:
        man = f.read().replace("\\-", "-")
    missing = [k for k in keys if "--" + k not in man]
    check("man page documents every option", keys and not missing, missing)
    missing = [v for v in re.findall(r"OUTBOX_[A-Z_]+", run(["--help"]).stdout) if v not in man]
    check("man page names every variable", not missing, missing)
    # --check-config reads the CA file as PEM (issue 38): a real one, as the example names.
    import tempfile
    with tempfile.TemporaryDirectory() as certs:
        subprocess.run([MAKE_CERTS, certs], check=True, capture_output=True)
        r = run(["--check-config", "--config", CONF_EXAMPLE],
                OUTBOX_MQTT_CA_FILE=os.path.join(certs, "ca.pem"))
    check("config example is valid", r.returncode == 0, r.stderr)


def test_version():
    r = run(["--version"])
    lines = r.stdout.splitlines()
    check("--version exits 0", r.returncode == 0, r.stderr)
    check("--version first line", lines and re.fullmatch(r"outbox-relay \d+\.\d+\.\d+\S*",
                                                         lines[0]), r.stdout)
    check("--version names libraries", "libmongoc" in r.stdout and "paho.mqtt.c" in r.stdout,
          r.stdout)
    # The malloc that runs, as the build chose it (meson -Dallocator): a link that dropped
    # jemalloc, or a build that lost it, shows here.
    expect = {"jemalloc": "malloc jemalloc ", "system": "malloc glibc "}.get(
        os.environ.get("OUTBOX_EXPECT_MALLOC", ""))
    got = [line for line in lines if line.startswith("malloc ")]
    check("--version names the malloc the build chose",
          expect is not None and len(got) == 1 and got[0].startswith(expect), (expect, got))


def test_usage_errors():
    r = run(REQUIRED + ["--check-config", "--qos", "7"])
    check("bad flag value exits 64", r.returncode == 64, r.returncode)
    check("bad flag value message",
          r.stderr == "outbox-relay: --qos: expected 0, 1 or 2, got '7'\n", repr(r.stderr))
    check("bad flag value prints nothing on stdout", r.stdout == "", r.stdout)
    r = run(["--check-config", "--no-such-flag"])
    check("unknown flag exits 64", r.returncode == 64, r.returncode)
    check("unknown flag message", "unknown option '--no-such-flag'" in r.stderr, r.stderr)
    r = run([])
    check("no arguments exits 78", r.returncode == 78, r.returncode)
    check("no arguments names what is missing", "missing required options: --mongodb-uri"
          in r.stderr, r.stderr)
    r = run(REQUIRED + ["--check-config"], OUTBOX_INFLIGHT_WINDOW="lots")
    check("bad environment exits 78", r.returncode == 78, r.returncode)
    check("bad environment message", "OUTBOX_INFLIGHT_WINDOW: expected an integer" in r.stderr,
          r.stderr)


def test_check_config_redacts():
    args = REQUIRED + ["--check-config", "--mongodb-uri",
                       "mongodb://bob:pa55word@db1,db2/?replicaSet=rs"]
    r = run(args, OUTBOX_MQTT_PASSWORD="hunter2", OUTBOX_MQTT_USERNAME="alice")
    out = r.stdout + r.stderr
    check("--check-config exits 0", r.returncode == 0, r.stderr)
    check("--check-config hides the MQTT password", "hunter2" not in out, out)
    check("--check-config hides the URI password", "pa55word" not in out, out)
    check("a password in a URI flag is warned about",
          "--mongodb-uri holds a password, which other users can read with ps" in r.stderr,
          r.stderr)
    check("--check-config shows ***", re.search(r"^mqtt-password +=  ?\*\*\*$", r.stdout, re.M)
          is not None and "bob:***@db1,db2" in r.stdout, r.stdout)


def test_precedence(tmp):
    conf = os.path.join(tmp, "relay.json")
    with open(conf, "w") as f:
        json.dump({"qos": 0, "name": "file-name", "log-level": "debug",
                   "collections": ["f1", "f2"]}, f)
    r = run(REQUIRED + ["--check-config", "--qos", "2"], OUTBOX_CONFIG=conf,
            OUTBOX_QOS="1", OUTBOX_NAME="env-name")
    values = dict(line.split(" = ", 1) for line in r.stdout.splitlines())
    values = {k.strip(): v for k, v in values.items()}
    check("precedence: flag beats env and file", values.get("qos") == "2", values)
    check("precedence: env beats file", values.get("name") == "env-name", values)
    check("precedence: file beats default", values.get("log-level") == "debug", values)
    check("precedence: flag list replaces file list", values.get("collection") == "c1", values)
    check("precedence: config file shown", values.get("config") == conf, values)
    with open(conf, "w") as f:
        f.write('{"qos": 1, "colour": "red"}')
    r = run(REQUIRED + ["--check-config", "--config", conf])
    check("bad config file exits 78", r.returncode == 78, r.returncode)
    check("bad config file names the key", "unknown key \"colour\"" in r.stderr, r.stderr)


def http_get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return None


def terminate(proc):
    """SIGTERM, then the exit status; a relay that does not stop in 20 s is killed (and its
    status, -9, fails whatever check follows)."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def test_daemon(tmp):
    log = os.path.join(tmp, "relay.log")
    args = ["--mongodb-uri",
            "mongodb://bob:pa55word@127.0.0.1:1/?serverSelectionTimeoutMS=300&connectTimeoutMS=200",
            "--database", "app", "--collection", "c1", "--mqtt-uri", "tcp://127.0.0.1:1",
            "--metrics-listen", "127.0.0.1:0", "--log-file", log, "--log-format", "json",
            "--shutdown-timeout-ms", "500", "--reconnect-max-ms", "200"]
    proc = subprocess.Popen([EXE] + args, env=clean_env(OUTBOX_MQTT_PASSWORD="hunter2"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    port_re = re.compile(r"serving /metrics and /healthz on \S+ \(port (\d+)\)")
    port = wait_for(lambda: port_re.search(read(log)), 10)
    check("daemon logs its metrics port", port is not None, read(log))
    if port is None:
        proc.kill()
        proc.wait()
        return
    port = int(port.group(1))
    status, body = http_get(port, "/healthz")
    check("/healthz is 503 while servers are down", status == 503, (status, body))
    status, body = http_get(port, "/metrics")
    check("/metrics is 200", status == 200 and "outbox_relay_info{" in body, (status, body))
    check("/metrics 404 elsewhere", http_get(port, "/nope")[0] == 404)

    os.rename(log, log + ".1")
    proc.send_signal(signal.SIGHUP)
    time.sleep(0.3)
    check("daemon survives SIGHUP", proc.poll() is None, proc.poll())
    rc = terminate(proc)
    check("SIGTERM exits 0", rc == 0, (rc, proc.stderr.read()))
    old, new = read(log + ".1"), read(log)
    check("log reopened after SIGHUP", "starting outbox-relay" in old and "stopped" in new,
          new[-500:])
    bad = [l for l in (old + new).splitlines() if not is_json(l)]
    check("every log line is JSON", not bad, bad[:3])
    http_warnings = [l for l in (old + new).splitlines()
                     if is_json(l) and json.loads(l).get("component") == "http"
                     and json.loads(l).get("level") != "info"]
    check("no warnings from the HTTP server", not http_warnings, http_warnings)
    check("logs never show the passwords", "hunter2" not in old + new
          and "pa55word" not in old + new)


def test_reload(tmp):
    """SIGHUP re-reads the config file: log options apply at once, other changes are named
    (never their secret values) and wait for a restart, a broken file changes nothing."""
    conf, log1, log2 = (os.path.join(tmp, n) for n in ("reload.json", "r1.log", "r2.log"))

    def write_conf(**values):
        with open(conf, "w") as f:
            json.dump(values, f)

    write_conf(**{"log-level": "info", "log-file": log1, "qos": 1})
    proc = subprocess.Popen([EXE] + DOWN + ["--metrics-listen", "off", "--config", conf],
                            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    started = wait_for(lambda: "starting outbox-relay" in read(log1), 10)
    check("reload: relay logs to the file of its config", started, read(log1))
    write_conf(**{"log-level": "debug", "log-format": "json", "log-file": log2, "qos": 2,
                  "mqtt-password": "n3wsecret"})
    proc.send_signal(signal.SIGHUP)
    reloaded = wait_for(lambda: "configuration reloaded" in read(log2), 10)
    check("reload: new log file in use after SIGHUP", reloaded, read(log1)[-500:])
    # The warning follows the "reloaded" line: wait for it rather than race it.
    wait_for(lambda: "until a restart" in read(log2), 10)
    lines = [json.loads(l) for l in read(log2).splitlines() if is_json(l)]
    check("reload: new format applies", lines and len(lines) == len(read(log2).splitlines()),
          read(log2)[:300])
    restart = [l["msg"] for l in lines if "until a restart" in l.get("msg", "")]
    check("reload: options needing a restart are named",
          restart and "qos" in restart[0] and "mqtt-password" in restart[0], restart)
    check("reload: a changed secret is never shown", "n3wsecret" not in read(log2))
    debug = wait_for(lambda: any(json.loads(l).get("level") == "debug"
                                 for l in read(log2).splitlines() if is_json(l)), 10)
    check("reload: new level applies (debug lines appear)", debug, read(log2)[-500:])

    with open(conf, "w") as f:
        f.write("{ not json")
    before = len(read(log2))
    proc.send_signal(signal.SIGHUP)
    refused = wait_for(lambda: "configuration not reloaded" in read(log2)[before:], 10)
    check("reload: a broken file is reported", refused, read(log2)[before:][-500:])
    check("reload: the relay keeps running", proc.poll() is None, proc.poll())
    rc = terminate(proc)
    check("reload: SIGTERM still exits 0", rc == 0, rc)
    check("reload: the old file got no lines after the reload",
          "configuration reloaded" not in read(log1) and "stopped" not in read(log1),
          read(log1)[-300:])


DOWN = ["--mongodb-uri", "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300",
        "--database", "app", "--collection", "c1", "--mqtt-uri", "tcp://127.0.0.1:1",
        "--shutdown-timeout-ms", "500", "--reconnect-max-ms", "200"]


def test_daemon_exits():
    proc = subprocess.Popen([EXE] + DOWN + ["--metrics-listen", "off"], env=clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    check("SIGINT exits 0", proc.returncode == 0, (proc.returncode, err[-500:]))
    text_line = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (ERROR|WARN |INFO |DEBUG|TRACE) \S+: ")
    bad = [l for l in err.splitlines() if not text_line.match(l)]
    check("text log lines on stderr", err and not bad, bad[:3])
    check("nothing on stdout", out == "", out)
    check("metrics off: no HTTP server", "serving /metrics" not in err, err[:300])

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = run(DOWN + ["--metrics-listen", "127.0.0.1:%d" % port])
    check("metrics port in use exits 69", r.returncode == 69, (r.returncode, r.stderr[-300:]))
    check("metrics port in use is explained",
          "cannot listen on '127.0.0.1:%d'" % port in r.stderr, r.stderr[-300:])

    # A missing directory is a configuration error found by --check-config (issue 29, 13);
    # a file that cannot be opened in an existing directory is found at start.
    for extra in ([], ["--check-config"]):
        r = run(DOWN + ["--log-file", "/nonexistent/dir/relay.log"] + extra)
        check("log file in a missing directory exits 78 %s" % extra, r.returncode == 78,
              r.returncode)
        check("log file in a missing directory is explained %s" % extra,
              r.stderr == "outbox-relay: log-file: '/nonexistent/dir/relay.log' cannot be "
              "created: '/nonexistent/dir': No such file or directory\n", repr(r.stderr))
    with tempfile.TemporaryDirectory() as d:
        r = run(DOWN + ["--log-file", d])
    check("unopenable log file exits 73", r.returncode == 73, r.returncode)
    check("unopenable log file is explained", r.stderr == "outbox-relay: cannot open log file "
          "'%s': Is a directory\n" % d, repr(r.stderr))


def test_check_config_concerns():
    """Issue 26: --check-config shows the concerns of the relay's own operations, which a URI
    asking for less (w=1, a secondary read preference) does not change."""
    args = list(REQUIRED)
    args[1] = "mongodb://localhost/?w=1&readPreference=secondary&readConcernLevel=local"
    dump = run(args + ["--check-config", "--lease-renew-ms", "1500"]).stdout
    check("--check-config: lease writes w: majority with wtimeout lease-renew-ms",
          re.search(r"^concerns\.leases += w: majority, wtimeout 1500 ms.*primary, "
                    r"readConcern majority$", dump, re.M), dump)
    check("--check-config: clears and archive w: majority",
          re.search(r"^concerns\.clears += w: majority", dump, re.M) and
          re.search(r"^concerns\.archive += w: majority", dump, re.M), dump)
    check("--check-config: the clock rule names the margin",
          re.search(r"^concerns\.clock-rule += .*lease-margin-ms \(2000 ms\)$", dump, re.M), dump)


def is_json(line):
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_help()
        test_version()
        test_docs()
        test_usage_errors()
        test_check_config_redacts()
        test_check_config_concerns()
        test_precedence(tmp)
        test_daemon(tmp)
        test_daemon_exits()
        test_reload(tmp)
    if failures:
        print("%d check(s) failed: %s" % (len(failures), ", ".join(failures)))
    # The closing line scripts/test-summary counts (NAME: N passed, N failed).
    print("relay-shell-cli: %d passed, %d failed" % (passes, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
