// SPDX-License-Identifier: Apache-2.0
// --result-file and --json: the record of lib/run written to a file or stdout,
// after the command ended (stdout: one line, the last thing agentjail prints).
#include "result_record.hpp"

#include "options.hpp"

#include "run/record.hpp"
#include "plan/plan.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace agentjail::cli {

namespace {

bool write_all(int fd, const std::string& text) {
    size_t off = 0;
    while (off < text.size()) {
        ssize_t n = ::write(fd, text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = EIO;
            return false;
        }
        off += static_cast<size_t>(n);
    }
    return true;
}

// Writes the record where asked; false (after saying why) when the file failed.
bool emit(const RecordRequest& req, const std::string& pretty, const std::string& line) {
    bool ok = true;
    if (!req.file.empty()) {
        // Renamed over the target from a fresh unguessable name, never through a
        // link (sys/host_file.hpp), once nothing of the sandbox is left: a CI job
        // that reads the file never sees half a record, even when agentjail is
        // killed meanwhile, nor one the command wrote there.
        if (auto r = sys::replace_host_file(req.file, pretty + "\n", req.file_rules, "result file");
            !r) {
            say(r.error().message());
            ok = false;
        }
    }
    if (req.json_fd >= 0) {
        // A descriptor of the caller's that the command never had (every fd but
        // 0-2 is closed before execve): nothing in it can come from the command.
        if (!write_all(req.json_fd, line + "\n")) {
            std::fprintf(stderr, "agentjail: --json-fd %d: %s\n", req.json_fd,
                         util::errno_text(errno).c_str());
            ok = false;
        }
    }
    if (req.json) {
        // Last on stderr, after everything the command wrote (its streams are
        // closed by now): a newline that ends any line the command left open,
        // the delimiter, the record. A reader takes the last line, and only when
        // the line before it is the delimiter (docs/limits.md, "Reading the record").
        std::fflush(stdout);
        std::fflush(stderr);
        (void)write_all(STDERR_FILENO, std::string("\n") + record_delimiter + "\n" + line + "\n");
    }
    return ok;
}

int prescan_fd(const std::string& s) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
        return -1;
    int fd = std::stoi(s);
    if (fd < 3 || ::fcntl(fd, F_GETFD) < 0) return -1;
    return fd;
}

}  // namespace

Result<void> prepare_record(RecordRequest& req, const Invocation& inv) {
    req.file = inv.result_file;
    req.json = inv.json;
    req.json_fd = inv.json_fd;
    if (inv.policy) req.limits = record_limits(inv.policy->raw());
    if (req.json_fd >= 0) {
        // 0-2 are the command's too (it could write a record there first); a
        // closed or read-only descriptor would lose the record at the very end.
        int fl = ::fcntl(req.json_fd, F_GETFL);
        if (fl < 0) {
            req.json_fd = -1;
            return Error(
                ErrorKind::invalid_input, EBADF,
                "--json-fd " + std::to_string(inv.json_fd) + ": not an open file descriptor");
        }
        if ((fl & O_ACCMODE) == O_RDONLY) {
            req.json_fd = -1;
            return Error(ErrorKind::invalid_input, EBADF,
                         "--json-fd " + std::to_string(inv.json_fd) + ": open for reading only");
        }
        // The command must never hold it, even should a later change stop closing
        // every descriptor before execve.
        (void)::fcntl(req.json_fd, F_SETFD, FD_CLOEXEC);
    }
    return {};
}

Result<void> check_result_file(RecordRequest& req, const plan::Plan& plan) {
    if (req.file.empty()) return {};
    req.file_rules = run::result_file_rules(plan.host_files);
    auto checked = sys::check_replaceable_host_file(req.file, req.file_rules, "result file");
    if (!checked) {
        req.file.clear();  // refused: not written either when reporting this
        return std::move(checked).error();
    }
    return {};
}

RecordRequest prescan_record_flags(const std::vector<std::string>& args, const std::string& cwd) {
    RecordRequest req;
    Context ctx{cwd, "", "", ""};
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        // The options end at "--" or at the first word that is not an option; this
        // scan is rough (a value that looks like a word ends it early) and only serves
        // failures before the real parse.
        if (a == "--" || a.empty() || a[0] != '-') break;
        if (a == "--json") req.json = true;
        // Only a descriptor that is open is taken here; the real parse says why not.
        if (a == "--json-fd" && i + 1 < args.size()) req.json_fd = prescan_fd(args[++i]);
        if (util::starts_with(a, "--json-fd=")) req.json_fd = prescan_fd(a.substr(10));
        if (a == "--result-file" && i + 1 < args.size()) req.file = resolve_path(args[++i], ctx);
        if (util::starts_with(a, "--result-file=")) req.file = resolve_path(a.substr(14), ctx);
    }
    return req;
}

RunLimits record_limits(const policy::Policy& p) {
    RunLimits l;
    const auto& s = p.limits;
    l.memory_bytes = s.memory.value.value_or(0);
    l.swap_bytes = s.swap.value.value_or(0);
    l.cpus = s.cpus.value.value_or(0);
    l.pids = s.pids.value.value_or(0);
    l.timeout_s = s.timeout.value.value_or(0);
    l.kill_grace_s = s.kill_grace.value;
    l.cpu_time_s = s.cpu_time.value.value_or(0);
    l.nofile = s.nofile.value.value_or(0);
    l.fsize_bytes = s.fsize.value.value_or(0);
    return l;
}

int finish_run(const RecordRequest& req, const RunResult& r) {
    int status = run::exit_status(r);
    // agentjail's own failure during the run: said on stderr whether or not a record
    // was asked for (the command's output alone would not tell).
    if (!r.internal_error.empty()) say(r.internal_error);
    if (!req.wanted()) return status;
    if (!emit(req, run::record_json(r, req.start, 2), run::record_json(r, req.start, -1)))
        return exit_agentjail_error;
    return status;
}

int finish_error(const RecordRequest& req, const Error& e) {
    int status = report(e);
    if (!req.wanted()) return status;
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - req.t0).count();
    (void)emit(req, run::error_record_json(e, req.start, wall, req.limits, 2),
               run::error_record_json(e, req.start, wall, req.limits, -1));
    return status;
}

}  // namespace agentjail::cli
