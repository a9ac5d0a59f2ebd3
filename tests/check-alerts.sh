#!/bin/bash
# The alerts and the dashboard stay true to the agent:
#   - every rules file of packaging/prometheus/ (*.rules.yml) passes
#     `promtool check rules`, and every test file (*.rules.test.yml) passes
#     `promtool test rules`: each alert fires on its series, and not on the
#     series meant to stay quiet;
#   - every metric name in the rules' expressions and in the queries of
#     packaging/grafana-dashboard.json (panels and template variables) is
#     one the agent exports: the families of a /metrics scrape of a freshly
#     started agent (their HELP/TYPE lines are there before any breaker or
#     socket exists; a histogram's _bucket, _sum and _count with it), or one
#     Prometheus makes itself (up).
# Prints one line per problem and exits 1 if there is any.
#
#   tests/check-alerts.sh [ROOT]       check ROOT (default: the repository)
#                                      with the agent SPOA_BIN (default
#                                      ROOT/$BUILD/spoa-breaker, BUILD=build),
#                                      which must be built
#   tests/check-alerts.sh --self-test  check a tree broken on purpose: each
#                                      rule must report its problem
set -u

# Series no agent exports, that Prometheus writes for every target.
PROMETHEUS_OWN="up"

# The metric names one agent exports, one a line: started on loopback with
# no state and no HAProxy, scraped once, stopped by its PID.
exported_names() { # SPOA_BIN
	local bin=$1 tmp port pid names=""
	[ -x "$bin" ] || { echo "no binary at $bin: build it (make all)" >&2; return 1; }
	tmp=$(mktemp -d)
	for _ in 1 2 3; do
		port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		"$bin" --listen "unix:$tmp/spop.sock" --admin "127.0.0.1:$port" --state-file none \
			--log-level warning 2>"$tmp/agent.log" &
		pid=$!
		# Until the admin listener answers, or the agent has gone (the
		# port was taken meanwhile: another one, then).
		for _ in $(seq 100); do
			names=$(curl -s -m 2 "http://127.0.0.1:$port/metrics" | awk '
				$1 == "#" && $2 == "TYPE" {
					print $3
					if ($4 == "histogram") print $3 "_bucket\n" $3 "_sum\n" $3 "_count"
				}') && [ -n "$names" ] && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		[ -n "$names" ] && break
	done
	[ -n "$names" ] || { echo "the agent at $bin served no /metrics:" >&2; cat "$tmp/agent.log" >&2; }
	rm -rf "$tmp"
	[ -n "$names" ] && printf '%s\n' "$names"
}

# The metric names the rules and the dashboard's queries use, each as
# "NAME<TAB>WHERE". PromQL is read just far enough: strings, label
# matchers, ranges and label lists (by, on, ...) dropped; what remains of
# each identifier not called as a function, nor a keyword, is a name.
used_names() { # ROOT
	python3 - "$1" <<'PY'
import glob, json, os, re, sys
import yaml

root = sys.argv[1]
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset", "inf", "nan", "sum", "min", "max", "avg", "group",
            "count", "count_values", "stddev", "stdvar", "topk", "bottomk", "quantile"}

def names(expr):
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings
    e = re.sub(r"\{[^}]*\}", "", e)  # label matchers (and Grafana's $vars in them)
    e = re.sub(r"\[[^\]]*\]", "", e)  # ranges, $__rate_interval
    # label lists, with their keyword: "sum by (a) (x)" is then a call
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\$\{?\w+\}?", "", e)  # a variable elsewhere
    for m in re.finditer(r"(?<![\w.])([A-Za-z_:][\w:]*)(\s*\()?", e):
        if not m.group(2) and m.group(1).lower() not in KEYWORDS:
            yield m.group(1)

for path in sorted(glob.glob(os.path.join(root, "packaging/prometheus/*.rules.yml"))):
    rel = os.path.relpath(path, root)
    with open(path) as f:
        doc = yaml.safe_load(f) or {}
    for group in doc.get("groups") or []:
        for rule in group.get("rules") or []:
            for n in names(str(rule.get("expr", ""))):
                print(f"{n}\t{rel}: {rule.get('alert') or rule.get('record')}")

path = os.path.join(root, "packaging/grafana-dashboard.json")
with open(path) as f:
    dash = json.load(f)

def panels(ps):
    for p in ps or []:
        yield p
        yield from panels(p.get("panels"))

for p in panels(dash.get("panels")):
    for t in p.get("targets") or []:
        for n in names(t.get("expr", "")):
            print(f"{n}\tgrafana-dashboard.json: panel {p.get('title')!r}")
for v in (dash.get("templating") or {}).get("list") or []:
    q = v.get("query")
    q = q.get("query", "") if isinstance(q, dict) else q or ""
    if v.get("type") != "query":
        continue
    # label_values(SELECTOR, LABEL): the selector is PromQL, the label not.
    m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", q)
    for n in names(m.group(1) if m else q):
        print(f"{n}\tgrafana-dashboard.json: variable {v.get('name')}")
PY
}

# promtool on every rules and test file of ROOT; the names against the list.
check_tree() { # ROOT EXPORTED_NAMES_FILE
	local root=$1 exported=$2 problems=0 f out used
	local rules=("$root"/packaging/prometheus/*.rules.yml) tests=("$root"/packaging/prometheus/*.rules.test.yml)
	[ -e "${rules[0]}" ] || { echo "packaging/prometheus: no *.rules.yml"; return 1; }
	[ -e "${tests[0]}" ] || { echo "packaging/prometheus: no *.rules.test.yml"; return 1; }
	for f in "${rules[@]}"; do
		out=$(promtool check rules "$f" 2>&1) || { echo "${f#"$root"/}: promtool check rules:"; echo "$out"; problems=1; }
	done
	for f in "${tests[@]}"; do
		out=$(cd "$(dirname "$f")" && promtool test rules "$(basename "$f")" 2>&1) ||
			{ echo "${f#"$root"/}: promtool test rules:"; echo "$out"; problems=1; }
	done
	used=$(used_names "$root") || { echo "the rules or the dashboard cannot be read"; return 1; }
	[ -n "$used" ] || { echo "no metric name found in the rules and the dashboard"; return 1; }
	while IFS=$'\t' read -r name where; do
		grep -qxF "$name" "$exported" && continue
		grep -qxF "$name" <<<"${PROMETHEUS_OWN// /$'\n'}" && continue
		echo "$where: $name is no metric the agent exports"
		problems=1
	done <<<"$used"
	return "$problems"
}

self_test() {
	local tmp status=0 out expect
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	mkdir -p "$tmp/packaging/prometheus"
	printf '%s\n' spoa_breaker_breaker_state spoa_breaker_operator_released >"$tmp/exported"
	# A name the agent lacks in a rule, a test that expects what the rule
	# does not do, and a dashboard naming unknown metrics in a panel
	# (inside a row) and in a variable; up and the label names are fine.
	cat >"$tmp/packaging/prometheus/x.rules.yml" <<'EOF'
groups:
  - name: x
    rules:
      - alert: Open
        expr: max by (backend) (spoa_breaker_breaker_state{server=~"w.*"}) > 0 and on (backend) up == 1
      - alert: Typo
        expr: spoa_breaker_operatr_released == 1
EOF
	cat >"$tmp/packaging/prometheus/x.rules.test.yml" <<'EOF'
rule_files: [x.rules.yml]
tests:
  - interval: 1m
    input_series:
      - series: 'spoa_breaker_breaker_state{backend="b",server="w1"}'
        values: '0x5'
    alert_rule_test:
      - eval_time: 5m
        alertname: Open
        exp_alerts: [{exp_labels: {backend: b}}]
EOF
	cat >"$tmp/packaging/grafana-dashboard.json" <<'EOF'
{"panels": [{"type": "row", "title": "r", "panels": [
  {"title": "Known", "targets": [{"expr": "sum by (instance) (rate(spoa_breaker_breaker_state{instance=~\"$instance\"}[$__rate_interval]))"}]},
  {"title": "Stale", "targets": [{"expr": "sum(spoa_breaker_breaker_open_total{x=\"spoa_breaker_in_a_string\"})"}]}]}],
 "templating": {"list": [
  {"name": "instance", "type": "query", "query": {"query": "label_values(spoa_breaker_build_info, instance)"}}]}}
EOF
	out=$(check_tree "$tmp" "$tmp/exported") && { echo "self-test: a broken tree passed"; return 1; }
	for expect in "x.rules.test.yml: promtool test rules:" \
		"prometheus/x.rules.yml: Typo: spoa_breaker_operatr_released is no metric" \
		"grafana-dashboard.json: panel 'Stale': spoa_breaker_breaker_open_total is no metric" \
		"grafana-dashboard.json: variable instance: spoa_breaker_build_info is no metric"; do
		grep -qF "$expect" <<<"$out" || { echo "self-test: no report of: $expect"; status=1; }
	done
	for unexpected in "Open:" "'Known'" "in_a_string" " up is" "backend is" "instance is"; do
		! grep -qF "$unexpected" <<<"$out" || { echo "self-test: wrongly reported: $unexpected"; status=1; }
	done
	# A rules file promtool refuses is said too.
	echo "groups: [{name: y, rules: [{alert: Bad, expr: 'sum(('}]}]" >"$tmp/packaging/prometheus/y.rules.yml"
	out=$(check_tree "$tmp" "$tmp/exported")
	grep -qF "y.rules.yml: promtool check rules:" <<<"$out" ||
		{ echo "self-test: no report of: y.rules.yml: promtool check rules:"; status=1; }
	[ "$status" -ne 0 ] && printf '%s\n' "$out"
	return "$status"
}

command -v promtool >/dev/null || { echo "check-alerts: no promtool (Debian: apt-get install prometheus)"; exit 1; }
if [ "${1:-}" = --self-test ]; then
	self_test && echo "check-alerts self-test: every rule reports its problem"
	exit
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
exported=$(mktemp)
trap 'rm -f "$exported"' EXIT
exported_names "${SPOA_BIN:-$root/${BUILD:-build}/spoa-breaker}" >"$exported" || exit 1
rules=("$root"/packaging/prometheus/*.rules.yml)
check_tree "$root" "$exported" &&
	echo "check-alerts: ${#rules[@]} rules file(s) checked and tested, every metric of the rules and the dashboard exported ($(wc -l <"$exported") names): fine"
