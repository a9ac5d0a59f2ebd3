#!/bin/bash
# The manual page is built from packaging/spoa-breaker.8.scd, renders
# without a warning, and agrees with spoa-breaker --help: the same options,
# with the same short forms and argument names, in the same sections, and
# the same keys in each section of the configuration file.
set -u
. "$(dirname "$0")/lib.sh"
cd "$REPO" || exit 1

BIN=$BUILD/spoa-breaker
PAGE=$BUILD/spoa-breaker.8
SOURCE=packaging/spoa-breaker.8.scd

check "make man builds $PAGE" make --no-print-directory BUILD="$BUILD" man || { finish; exit; }

renders_cleanly() {
	local warnings
	warnings=$(MANWIDTH=80 man --warnings -l "$PAGE" 2>&1 >/dev/null)
	[ -z "$warnings" ] || { echo "$warnings"; return 1; }
}
check "the page renders without a groff warning" renders_cleanly

# One line per option: "SECTION --name -s ARG" (- for none), sorted.
# --help: sections start at a "[section]" line; options are the lines
# "  -s, --name ARG" or "      --name ARG", then two spaces or more and
# the description, or the description on the next line.
help_options() {
	"$BIN" --help | awk '
		/^\[[a-z]+\]/ { section = substr($1, 2, length($1) - 2); next }
		/^  (-[A-Za-z], |    )--[a-z]/ {
			short = "-"; name = ""; arg = "-"
			line = $0; sub(/^ +/, "", line)
			if (line ~ /^-[A-Za-z],/) { short = substr(line, 1, 2); line = substr(line, 5) }
			split(line, columns, /  +/)
			n = split(columns[1], w, / /)
			name = w[1]
			if (n > 1) arg = w[2]
			print (section ? section : "command"), name, short, arg
		}' | sort
}
# The page: "## [section] ..." subsections; options are the lines
# "*-s*, *--name* _ARG_" or "*--name* _ARG_" of the OPTIONS section.
page_options() {
	awk '
		/^# / { in_options = ($0 == "# OPTIONS"); section = ""; next }
		!in_options { next }
		/^## \[[a-z]+\]/ { section = substr($2, 2, length($2) - 2); next }
		/^\*(-[A-Za-z]\*, \*)?--[a-z-]+\*/ {
			short = "-"; arg = "-"; line = $0
			if (line ~ /^\*-[A-Za-z]\*, /) { short = substr(line, 2, 2); line = substr(line, 7) }
			match(line, /^\*--[a-z-]+\*/)
			name = substr(line, 2, RLENGTH - 2)
			if (match(line, /_[A-Z]+_$/)) arg = substr(line, RSTART + 1, RLENGTH - 2)
			print (section ? section : "command"), name, short, arg
		}' "$SOURCE" | sort
}
same_options() {
	diff -u <(help_options) <(page_options) | sed '1s/.*/--- spoa-breaker --help/; 2s/.*/+++ the manual page/'
	[ "${PIPESTATUS[0]}" -eq 0 ] && [ -n "$(help_options)" ]
}
check "the page lists the options of --help, with their short forms, arguments and sections" same_options

# One line per key: "SECTION key". --help: each option of a file section,
# with - turned into _. The page: the keys listed under "*[section]*" in
# CONFIGURATION FILE.
help_keys() {
	help_options | awk '$1 != "command" { name = substr($2, 3); gsub(/-/, "_", name); print $1, name }' | sort
}
page_keys() {
	awk '
		/^# / { in_file = ($0 == "# CONFIGURATION FILE"); next }
		!in_file { next }
		/^\*\[[a-z]+\]\*$/ { section = substr($0, 3, length($0) - 4); next }
		/^\t/ && section {
			n = split($0, w, /[ \t,]+/)
			for (i = 1; i <= n; i++) if (w[i] ~ /^\*[a-z_]+\*$/) print section, substr(w[i], 2, length(w[i]) - 2)
			next
		}
		{ section = "" }' "$SOURCE" | sort
}
same_keys() {
	diff -u <(help_keys) <(page_keys) | sed '1s/.*/--- spoa-breaker --help/; 2s/.*/+++ the manual page/'
	[ "${PIPESTATUS[0]}" -eq 0 ] && [ -n "$(help_keys)" ]
}
check "the page lists every key of each file section" same_keys

finish
