#!/usr/bin/env bash
# Builds the Debian package from the build tree (cpack -G DEB), checks what it holds
# (dpkg-deb -c) and what it depends on (dpkg-deb -f: the packages of the shared libraries its
# programs really load, from dpkg-shlibdeps), unpacks it into a temporary root (dpkg -x) and
# runs the CLI, the Python binding and the bash completion from there, then lintian (no error,
# no warning: docs/packaging.md lists the overrides and why).
# Usage: deb_package.sh BUILD_DIR SOURCE_DIR VERSION
set -euo pipefail
build=$1
src=$2
version=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "deb_package: $*" >&2
  exit 1
}

arch=$(dpkg --print-architecture)
# Libraries, the CMake package and the .pc files in Debian's multiarch directory.
libdir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; fail "cpack -G DEB failed"; }
deb=$work/out/replaygate_${version}_${arch}.deb
[ -f "$deb" ] || fail "cpack wrote no $(basename "$deb"): $(ls "$work/out")"

# The contents: what a user runs and links, the man page of every command, the completion, the
# unit, the binding, the Debian files. (`-c` lists ./usr/..., one tar line per entry.)
contents=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
man_pages=$(cd "$build/man/man1" && printf '%s\n' *.1)
[ "$(wc -l <<<"$man_pages")" -ge 30 ] || fail "only $(wc -l <<<"$man_pages") man pages built"
expected=(
  /usr/bin/replaygate
  "$libdir/libreplaygate_runtime.so" "$libdir/libreplaygate_runtime.so.0"
  "$libdir/libreplaygate_runtime.so.$version" "$libdir/libreplaygate_runtime.a"
  "$libdir/libreplaygate_jsonl.so" "$libdir/libreplaygate_jsonl.so.0"
  "$libdir/libreplaygate_verify.so" "$libdir/libreplaygate_verify.so.0"
  /usr/include/replaygate/runtime/replaygate.h /usr/include/replaygate/runtime/table.h
  /usr/include/replaygate/runtime/reload.h /usr/include/replaygate/runtime/codes.h
  /usr/include/replaygate/runtime/verify/replaygate_verify.h
  /usr/include/replaygate/bindings/jsonl/replaygate_jsonl.h
  "$libdir/pkgconfig/replaygate.pc" "$libdir/pkgconfig/replaygate-jsonl.pc"
  "$libdir/pkgconfig/replaygate-verify.pc"
  "$libdir/cmake/replaygate/replaygateConfig.cmake" "$libdir/cmake/replaygate/replaygateTargets.cmake"
  /usr/share/bash-completion/completions/replaygate
  "/usr/lib/systemd/system/replaygate-gate@.service" /usr/lib/sysusers.d/replaygate.conf
  /usr/lib/python3/dist-packages/replaygate.py
  /usr/share/doc/replaygate/copyright /usr/share/doc/replaygate/changelog.gz
  /usr/share/doc/replaygate/cli.md /usr/share/lintian/overrides/replaygate
  /usr/share/doc/replaygate/examples/policies/replay_gate.yaml
  /usr/share/doc/replaygate/examples/payments-dlt.kcat.jsonl
  /usr/share/doc/replaygate/examples/prometheus/replaygate-alerts.yml
)
for page in $man_pages; do expected+=("/usr/share/man/man1/$page.gz"); done
for path in "${expected[@]}"; do
  grep -qxF "$path" <<<"$contents" || fail "$(basename "$deb") does not hold $path"
done
# Nothing of the build tree or the tests (no absolute build paths, no test programs).
if grep -E '/(rg_[a-z_]+_tests|replaygate_docgen)$|\.stamp$|/tmp/' <<<"$contents"; then
  fail "$(basename "$deb") holds build or test files (above)"
fi

# Depends: for every shared library the CLI or one of our libraries names (DT_NEEDED), the
# package that owns the file the dynamic linker resolves it to is declared; nothing hard-coded.
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
depended=$(awk -v RS='[,|]' '{print $1}' <<<"$depends")
for binary in "$build/bin/replaygate" "$build/bindings/jsonl/libreplaygate_jsonl.so" \
  "$build/runtime/verify/libreplaygate_verify.so" "$build/runtime/libreplaygate_runtime.so"; do
  resolved=$(ldd "$binary")
  for soname in $(readelf -d "$binary" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    lib=$(awk -v s="$soname" '$1 == s && $3 ~ /^\// {print $3}' <<<"$resolved")
    [ -n "$lib" ] || fail "$(basename "$binary") needs $soname, which ldd does not resolve"
    owner=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -1 | cut -d: -f1) ||
      owner=$(dpkg -S "$lib" | head -1 | cut -d: -f1)
    [ -n "$owner" ] || fail "no package owns $lib ($soname, needed by $binary)"
    grep -qxF "$owner" <<<"$depended" ||
      fail "Depends lacks $owner, whose $soname $(basename "$binary") needs: $depends"
  done
done
for package in libsodium23 libyaml-cpp0.7 libsqlite3-0 libpq5 librabbitmq4; do
  grep -qxF "$package" <<<"$depended" || fail "Depends lacks $package: $depends"
done

# Unpacked into a temporary root, it runs from its own contents. The CLI links our libraries
# statically and carries no RPATH: it needs nothing from the build tree (LD_LIBRARY_PATH unset).
dpkg -x "$deb" "$work/root"
root=$work/root
cli=$root/usr/bin/replaygate
if readelf -d "$cli" | grep -qE 'RPATH|RUNPATH'; then fail "the packaged CLI has an RPATH"; fi
if readelf -S "$cli" | grep -q '\.debug_info'; then fail "the packaged CLI is not stripped"; fi
got=$(env -u LD_LIBRARY_PATH "$cli" --version)
want=$("$build/bin/replaygate" --version)
[ "$got" = "$want" ] || fail "packaged --version: '$got', build tree: '$want'"
case "$got" in "replaygate $version "*) ;; *) fail "packaged --version: '$got'" ;; esac
examples=$root/usr/share/doc/replaygate/examples
env -u LD_LIBRARY_PATH "$cli" compile "$examples/policies/replay_gate.yaml" -o "$work/gate.rgt" \
  2>"$work/compile.err" || { cat "$work/compile.err" >&2; fail "packaged compile failed"; }
status=0
env -u LD_LIBRARY_PATH "$cli" decide --table "$work/gate.rgt" --input-format kafka \
  --mapping "$examples/kafka-spring-dlt.mapping.yaml" "$examples/payments-dlt.kcat.jsonl" \
  >"$work/decisions" 2>"$work/decide.err" || status=$?
want_status=0
"$build/bin/replaygate" decide --policy "$src/policies/replay_gate.yaml" --input-format kafka \
  --mapping "$src/examples/kafka-spring-dlt.mapping.yaml" "$src/examples/payments-dlt.kcat.jsonl" \
  >"$work/want" 2>/dev/null || want_status=$?
[ "$status" = "$want_status" ] || fail "packaged decide exited $status, the build tree's $want_status"
cmp -s "$work/decisions" "$work/want" || {
  diff "$work/want" "$work/decisions" | head >&2
  fail "packaged decide printed other decisions than the build tree's CLI"
}
[ "$(grep -c '"verb":"replay_once"' "$work/decisions")" -ge 1 ] ||
  fail "packaged decide replayed nothing: $(head -3 "$work/decisions")"

# The packaged libraries through the packaged Python binding: a plain load (the runtime library)
# and a verified one of a table the packaged CLI signed (libreplaygate_verify.so, found next to
# the runtime). RG_LIBRARY names the unpacked runtime, since the temporary root is not on the
# linker path (installed, ldconfig finds it).
if command -v python3 >/dev/null 2>&1; then
  env -u LD_LIBRARY_PATH "$cli" key generate --secret "$work/sign.key" --public "$work/sign.pub" >/dev/null 2>&1
  env -u LD_LIBRARY_PATH "$cli" sign "$work/gate.rgt" --sign-key "$work/sign.key" -o "$work/signed.rgt" 2>/dev/null
  got=$(PYTHONPATH=$root/usr/lib/python3/dist-packages RG_LIBRARY=$root$libdir/libreplaygate_runtime.so \
    python3 -c '
import sys, replaygate
assert replaygate.__file__.startswith(sys.argv[4]), replaygate.__file__
for table in (replaygate.Table.load(sys.argv[1]),
              replaygate.Table.load(sys.argv[2], trusted_keys=[sys.argv[3]])):
    d = table.decide(topic="payment.capture", error_class="timeout", attempts=1,
                     idempotency_key="cap_9f3a", already_committed=False)
    print(d.verb)
assert replaygate.load_verify_library()._name.startswith(sys.argv[4]), "verify library not packaged"
' "$work/gate.rgt" "$work/signed.rgt" "$work/sign.pub" "$root/")
  [ "$got" = "replay_once
replay_once" ] || fail "the packaged Python binding decided '$got', want replay_once twice"
fi

# The unit runs the packaged CLI; the completion is the generated one and loads.
grep -q '^ExecStart=/usr/bin/replaygate gate rabbitmq ' "$root/usr/lib/systemd/system/replaygate-gate@.service" ||
  fail "the packaged unit's ExecStart is not /usr/bin/replaygate: $(grep ExecStart= "$root/usr/lib/systemd/system/replaygate-gate@.service")"
spec=$(bash -c 'source "$1" && complete -p replaygate' _ "$root/usr/share/bash-completion/completions/replaygate")
[ "$spec" = "complete -o default -F _replaygate replaygate" ] || fail "packaged completion: '$spec'"
zcat "$root/usr/share/man/man1/replaygate-compile.1.gz" | grep -q '^\.SH OPTIONS' ||
  fail "replaygate-compile.1.gz has no OPTIONS section"

# lintian: no error and no warning; the overridden tags are shown with their reasons. (With
# --show-overrides lintian exits 2 for overridden tags too, so its lines decide: E: and W:.)
if ! command -v lintian >/dev/null 2>&1; then fail "lintian is not installed (tools/setup.sh installs it)"; fi
lintian_status=0
lintian --display-level '>=warning' --show-overrides "$deb" >"$work/lintian" 2>&1 || lintian_status=$?
cat "$work/lintian"
case "$lintian_status" in 0 | 2) ;; *) fail "lintian exited $lintian_status" ;; esac
if grep -qE '^(E|W): ' "$work/lintian"; then fail "lintian found errors or warnings (above)"; fi
grep -qE '^O: replaygate: package-name-doesnt-match-sonames' "$work/lintian" ||
  fail "lintian did not run its checks (no override of package-name-doesnt-match-sonames shown)"
echo "deb_package: $(basename "$deb"): contents, Depends, runs from dpkg -x, lintian clean"
