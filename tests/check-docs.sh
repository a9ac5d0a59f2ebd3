#!/bin/bash
# The documentation stays in shape:
#   - README.md is the front door: at most 320 lines, the rest in docs/;
#   - every relative link in README.md and docs/*.md reaches a file or
#     directory that exists, and a link to a heading of a Markdown file
#     (FILE.md#anchor, #anchor) reaches a heading that exists;
#   - nothing the project ships cites a file outside the repository: no
#     mention of the design brief's file or of a seed by number (the
#     three changes whose behaviour docs/design.md names in its own words);
#   - every docs/*.md is linked from README.md (its documentation table);
#   - every key of the key table (spoa/config/keys.c) is in
#     docs/configuration.md, in spoa-breaker --help and in the manual page:
#     a key with an option has its row in configuration.md's option table,
#     with --help's default and *restart* where --help says a change needs
#     one, its --option in --help and in the page's OPTIONS, and its name in
#     the page's CONFIGURATION FILE; a key without one (guarded,
#     probe_timeout) is named in both documents. A row of the table that
#     names no key is reported too.
# Prints one line per problem and exits 1 if there is any.
#
#   tests/check-docs.sh [ROOT]       check ROOT (default: the repository);
#                                    --help is that of SPOA_BIN (default
#                                    ROOT/$BUILD/spoa-breaker, BUILD=build),
#                                    which must be built
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

# The README's links to docs/, and the key table against the three places
# that list the keys. The key table is read from keys.c's rows (one
# "{ .name = ..., .option = ..., .flags = ... }" each), --help from the
# binary: its defaults are config_defaults()', which no source file spells.
check_keys() { # ROOT SPOA_BIN
	local root=$1 bin=$2 help="" status=0
	# Without --help the rest is still checked; the run fails all the same.
	if [ ! -x "$bin" ]; then
		echo "spoa-breaker --help: no binary at $bin: build it first (make), or set SPOA_BIN"
		status=1
	elif ! help=$("$bin" --help); then
		echo "$bin --help failed"
		status=1
	fi
	HELP_TEXT=$help HELP_KNOWN=$((1 - status)) python3 - "$root" <<'PY' || status=1
import os, re, sys

root = sys.argv[1]
def read(name):
    with open(os.path.join(root, name), encoding="utf-8") as f:
        return f.read()
bad = 0
def problem(text):
    global bad
    print(text)
    bad = 1

# README.md links every docs/*.md.
readme = read("README.md")
for f in sorted(os.listdir(os.path.join(root, "docs"))):
    if f.endswith(".md") and not re.search(r"\]\(docs/" + re.escape(f) + r"(#[^)]*)?\)", readme):
        problem(f"docs/{f}: not linked from README.md (add it to its documentation table)")

# The key table: each row's name, option and whether a reload applies it.
source = re.sub(r"/\*.*?\*/", "", read("spoa/config/keys.c"), flags=re.S)
table = re.search(r"config_keys\[[^\]]*\]\s*=\s*\{(.*?)\n\};", source, re.S)
if not table:
    print("spoa/config/keys.c: no config_keys table found")
    sys.exit(1)
rows, depth, start, in_string = [], 0, 0, False
body = table.group(1)
for i, ch in enumerate(body):
    if in_string:
        in_string = ch != '"' or body[i - 1] == "\\"
    elif ch == '"':
        in_string = True
    elif ch == "{":
        depth += 1
        start = i if depth == 1 else start
    elif ch == "}":
        depth -= 1
        if depth == 0:
            rows.append(body[start:i])
keys = []
for row in rows:
    name = re.search(r'\.name\s*=\s*"([^"]+)"', row)
    option = re.search(r'\.option\s*=\s*"([^"]+)"', row)
    keys.append((name.group(1), option.group(1) if option else None,
                 "CONFIG_KEY_RELOADABLE" in row))
if not keys:
    problem("spoa/config/keys.c: no key in the config_keys table")

# --help: option -> (default, whether a change needs a restart).
help_known = os.environ["HELP_KNOWN"] == "1"
helped, current = {}, None
for line in os.environ["HELP_TEXT"].splitlines():
    m = re.match(r"^  (?:-\w, |    )--([a-z][a-z-]*)(?: [A-Z]+)?(?: {2,}(.*))?$", line)
    if m:
        current = m.group(1)
        helped[current] = m.group(2) or ""
    elif current and re.match(r"^ {30}\S", line):
        helped[current] += " " + line.strip()
    else:
        current = None
def help_default(option):
    text = helped[option].strip()
    at = text.rfind("(default ")
    if at < 0 or not text.endswith(")"):
        return None, False
    value = text[at + len("(default "):-1]
    restart = value.endswith("; changes need a restart")
    return (value[: -len("; changes need a restart")] if restart else value), restart

# docs/configuration.md's option table: the rows that start with an option.
conf = read("docs/configuration.md")
doc_rows = {}
for number, line in enumerate(conf.splitlines(), 1):
    if not line.startswith("| `-"):
        continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    named = re.findall(r"`(?:\[[a-z]+\] )?([a-z_]+)`", cells[1]) if len(cells) >= 4 else []
    if not named:
        continue
    default = re.sub(r"\s+", " ", cells[2].replace("`", "")).strip()
    doc_rows[named[-1]] = (number, re.findall(r"--([a-z][a-z-]*)", cells[0]), default,
                           "*restart*" in cells[3])

page = read("packaging/spoa-breaker.8.scd")
page_file = re.search(r"^# CONFIGURATION FILE$(.*?)^# ", page, re.S | re.M)
page_file = page_file.group(1) if page_file else ""
names = {name for name, _, _ in keys}
for name, option, reloadable in keys:
    if option is None:
        if f"`{name}`" not in conf and f"`{name} " not in conf:
            problem(f"docs/configuration.md: key {name} is not named")
        if not re.search(r"\*" + re.escape(name) + r"\b", page):
            problem(f"packaging/spoa-breaker.8.scd: key {name} is not named")
        continue
    if help_known and option not in helped:
        problem(f"spoa-breaker --help: no --{option} (key {name})")
    if not re.search(r"^\*(-\w\*, \*)?--" + re.escape(option) + r"\*", page, re.M):
        problem(f"packaging/spoa-breaker.8.scd: no *--{option}* in OPTIONS (key {name})")
    if not re.search(r"\*" + re.escape(name) + r"\*", page_file):
        problem(f"packaging/spoa-breaker.8.scd: key {name} not in CONFIGURATION FILE")
    if name not in doc_rows:
        problem(f"docs/configuration.md: key {name} (--{option}) has no row in the option table")
        continue
    number, options, default, restart = doc_rows[name]
    where = f"docs/configuration.md:{number}: key {name}"
    if option not in options:
        problem(f"{where}: its row does not name --{option}")
    if option not in helped:
        continue
    want, want_restart = help_default(option)
    # The table may add a word in parentheses after --help's default:
    # "`0` (off)" for "0".
    if want is not None and default != want and not default.startswith(want + " ("):
        problem(f"{where}: default '{default}', --help says '{want}'")
    if restart != want_restart:
        problem(f"{where}: " + ("*restart*, but --help says a reload applies it" if restart
                                else "--help says a change needs a restart: add *restart*"))
for name, (number, _, _, _) in sorted(doc_rows.items()):
    if name not in names:
        problem(f"docs/configuration.md:{number}: a row for {name}, which is no key of spoa/config/keys.c")
sys.exit(bad)
PY
	return "$status"
}

check_tree() { # ROOT SPOA_BIN
	local root=$1 bin=$2 problems=0 lines
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

	check_keys "$root" "$bin" || problems=1

	local citations
	citations=$(cd "$root" && for p in $CITATION_PATHS; do [ -e "$p" ] && echo "$p"; done |
		xargs -r grep -rnIE "$CITATION_PATTERN" --exclude-dir='corpus*' 2>/dev/null)
	if [ -n "$citations" ]; then
		printf '%s\n' "$citations" | sed 's/$/  <- cites a file outside the repository; cite docs\/ instead/'
		problems=1
	fi
	return "$problems"
}

# A key table, --help, option table and manual page, each missing
# something: alpha is right everywhere, each other key is wrong in one place
# (the comment of its row says where), omega is a row of no key.
seed_keys() { # ROOT
	local root=$1
	mkdir -p "$root/spoa/config" "$root/packaging"
	cat >"$root/spoa/config/keys.c" <<'EOF'
const struct config_key config_keys[CONFIG_NB_KEYS] = {
	{
		.name = "alpha", .option = "alpha", .arg = "N", .flags = CONFIG_KEY_RELOADABLE,
		.help = "braces in a string { do not end a row",
	},
	{ .name = "beta", .option = "beta" },                            /* no row */
	{ .name = "gamma", .option = "gamma" },                          /* not in --help */
	{ .name = "delta", .option = "delta" },                          /* not in OPTIONS */
	{ .name = "epsilon", .option = "epsilon" },                      /* another default */
	{ .name = "zeta", .option = "zeta", .flags = CONFIG_KEY_RELOADABLE }, /* *restart* */
	{ .name = "iota", .option = "iota" },                 /* no *restart*, not in FILE */
	{ .name = "eta" },                             /* not in configuration.md */
	{ .name = "theta" },                           /* not in the page */
};
EOF
	cat >"$root/help" <<'EOF'
#!/bin/sh
cat <<'HELP'
[agent] the process
      --alpha N               a key (default 5)
      --beta                  b (default off; changes need a restart)
      --delta                 d (default 1; changes need a restart)
      --epsilon DURATION
                              e (default 2s; changes need a
                              restart)
      --zeta                  z (default on)
      --iota                  i (default 1; changes need a restart)
HELP
EOF
	chmod +x "$root/help"
	cat >"$root/docs/configuration.md" <<'EOF'
# Configuration

`theta` and `alpha = 5`.

| option | key | default | meaning |
|---|---|---|---|
| `--alpha N` | `[agent] alpha` | `5` (five) | a |
| `--gamma` | `gamma` | x | g |
| `--delta` | `delta` | `1` | d; *restart* |
| `--epsilon D` | `epsilon` | `3s` | e; *restart* |
| `--zeta` | `zeta` | on | z; *restart* |
| `--iota` | `iota` | 1 | i |
| `--omega` | `omega` | none | o |
EOF
	cat >"$root/packaging/spoa-breaker.8.scd" <<'EOF'
# OPTIONS

*--alpha* _N_
*--beta*
*--gamma*
*--epsilon* _DURATION_
*--zeta*
*--iota*

# CONFIGURATION FILE

*[agent]*
	*alpha*, *beta*, *gamma*, *delta*, *epsilon*, *zeta*, *eta*

# SEE ALSO
*iota*
EOF
}

self_test() {
	local tmp out status=0
	tmp=$(mktemp -d /tmp/spoa-breaker-check-docs.XXXXXX)
	trap 'rm -rf "$tmp"' RETURN
	mkdir -p "$tmp/docs" "$tmp/spoa" "$tmp/tests/fuzz/corpus"
	{
		echo "# x"
		echo "[ok](docs/a.md#a-heading) [gone](docs/missing.md) [stale](docs/a.md#nowhere)" \
			"[keys](docs/configuration.md)"
		seq 400
	} >"$tmp/README.md"
	printf '# A\n\n## A heading\n\n[back](../README.md#x) [self](#a)\n' >"$tmp/docs/a.md"
	printf '/* see %s */\n' "DESIGN"".md" >"$tmp/spoa/x.c"
	printf '/* ported from %s */\n' "Seed"" 001" >"$tmp/spoa/y.c"
	printf '/* docs/design.md, "Busy is not dead"; random seed 1 */\n' >"$tmp/spoa/z.c"
	printf 'seed %s\n' "000" >"$tmp/tests/fuzz/corpus/ok-bytes"
	printf '# B\n' >"$tmp/docs/b.md"
	seed_keys "$tmp"
	out=$(check_tree "$tmp" "$tmp/help") && { echo "self-test: a broken tree passed"; return 1; }
	out+=$'\n'$(check_keys "$tmp" "$tmp/no-such-binary")
	for expect in "README.md: 402 lines" "link docs/missing.md: no such file" \
		"link docs/a.md#nowhere: no heading" "spoa/x.c:1:" "spoa/y.c:1:" \
		"docs/b.md: not linked from README.md" \
		"docs/configuration.md: key beta (--beta) has no row in the option table" \
		"spoa-breaker --help: no --gamma (key gamma)" \
		"spoa-breaker.8.scd: no *--delta* in OPTIONS (key delta)" \
		"docs/configuration.md:10: key epsilon: default '3s', --help says '2s'" \
		"key zeta: *restart*, but --help says a reload applies it" \
		"key iota: --help says a change needs a restart: add *restart*" \
		"spoa-breaker.8.scd: key iota not in CONFIGURATION FILE" \
		"docs/configuration.md: key eta is not named" \
		"spoa-breaker.8.scd: key theta is not named" \
		"docs/configuration.md:13: a row for omega, which is no key" \
		"no binary at $tmp/no-such-binary"; do
		grep -qF "$expect" <<<"$out" || { echo "self-test: no report of: $expect"; status=1; }
	done
	for unexpected in "#a-heading" "../README.md#x" "(#a)" "corpus" "spoa/z.c" "docs/a.md: not" \
		"alpha" "configuration.md: not"; do
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
check_tree "$root" "${SPOA_BIN:-$root/${BUILD:-build}/spoa-breaker}" &&
	echo "check-docs: README.md $(wc -l <"$root/README.md") lines, links, citations, docs/ in README and every key documented: fine"
