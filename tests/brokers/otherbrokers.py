# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""MQTT brokers other than mosquitto, each started by the test on free loopback ports and
stopped by it: RabbitMQ with its MQTT plugin (Debian's rabbitmq-server) and aedes (npm). Each
object owns its processes and its directory; chaoslib.spawn() puts them in their own process
groups and kills them when the test exits, however it exits. Also the verifier's two sources
of messages: a persistent MQTT 3.1.1 subscriber and aedes's record of what it acknowledged."""

import base64
import json
import os
import shutil
import signal
import subprocess
import time
import uuid

import chaoslib
from chaoslib import free_port, port_open, spawn, stop, wait_until

import paho.mqtt.client as mqtt

RABBITMQ_SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
USER, PASSWORD = "outbox-relay", "Mq-pw-%s" % uuid.uuid4().hex[:8]


class Unavailable(Exception):
    """The broker's package cannot be had here: the test skips with this reason."""


class RabbitMQ:
    """One RabbitMQ node of its own: node name, Erlang distribution port and epmd port chosen
    free, everything on 127.0.0.1, its database and logs in @workdir, only the MQTT plugin
    (no AMQP listener, no management). Durable: a restart keeps the queues of persistent
    subscribers and their messages."""

    name = "rabbitmq"
    versions = (4,)       # MQTT 3.1.1 only before RabbitMQ 3.13
    qos_levels = (0, 1)   # QoS 2 is downgraded (see test_other_brokers.py)

    ws_path = "/ws"  # rabbitmq_web_mqtt's default

    def __init__(self, workdir, max_message_size=None, certs=None):
        if not os.path.exists(RABBITMQ_SERVER) or not shutil.which("epmd"):
            raise Unavailable("rabbitmq-server is not installed (scripts/setup-deps installs "
                              "Debian's package)")
        self.dir = os.path.join(workdir, "rabbitmq")
        os.makedirs(self.dir, exist_ok=True)
        self.port, dist, epmd, amqp = free_port(), free_port(), free_port(), free_port()
        # MQTT over WebSockets (rabbitmq_web_mqtt): ws on ws_port, wss with @certs (a
        # make-test-certs directory) on wss_port.
        self.ws_port, self.wss_port = free_port(), free_port() if certs else None
        self.env = dict(os.environ, HOME=self.dir,
                        RABBITMQ_NODENAME="outbox-test-%d@localhost" % self.port,
                        RABBITMQ_NODE_IP_ADDRESS="127.0.0.1", RABBITMQ_NODE_PORT=str(amqp),
                        RABBITMQ_DIST_PORT=str(dist), ERL_EPMD_ADDRESS="127.0.0.1",
                        ERL_EPMD_PORT=str(epmd),
                        RABBITMQ_CONFIG_FILE=os.path.join(self.dir, "rabbitmq.conf"),
                        RABBITMQ_ADVANCED_CONFIG_FILE=os.path.join(self.dir, "advanced.config"),
                        RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(self.dir, "enabled_plugins"),
                        RABBITMQ_MNESIA_BASE=os.path.join(self.dir, "mnesia"),
                        RABBITMQ_LOG_BASE=os.path.join(self.dir, "log"),
                        RABBITMQ_PID_FILE=os.path.join(self.dir, "pid"),
                        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=(
                            "-kernel inet_dist_use_interface {127,0,0,1}"))
        with open(os.path.join(self.dir, "rabbitmq.conf"), "w") as f:
            f.write("listeners.tcp = none\nmqtt.listeners.tcp.default = 127.0.0.1:%d\n"
                    "mqtt.allow_anonymous = false\ndefault_user = %s\ndefault_pass = %s\n"
                    "loopback_users = none\nlog.console = true\nlog.console.level = info\n"
                    "log.file = false\n" % (self.port, USER, PASSWORD))
            if max_message_size:
                f.write("max_message_size = %d\n" % max_message_size)
            f.write("web_mqtt.tcp.port = %d\nweb_mqtt.tcp.ip = 127.0.0.1\n" % self.ws_port)
            if certs:
                f.write("web_mqtt.ssl.port = %d\nweb_mqtt.ssl.ip = 127.0.0.1\n"
                        "web_mqtt.ssl.cacertfile = %s\nweb_mqtt.ssl.certfile = %s\n"
                        "web_mqtt.ssl.keyfile = %s\n" % (
                            self.wss_port, os.path.join(certs, "ca.pem"),
                            os.path.join(certs, "server.pem"), os.path.join(certs, "server.key")))
        with open(os.path.join(self.dir, "enabled_plugins"), "w") as f:
            f.write("[rabbitmq_mqtt,rabbitmq_web_mqtt].\n")
        # epmd of its own on a port of its own: a node never registers with (or starts) the
        # machine's epmd on 4369, so parallel tests and a system RabbitMQ cannot clash.
        self.epmd = spawn(["epmd", "-port", str(epmd), "-address", "127.0.0.1"],
                          os.path.join(self.dir, "epmd.log"), env=self.env)
        self.proc = None
        self.log_path = os.path.join(self.dir, "rabbitmq.log")
        self.start()

    @property
    def uri(self):
        return "tcp://127.0.0.1:%d" % self.port

    @property
    def ws_uri(self):
        return "ws://127.0.0.1:%d%s" % (self.ws_port, self.ws_path)

    @property
    def wss_uri(self):
        return "wss://localhost:%d%s" % (self.wss_port, self.ws_path)

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def start(self, timeout=90):
        started = time.time()
        self.proc = spawn([RABBITMQ_SERVER], self.log_path, env=self.env)
        if not wait_until(lambda: (port_open(self.port) and port_open(self.ws_port) and
                                   "Server startup complete" in self.log_text()) or
                          self.proc.poll() is not None,
                          timeout, 0.2) or self.proc.poll() is not None:
            tail = self.log_text()[-1500:]
            self.stop()
            raise RuntimeError("rabbitmq-server did not start: %s" % tail)
        self.start_seconds = time.time() - started

    def stop(self):
        if self.proc:
            stop(self.proc, 30)  # SIGTERM: the node shuts down cleanly (queues synced)
            self.proc = None

    def restart(self, down_seconds=0.5):
        """A crash (SIGKILL of the node): what it acknowledged was on disk (publisher
        confirms), what was in flight is cut off unanswered."""
        chaoslib.mark("broker kill -9")
        if self.proc:
            stop(self.proc, sig=signal.SIGKILL)
            self.proc = None
        time.sleep(down_seconds)
        self.start()
        chaoslib.mark("broker started")

    def close(self):
        self.stop()
        stop(self.epmd)


def prepare_aedes(node_dir):
    """`npm ci` of aedes/package-lock.json into @node_dir once per lock content (the way the
    Node examples' tests install theirs, tests/examples/languages_node.py). Returns the
    node_modules path; raises Unavailable with the reason when node, npm or the packages
    cannot be had."""
    if not shutil.which("node") or not shutil.which("npm"):
        raise Unavailable("node or npm not found (aedes needs Node.js >= 20 with npm)")
    major = subprocess.run(["node", "-p", "process.versions.node.split('.')[0]"],
                           capture_output=True, text=True).stdout.strip()
    if not major.isdigit() or int(major) < 20:
        raise Unavailable("node %s is too old (aedes 1.x needs >= 20)" % major)
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "aedes")
    modules = os.path.join(node_dir, "node_modules")
    stamp = os.path.join(modules, ".outbox-package-lock.json")
    with open(os.path.join(here, "package-lock.json")) as f:
        wanted = f.read()
    if os.path.exists(stamp) and open(stamp).read() == wanted:
        return modules
    os.makedirs(node_dir, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(here, name), node_dir)
    try:
        r = subprocess.run(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund",
                            "--ignore-scripts", "--loglevel=error"], cwd=node_dir,
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        raise Unavailable("npm ci took more than 5 minutes (registry unreachable?)")
    if r.returncode != 0:
        raise Unavailable("npm ci failed (registry unreachable and the packages not in npm's "
                          "cache?): %s" % " / ".join(r.stderr.strip().splitlines()[:3]))
    with open(stamp, "w") as f:
        f.write(wanted)
    return modules


class Aedes:
    """One aedes broker (aedes/broker.mjs): @package is "aedes" (1.x, MQTT 3.1.1) or
    "aedes-mqtt5" (the 2.0 beta, MQTT 5 and 3.1.1). Sessions live in memory, so a restart
    forgets them; the record file (every PUBLISH it acknowledged) is what survives."""

    name = "aedes"
    qos_levels = (0, 1, 2)

    ws_path = "/mqtt/outbox"  # a path of more than one segment: paho must send it whole

    def __init__(self, workdir, modules, package="aedes", auth=False, max_packet_size=None,
                 certs=None):
        self.modules, self.package = modules, package
        self.versions = (5, 4) if package == "aedes-mqtt5" else (4,)
        self.dir = os.path.join(workdir, "%s-%s" % (package, uuid.uuid4().hex[:6]))
        os.makedirs(self.dir)
        self.port = free_port()
        self.record = os.path.join(self.dir, "record.jsonl")
        self.args = ["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "aedes",
                                          "broker.mjs"), modules, package, str(self.port),
                     "--record", self.record]
        if auth:
            self.args += ["--user", USER, "--password", PASSWORD]
        if max_packet_size:
            self.args += ["--max-packet-size", str(max_packet_size)]
        # MQTT over WebSockets: ws, or wss with @certs (a make-test-certs directory).
        self.ws_port = free_port()
        self.ws_scheme = "wss" if certs else "ws"
        self.args += ["--ws-port", str(self.ws_port), "--ws-path", self.ws_path]
        if certs:
            self.args += ["--tls-cert", os.path.join(certs, "server.pem"), "--tls-key",
                          os.path.join(certs, "server.key")]
        self.log_path = os.path.join(self.dir, "aedes.log")
        self.proc = None
        self.start()

    @property
    def uri(self):
        return "tcp://127.0.0.1:%d" % self.port

    @property
    def ws_uri(self):
        host = "localhost" if self.ws_scheme == "wss" else "127.0.0.1"
        return "%s://%s:%d%s" % (self.ws_scheme, host, self.ws_port, self.ws_path)

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def start(self):
        for _ in range(3):
            self.proc = spawn(self.args, self.log_path)
            if wait_until(lambda: (port_open(self.port) and port_open(self.ws_port)) or
                          self.proc.poll() is not None, 15,
                          0.05) and self.proc.poll() is None:
                return
            stop(self.proc)
            time.sleep(0.5)  # the old listener's port may still be in use
        raise RuntimeError("aedes did not start: %s" % self.log_text()[-1000:])

    def stop(self):
        if self.proc:
            stop(self.proc)
            self.proc = None

    def restart(self, down_seconds=0.5):
        """A crash (SIGKILL), so whatever was in flight is cut off unanswered; the record is
        written before each acknowledgement, so it survives."""
        chaoslib.mark("broker kill -9")
        if self.proc:
            stop(self.proc, sig=signal.SIGKILL)
            self.proc = None
        time.sleep(down_seconds)
        self.start()
        chaoslib.mark("broker started")

    def close(self):
        self.stop()


class Subscriber(chaoslib.Subscriber):
    """chaoslib's verifying subscriber for either MQTT version (QoS 1, reconnecting every
    second), logging in as USER unless @auth is false. With @persistent (MQTT 3.1.1: clean
    session 0, a fixed client id) the broker keeps its subscription and queue across the
    subscriber's and the broker's restarts. snapshot() is [(topic, payload bytes, arrival
    time)]."""

    subscribe_timeout = 15  # RabbitMQ answers the first SUBSCRIBE slowly on loaded machines

    def __init__(self, broker, version=4, persistent=False, topic_filter="outbox/#",
                 auth=True):
        self.version, self.persistent, self.auth = version, persistent, auth
        self.events = []  # (time, "connect rc" / "disconnect rc"): shown when a check fails
        self.connected = False
        super().__init__(broker, topic_filter)

    def _new_client(self):
        cid = "verify-%s" % uuid.uuid4().hex[:10]
        if self.version == 5:
            client = mqtt.Client(client_id=cid, protocol=mqtt.MQTTv5)
        else:
            client = mqtt.Client(client_id=cid, protocol=mqtt.MQTTv311,
                                 clean_session=not self.persistent)
        if self.auth:
            client.username_pw_set(USER, PASSWORD)
        client.on_disconnect = self._on_disconnect
        return client

    def _connect(self, broker):
        self.client.connect("127.0.0.1", broker.port, keepalive=30)

    def _on_connect(self, client, userdata, flags, rc, *props):
        self.events.append((time.time(), "connect %s session-present %s" %
                            (rc, flags.get("session present"))))
        self.connected = rc == 0
        super()._on_connect(client, userdata, flags, rc)

    def _on_disconnect(self, client, userdata, rc, *props):
        self.connected = False
        self.events.append((time.time(), "disconnect %s" % rc))

    def history(self):
        """Its connects and disconnects, one line each, with the messages received by then."""
        times = [t for _, _, t in self.snapshot()]
        return "\n".join("%.3f %s (%d messages by then)" %
                         (t, what, sum(1 for m in times if m <= t)) for t, what in self.events)

    def wait_silence(self, quiet=1.5, timeout=60):
        """Silence counts only while connected: a subscriber still reconnecting after a broker
        restart has its backlog waiting in the broker."""
        start = time.time()
        while time.time() - start < timeout:
            if not wait_until(lambda: self.connected, timeout - (time.time() - start)):
                return False
            if super().wait_silence(quiet, timeout) and self.connected:
                return True
        return False


class Record:
    """aedes's record of the PUBLISH packets it acknowledged, read as a subscriber's
    messages (same interface as Subscriber)."""

    def __init__(self, broker):
        self.path = broker.record

    def snapshot(self):
        if not os.path.exists(self.path):
            return []
        out = []
        with open(self.path, "rb") as f:
            for line in f.read().decode().splitlines():
                try:
                    d = json.loads(line)
                except ValueError:
                    continue  # the broker was killed in the middle of a line
                out.append((d["topic"], base64.b64decode(d["payload"]), 0.0))
        return out

    def count(self):
        return len(self.snapshot())

    def wait_silence(self, quiet=1.5, timeout=60):
        return chaoslib.Subscriber.wait_silence(self, quiet, timeout)

    def close(self):
        pass
