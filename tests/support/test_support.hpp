// SPDX-License-Identifier: Apache-2.0
// Shared test helpers: run a program and capture its output, make and remove
// scratch directories. Used by the integration and escape tiers.
#pragma once

#include <fcntl.h>

#include <sys/types.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ajtest {

struct RunOutput {
    int status = -1;       // exit code, or 128+N when killed by signal N
    std::string out;       // stdout
    std::string err;       // stderr
    bool timed_out = false;  // killed by the harness after the deadline
};

// Runs argv (argv[0] is a path or looked up in PATH) with the given extra
// environment (NAME=VALUE, added to or replacing the current one), stdin from
// /dev/null unless `input` is set, and waits for it.
RunOutput run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
              const std::string* input = nullptr, const std::string& cwd = {});

// Runs the agentjail binary under test with args.
RunOutput agentjail(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                    const std::string& cwd = {});

// Path of the agentjail binary and of a static test helper by name.
std::string agentjail_bin();
std::string helper(const std::string& name);
// A TCP port of 127.0.0.1 the kernel gave out a moment ago (bound to port 0, read
// back, closed); -1 when none could be had. A fixed number could be any other
// process's ephemeral port (a published-port test failed so under the suite's load).
int free_port();

// A scratch directory, canonical, removed with everything in it on destruction.
class TempDir {
public:
    explicit TempDir(const std::string& prefix = "aj-test");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    // A scratch directory under base instead of $TMPDIR (e.g. a host path that no
    // policy mounts); throws when base is not writable.
    TempDir(const std::string& prefix, const std::string& base);
    const std::string& path() const { return path_; }
    // Writes a file (creating parent directories) and returns its path.
    std::string write(const std::string& rel, const std::string& content, unsigned mode = 0644) const;
    std::string mkdir(const std::string& rel, unsigned mode = 0755) const;

private:
    std::string path_;
};

// A pipe for a sandbox's stdio in library tests: both ends close-on-exec unless
// flags say otherwise (0: inherited by every clone, as a caller's leaked fd is).
struct Pipe {
    int r = -1, w = -1;
    explicit Pipe(int flags = O_CLOEXEC);
    ~Pipe();
    Pipe(const Pipe&) = delete;
    Pipe& operator=(const Pipe&) = delete;
    void close_write();
    std::string read_all();                  // to EOF
    bool eof_within(int timeout_ms);         // EOF (not data, not a timeout) within the time
    std::string line(int timeout_ms);        // one line, without its newline
};

std::string read_file(const std::string& path);
// The names in a directory (not "." and ".."), sorted; empty when it cannot be read.
std::set<std::string> dir_entries(const std::string& dir);
bool exists(const std::string& path);
std::string trim(const std::string& s);
// A fresh random token such as AJ-CANARY-3f9a..., for canary secrets.
std::string canary();

// ---- Added for the integration and escape tiers -------------------------------

// Options for run_with(): everything run() takes, plus fds to leak into the child
// (the way a careless caller would) and a deadline.
struct RunOptions {
    std::vector<std::string> env;        // NAME=VALUE, added to or replacing the current one
    std::vector<std::string> unset_env;  // names removed from the child's environment
    std::string input;                   // stdin contents (stdin is /dev/null when empty)
    std::string cwd;
    // {fd in this process, fd number in the child}: left open across execve, without
    // FD_CLOEXEC, as a caller that forgot O_CLOEXEC would do.
    std::vector<std::pair<int, int>> leak_fds;
    int timeout_ms = 30000;  // then SIGKILL and timed_out = true
};

// A child started in the background: its pid for signals, its output for later.
class Child {
public:
    Child(const std::vector<std::string>& argv, const RunOptions& opts = {});
    ~Child();  // SIGKILLs and reaps the child if it is still running
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    pid_t pid() const { return pid_; }
    // Waits for the output to reach EOF and the process to exit (SIGKILL at the deadline).
    RunOutput wait(int timeout_ms = 30000);
    // Waits only for the process itself to exit, draining output meanwhile; returns its
    // status (exit code or 128+N) or -1 if it is still running at the deadline. Output
    // pipes may stay open (held by survivors); wait() afterwards collects what is left.
    int wait_exit(int timeout_ms);
    bool running() const { return !reaped_; }

private:
    void pump(int timeout_ms);
    pid_t pid_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    bool reaped_ = false;
    RunOutput r_;
};

RunOutput run_with(const std::vector<std::string>& argv, const RunOptions& opts);
RunOutput agentjail_with(const std::vector<std::string>& args, const RunOptions& opts);

// Host pids (not this process) whose /proc/PID/cmdline contains marker.
std::vector<int> pids_with_marker(const std::string& marker);
// Polls until pids_with_marker(marker) is empty; false if some remain at the deadline.
bool wait_no_pids_with_marker(const std::string& marker, int timeout_ms);
// Splits on '\n', dropping a trailing empty line.
std::vector<std::string> lines(const std::string& s);
bool contains(const std::string& haystack, const std::string& needle);
// Sleeps ms milliseconds.
void sleep_ms(int ms);
// Polls (every 10 ms) until path exists; false at the deadline.
bool wait_for_file(const std::string& path, int timeout_ms);

// A workspace and a fake home seeded with canary secrets, plus a record of every
// output produced by runs through it, for the after-test canary sweep.
//   home: .ssh/id_ed25519, .aws/credentials, .config/gh/hosts.yml, .netrc
//   workspace: .env, .env.local (hidden by the default policy)
class Jail {
public:
    Jail();
    const std::string& ws() const { return ws_.path(); }
    const std::string& home() const { return home_.path(); }
    const TempDir& ws_dir() const { return ws_; }
    const TempDir& home_dir() const { return home_; }
    // The canary stored in a seeded file, by its path relative to home or workspace
    // ("home/.ssh/id_ed25519", "ws/.env").
    const std::string& secret(const std::string& which) const;
    // A new canary, remembered for the sweep.
    std::string new_canary();
    // Writes a workspace file that holds a canary on purpose (excluded from the sweep
    // of workspace files); returns its path.
    std::string plant(const std::string& rel, const std::string& content, unsigned mode = 0644);
    const std::vector<std::string>& canaries() const { return canaries_; }

    // {"-C", ws, "--ro", helpers dir}: the flags nearly every run starts with, then
    // those given to also().
    std::vector<std::string> base() const;
    // Flags every later run through base() takes too ({"--view", "mounts"} for the
    // tests of the mounts view's own mechanics: placeholders, guards, re-applying).
    void also(std::vector<std::string> flags) { also_ = std::move(flags); }
    // agentjail args with HOME=<fake home> (plus opts.env), recorded for the sweep.
    RunOutput run(const std::vector<std::string>& args, RunOptions opts = {});
    // agentjail <base> <flags> -- /bin/sh -c script
    RunOutput sh(const std::string& script, const std::vector<std::string>& flags = {},
                 RunOptions opts = {});
    // Like run() and sh(), but not recorded for the sweep: positive controls that
    // are meant to show a canary (the probe can see it when the protection is off).
    RunOutput control(const std::vector<std::string>& args, RunOptions opts = {});
    RunOutput control_sh(const std::string& script, const std::vector<std::string>& flags = {},
                         RunOptions opts = {});
    // The same script on the host (HOME=<fake home>, not recorded): positive controls.
    RunOutput host_sh(const std::string& script, RunOptions opts = {});
    void record(const RunOutput& r);
    // Every canary found in a recorded output or in a workspace file other than the
    // seeded ones: "canary in <where>" lines, empty when clean.
    std::string leaks() const;

private:
    TempDir ws_{"aj-ws"};
    TempDir home_{"aj-home"};
    std::vector<std::pair<std::string, std::string>> secrets_;
    std::vector<std::string> canaries_;
    std::vector<std::string> seeded_;  // absolute paths holding canaries on purpose
    std::vector<RunOutput> outputs_;
    std::vector<std::string> also_;
};

// Mount destinations listed by `agentjail explain --json <args>`, with their kind
// ("bind", "tmpfs", ...) when the JSON gives one. Empty with *error set on failure.
struct PlannedMount {
    std::string kind;
    std::string src;
    std::string dst;
};
std::vector<PlannedMount> planned_mounts(const std::vector<std::string>& explain_args,
                                         const std::vector<std::string>& env, std::string* error);

}  // namespace ajtest
