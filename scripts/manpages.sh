#!/usr/bin/env bash
# scripts/manpages.sh BIN OUTDIR — writes the man pages latscope(1) and latscope-CMD(1), one per
# command, into OUTDIR, made from what the binary prints: `BIN --help` (the commands, one line
# each) and `BIN help CMD` (the usage, description, flags and example of each), so a flag's text
# has one copy, in the option table of the command's source (base/opts ls_opt_help prints it).
# The --help layout it reads: "usage: ..." lines up to a blank line, then paragraphs; a line at
# column 0 ending in ":" after a blank line starts a section; "  --flag ARG   text" (or "  -x, --flag") is a flag,
# lines indented deeper continue it; "example:" starts lines shown as they are.
# Run by `make man` (into build/man) and `make install`; tests/integration/readme_manual.sh
# checks the pages with groff -ww and man --warnings.
set -euo pipefail
BIN=${1:?usage: scripts/manpages.sh BIN OUTDIR}
OUT=${2:?usage: scripts/manpages.sh BIN OUTDIR}
mkdir -p "$OUT"
version=$("$BIN" version | awk '{ print $2 }')
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$(dirname "$0")" log -1 --format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%d)

# The commands and their one-line descriptions from `latscope --help`: NAME TAB DESCRIPTION.
commands() {
	"$BIN" --help | awk '
	/^commands:/ { on = 1; next }
	on && /^  [a-z]/ {
		if (name != "") print name "\t" desc
		name = $1; desc = substr($0, index($0, $2))
		if (name == "help") { name = ""; desc = "" }
		next
	}
	on && /^   +[^ ]/ { sub(/^ +/, ""); desc = desc " " $0; next }
	on && /^$/ { on = 0 }
	END { if (name != "" && name != "version") print name "\t" desc }' | grep -v '^version	'
}

# The roff of one --help text, read on stdin: SYNOPSIS, DESCRIPTION and OPTIONS sections.
help_to_roff() {
	awk '
	function esc(s) {
		gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s)
		if (s ~ /^[.\047]/) s = "\\&" s
		return s
	}
	function text(s) { # a line of running text; a bare "." or "\x27" line start is escaped
		print esc(s)
	}
	BEGIN { phase = "synopsis"; print ".SH SYNOPSIS"; print ".nf" }
	phase == "synopsis" {
		if ($0 == "") { print ".fi"; print ".SH DESCRIPTION"; phase = "body"; para = 0; next }
		if (!sub(/^usage: /, "")) sub(/^       /, "")
		text($0); next
	}
	verbatim && (/^ / || $0 == "") { if ($0 != "") { sub(/^  /, ""); text($0) } next }
	verbatim { print ".fi"; print ".in"; verbatim = 0 }
	/^$/ { para = 1; intp = 0; next }
	/^example:/ || /^examples:/ {
		if (!opts) { print ".SH OPTIONS"; opts = 1 }
		print ".SS Example"; print ".in +2"; print ".nf"; verbatim = 1
		rest = $0; sub(/^examples?: */, "", rest)
		if (rest != "") text(rest)
		next
	}
	/^[^ ].*:$/ && (para || opts && !intp) {
		if (!opts) { print ".SH OPTIONS"; opts = 1 }
		h = $0; sub(/:$/, "", h); print ".SS \"" esc(h) "\""; para = 0; intp = 0; next
	}
	/^  +-/ && !(intp && /^    /) {
		line = $0; sub(/^ +/, "", line)
		if (!opts) { print ".SH OPTIONS"; opts = 1 }
		n = match(line, /   *[^ ]/)
		if (n) { spec = substr(line, 1, n - 1); rest = substr(line, n); sub(/^ +/, "", rest) }
		else { spec = line; rest = "" }
		print ".TP"; print ".B " esc(spec)
		if (rest != "") text(rest)
		intp = 1; para = 0; next
	}
	/^ +[^ ]/ && intp { line = $0; sub(/^ +/, "", line); text(line); next }
	{
		if (para) { print ".PP"; para = 0 }
		line = $0; sub(/^ +/, "", line); text(line)
	}
	END { if (verbatim) { print ".fi"; print ".in" } }'
}

th() { # NAME: the title line
	printf '.TH %s 1 "%s" "latscope %s" "latscope manual"\n' "$(tr '[:lower:]' '[:upper:]' <<<"$1" | sed 's/-/\\-/g')" "$date" "$version"
}

see_also() { # NAME: the SEE ALSO section, every other page
	local c others=()
	[ "$1" != latscope ] && others+=("latscope (1)")
	while IFS=$'\t' read -r c _; do
		[ "latscope-$c" != "$1" ] && others+=("latscope\\-$c (1)")
	done < <(commands)
	echo ".SH SEE ALSO"
	local i
	for ((i = 0; i < ${#others[@]}; i++)); do
		printf '.BR %s%s\n' "${others[i]}" "$([ $((i + 1)) -lt ${#others[@]} ] && echo ,)"
	done
	echo ".PP"
	echo "The latscope manual (a page per command, the figures, the design): docs/README.md in the"
	echo "source tree, installed by make install as share/doc/latscope/docs/README.md under its prefix"
	echo "(/usr/local by default)."
}

page_top() { # the top of latscope(1)
	th latscope
	echo ".SH NAME"
	echo "latscope \\- where the latency of an LLM serving benchmark really goes"
	echo ".SH SYNOPSIS"
	echo ".B latscope"
	echo ".I command"
	echo "[flags]"
	echo ".br"
	echo ".B latscope help"
	echo ".I command"
	echo ".SH DESCRIPTION"
	echo "latscope drives streaming requests at an OpenAI\\-compatible (or SGLang\\-native) server,"
	echo "reports each run the way vllm bench serve and SGLang's bench_serving do, and the honest way,"
	echo "side by side; with root it stamps the same requests in the kernel (eBPF) and splits every"
	echo "TTFT, inter\\-token gap and end\\-to\\-end latency into client, network and server time."
	echo ".SH COMMANDS"
	local c d
	while IFS=$'\t' read -r c d; do
		printf '.TP\n.B %s\n%s (\\fBlatscope\\-%s\\fR(1))\n' "$c" "$(sed 's/-/\\-/g; s/\\\\-/\\-/g' <<<"$d")" "$c"
	done < <(commands)
	cat <<'EOF'
.TP
.BI "help " command
that command's flags, as
.B latscope
.I command
.B \-\-help
prints them
.TP
.B version
the version
.SH EXIT STATUS
.TP
.B 0
the run finished (failed requests are counted, not fatal)
.TP
.B 1
a runtime failure (server not answering, unreadable input, an output not writable), or an
interrupted run (what finished is still reported)
.TP
.B 2
a usage error (a flag, a config or profile file)
.TP
.B 3
.RB ( bench )
the run finished but not one measured request succeeded
.PP
.B latscope sweep
has its own codes (no point met the SLO, every point did, stopped early): see
.BR latscope\-sweep (1).
EOF
}

page_top >"$OUT/latscope.1.tmp"
see_also latscope >>"$OUT/latscope.1.tmp"
mv "$OUT/latscope.1.tmp" "$OUT/latscope.1"
while IFS=$'\t' read -r c d; do
	f=$OUT/latscope-$c.1
	{
		th "latscope-$c"
		echo ".SH NAME"
		printf 'latscope\\-%s \\- %s\n' "$c" "$(sed 's/-/\\-/g' <<<"$d")"
		"$BIN" help "$c" | help_to_roff
		see_also "latscope-$c"
	} >"$f.tmp"
	mv "$f.tmp" "$f"
done < <(commands)
