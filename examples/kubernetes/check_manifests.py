#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Checks examples/kubernetes/*.yaml without a cluster: valid YAML, and the settings the
# README promises (a pod user namespace, the record as termination message, the exit
# statuses podFailurePolicy maps). Exit 77 (skipped) without python3-yaml.
import glob
import os
import sys

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml is not installed")
    sys.exit(77)

here = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


for path in sorted(glob.glob(os.path.join(here, "*.yaml"))):
    docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
    for job in (d for d in docs if d.get("kind") == "Job"):
        name = f"{os.path.basename(path)}: Job {job['metadata']['name']}"
        pod = job["spec"]["template"]["spec"]
        check(pod.get("hostUsers") is False, f"{name}: hostUsers is not false")
        check(pod.get("restartPolicy") == "Never", f"{name}: podFailurePolicy needs restartPolicy Never")
        codes = {}
        for rule in job["spec"].get("podFailurePolicy", {}).get("rules", []):
            for code in rule.get("onExitCodes", {}).get("values", []):
                codes[code] = rule["action"]
        for code, action in ((124, "FailJob"), (125, "FailJob"), (137, "Count")):
            check(codes.get(code) == action, f"{name}: exit {code} maps to {codes.get(code)}, not {action}")
        for c in pod["containers"]:
            script = " ".join(c.get("command", []) + c.get("args", []))
            check("agentjail" in script, f"{name}: container {c['name']} does not run agentjail")
            check("--json-fd 3" in script and "3>/dev/termination-log" in script,
                  f"{name}: container {c['name']} does not send the record to the termination log")
            sc = c.get("securityContext", {})
            check(sc.get("allowPrivilegeEscalation") is False, f"{name}: allowPrivilegeEscalation")
            check(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{name}: capabilities not all dropped")
            check(sc.get("procMount") == "Unmasked", f"{name}: procMount is not Unmasked")
    print(f"{os.path.basename(path)}: {len(docs)} documents")

for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
