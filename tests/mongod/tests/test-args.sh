#!/usr/bin/env bash
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
#
# test-mongod's command line (main.c's option table): --help exits 0, and a bad value, an
# unknown option or a contradiction exits 64 (EX_USAGE) with a message naming it, before
# anything listens.
#
# usage: test-args.sh TEST-MONGOD
set -uo pipefail
bin=$1
failed=0
expect() { # expect RC MESSAGE-PART ARGS...
   local rc=$1 msg=$2 out got
   shift 2
   out=$("$bin" "$@" 2>&1 </dev/null)
   got=$?
   if [[ $got != "$rc" || $out != *"$msg"* ]]; then
      echo "FAIL: test-mongod $* -> $got '${out%%$'\n'*}' (wanted $rc, '$msg')"
      failed=1
   fi
}
expect 0 "usage: test-mongod" --help
expect 64 "bad --members 0 (1 to 50, as MongoDB)" --members 0
expect 64 "bad --port 70000" --port 70000
expect 64 "bad --shards 17 (1 to 16)" --mongos --shards 17
expect 64 "bad --oplog-size x" --oplog-size x
expect 64 "unknown expression nope" --without-expression nope
expect 64 "unrecognized option" --no-such-option
expect 64 "need --tls-cert-file" --tls-ca-file ca.pem
expect 64 "--mongos with --members or --auth" --mongos --members 3
expect 64 "--mongos-count needs --mongos" --mongos-count 2
expect 64 "bad --mongos-count 0 (1 to 16)" --mongos --mongos-count 0
expect 64 "unexpected argument extra" extra
[[ $failed == 0 ]] && echo "mongod-args: ok"
exit $failed
