# SPDX-License-Identifier: Apache-2.0
"""The Python binding with real sandboxes: spawn, wait, the result and its record,
errors raised with their class, stage and errno, the fork rule. Run as root and as
an unprivileged user (CTest: python_binding, label integration)."""

import errno
import json
import os
import signal
import tempfile
import time
import unittest

import agentjail


def own_identity():
    # A root caller must name the identity; for a user it is the caller's own.
    return {"uid": os.getuid(), "gid": os.getgid()}


class Binding(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="aj-py-")
        self.ws = os.path.realpath(self.tmp.name)
        self.policy = agentjail.Policy("default")
        self.policy.set_workspace(self.ws)

    def tearDown(self):
        self.tmp.cleanup()

    def run_out(self, argv, **kw):
        r, w = os.pipe()
        try:
            sb = agentjail.spawn(self.policy, argv, stdout=w, **kw)
        finally:
            os.close(w)
        with os.fdopen(r, "rb") as f:
            out = f.read().decode()
        return out, sb.wait()

    def test_version(self):
        self.assertEqual(".".join(map(str, agentjail.version_info())), agentjail.version())

    def test_spawn_wait_result(self):
        out, res = self.run_out(["/bin/sh", "-c", "echo hello from $(hostname); exit 3"], **own_identity())
        self.assertEqual(out, "hello from agentjail\n")
        self.assertTrue(res.exited)
        self.assertEqual(res.exit_code, 3)
        self.assertEqual(res.exit_status, 3)
        self.assertEqual(res.record["status"], "RE")
        self.assertGreater(res.wall_time, 0)
        self.assertIn("pids_peak", res.stats)

    def test_signal_and_kill(self):
        sb = agentjail.spawn(self.policy, ["/bin/sleep", "30"], **own_identity())
        sb.kill(signal.SIGTERM)
        res = sb.wait()
        self.assertFalse(res.exited)
        self.assertEqual(res.signal, signal.SIGTERM)
        self.assertIs(sb.wait(), res)  # a second wait answers the same

    def test_policy_error_has_class_and_stage(self):
        with self.assertRaises(agentjail.Error) as cm:
            agentjail.Policy("no-such-policy")
        self.assertEqual(cm.exception.name, "EINVAL")
        self.assertEqual(cm.exception.stage, "policy")
        self.assertIn("no-such-policy", str(cm.exception))
        with self.assertRaises(agentjail.Error) as cm:
            self.policy.set_limit("memroy", "2G")
        self.assertIn("did you mean 'memory'", str(cm.exception))

    def test_exec_error_has_stage_and_errno(self):
        with self.assertRaises(agentjail.Error) as cm:
            agentjail.spawn(self.policy, ["/no/such/command"], **own_identity())
        self.assertEqual(cm.exception.name, "ENOTFOUND")
        self.assertEqual(cm.exception.stage, "exec")
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        # Control: an existing command runs.
        _, res = self.run_out(["/bin/true"], **own_identity())
        self.assertEqual(res.exit_code, 0)

    def test_policy_from_text(self):
        p = agentjail.Policy(text='extends = "default"\n[process]\nhostname = "from-text"\n', text_name="job.toml")
        p.set_workspace(self.ws)
        self.policy = p
        out, _ = self.run_out(["/bin/hostname"], **own_identity())
        self.assertEqual(out, "from-text\n")
        with self.assertRaises(agentjail.Error) as cm:
            agentjail.Policy(text="[process]\nhostnam = 1\n", text_name="bad.toml")
        self.assertTrue(str(cm.exception).startswith("bad.toml:2:"), str(cm.exception))

    def test_root_caller_must_name_the_identity(self):
        if os.getuid() != 0:
            self.skipTest("the rule is about a caller that is root")
        with self.assertRaises(agentjail.Error) as cm:
            agentjail.spawn(self.policy, ["/bin/true"])
        self.assertEqual(cm.exception.stage, "plan")
        self.assertEqual(cm.exception.errno, errno.EPERM)
        # Control: named, the same spawn runs as that identity.
        os.chown(self.ws, 23456, 23456)
        with tempfile.TemporaryDirectory(prefix="aj-py-home-") as home:
            out, _ = self.run_out(["/usr/bin/id", "-u"], uid=23456, gid=23456, home=os.path.realpath(home))
        self.assertEqual(out, "23456\n")

    def test_env_and_result_path(self):
        self.policy.pass_env("AJ_PY_JOB")
        with tempfile.TemporaryDirectory(prefix="aj-py-out-") as out_dir:
            path = os.path.join(out_dir, "result.json")
            out, _ = self.run_out(["/bin/sh", "-c", "echo ${AJ_PY_JOB:-unset}"], env={"AJ_PY_JOB": "job"},
                                  result_path=path, **own_identity())
            self.assertEqual(out, "job\n")
            with open(path) as f:
                self.assertEqual(json.load(f)["status"], "OK")

    def test_forked_child_dropping_the_sandbox_leaves_it_running(self):
        sb = agentjail.spawn(self.policy, ["/bin/sleep", "30"], **own_identity())
        init = sb.pid
        child = os.fork()
        if child == 0:
            code = 1
            try:
                try:
                    sb.kill(signal.SIGKILL)
                except agentjail.Error as e:
                    code = 0 if e.errno == errno.EPERM else 1
                sb.close()
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, "the child's kill was not refused")
        time.sleep(0.1)
        os.kill(init, 0)  # raises if the parent's sandbox died with the child's close
        sb.close()  # control: the owner's close kills it
        with self.assertRaises(ProcessLookupError):
            for _ in range(50):
                os.kill(init, 0)
                time.sleep(0.02)


if __name__ == "__main__":
    unittest.main()
