#!/usr/bin/env bash
# The Debian packages as an operator gets them: builds them with scripts/package, runs
# lintian, installs them into this machine with `apt-get install ./*.deb`, and checks
# outbox-relay --version, a program built against liboutbox-dev with pkg-config, the system
# user, the permissions of /etc/outbox-relay, the conffile, the systemd unit (verify,
# security exposure), and the installed relay publishing an event as its unit's user under
# strace, checked against the unit's sandbox (sandbox-check.py). Then purges them.
#
# usage: test-package.sh SOURCE-ROOT   (under with-servers; needs root)
# Skips (77) when not root, when a tool is missing, or when the packages were installed by
# someone else (it never touches those). Runs of this test on one machine take turns (a
# lock), since they install the same packages.
set -euo pipefail

src=$1
here=$(cd "$(dirname "$0")" && pwd)
name=package-debian
passed=0 failed=0
check() { # description, command...
   local what=$1; shift
   if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $what" >&2; fi
}
skip() { echo "$name: SKIP: $*"; exit 77; }
phase_start=$SECONDS
phase() { echo "== $1 ($((SECONDS - phase_start)) s so far)"; }

[ "$(id -u)" = 0 ] || skip "needs root: it installs the packages into this machine"
for tool in dpkg-buildpackage:dpkg-dev dh:debhelper lintian:lintian \
            apt-get:apt systemd-analyze:systemd strace:strace setpriv:util-linux \
            pkg-config:pkg-config cc:gcc curl:curl; do
   command -v "${tool%%:*}" >/dev/null 2>&1 ||
      skip "${tool%%:*} not found (Debian package ${tool#*:}; scripts/setup-deps installs it)"
done

packages=(liboutbox0 liboutbox-dev outbox-relay)
marker_dir=/var/lib/outbox-package-test
present() { # prints the packages dpkg knows as installed or with config files left
   dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null |
      awk '$NF == "installed" || $NF == "config-files" { print $1 }'
}

exec 9>/run/lock/outbox-package-test.lock
flock -w 900 9 || { echo "$name: another run held the lock for 15 minutes" >&2; exit 1; }
if [ -n "$(present)" ]; then
   [ -f "$marker_dir/installed" ] ||
      skip "$(present | xargs) installed on this machine by someone else; not touching them"
   echo "$name: purging what an interrupted run left installed"
   apt-get purge -y -qq -o DPkg::Lock::Timeout=300 $(present) >/dev/null
fi
user_existed=0
if getent passwd outbox-relay >/dev/null && [ ! -f "$marker_dir/user-created" ]; then
   user_existed=1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/outbox-package-test.XXXXXX")
cleanup() {
   if [ -n "$(present)" ]; then
      apt-get purge -y -qq -o DPkg::Lock::Timeout=300 $(present) >/dev/null || true
   fi
   if [ "$user_existed" = 0 ] && getent passwd outbox-relay >/dev/null; then
      deluser --quiet --system outbox-relay >/dev/null 2>&1 || true
      delgroup --quiet --system outbox-relay >/dev/null 2>&1 || true
   fi
   rm -rf "$marker_dir" "$work"
}
trap cleanup EXIT

phase "build (scripts/package)"
"$src/scripts/package" --out "$work/debs" >/dev/null
debs=("$work"/debs/liboutbox0_*.deb "$work"/debs/liboutbox-dev_*.deb "$work"/debs/outbox-relay_*.deb)
check "three packages built" test "${#debs[@]}" = 3 -a -f "${debs[2]}"
version=$(dpkg-deb -f "${debs[2]}" Version)

phase "the symbols file guards the ABI"
dpkg-deb -x "${debs[0]}" "$work/liboutbox0"
so=$(ls "$work"/liboutbox0/usr/lib/*/liboutbox.so.0.*)
gensymbols() { # symbols file: what dh_makeshlibs checks, on the packaged library
   (cd "$src" && dpkg-gensymbols -q -pliboutbox0 -v"$version" -e"$so" -c1 -I"$1" \
                                 -O"$work/generated.symbols")
}
check "the library keeps every symbol debian/liboutbox0.symbols lists" \
   gensymbols "$src/debian/liboutbox0.symbols"
{ cat "$src/debian/liboutbox0.symbols"; echo " outbox_gone@Base 0.0.1"; } >"$work/older.symbols"
refused() { ! "$@" 2>/dev/null; }
check "a symbol of an earlier release that disappears is refused" \
   refused gensymbols "$work/older.symbols"

phase "lintian"
lintian --fail-on error,warning --display-info "$work"/debs/*.changes 2>&1 |
   grep -v "running with root privileges" | tee "$work/lintian.txt" || true
check "lintian reports nothing" test ! -s "$work/lintian.txt"

phase "install (apt-get install ./*.deb)"
mkdir -p "$marker_dir" && touch "$marker_dir/installed"
[ "$user_existed" = 1 ] || touch "$marker_dir/user-created"
check "apt-get install succeeds" \
   apt-get install -y -qq -o DPkg::Lock::Timeout=300 "${debs[@]}" >/dev/null
check "outbox-relay --version names $version" \
   sh -c "outbox-relay --version | grep -qx 'outbox-relay $version'"
check "the packaged relay runs jemalloc (debian/rules: -Dallocator=jemalloc)" \
   sh -c "outbox-relay --version | grep -q '^malloc jemalloc '"

phase "a program against liboutbox-dev"
cc "$here/installed-writer.c" -o "$work/installed-writer" $(pkg-config --cflags --libs outbox)
check "it links the packaged shared library" \
   sh -c "ldd '$work/installed-writer' | grep -q 'liboutbox.so.0 => /lib/.*-linux-gnu/liboutbox.so.0\|liboutbox.so.0 => /usr/lib/.*-linux-gnu/liboutbox.so.0'"
check "it reports liboutbox $version" \
   sh -c "'$work/installed-writer' | grep -qx 'liboutbox $version'"

phase "user, configuration, unit"
IFS=: read -r _ _ uid _ _ home shell < <(getent passwd outbox-relay)
check "system user outbox-relay (uid $uid < 1000, no home, no shell)" \
   test "$uid" -lt 1000 -a "$home" = /nonexistent -a "$shell" = /usr/sbin/nologin
check "/etc/outbox-relay is root:outbox-relay 750" \
   test "$(stat -c '%U:%G %a' /etc/outbox-relay)" = "root:outbox-relay 750"
check "relay.json is root:outbox-relay 640" \
   test "$(stat -c '%U:%G %a' /etc/outbox-relay/relay.json)" = "root:outbox-relay 640"
check "relay.json is a conffile" \
   sh -c "dpkg-query -W -f='\${Conffiles}' outbox-relay | grep -q '^ /etc/outbox-relay/relay.json '"
unit=/lib/systemd/system/outbox-relay.service
check "systemd-analyze verify accepts the unit" systemd-analyze verify "$unit"
exposure=$(systemd-analyze security --offline=true "$unit" 2>/dev/null |
           sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
echo "systemd-analyze security --offline=true: exposure $exposure"
# README.md states the figure; hardening taken out of the unit raises it past this.
check "exposure $exposure at most 1.5" awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 1.5) }'

phase "the installed relay in its sandbox"
"$here/run-sandboxed.sh" "$unit" "$work" "$work/installed-writer" >"$work/sandbox.txt" 2>&1 &&
   sandbox_ok=1 || sandbox_ok=0
cat "$work/sandbox.txt"
check "the relay published and cleared an event as outbox-relay within its sandbox" \
   test "$sandbox_ok" = 1

phase "purge"
check "apt-get purge succeeds" \
   apt-get purge -y -qq -o DPkg::Lock::Timeout=300 "${packages[@]}" >/dev/null
check "nothing of the packages is left" \
   test -z "$(present)" -a ! -e /usr/bin/outbox-relay -a ! -e /etc/outbox-relay \
        -a ! -e /usr/include/outbox -a ! -e /var/log/outbox-relay

phase "done"
echo "$name: $passed passed, $failed failed"
[ "$failed" = 0 ]
