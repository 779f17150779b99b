// SPDX-License-Identifier: Apache-2.0
// --result-file and --json: the record of lib/limits written to a file or stdout,
// after the command ended (stdout: one line, the last thing agentjail prints).
#include "result_record.hpp"

#include "options.hpp"

#include "limits/record.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace agentjail::cli {

namespace {

Result<void> write_file(const std::string& path, const std::string& text) {
    // Written next to the target and renamed over it: a CI job that reads the file
    // never sees half a record, even when agentjail is killed while writing.
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        return Error(ErrorKind::setup, e, "cannot write the result file " + path + ": " + util::errno_text(e));
    }
    size_t off = 0;
    while (off < text.size()) {
        ssize_t n = ::write(fd, text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            ::close(fd);
            ::unlink(tmp.c_str());
            return Error(ErrorKind::setup, e, "cannot write the result file " + path + ": " + util::errno_text(e));
        }
        off += static_cast<size_t>(n);
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        return Error(ErrorKind::setup, e, "cannot write the result file " + path + ": " + util::errno_text(e));
    }
    return {};
}

// Writes the record where asked; false (after saying why) when the file failed.
bool emit(const RecordRequest& req, const std::string& pretty, const std::string& line) {
    bool ok = true;
    if (!req.file.empty()) {
        if (auto r = write_file(req.file, pretty + "\n"); !r) {
            std::fprintf(stderr, "agentjail: %s\n", r.error().message().c_str());
            ok = false;
        }
    }
    if (req.json) {
        std::fflush(stdout);
        std::fprintf(stdout, "%s\n", line.c_str());
        std::fflush(stdout);
    }
    return ok;
}

}  // namespace

RecordRequest prescan_record_flags(const std::vector<std::string>& args, const std::string& cwd) {
    RecordRequest req;
    Context ctx{cwd, ""};
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        // The options end at "--" or at the first word that is not an option; this
        // scan is rough (a value that looks like a word ends it early) and only serves
        // failures before the real parse.
        if (a == "--" || a.empty() || a[0] != '-') break;
        if (a == "--json") req.json = true;
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
    int status = limits::exit_status(r);
    if (!req.wanted()) return status;
    if (!emit(req, limits::record_json(r, req.start, 2), limits::record_json(r, req.start, -1)))
        return exit_agentjail_error;
    return status;
}

int finish_error(const RecordRequest& req, const Error& e) {
    int status = report(e);
    if (!req.wanted()) return status;
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - req.t0).count();
    (void)emit(req, limits::error_record_json(e, req.start, wall, req.limits, 2),
               limits::error_record_json(e, req.start, wall, req.limits, -1));
    return status;
}

}  // namespace agentjail::cli
