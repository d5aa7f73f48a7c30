#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Checks an strace log of outbox-relay against the sandbox its systemd unit sets up, for a
machine where no systemd runs the unit: every system call the relay made must be allowed by
the unit's SystemCallFilter= lines (expanded with `systemd-analyze syscall-filter`), every
socket of a family in RestrictAddressFamilies=, no write-and-execute memory
(MemoryDenyWriteExecute=), no new namespaces (RestrictNamespaces=), no file opened for
writing outside what ProtectSystem=strict leaves writable (LogsDirectory=, PrivateTmp=,
PrivateDevices='s /dev), nothing read under /home, /root or /run/user (ProtectHome=), and in
/proc only the process's own entries (ProcSubset=pid).

usage: sandbox-check.py UNIT-FILE STRACE-LOG RELAY-PATH
(strace -f -qq -s 256 -o STRACE-LOG; the check starts at the relay's execve)"""
import re
import subprocess
import sys

# What PrivateDevices= leaves in /dev.
PRIVATE_DEV = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
               "/dev/tty", "/dev/pts/", "/dev/ptmx", "/dev/shm/", "/dev/mqueue/", "/dev/log")
# "PID name(args" or "PID <... name resumed>rest": only the first form carries arguments.
LINE = re.compile(r"^\d+\s+(?:<\.\.\. ([a-z0-9_]+) resumed>|([a-z0-9_]+)\()(.*)$")
# Accesses the sandbox refuses that the relay survives, each with the reason.
TOLERATED = {
    "reads /proc/version (ProcSubset=pid)":
        "paho.mqtt.c's Log_initialize stat()s it for its trace header and skips it when absent",
}


def unit_settings(path):
    settings = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")) and "=" in line:
            key, value = line.split("=", 1)
            settings.setdefault(key, []).append(value)
    return settings


def syscall_groups():
    out = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True,
                         text=True, check=True).stdout
    groups, current = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), [])
        elif current is not None and line.strip() and not line.strip().startswith("#"):
            current.append(line.strip())
    return groups


def expand(names, groups, seen=None):
    seen = set() if seen is None else seen
    calls = set()
    for name in names:
        if name.startswith("@"):
            if name not in seen:
                seen.add(name)
                calls |= expand(groups.get(name, []), groups, seen)
        else:
            calls.add(name)
    return calls


def allowed_calls(settings, groups):
    """SystemCallFilter= semantics: the first line (not starting with ~) is an allow list;
    later ~ lines remove from it, later plain lines add to it."""
    allowed = None
    for value in settings.get("SystemCallFilter", []):
        deny = value.startswith("~")
        names = expand(value.lstrip("~").split(), groups)
        if allowed is None:
            if deny:
                raise SystemExit("sandbox-check: a deny-list-only filter is not checked here")
            allowed = set()
        allowed = allowed - names if deny else allowed | names
    return allowed


def file_problems(call, args, settings):
    m = re.match(r'(?:AT_FDCWD|\d+), "([^"]*)", ([A-Z_|]+)', args) if call == "openat" else None
    if not m:
        return []
    path, flags = m.group(1), m.group(2)
    problems = []
    writable = ["/tmp/", "/var/tmp/"] + ["/var/log/%s/" % d for d in settings.get("LogsDirectory", [])]
    if re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", flags):
        if not (path.startswith(tuple(writable)) or path.startswith(PRIVATE_DEV)):
            problems.append("opens %s for writing (ProtectSystem=strict)" % path)
    if path.startswith(("/home", "/root", "/run/user")):
        problems.append("reads %s (ProtectHome=)" % path)
    if path.startswith("/proc/") and not re.match(r"/proc/(self|thread-self|\d+)(/|$)", path):
        problems.append("reads %s (ProcSubset=pid)" % path)
    if path.startswith("/dev/") and not path.startswith(PRIVATE_DEV):
        problems.append("opens %s (PrivateDevices=)" % path)
    return problems


def call_problems(call, args, allowed, families):
    problems = []
    if call not in allowed:
        problems.append("system call %s is not in SystemCallFilter=" % call)
    if not args:  # the second half of an interrupted call
        return problems
    if call == "socket":
        family = args.split(",")[0]
        if family not in families:
            problems.append("socket(%s) is not in RestrictAddressFamilies=" % family)
    if call == "mmap" and "PROT_WRITE" in args and "PROT_EXEC" in args:
        problems.append("writable and executable mapping (MemoryDenyWriteExecute=)")
    if call in ("mprotect", "pkey_mprotect") and "PROT_EXEC" in args:
        problems.append("mprotect to executable (MemoryDenyWriteExecute=)")
    if (call in ("clone", "clone3", "unshare") and "CLONE_NEW" in args) or call == "setns":
        problems.append("new namespace: %s(%s) (RestrictNamespaces=)" % (call, args[:80]))
    return problems


def main(unit, log, relay):
    settings = unit_settings(unit)
    allowed = allowed_calls(settings, syscall_groups())
    families = set(" ".join(settings.get("RestrictAddressFamilies", [])).split())
    started, seen, problems = False, set(), {}
    for line in open(log, errors="replace"):
        if not started:
            started = re.match(r'^\d+\s+execve\("%s"' % re.escape(relay), line) is not None
            if not started:
                continue
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        call, args = m.group(1) or m.group(2), m.group(3) if m.group(2) else ""
        seen.add(call)
        for p in call_problems(call, args, allowed, families) + file_problems(call, args, settings):
            problems[p] = problems.get(p, 0) + 1
    if not started:
        print("sandbox-check: the log has no execve of %s" % relay)
        return 1
    for p in [p for p in problems if p in TOLERATED]:
        print("sandbox-check: tolerated: %s: %s" % (p, TOLERATED[p]))
        del problems[p]
    for p, n in sorted(problems.items()):
        print("sandbox-check: VIOLATION %s (%d times)" % (p, n))
    print("sandbox-check: %d distinct system calls, %d kinds of violation: %s"
          % (len(seen), len(problems), " ".join(sorted(seen))))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(64)
    sys.exit(main(*sys.argv[1:]))
