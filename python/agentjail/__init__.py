# SPDX-License-Identifier: Apache-2.0
"""Python binding of agentjail's C API (libagentjail.so.1) over ctypes: no compiled
extension, so any Python 3 with ctypes can run a command in a sandbox.

    import agentjail
    policy = agentjail.Policy("default")
    policy.set_workspace("/srv/job")
    sb = agentjail.spawn(policy, ["make", "test"], uid=1000, gid=1000)
    result = sb.wait()
    print(result.exit_code, result.record["status"])

Errors are raised as agentjail.Error with the C API's class (code), the errno and
the launch stage. The rules of docs/embedding.md hold: a handle belongs to the
process that made it (a forked child that drops a Sandbox only forgets it), and a
caller that is root names the uid/gid the command runs as.
"""

import ctypes
import ctypes.util
import json
import os

# The project's one version (CMakeLists.txt's project(); the packaging tests hold
# them equal); the library actually loaded says its own with version().
__version__ = "1.4.0"

__all__ = ["Error", "Policy", "Sandbox", "Result", "spawn", "version", "version_info"]

# aj_run_options.version this module fills in (see agentjail.h).
_RUN_OPTIONS_VERSION = 4

_CGROUP = {"caller": 0, "under": 1, "auto": 2}
_TERMINAL = {"auto": 0, "pipes": 1}
STAGES = ("none", "policy", "plan", "prepare", "launch", "sandbox", "exec", "wait")
LOG_WARNING, LOG_NOTE, LOG_PLAN = 1, 2, 3
_STATS = {
    "memory_peak_bytes": 0,
    "oom_kills": 1,
    "pids_peak": 2,
    "pids_max_hits": 3,
    "cpu_user_us": 4,
    "cpu_system_us": 5,
    "cpu_throttled_us": 6,
    "seccomp_denials": 7,
    "network_denials": 8,
    "network_allowed": 9,
}


class Error(Exception):
    """A failure of the library. str() is its one-line message.

    code: the AJ_E* class (negative), name: its name ("EINVAL", "ESETUP"...),
    errno: the errno behind it (0 when none), stage: where it happened ("policy",
    "plan", "prepare", "launch", "sandbox", "exec", "wait" or "none"), step: inside
    the sandbox stage, the step that failed ("pivot_root", "mounting").
    """

    NAMES = {-1: "EINVAL", -2: "EUNSUPPORTED", -3: "ESETUP", -4: "ENOTFOUND", -5: "ENOEXEC", -6: "ENOMEM",
             -7: "EINTERNAL"}

    def __init__(self, message, code, errno, stage, step):
        super().__init__(message)
        self.code = code
        self.name = self.NAMES.get(code, str(code))
        self.errno = errno
        self.stage = stage
        self.step = step


class _RunOptions(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint),
        ("stdin_fd", ctypes.c_int),
        ("stdout_fd", ctypes.c_int),
        ("stderr_fd", ctypes.c_int),
        ("terminal", ctypes.c_int),
        ("tty_raw", ctypes.c_int),
        ("uid", ctypes.c_int64),
        ("gid", ctypes.c_int64),
        ("envp", ctypes.POINTER(ctypes.c_char_p)),
        ("home", ctypes.c_char_p),
        ("cwd", ctypes.c_char_p),
        ("pass_fds", ctypes.POINTER(ctypes.c_int)),
        ("n_pass_fds", ctypes.c_size_t),
        ("cgroup", ctypes.c_int),
        ("cgroup_parent", ctypes.c_char_p),
        ("result_path", ctypes.c_char_p),
        ("log", ctypes.c_void_p),
        ("log_payload", ctypes.c_void_p),
        ("filter_pipes", ctypes.c_int),
    ]


_LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


_SONAME = "libagentjail.so.%d" % int(__version__.split(".")[0])


def _library_path():
    """Where libagentjail is, first found of: $AGENTJAIL_LIBRARY (a build tree, a
    prefix not on the loader's path); a copy inside this package (a wheel that
    carries it); the library installed with this package (_installed.py, written by
    cmake --install); the loader's own search (its cache, LD_LIBRARY_PATH)."""
    given = os.environ.get("AGENTJAIL_LIBRARY")
    if given:
        return given
    own = os.path.join(os.path.dirname(os.path.abspath(__file__)), _SONAME)
    if os.path.exists(own):
        return own
    try:
        from agentjail._installed import LIBRARY as installed  # noqa: PLC0415
    except ImportError:
        installed = None
    if installed and os.path.exists(installed):
        return installed
    return ctypes.util.find_library("agentjail") or _SONAME


def _load():
    path = _library_path()
    try:
        lib = ctypes.CDLL(path, use_errno=True)
    except OSError as e:
        raise ImportError(
            "agentjail: cannot load %s (%s): install agentjail (scripts/install.sh, or its .deb), or set "
            "AGENTJAIL_LIBRARY to the library's path" % (path, e)
        ) from e
    P = ctypes.c_void_p
    S = ctypes.c_char_p
    E = ctypes.POINTER(ctypes.c_void_p)
    I = ctypes.c_int
    sigs = {
        "aj_version": (I, [ctypes.POINTER(I)] * 3),
        "aj_version_string": (S, []),
        "aj_error_message": (S, [P]),
        "aj_error_code": (I, [P]),
        "aj_error_errno": (I, [P]),
        "aj_error_stage": (I, [P]),
        "aj_error_step": (S, [P]),
        "aj_error_free": (None, [P]),
        "aj_policy_load": (I, [ctypes.POINTER(P), S, E]),
        "aj_policy_load_text": (I, [ctypes.POINTER(P), S, S, E]),
        "aj_policy_free": (None, [P]),
        "aj_policy_add_ro": (I, [P, S, S, E]),
        "aj_policy_add_rw": (I, [P, S, S, E]),
        "aj_policy_add_tmpfs": (I, [P, S, ctypes.c_uint64, E]),
        "aj_policy_set_env": (I, [P, S, S, E]),
        "aj_policy_set_limit": (I, [P, S, S, E]),
        "aj_policy_clear_env": (I, [P, E]),
        "aj_run_options_init": (I, [ctypes.POINTER(_RunOptions), ctypes.c_uint]),
        "aj_spawn": (I, [ctypes.POINTER(P), P, ctypes.POINTER(S), ctypes.POINTER(_RunOptions), E]),
        "aj_sandbox_pid": (I, [P]),
        "aj_sandbox_pidfd": (I, [P]),
        "aj_sandbox_kill": (I, [P, I, E]),
        "aj_sandbox_stop": (I, [P, I, E]),
        "aj_sandbox_wait": (I, [ctypes.POINTER(P), P, E]),
        "aj_sandbox_free": (None, [P]),
        "aj_result_exited": (I, [P]),
        "aj_result_exit_code": (I, [P]),
        "aj_result_signal": (I, [P]),
        "aj_result_wall_time": (ctypes.c_double, [P]),
        "aj_result_timed_out": (I, [P]),
        "aj_result_exit_status": (I, [P]),
        "aj_result_stat": (I, [ctypes.POINTER(ctypes.c_uint64), P, I, E]),
        "aj_result_json": (I, [ctypes.POINTER(ctypes.c_void_p), P, E]),
        "aj_string_free": (None, [ctypes.c_void_p]),
        "aj_result_free": (None, [P]),
    }
    for name in _ONE_STRING:
        sigs["aj_policy_" + name] = (I, [P, S, E])
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


# The overrides that take one string, by their C names without aj_policy_.
_ONE_STRING = ("add_hide", "add_socket", "pass_env", "set_workspace", "set_hostname", "set_cwd", "set_workspace_mode",
               "add_protect", "remove_protect", "set_net_mode", "allow_host", "deny_host", "net_preset",
               "add_secret", "set_net_log", "set_seccomp_log")

_lib = _load()


def _b(s):
    return None if s is None else os.fsencode(s)


def _call(fn, *args):
    """Calls a C function whose last parameter is aj_error **; raises its error."""
    err = ctypes.c_void_p()
    if fn(*args, ctypes.byref(err)) == 0:
        return
    try:
        raise Error(
            (_lib.aj_error_message(err) or b"").decode(errors="replace"),
            _lib.aj_error_code(err),
            _lib.aj_error_errno(err),
            STAGES[_lib.aj_error_stage(err)] if 0 <= _lib.aj_error_stage(err) < len(STAGES) else "none",
            (_lib.aj_error_step(err) or b"").decode(errors="replace"),
        )
    finally:
        _lib.aj_error_free(err)


def version():
    """The library's version, "X.Y.Z"."""
    return _lib.aj_version_string().decode()


def version_info():
    """The library's version as (major, minor, patch)."""
    parts = [ctypes.c_int() for _ in range(3)]
    _lib.aj_version(*[ctypes.byref(p) for p in parts])
    return tuple(p.value for p in parts)


class Policy:
    """A policy: a built-in name or a TOML file's path, or TOML text (text=...)."""

    def __init__(self, name=None, *, text=None, text_name=None):
        if (name is None) == (text is None):
            raise TypeError("Policy() takes a name or path, or text=, not both")
        self._p = ctypes.c_void_p()
        if text is not None:
            _call(_lib.aj_policy_load_text, ctypes.byref(self._p), text.encode(), _b(text_name))
        else:
            _call(_lib.aj_policy_load, ctypes.byref(self._p), _b(name))

    def __del__(self):
        p = getattr(self, "_p", None)
        if p and _lib is not None:
            _lib.aj_policy_free(p)
            self._p = None

    def add_ro(self, src, dst=None):
        _call(_lib.aj_policy_add_ro, self._p, _b(src), _b(dst))

    def add_rw(self, src, dst=None):
        _call(_lib.aj_policy_add_rw, self._p, _b(src), _b(dst))

    def add_tmpfs(self, path, size=0):
        _call(_lib.aj_policy_add_tmpfs, self._p, _b(path), size)

    def set_env(self, name, value):
        _call(_lib.aj_policy_set_env, self._p, _b(name), _b(value))

    def set_limit(self, key, value):
        _call(_lib.aj_policy_set_limit, self._p, _b(key), _b(str(value)))

    def clear_env(self):
        _call(_lib.aj_policy_clear_env, self._p)


def _one_string(name):
    fn = getattr(_lib, "aj_policy_" + name)

    def method(self, value):
        _call(fn, self._p, _b(value))

    method.__name__ = name
    method.__doc__ = "aj_policy_%s (agentjail.h)." % name
    return method


for _name in _ONE_STRING:
    setattr(Policy, _name, _one_string(_name))


class Result:
    """A finished run: exited, exit_code, signal, wall_time, timed_out, exit_status
    (agentjail's: 124 TO, 137 ML, 125 XX, else the command's own), stats (the counters
    by name) and record (the result record, parsed)."""

    def __init__(self, res):
        self.exited = bool(_lib.aj_result_exited(res))
        self.exit_code = _lib.aj_result_exit_code(res)
        self.signal = _lib.aj_result_signal(res)
        self.wall_time = _lib.aj_result_wall_time(res)
        self.timed_out = bool(_lib.aj_result_timed_out(res))
        self.exit_status = _lib.aj_result_exit_status(res)
        self.stats = {}
        for name, stat in _STATS.items():
            v = ctypes.c_uint64()
            _call(_lib.aj_result_stat, ctypes.byref(v), res, stat)
            self.stats[name] = v.value
        s = ctypes.c_void_p()
        _call(_lib.aj_result_json, ctypes.byref(s), res)
        try:
            self.record = json.loads(ctypes.string_at(s).decode())
        finally:
            _lib.aj_string_free(s)


class Sandbox:
    """A running sandbox (from spawn()). Dropped before wait() by the process that
    spawned it, it is killed with everything in it; dropped in a child of fork(), it
    is only forgotten."""

    def __init__(self, handle, keep):
        self._sb = handle
        self._keep = keep  # the log callback must outlive the handle's calls
        self._result = None

    @property
    def pid(self):
        return _lib.aj_sandbox_pid(self._sb)

    def fileno(self):
        """A pidfd of the sandbox's init: readable once it exited (for select)."""
        return _lib.aj_sandbox_pidfd(self._sb)

    def kill(self, sig):
        _call(_lib.aj_sandbox_kill, self._sb, sig)

    def stop(self, sig):
        """sig now; everything inside killed after the policy's kill grace."""
        _call(_lib.aj_sandbox_stop, self._sb, sig)

    def wait(self):
        if self._result is None:
            res = ctypes.c_void_p()
            _call(_lib.aj_sandbox_wait, ctypes.byref(res), self._sb)
            try:
                self._result = Result(res)
            finally:
                _lib.aj_result_free(res)
        return self._result

    def close(self):
        # At interpreter exit the module's globals may already be gone.
        if self._sb and _lib is not None:
            _lib.aj_sandbox_free(self._sb)
        self._sb = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _fd(f):
    if f is None:
        return -1
    return f if isinstance(f, int) else f.fileno()


def spawn(policy, argv, *, stdin=None, stdout=None, stderr=None, terminal="pipes", uid=None, gid=None,
          env=None, home=None, cwd=None, pass_fds=(), cgroup="caller", cgroup_parent=None, result_path=None,
          log=None, filter_pipes=False):
    """Starts argv in a sandbox built from policy and returns the Sandbox.

    stdin/stdout/stderr: a descriptor or a file object (None: this process's own);
    terminal: "pipes" or "auto"; uid/gid: the identity the command runs as (a root
    caller must give them unless the policy says [process] allow_root); env: a dict,
    the environment the policy's allow list passes names from (None: os.environ);
    home, cwd: the home and the caller's directory; pass_fds: descriptors the command
    gets at the same numbers; cgroup: "caller" (default), "under" (cgroup_parent) or
    "auto"; result_path: where the result record is written; log: a callable(level,
    message) told the warnings, notes and plan during spawn; filter_pipes: filter the
    command's output pipes as a terminal's (escape sequences that act on the user's
    machine dropped), for output shown on a terminal.
    """
    if terminal not in _TERMINAL:
        raise ValueError("terminal must be one of %s" % ", ".join(_TERMINAL))
    if cgroup not in _CGROUP:
        raise ValueError("cgroup must be one of %s" % ", ".join(_CGROUP))
    if not argv:
        raise ValueError("argv is empty")
    o = _RunOptions()
    if _lib.aj_run_options_init(ctypes.byref(o), _RUN_OPTIONS_VERSION) != 0:
        raise Error("the library does not know aj_run_options version %d" % _RUN_OPTIONS_VERSION, -1, 0, "none", "")
    o.stdin_fd, o.stdout_fd, o.stderr_fd = _fd(stdin), _fd(stdout), _fd(stderr)
    o.terminal = _TERMINAL[terminal]
    o.filter_pipes = 1 if filter_pipes else 0
    o.uid = -1 if uid is None else uid
    o.gid = -1 if gid is None else gid
    keep = []
    if env is not None:
        entries = [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()] + [None]
        arr = (ctypes.c_char_p * len(entries))(*entries)
        keep.append(arr)
        o.envp = arr
    o.home = _b(home)
    o.cwd = _b(cwd)
    fds = list(pass_fds)
    if fds:
        arr = (ctypes.c_int * len(fds))(*fds)
        keep.append(arr)
        o.pass_fds = arr
        o.n_pass_fds = len(fds)
    o.cgroup = _CGROUP[cgroup]
    o.cgroup_parent = _b(cgroup_parent)
    o.result_path = _b(result_path)
    if log is not None:
        cb = _LOG_FN(lambda _payload, level, message: log(level, message.decode(errors="replace")))
        keep.append(cb)
        o.log = ctypes.cast(cb, ctypes.c_void_p)
    args = [os.fsencode(a) for a in argv] + [None]
    c_argv = (ctypes.c_char_p * len(args))(*args)
    sb = ctypes.c_void_p()
    _call(_lib.aj_spawn, ctypes.byref(sb), policy._p, c_argv, ctypes.byref(o))
    return Sandbox(sb, keep)
