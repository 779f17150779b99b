// SPDX-License-Identifier: Apache-2.0
// run_git (git.hpp): fork + execve of git with pipes, the environment built from
// scratch. The caller's environment is not passed: GIT_DIR, GIT_CONFIG_*, GIT_EXEC_PATH
// or an XDG_CONFIG_HOME with a git/attributes of its own would each change what git
// does with a repository the sandbox wrote.
#include "workspace/git.hpp"

#include "base/text.hpp"
#include "sys/fd.hpp"
#include "sys/syscalls.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace agentjail::workspace {

namespace {

// Settings that win over any file's (command-line config is read last). Each
// closes a way the repository's own config or content runs a program on the host.
const char* const kFixedConfig[] = {
    "core.hooksPath=/dev/null",   // no hook of the repository's (nor reference-transaction)
    "core.fsmonitor=false",       // a command git runs on status/add/diff
    "core.untrackedCache=false",
    "core.pager=cat",
    "core.editor=:",
    "core.sshCommand=false",
    "core.askPass=",
    "credential.helper=",         // resets the list
    "protocol.file.allow=always", // fetching from a local clone
    "protocol.allow=never",       // and nothing else: no ext::, no network
    "gc.auto=0",                  // no gc/maintenance behind our back (pre-auto-gc hook)
    "maintenance.auto=false",
    "fetch.writeCommitGraph=false",
    "commit.gpgSign=false",       // gpg.program would run
    "tag.gpgSign=false",
    "transfer.fsckObjects=true",  // malformed objects (.gitmodules tricks) do not get in
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "core.quotePath=false",
};

Error git_error(int err, const std::string& what) {
    return Error(ErrorKind::setup, err, what + ": " + util::errno_text(err));
}

std::string find_git() {
    std::string path;
    if (const char* p = std::getenv("PATH")) path = p;
    path += ":/usr/local/bin:/usr/bin:/bin";
    for (const std::string& dir : base::absolute_path_dirs(path)) {
        std::string cand = dir + "/git";
        struct stat st {};
        if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(cand.c_str(), X_OK) == 0)
            return cand;
    }
    return {};
}

}  // namespace

Result<std::string> git_binary() {
    static const std::string bin = find_git();
    if (bin.empty())
        return Error(ErrorKind::unsupported, ENOENT,
                     "clone mode needs git, which is not in PATH (install git, or use --workspace-mode overlay)");
    return bin;
}

Result<GitOutput> run_git(const Git& g, const std::vector<std::string>& args, const std::string* input) {
    auto bin = git_binary();
    if (!bin) return std::move(bin).error();
    std::vector<std::string> argv = {"git", "--no-pager", "--no-replace-objects"};
    // From the top of the work tree, never from the caller's directory: inside the
    // work tree, git takes pathspec-less commands relative to where it is (ls-files
    // from a subdirectory lists that subdirectory only, and a clone made from its
    // list lost the rest of the tree). Without a work tree GIT_DIR says it all.
    if (!g.work_tree.empty() && g.work_tree[0] == '/') argv.insert(argv.begin() + 1, {"-C", g.work_tree});
    for (const char* c : kFixedConfig) {
        argv.emplace_back("-c");
        argv.emplace_back(c);
    }
    for (const auto& d : g.safe_dirs) {
        argv.emplace_back("-c");
        argv.emplace_back("safe.directory=" + d);
    }
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = {
        "PATH=/usr/local/bin:/usr/bin:/bin",
        // Nowhere: no ~/.gitconfig, no ~/.config/git/{config,attributes,ignore}.
        "HOME=/nonexistent",
        "XDG_CONFIG_HOME=/nonexistent",
        "GIT_CONFIG_NOSYSTEM=1",
        "GIT_CONFIG_GLOBAL=/dev/null",
        "GIT_CONFIG_SYSTEM=/dev/null",
        "GIT_ATTR_NOSYSTEM=1",
        "GIT_TERMINAL_PROMPT=0",
        "GIT_ASKPASS=/bin/false",
        "SSH_ASKPASS=/bin/false",
        "GIT_PAGER=cat",
        "PAGER=cat",
        "GIT_EDITOR=:",
        "GIT_NO_REPLACE_OBJECTS=1",
        "GIT_OPTIONAL_LOCKS=0",
        "GIT_ALLOW_PROTOCOL=file",
        "GIT_PROTOCOL_FROM_USER=0",
        "LC_ALL=C",
        "LANG=C",
        "GIT_DIR=" + g.git_dir,
    };
    if (!g.work_tree.empty()) env.push_back("GIT_WORK_TREE=" + g.work_tree);
    if (!g.index_file.empty()) env.push_back("GIT_INDEX_FILE=" + g.index_file);
    env.insert(env.end(), g.env.begin(), g.env.end());

    std::vector<char*> cargv, cenv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    for (auto& e : env) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    const std::string& exe = *bin;

    int out_p[2], err_p[2], in_p[2] = {-1, -1};
    if (::pipe2(out_p, O_CLOEXEC) != 0) return git_error(errno, "git: pipe");
    sys::UniqueFd out_r(out_p[0]), out_w(out_p[1]);
    if (::pipe2(err_p, O_CLOEXEC) != 0) return git_error(errno, "git: pipe");
    sys::UniqueFd err_r(err_p[0]), err_w(err_p[1]);
    sys::UniqueFd in_r, in_w;
    if (input) {
        if (::pipe2(in_p, O_CLOEXEC) != 0) return git_error(errno, "git: pipe");
        in_r.reset(in_p[0]);
        in_w.reset(in_p[1]);
    } else {
        int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) return git_error(errno, "git: /dev/null");
        in_r.reset(fd);
    }
    // No allocation from here in the child: the library may live in a threaded host.
    long pid = sys::raw_fork();
    if (pid < 0) return git_error(static_cast<int>(-pid), "git: fork");
    if (pid == 0) {
        if (::dup2(in_r.get(), 0) < 0 || ::dup2(out_w.get(), 1) < 0 || ::dup2(err_w.get(), 2) < 0) ::_exit(127);
        sys::close_range(3, ~0U, 0);
        ::execve(exe.c_str(), cargv.data(), cenv.data());
        ::_exit(127);
    }
    in_r.reset();
    out_w.reset();
    err_w.reset();
    GitOutput res;
    size_t in_off = 0;
    if (input && input->empty()) in_w.reset();
    if (in_w) ::fcntl(in_w.get(), F_SETFL, O_NONBLOCK);
    while (out_r || err_r) {
        pollfd fds[3];
        int n = 0;
        int io = -1, ie = -1, ii = -1;
        if (out_r) { io = n; fds[n++] = {out_r.get(), POLLIN, 0}; }
        if (err_r) { ie = n; fds[n++] = {err_r.get(), POLLIN, 0}; }
        if (in_w) { ii = n; fds[n++] = {in_w.get(), POLLOUT, 0}; }
        if (::poll(fds, static_cast<nfds_t>(n), -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        char buf[65536];
        auto drain = [&](int idx, sys::UniqueFd& fd, std::string& into) {
            if (idx < 0 || fds[idx].revents == 0) return;
            ssize_t r = ::read(fd.get(), buf, sizeof buf);
            if (r > 0) into.append(buf, static_cast<size_t>(r));
            else if (r == 0 || (errno != EINTR && errno != EAGAIN)) fd.reset();
        };
        drain(io, out_r, res.out);
        drain(ie, err_r, res.err);
        if (ii >= 0 && fds[ii].revents != 0) {
            ssize_t w = ::write(in_w.get(), input->data() + in_off, input->size() - in_off);
            if (w > 0) in_off += static_cast<size_t>(w);
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || in_off >= input->size()) in_w.reset();
        }
    }
    in_w.reset();
    int st = 0;
    while (::waitpid(static_cast<pid_t>(pid), &st, 0) < 0)
        if (errno != EINTR) return git_error(errno, "git: waitpid");
    res.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return res;
}

Result<std::string> git_ok(const Git& g, const std::vector<std::string>& args, const std::string& what,
                           const std::string* input) {
    auto r = run_git(g, args, input);
    if (!r) return std::move(r).error();
    if (r->status != 0) {
        std::string line = r->err.substr(0, r->err.find('\n'));
        if (line.empty()) line = "exit status " + std::to_string(r->status);
        return Error(ErrorKind::setup, EIO, what + ": git " + (args.empty() ? "" : args[0]) + ": " +
                                                util::printable(line));
    }
    return std::move(r->out);
}

}  // namespace agentjail::workspace
