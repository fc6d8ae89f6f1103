#!/bin/sh
# The man page (docs/CMakeLists.txt) as a user gets it: `cmake --install BUILD --prefix DIR` into a scratch
# prefix, then the page must be there, render with groff's man macros without a warning from groff, and name --bench.
# usage: man_page.sh BUILD_DIR
set -eu
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
page=$prefix/share/man/man1/logpbench.1
test -s "$page" || { echo "man_page: cmake --install left no $page" >&2; exit 1; }
test -x "$prefix/bin/logpbench" || { echo "man_page: cmake --install left no bin/logpbench" >&2; exit 1; }
text=$(LC_ALL=C groff -man -Tascii -P-cbou "$page" 2>"$prefix/groff.err")
if test -s "$prefix/groff.err"; then
  echo "man_page: groff warned:" >&2
  cat "$prefix/groff.err" >&2
  exit 1
fi
for want in "--bench" "--transport" "SEE ALSO"; do
  printf '%s\n' "$text" | grep -q -e "$want" || { echo "man_page: the rendered page does not name $want" >&2; exit 1; }
done
if command -v man >/dev/null; then
  LC_ALL=C MANPAGER=cat MANWIDTH=80 man -l "$page" >/dev/null
fi
echo "man_page: $page renders ($(printf '%s\n' "$text" | wc -l) lines) and names --bench"
