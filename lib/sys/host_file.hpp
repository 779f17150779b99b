// SPDX-License-Identifier: Apache-2.0
// The one way agentjail opens a file it writes on the host (the logs, the result
// record): no symbolic link followed at any component, never blocking on a FIFO,
// only a regular file, and never inside what the sandbox can write unless asked.
#pragma once

#include "base/error.hpp"
#include "base/wiped.hpp"

#include "sys/fd.hpp"

#include <string>
#include <vector>

namespace agentjail::sys {

// A host path the sandbox can write (the source of a read-write bind).
struct WritableRoot {
    std::string path;  // canonical host path
    std::string why;   // what binds it ("workspace", "policy.toml:3:1 (filesystem.rw[0])")
};

// What a host file agentjail writes must stay clear of. Plain data: the plan
// fills it, the writers pass it here.
struct HostFileRules {
    std::vector<WritableRoot> sandbox_writable;
    bool allow_in_sandbox = false;  // [log] allow_in_sandbox
    std::string allow_origin;       // where that was decided, for messages
};

enum class HostWrite {
    append,    // a log shared by runs: O_APPEND, kept
    truncate,  // a log of this run only: emptied after the checks, never before
};

// Opens `path` (absolute) for writing, creating it (mode 0600) when absent.
// `what` names it in messages ("network log"). Refused, with a one-line reason
// (ErrorKind::invalid_input): a symbolic link at any component, anything but a
// regular file (a FIFO fails at once, O_NONBLOCK), a file with other hard links,
// and a path inside a sandbox-writable root (by device and inode of every
// ancestor, so another name for the same directory is caught too) unless
// rules.allow_in_sandbox.
Result<UniqueFd> open_host_file(const std::string& path, HostWrite mode, const HostFileRules& rules,
                                const std::string& what);

// The checks of open_host_file without creating anything: the directory must exist
// and the name, when present, be a regular file. For failing before a run.
Result<void> check_host_file(const std::string& path, const HostFileRules& rules,
                             const std::string& what);

// Replaces `path` by a file holding `text` (mode 0644): written under a fresh,
// unguessable name (O_EXCL, O_NOFOLLOW) in the same directory and renamed over
// it, so a reader never sees half a file and no planted link is ever written through.
Result<void> replace_host_file(const std::string& path, const std::string& text,
                               const HostFileRules& rules, const std::string& what);

// The checks of replace_host_file without writing: the directory must exist; at the
// name, nothing, a regular file, or (where rules allow the sandbox's folders) a link,
// FIFO or socket the rename will replace. For failing before a run.
Result<void> check_replaceable_host_file(const std::string& path, const HostFileRules& rules,
                                         const std::string& what);

// A log agentjail writes on the host during a run (the network log, the seccomp
// log). Where open_host_file accepts the path, that file, written as the run goes.
// Where it refuses it only because the sandbox can write there (a log in the
// checkout: `--net-log net.jsonl`) and rules.allow_in_sandbox is off, the log is kept
// aside in an unnamed file of agentjail's own for the run, and put_in_place() puts
// it at the path once no process of the sandbox is left: nothing the sandbox can
// reach holds it during the run, and what it planted at the name is replaced, not
// written through (replace_host_file). An append log keeps what a regular file at
// the name held when the run began (copied aside then, up to 1 GiB), not what the
// sandbox wrote there since.
class HostLog {
public:
    HostLog() = default;
    static Result<HostLog> open(const std::string& path, HostWrite mode, const HostFileRules& rules,
                                const std::string& what);
    int fd() const { return fd_.get(); }
    bool kept_aside() const { return aside_; }
    // A log kept aside goes to its path (once; nothing to do otherwise).
    Result<void> put_in_place();

private:
    UniqueFd fd_;
    bool aside_ = false;
    std::string path_, what_;
    HostFileRules rules_;  // allow_in_sandbox set: the name is replaced, never written through
};

// Reads a small regular file (at most `max` bytes; never a FIFO or a device:
// O_NONBLOCK and the type check) into a buffer wiped when freed: a secret's source.
// "" on success, else why ("PATH: no such file or directory", "PATH: larger than 1 MiB").
std::string read_small_file(const std::string& path, base::wstring& out, std::size_t max = 1 << 20);

}  // namespace agentjail::sys
