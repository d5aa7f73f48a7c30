#!/usr/bin/env bash
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
#
# liboutbox's installed headers as a user gets them: copies the headers lib/meson.build
# installs into an include/outbox/ of their own and checks that
#   - the list names every header in lib/include/outbox/ (a header left out would not be
#     installed, and outbox.h would not compile for users);
#   - each header compiles on its own, twice in a row (its include guard), with nothing else
#     on the include path but the dependencies' (-std=c11 -Wall -Wextra -Wpedantic -Werror);
#   - the headers include each other without a circle (outbox.h, the umbrella, is on top).
#
# usage: test-headers-alone.sh SOURCE-INCLUDE-DIR HEADER...   (CC: the compiler command)
# Skips (77) without pkg-config or libmongoc-1.0's .pc file. No state outside its own
# temporary directory.
set -euo pipefail

src_include=$1; shift
cc=${CC:-cc}
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

command -v pkg-config >/dev/null || { echo "SKIP: pkg-config not found"; exit 77; }
dep_cflags=$(pkg-config --cflags libmongoc-1.0) || { echo "SKIP: no libmongoc-1.0.pc"; exit 77; }
# The dependencies' headers as system headers, as the build includes them: their own
# pedantic warnings are not ours.
# shellcheck disable=SC2086 # split pkg-config's flags into words
dep_cflags=$(printf '%s\n' $dep_cflags | sed 's/^-I/-isystem/' | tr '\n' ' ')

work=$(mktemp -d "${TMPDIR:-/tmp}/outbox-headers.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/include/outbox"
installed=()
for h in "$@"; do
   cp "$h" "$work/include/outbox/"
   installed+=("$(basename "$h")")
done

# 1. Every header of the source tree is installed (outbox-version.h is generated from .in).
for h in "$src_include"/outbox/*.h "$src_include"/outbox/*.h.in; do
   [ -e "$h" ] || continue
   name=$(basename "$h" .in)
   [ -e "$work/include/outbox/$name" ] || fail "$name is not in lib/meson.build's installed headers"
done

# 2. Each installed header compiles on its own.
for name in "${installed[@]}"; do
   # The typedef keeps a header of macros only from being an (invalid) empty unit.
   printf '#include <outbox/%s>\n#include <outbox/%s>\ntypedef int alone_t;\n' \
      "$name" "$name" >"$work/alone.c"
   # shellcheck disable=SC2086 # the compiler command and pkg-config's flags are word lists
   if ! $cc -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$work/include" \
        $dep_cflags "$work/alone.c" 2>"$work/errors.txt"; then
      fail "<outbox/$name> does not compile on its own:"
      sed 's/^/   /' "$work/errors.txt" >&2
   fi
done

# 3. No circle: take away, round by round, the headers whose outbox includes are all gone.
#    An include is "outbox/NAME.h" or "NAME.h" (outbox-version.h sits beside them).
includes_of() {
   sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\(outbox\/\)\{0,1\}\([^/>"]*\.h\)[>"].*/\2/p' \
      "$work/include/outbox/$1"
}
left=("${installed[@]}")
while [ "${#left[@]}" -gt 0 ]; do
   next=()
   for name in "${left[@]}"; do
      for inc in $(includes_of "$name"); do
         for other in "${left[@]}"; do
            if [ "$other" = "$inc" ] && [ "$other" != "$name" ]; then
               next+=("$name")
               continue 3
            fi
         done
      done
   done
   if [ "${#next[@]}" = "${#left[@]}" ]; then
      fail "these headers include each other in a circle (or depend on one): ${left[*]}"
      break
   fi
   left=("${next[@]}")
done

if [ "$failed" = 0 ]; then
   echo "ok: ${#installed[@]} headers installed, each compiles on its own, no include circle"
fi
exit "$failed"
