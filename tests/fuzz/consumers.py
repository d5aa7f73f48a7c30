# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The example consumers (C contacts-consumer, examples/python, examples/node) during a fuzz
run: each must read every message the relay published. A published event is one the contract
lets through, so a consumer that calls it unreadable, or never mentions it, disagrees with
the contract."""
import os
import time

import runner

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


class Consumers:
    def __init__(self, opts, node_path, mqtt, mongo, root, tag, workdir):
        self.procs = {}
        self.logs = {}
        flt = root + "/#"
        cmds = {"python": ["/usr/bin/python3", os.path.join(EXAMPLES, "python",
                                                            "outbox_consumer.py"),
                           mqtt, flt, "fz-py-" + tag]}
        if node_path:
            cmds["node"] = ["node", os.path.join(EXAMPLES, "node", "consumer.js"), mqtt, flt,
                            "fz-node-" + tag]
        if opts.c_consumer:
            cmds["c"] = [opts.c_consumer, "--mqtt-uri", mqtt, "--mongodb-uri", mongo,
                         "--database", "fuzzc_" + tag.replace("-", "_"), "--topic", flt,
                         "--client-id", "fz-c-" + tag]
        for name, cmd in cmds.items():
            self.logs[name] = os.path.join(workdir, "consumer-%s-%s.log" % (name, tag))
            env = dict(os.environ, NODE_PATH=node_path or "", PYTHONUNBUFFERED="1")
            self.procs[name] = runner.spawn(cmd, self.logs[name], env=env)

    def text(self, name):
        with open(self.logs[name], errors="replace") as f:
            return f.read()

    def wait_subscribed(self):
        marks = {"python": "subscribed", "node": "subscribed", "c": "consumer: subscribed"}
        return all(runner.wait_until(lambda n=n: marks[n] in self.text(n) or
                                     self.procs[n].poll() is not None, 20)
                   and self.procs[n].poll() is None for n in self.procs)

    def wait_seen(self, ids, timeout=20):
        """Waits until every consumer mentioned every id (C: every message counted)."""
        sizes = {}

        def done():
            if all(all(i in self.text(n) for i in ids) for n in self.procs if n != "c"):
                return True
            # Or nothing more is coming: no consumer wrote a line for three seconds.
            now = {n: os.path.getsize(self.logs[n]) for n in self.procs}
            if now != sizes.get("last"):
                sizes["last"], sizes["since"] = now, time.time()
            return time.time() - sizes["since"] >= 3.0
        runner.wait_until(done, timeout, 0.1)

    def check(self, published):
        """Problems: a published event a consumer never applied (nor saw as a duplicate), or
        a message of the run it found unreadable. @published: event id -> what the case is."""
        problems = []
        for name, p in self.procs.items():
            runner.stop(p)
            text = self.text(name)
            unreadable = [l for l in text.splitlines() if "unreadable" in l]
            for l in unreadable[:5]:
                problems.append("%s consumer: %s" % (name, l[:300]))
            if len(unreadable) > 5:
                problems.append("%s consumer: %d unreadable messages in all" % (
                    name, len(unreadable)))
            if name == "c":
                continue  # it applies contacts only; its inbox records the rest silently
            missing = [i for i in published if i not in text]
            for i in missing[:5]:
                problems.append("%s consumer never applied published event %s (%s)" % (
                    name, i, published[i]))
            if len(missing) > 5:
                problems.append("%s consumer never applied %d published events in all" % (
                    name, len(missing)))
        return problems
