#!/usr/bin/env bash
# The systemd unit as shipped (relay/outbox-relay.service), with ExecStart pointing at this
# build's relay: `systemd-analyze verify` accepts it and `systemd-analyze security` rates
# its exposure at most 1.5 (README.md states the figure). Needs no root and no running
# systemd; test-package.sh checks the installed unit the same way and runs the relay in it.
#
# usage: test-unit.sh UNIT-TEMPLATE RELAY-BINARY
set -euo pipefail

command -v systemd-analyze >/dev/null 2>&1 ||
   { echo "relay-unit: SKIP: systemd-analyze not found (Debian package systemd)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/outbox-unit.XXXXXX")
trap 'rm -rf "$work"' EXIT
unit="$work/outbox-relay.service"
sed "s|@BINDIR@/outbox-relay|$(realpath "$2")|" "$1" >"$unit"

failed=0
# --man=no: the man page is not installed here (the package test verifies with it).
if systemd-analyze verify --man=no "$unit"; then echo "verify: ok"; else failed=1; fi
exposure=$(systemd-analyze security --offline=true "$unit" 2>/dev/null |
           sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
echo "exposure: $exposure"
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 1.5) }' || { echo "FAIL: exposure above 1.5"; failed=1; }
exit $failed
