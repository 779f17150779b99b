# SPDX-License-Identifier: Apache-2.0
"""A consumer of the installed Python binding (PYTHONPATH and AGENTJAIL_LIBRARY
point into the scratch prefix): the version, an error with its class and stage,
and one real run."""

import errno
import os
import sys
import tempfile

import agentjail

expected = sys.argv[1]
assert agentjail.version() == expected, agentjail.version()
assert agentjail.__file__.startswith(os.environ["AJ_PREFIX"]), agentjail.__file__
try:
    agentjail.Policy("no-such-policy")
    raise SystemExit("no error for an unknown policy")
except agentjail.Error as e:
    assert e.name == "EINVAL" and e.stage == "policy", (e.name, e.stage)
with tempfile.TemporaryDirectory(prefix="aj-pkg-py-") as ws:
    policy = agentjail.Policy("default")
    policy.set_workspace(os.path.realpath(ws))
    result = agentjail.spawn(policy, ["/bin/sh", "-c", "exit 5"], uid=os.getuid(), gid=os.getgid()).wait()
    assert result.exit_code == 5 and result.record["status"] == "RE", result.record
    try:
        agentjail.spawn(policy, ["/no/such/command"], uid=os.getuid(), gid=os.getgid())
        raise SystemExit("no error for a missing command")
    except agentjail.Error as e:
        assert e.stage == "exec" and e.errno == errno.ENOENT, (e.stage, e.errno)
print("Python consumer of agentjail %s: ok" % agentjail.version())
