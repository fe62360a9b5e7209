#!/usr/bin/env bash
# scripts/engine.sh — llama.cpp's llama-server, built from the source the npm package
# node-llama-cpp ships (docs/engine.md), for the engine tests (tests/engines/).
#   scripts/engine.sh          fetch + build when not cached; last line: the llama-server path
#   scripts/engine.sh --path   the cached binary's path, or exit 1 (never fetches or builds)
#   scripts/engine.sh --test   as the bare form, but a package that cannot be fetched (no
#                              registry) is exit 0 with a SKIP line: `make test` goes on and the
#                              engine tests skip; a build that fails is still a failure
# The build goes into a cache outside any clone, keyed by the llama.cpp commit the package
# bundles, so every checkout on a machine shares one build: $LATSCOPE_ENGINE_CACHE (default
# /var/cache/latscope/engine)/llama-<commit>-src/build/bin/llama-server. The package tarball
# is kept in $LATSCOPE_DL_CACHE (default /var/cache/latscope/dl). Exit 0, 1 (build failed or
# the package is not what it should be), 2 (package could not be fetched).
set -euo pipefail
PKG_VERSION=3.22.1 # exact: the llama.cpp commit (so the cache key) follows from it
# The machine-wide cache as root (or where it is writable), else the user's.
root_cache=/var/cache/latscope
if [ "$(id -u)" -ne 0 ] && ! { mkdir -p "$root_cache" 2>/dev/null && [ -w "$root_cache" ]; }; then
	root_cache=${XDG_CACHE_HOME:-$HOME/.cache}/latscope
fi
CACHE=${LATSCOPE_ENGINE_CACHE:-$root_cache/engine}
DL=${LATSCOPE_DL_CACHE:-$root_cache/dl}
TGZ=$DL/node-llama-cpp-$PKG_VERSION.tgz
UNPACK=$DL/node-llama-cpp-$PKG_VERSION # the tarball's package/ lands here
BUNDLE=$UNPACK/package/llama/gitRelease.bundle
mode=${1:-build}

say() { echo "latscope engine: $*" >&2; }

# The tarball, from the npm registry by exact version when the cache lacks it.
fetch() {
	[ -s "$TGZ" ] && return 0
	command -v npm >/dev/null || { say "no npm to fetch node-llama-cpp@$PKG_VERSION (Debian: npm)"; return 2; }
	mkdir -p "$DL"
	say "fetching node-llama-cpp@$PKG_VERSION (npm pack) into $DL"
	local tmp
	tmp=$(mktemp -d "$DL/.pack.XXXXXX")
	if ! (cd "$tmp" && npm pack --loglevel=error "node-llama-cpp@$PKG_VERSION" >/dev/null 2>"$tmp/npm.log"); then
		say "npm pack node-llama-cpp@$PKG_VERSION failed: $(tail -3 "$tmp/npm.log" | tr '\n' ' ')"
		rm -rf "$tmp"
		return 2
	fi
	mv "$tmp/node-llama-cpp-$PKG_VERSION.tgz" "$TGZ" # whole or absent
	rm -rf "$tmp"
}

# The llama.cpp commit the package bundles (its only head), remembered beside the tarball.
bundle_commit() {
	local memo=$UNPACK/commit
	[ -s "$memo" ] && { cat "$memo"; return 0; }
	if [ ! -s "$BUNDLE" ]; then
		mkdir -p "$UNPACK"
		tar xzf "$TGZ" -C "$UNPACK" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json ||
			{ say "$TGZ has no package/llama/gitRelease.bundle"; return 1; }
	fi
	local c
	c=$(git bundle list-heads "$BUNDLE" | awk 'NR == 1 { print $1 }')
	[[ $c =~ ^[0-9a-f]{40}$ ]] || { say "$BUNDLE: no commit in its heads"; return 1; }
	echo "$c" >"$memo"
	echo "$c"
}

# Clone + configure + build llama-server into SRC; the log is LOG.
build() { # src log
	local src=$1 log=$2
	if [ ! -d "$src/.git" ]; then
		rm -rf "$src.tmp"
		git -c advice.detachedHead=false clone -q "$BUNDLE" "$src.tmp" >>"$log" 2>&1 && mv "$src.tmp" "$src" || return 1
	fi
	# CPU only, Release, nothing but the server (the flags the issue measured: ~17 min, 2 cores).
	cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
		-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
		-DLLAMA_OPENSSL=OFF -DGGML_NATIVE=ON >>"$log" 2>&1 || return 1
	cmake --build "$src/build" --target llama-server -j"$(nproc)" >>"$log" 2>&1 &
	local pid=$! n=0
	# A progress line a minute (cmake's last [ NN%]), so a 17-minute build is not a silent one.
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		n=$((n + 1))
		[ $((n % 60)) -eq 0 ] &&
			say "building: $(grep -o '^\[ *[0-9]*%\]' "$log" | tail -1) after $((n / 60)) min"
	done
	wait "$pid"
}

main() {
	local rc=0 commit src bin log
	if [ "$mode" = --path ]; then
		[ -s "$UNPACK/commit" ] || exit 1
		bin=$CACHE/llama-$(cat "$UNPACK/commit")-src/build/bin/llama-server
		[ -x "$bin" ] && { echo "$bin"; exit 0; }
		exit 1
	fi
	fetch || rc=$?
	if [ "$rc" -eq 2 ] && [ "$mode" = --test ]; then
		echo "  SKIP     engine: node-llama-cpp@$PKG_VERSION could not be fetched (the engine tests skip)"
		exit 0
	fi
	[ "$rc" -eq 0 ] || exit "$rc"
	commit=$(bundle_commit)
	src=$CACHE/llama-$commit-src
	bin=$src/build/bin/llama-server
	if [ ! -x "$bin" ]; then
		mkdir -p "$CACHE"
		exec 9>"$CACHE/.lock-$commit" # two checkouts building at once: one builds, one waits
		flock 9
		if [ ! -x "$bin" ]; then
			log=$CACHE/llama-$commit-build.log
			: >"$log"
			say "building llama-server (llama.cpp $commit) into $src: ~17 min on 2 cores, log $log"
			local t0=$SECONDS
			build "$src" "$log" || { say "the llama-server build failed; its log: $log"; tail -15 "$log" >&2; exit 1; }
			say "built in $((SECONDS - t0)) s"
		fi
	fi
	echo "$bin"
}
main
