#!/usr/bin/env bash
# tests/integration/readme_manual.sh — the README as an entry page, the manual in docs/ and the man
# pages hold together (issue 31). The examples themselves run in readme_examples.sh. Checks:
#  - README.md: at most 200 lines; a `latscope bench --base-url` line for the reader's own server
#    in a shell block within its first screen (40 lines); every command of `latscope --help` has a
#    row in its command table;
#  - every relative link of README.md, CONTRIBUTING.md and docs/*.md names a file that exists
#    (PENDING: pages other branches write, named here until they are merged); docs/README.md, the
#    manual's index, links every page of docs/;
#  - `latscope help CMD` prints what `latscope CMD --help` prints, for every command;
#  - `make install` into a scratch DESTDIR installs latscope(1) and latscope-CMD(1) for every
#    command under share/man/man1; `groff -ww -man` and `man --warnings` say nothing of any of
#    them; `man latscope-bench` finds its page there and shows bench's flags; the README and the
#    manual go under share/doc/latscope.
# Exit 0 pass, 1 fail, 77 skip (groff or man-db missing: make deps installs them).
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
PENDING=() # pages other branches write, named here until they are merged
SCREEN=40
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok    $*"; }

command -v groff >/dev/null && command -v man >/dev/null || { echo "groff or man missing (make deps: groff-base, man-db)"; exit 77; }
[ -x "$BIN" ] || { echo "FAIL: $BIN is not built (make)"; exit 1; }
cd "$ROOT" || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/latscope-manual.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# The commands `latscope --help` lists (not help and version).
mapfile -t cmds < <("$BIN" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }' |
	grep -vx -e help -e version)
[ ${#cmds[@]} -ge 6 ] || fail "latscope --help lists ${#cmds[@]} commands"

# ---- README: an entry page ----
n=$(wc -l <README.md)
if [ "$n" -le 200 ]; then ok "README.md: $n lines (200 at most)"; else fail "README.md: $n lines, more than 200"; fi
first=$(awk -v s="$SCREEN" 'NR > s { exit } /^```(sh|bash|shell)/ { b = 1; next } b && /^```/ { b = 0; next }
	b && /^latscope bench --base-url / { print NR; exit }' README.md)
if [ -n "$first" ]; then
	ok "README.md:$first: a command for your own server in the first screen ($SCREEN lines)"
else
	fail "README.md: no \`latscope bench --base-url\` example in its first $SCREEN lines"
fi
for c in "${cmds[@]}"; do
	grep -q "^| \`latscope $c\` |" README.md || fail "README.md: no row for \`latscope $c\` in its command table"
done
ok "README.md: a row per command (${cmds[*]})"

# ---- links ----
docs=(README.md CONTRIBUTING.md docs/*.md)
nlinks=0
for f in "${docs[@]}"; do
	dir=$(dirname "$f")
	while IFS= read -r target; do
		target=${target%%#*}
		[ -z "$target" ] && continue
		case $target in http://* | https://* | mailto:*) continue ;; esac
		path=$(realpath -m --relative-to=. "$dir/$target")
		nlinks=$((nlinks + 1))
		[ -e "$path" ] && continue
		pending=0
		for p in "${PENDING[@]}"; do [ "$path" = "$p" ] && pending=1; done
		if [ "$pending" -eq 1 ]; then
			echo "note  $f: links $path, written on another branch (PENDING)"
		else
			fail "$f: links $target ($path), which does not exist"
		fi
	done < <(grep -oE '\]\([^)]+\)' "$f" | sed 's/^](//; s/)$//')
done
ok "links: $nlinks relative links in ${#docs[@]} documents checked"
for f in docs/*.md; do
	[ "$f" = docs/README.md ] && continue
	grep -qF "(${f#docs/})" docs/README.md || fail "docs/README.md (the manual's index) does not link $f"
done
grep -qF '(docs/README.md)' README.md || fail "README.md does not link the manual (docs/README.md)"
ok "docs/README.md links every page of docs/"

# ---- latscope help CMD ----
for c in "${cmds[@]}"; do
	"$BIN" help "$c" >"$tmp/help.out" 2>&1
	rc=$?
	"$BIN" "$c" --help >"$tmp/flag.out" 2>&1
	if [ "$rc" -ne 0 ]; then
		fail "latscope help $c: exit $rc"
	elif ! cmp -s "$tmp/help.out" "$tmp/flag.out"; then
		fail "latscope help $c differs from latscope $c --help"
	elif ! head -1 "$tmp/help.out" | grep -q "^usage: latscope $c"; then
		fail "latscope help $c: first line is not its usage: $(head -1 "$tmp/help.out")"
	fi
done
ok "latscope help CMD = latscope CMD --help for ${cmds[*]}"

# ---- man pages, as make install puts them ----
if ! make --no-print-directory -C "$ROOT" install DESTDIR="$tmp/root" PREFIX=/usr/local >"$tmp/install.log" 2>&1; then
	fail "make install DESTDIR=...: exit $?"
	tail -5 "$tmp/install.log"
fi
mandir=$tmp/root/usr/local/share/man
for page in latscope "${cmds[@]/#/latscope-}"; do
	f=$mandir/man1/$page.1
	if [ ! -s "$f" ]; then
		fail "make install: no $page(1) under share/man/man1"
		continue
	fi
	w=$(groff -ww -man -Tutf8 -z "$f" 2>&1)
	[ -z "$w" ] || fail "groff -ww -man $page.1: $w"
	w=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
	[ -z "$w" ] || fail "man --warnings -l $page.1: $w"
done
ok "man pages: latscope(1) and ${#cmds[@]} command pages installed, groff -ww and man --warnings silent"
docdir=$tmp/root/usr/local/share/doc/latscope
if [ -s "$docdir/README.md" ] && [ -s "$docdir/docs/README.md" ] && [ -s "$docdir/docs/bench.md" ]; then
	ok "make install: the README and the manual under share/doc/latscope"
else
	fail "make install: no README.md, docs/README.md or docs/bench.md under share/doc/latscope"
fi
if MANWIDTH=100 man -M "$mandir" latscope-bench 2>"$tmp/man.err" | grep -q -- '--base-url'; then
	ok "man latscope-bench (after make install) shows bench's flags"
else
	fail "man -M $mandir latscope-bench: no --base-url in it ($(head -1 "$tmp/man.err"))"
fi

[ "$fails" -eq 0 ] && echo "readme_manual: all checks passed" && exit 0
echo "readme_manual: $fails check(s) failed"
exit 1
