#!/usr/bin/env python3
"""A configuration of the haproxytech ingress controller's shape, with the
pieces packaging/kubernetes/ingress-haproxytech/ ships in it.

    ingress_cfg.py TEMPLATE KUBE_DIR OUT_DIR [RELOCATE_DIR AGENT_ADDR]

Writes into OUT_DIR:
  - haproxy.cfg: TEMPLATE (tests/e2e/haproxy-ingress-shaped.cfg.in) with
    the ConfigMap's snippets where the controller puts them (@GLOBAL_SNIPPET@,
    @FRONTEND_SNIPPET@, @BACKEND_SNIPPET@, indented as it indents them),
    and every other @NAME@ replaced by the environment variable NAME
    (SERVERS: the backend's server lines, the caller's);
  - haproxy-aux.cfg and spoa-breaker/ (the SPOE file, the two maps): the
    files ConfigMap's.
With RELOCATE_DIR, the shipped paths become a test's own: the files'
directory /etc/haproxy/spoa-breaker/ becomes RELOCATE_DIR/spoa-breaker/,
the socket's /run/spoa-breaker/ becomes RELOCATE_DIR/, and the agent's
address 127.0.0.1:12345 becomes AGENT_ADDR. Without it, they stay as
shipped (a pod mounts them there).
"""
import os
import re
import sys

import yaml


def data(kube_dir, name):
    with open(os.path.join(kube_dir, name)) as f:
        return next(d for d in yaml.safe_load_all(f) if d)["data"]


def main():
    if len(sys.argv) not in (4, 6):
        sys.exit(__doc__)
    template, kube_dir, out = sys.argv[1:4]
    relocate = sys.argv[4:6]

    def placed(text):
        if not relocate:
            return text
        return (text.replace("/etc/haproxy/spoa-breaker/", relocate[0] + "/spoa-breaker/")
                .replace("/run/spoa-breaker/", relocate[0] + "/")
                .replace("127.0.0.1:12345", relocate[1]))

    files = data(kube_dir, "spoa-breaker-files.yaml")
    os.makedirs(os.path.join(out, "spoa-breaker"), exist_ok=True)
    for name in ("spoe-breaker-steady.conf", "breaker-watched.map", "breaker-owned.map"):
        with open(os.path.join(out, "spoa-breaker", name), "w") as f:
            f.write(placed(files[name]))
    with open(os.path.join(out, "haproxy-aux.cfg"), "w") as f:
        f.write(placed(files["haproxy-aux.cfg"]))

    values = dict(os.environ)
    snippets = data(kube_dir, "controller-configmap.yaml")
    for key in ("global", "frontend", "backend"):
        lines = placed(snippets[key + "-config-snippet"]).splitlines()
        values[key.upper() + "_SNIPPET"] = "\n".join("  " + line for line in lines)
    with open(template) as f:
        cfg = re.sub(r"@([A-Z0-9_]+)@", lambda m: values[m.group(1)].rstrip("\n"), f.read())
    with open(os.path.join(out, "haproxy.cfg"), "w") as f:
        f.write(cfg)


if __name__ == "__main__":
    main()
