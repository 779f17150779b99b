# SPDX-License-Identifier: Apache-2.0
"""A consumer of the installed Python binding (AJ_PREFIX: where it was installed):
the version, the library it loaded, an error with its class and stage, and one
real run. Usage: consumer.py VERSION"""

import errno
import os
import sys
import tempfile

import agentjail

expected = sys.argv[1]
assert agentjail.version() == expected, agentjail.version()
assert agentjail.__version__ == expected, agentjail.__version__
assert agentjail.__file__.startswith(os.environ["AJ_PREFIX"]), agentjail.__file__
# The library the package was installed with (or, where AJ_LIBRARY_IN names a
# directory, the one found there), not one the loader found elsewhere.
where = os.environ.get("AJ_LIBRARY_IN", os.environ["AJ_PREFIX"])
assert agentjail._lib._name.startswith(where), agentjail._lib._name
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
