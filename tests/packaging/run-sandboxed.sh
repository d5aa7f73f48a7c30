#!/usr/bin/env bash
# Runs the installed outbox-relay the way its unit does, as far as a machine without a
# running systemd allows: as the user outbox-relay with no capabilities and no new
# privileges (setpriv), a clean environment, umask 0077, its configuration read from
# /etc/outbox-relay/ through the group, logging into /var/log/outbox-relay/ (created as
# LogsDirectory= would); all under strace. It waits until an event written by WRITER (a
# program built against the installed liboutbox-dev) is published and cleared, sends SIGHUP
# (re-read configuration, reopen the log) and SIGTERM, and checks the trace against the
# unit's sandbox with sandbox-check.py. Exit status 0 when all of that holds.
#
# usage: run-sandboxed.sh UNIT-FILE WORKDIR WRITER  (OUTBOX_TEST_MONGODB_URI, _MQTT_URI set)
set -euo pipefail

unit=$1 work=$2 writer=$3
here=$(cd "$(dirname "$0")" && pwd)
relay=/usr/bin/outbox-relay
config=/etc/outbox-relay/package-test.json
logdir=/var/log/outbox-relay
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
db="package_test_$$"

cat >"$config" <<EOF
{ "mongodb-uri": "$OUTBOX_TEST_MONGODB_URI", "database": "$db", "collections": ["things"],
  "mqtt-uri": "$OUTBOX_TEST_MQTT_URI", "name": "package-test-$$",
  "metrics-listen": "127.0.0.1:$port", "log-file": "$logdir/package-test.log" }
EOF
chgrp outbox-relay "$config" && chmod 0640 "$config"
install -d -o outbox-relay -g outbox-relay -m 0750 "$logdir"

metric() { # name: prints its value, or nothing while the endpoint does not answer
   curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null | awk -v m="$1" '$1 == m { print $2 }'
}
wait_for() { # seconds, description, command...
   local end=$((SECONDS + $1)) what=$2; shift 2
   until "$@"; do
      [ $SECONDS -lt $end ] || { echo "run-sandboxed: timed out waiting for $what" >&2; return 1; }
      sleep 0.2
   done
}
cleared_one() { [ "$(metric outbox_relay_events_cleared_total)" -ge 1 ] 2>/dev/null; }
answering() { [ -n "$(metric outbox_relay_events_cleared_total)" ]; }

(umask 0077 && exec strace -f -qq -s 256 -o "$work/relay.trace" \
   setpriv --reuid=outbox-relay --regid=outbox-relay --clear-groups --no-new-privs \
           --inh-caps=-all --bounding-set=-all \
   env -i PATH=/usr/bin:/bin "$relay" --config "$config") &
tracer=$!
pid=""
stop() { [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true; rm -f "$config"; }
trap stop EXIT
wait_for 30 "the relay to start" sh -c "pgrep -P $tracer >/dev/null"
pid=$(pgrep -P "$tracer")
status=0
wait_for 60 "the relay's metrics endpoint" answering || status=1
"$writer" "$OUTBOX_TEST_MONGODB_URI" "$db" things sandboxed-1 || status=1
wait_for 60 "the event to be published and cleared" cleared_one || status=1
kill -HUP "$pid"
wait_for 30 "SIGHUP to be handled" grep -q "SIGHUP: configuration reloaded" "$logdir/package-test.log" ||
   status=1
kill -TERM "$pid"
relay_status=0
wait "$tracer" || relay_status=$?
pid=""
echo "run-sandboxed: relay exit status $relay_status; its log:"
cat "$logdir/package-test.log"
[ "$relay_status" = 0 ] || status=1
perms=$(stat -c '%U %a' "$logdir/package-test.log")
echo "run-sandboxed: log file owner and mode: $perms"
[ "$perms" = "outbox-relay 600" ] || status=1
"$here/sandbox-check.py" "$unit" "$work/relay.trace" "$relay" || status=1
exit $status
