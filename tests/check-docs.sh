#!/bin/bash
# The documentation stays in shape:
#   - README.md is the front door: at most 320 lines, the rest in docs/;
#   - every relative link in README.md and docs/*.md reaches a file or
#     directory that exists, and a link to a heading of a Markdown file
#     (FILE.md#anchor, #anchor) reaches a heading that exists;
#   - nothing the project ships cites a file outside the repository: no
#     mention of the design brief's file or of a seed by number (the
#     three changes whose behaviour docs/design.md names in its own words).
# Prints one line per problem and exits 1 if there is any.
#
#   tests/check-docs.sh [ROOT]       check ROOT (default: the repository)
#   tests/check-docs.sh --self-test  check a tree broken on purpose: each
#                                    rule must report its problem
set -u

README_MAX_LINES=320
# Where a citation of the design brief or a seed must not appear. The
# fuzz corpora are bytes, not prose.
CITATION_PATHS="spoa include tests haproxy packaging bench debian docs README.md CHANGELOG.md Makefile Dockerfile"
# Case matters: docs/design.md is the project's own. Spelt so that this
# file does not match itself.
CITATION_PATTERN='DESIGN[.]md|[Ss]eeds? 0[0-9][0-9]'

check_tree() { # ROOT
	local root=$1 problems=0 lines
	lines=$(wc -l <"$root/README.md") || return 1
	if [ "$lines" -gt "$README_MAX_LINES" ]; then
		echo "README.md: $lines lines, at most $README_MAX_LINES: move the detail to docs/"
		problems=1
	fi

	python3 - "$root" <<'PY' || problems=1
import os, re, sys

root = sys.argv[1]
files = ["README.md"] + sorted(
    os.path.join("docs", f) for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))

def slug(heading):
    # The anchor GitHub gives a heading: lower case, punctuation dropped,
    # spaces as hyphens.
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")

def prose_lines(path):
    """The lines outside fenced code blocks, inline code removed."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if not fenced:
                yield number, re.sub(r"`[^`]*`", "", line)

anchors = {}
def anchors_of(path):
    if path not in anchors:
        seen, found = {}, set()
        for _, line in prose_lines(path):
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
        anchors[path] = found
    return anchors[path]

bad = 0
for name in files:
    path = os.path.join(root, name)
    for number, line in prose_lines(path):
        for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue  # http:, https:, mailto: ...
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            where = f"{name}:{number}: link {target}"
            if not os.path.exists(dest):
                print(f"{where}: no such file")
                bad = 1
            elif anchor and dest.endswith(".md") and anchor not in anchors_of(dest):
                print(f"{where}: no heading with that anchor in {os.path.relpath(dest, root)}")
                bad = 1
sys.exit(bad)
PY

	local citations
	citations=$(cd "$root" && for p in $CITATION_PATHS; do [ -e "$p" ] && echo "$p"; done |
		xargs -r grep -rnIE "$CITATION_PATTERN" --exclude-dir='corpus*' 2>/dev/null)
	if [ -n "$citations" ]; then
		printf '%s\n' "$citations" | sed 's/$/  <- cites a file outside the repository; cite docs\/ instead/'
		problems=1
	fi
	return "$problems"
}

self_test() {
	local tmp out status=0
	tmp=$(mktemp -d /tmp/spoa-breaker-check-docs.XXXXXX)
	trap 'rm -rf "$tmp"' RETURN
	mkdir -p "$tmp/docs" "$tmp/spoa" "$tmp/tests/fuzz/corpus"
	{
		echo "# x"
		echo "[ok](docs/a.md#a-heading) [gone](docs/missing.md) [stale](docs/a.md#nowhere)"
		seq 400
	} >"$tmp/README.md"
	printf '# A\n\n## A heading\n\n[back](../README.md#x) [self](#a)\n' >"$tmp/docs/a.md"
	printf '/* see %s */\n' "DESIGN"".md" >"$tmp/spoa/x.c"
	printf '/* ported from %s */\n' "Seed"" 001" >"$tmp/spoa/y.c"
	printf '/* docs/design.md, "Busy is not dead"; random seed 1 */\n' >"$tmp/spoa/z.c"
	printf 'seed %s\n' "000" >"$tmp/tests/fuzz/corpus/ok-bytes"
	out=$(check_tree "$tmp") && { echo "self-test: a broken tree passed"; return 1; }
	for expect in "README.md: 402 lines" "link docs/missing.md: no such file" \
		"link docs/a.md#nowhere: no heading" "spoa/x.c:1:" "spoa/y.c:1:"; do
		grep -qF "$expect" <<<"$out" || { echo "self-test: no report of: $expect"; status=1; }
	done
	for unexpected in "#a-heading" "../README.md#x" "(#a)" "corpus" "spoa/z.c"; do
		! grep -qF "$unexpected" <<<"$out" || { echo "self-test: wrongly reported: $unexpected"; status=1; }
	done
	[ "$status" -ne 0 ] && printf '%s\n' "$out"
	return "$status"
}

if [ "${1:-}" = --self-test ]; then
	self_test && echo "check-docs self-test: every rule reports its problem"
	exit
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
check_tree "$root" && echo "check-docs: README.md $(wc -l <"$root/README.md") lines, links and citations fine"
