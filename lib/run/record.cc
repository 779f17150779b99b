// SPDX-License-Identifier: Apache-2.0
// The result record: classifying a RunResult into a status, and writing it as JSON
// with nlohmann-json (never by hand: a message holding a quote must stay valid).
#include "run/record.hpp"

#include "plan/limits.hpp"

#include "base/time.hpp"
#include "base/version.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <signal.h>

#include <cstdio>
#include <ctime>

namespace agentjail::run {

sys::HostFileRules result_file_rules(const sys::HostFileRules& plan_rules) {
    sys::HostFileRules r = plan_rules;
    r.allow_in_sandbox = true;
    if (r.allow_origin.empty()) r.allow_origin = "the result record, written after the run";
    return r;
}

using units::format_duration;
using units::format_size;

namespace {

using json = nlohmann::ordered_json;

bool succeeded(const RunResult& r) { return r.exited && r.exit_code == 0; }

using util::signal_name;

// A limit of 0 is "none": null in the record, so a reader never mistakes it for a cap of 0.
json opt_u64(std::uint64_t v) { return v ? json(v) : json(nullptr); }
json opt_num(double v) { return v > 0 ? json(v) : json(nullptr); }

json limits_json(const RunLimits& l) {
    json j;
    j["memory_bytes"] = opt_u64(l.memory_bytes);
    // With a memory limit, swap 0 is a real limit (none at all).
    j["swap_bytes"] = l.memory_bytes ? json(l.swap_bytes) : opt_u64(l.swap_bytes);
    j["cpus"] = opt_num(l.cpus);
    j["pids"] = opt_u64(l.pids);
    j["timeout_s"] = opt_num(l.timeout_s);
    // The grace of the wall clock and of a stop (a signal to agentjail) alike.
    j["kill_grace_s"] = l.kill_grace_s;
    j["cpu_time_s"] = opt_num(l.cpu_time_s);
    j["nofile"] = opt_u64(l.nofile);
    j["fsize_bytes"] = opt_u64(l.fsize_bytes);
    return j;
}

// Rounded to microseconds: the record is for people and CI, not for float noise.
double round_us(double s) { return static_cast<double>(static_cast<long long>(s * 1e6 + 0.5)) / 1e6; }

// Direct mode's guarded names: the placeholders made and removed, and each time the
// host replaced a hidden or protected name and the supervisor covered it again.
std::string dump(const json& j, int indent) {
    // Invalid UTF-8 in a message (a path, a command name) is replaced, not thrown on.
    return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace

const char* status_code(Status s) {
    switch (s) {
        case Status::ok: return "OK";
        case Status::re: return "RE";
        case Status::sg: return "SG";
        case Status::to: return "TO";
        case Status::ml: return "ML";
        case Status::pl: return "PL";
        case Status::xx: return "XX";
    }
    return "XX";
}

Outcome classify(const RunResult& r) {
    Outcome o;
    std::string ended = r.exited ? "exited with code " + std::to_string(r.exit_code)
                                 : "was killed by " + signal_name(r.term_signal);
    if (!r.internal_error.empty()) {
        // agentjail's own supervision failed and it stopped the sandbox: neither the
        // command's status nor a limit explains the end.
        o.status = Status::xx;
        o.reason = "internal error";
        o.message = r.internal_error + "; the command " + ended;
    } else if (!r.workspace.stopped.empty()) {
        // Before the signal: the SIGKILL was agentjail's, and this is why.
        o.status = Status::sg;
        o.reason = "workspace guard";
        o.message = r.workspace.stopped;
    } else if (r.stop_signal != 0) {
        // Asked to end from outside (a signal to agentjail): that, not what the
        // command did with it, is why the run ended.
        o.status = Status::sg;
        o.reason = "stopped";
        o.message = "agentjail got " + signal_name(r.stop_signal) + " and passed it on; " +
                    (r.stop_killed ? "what was left inside was killed (after the kill grace of " +
                                         format_duration(r.limits.kill_grace_s) + ", or at a second signal); "
                                   : std::string()) +
                    "the command " + ended;
    } else if (r.timed_out) {
        o.status = Status::to;
        o.reason = "timeout";
        o.message = "the wall-clock limit of " + format_duration(r.limits.timeout_s) +
                    " ran out; the sandbox got SIGTERM (and SIGKILL if still running " +
                    format_duration(r.limits.kill_grace_s) + " later); the command " + ended;
    } else if (r.oom_kill_count > 0 && !succeeded(r)) {
        o.status = Status::ml;
        o.reason = "memory limit";
        o.message = "the memory limit" +
                    (r.limits.memory_bytes ? " of " + format_size(r.limits.memory_bytes) : std::string()) +
                    " was reached and the kernel's OOM killer ended " + std::to_string(r.oom_kill_count) +
                    " process" + (r.oom_kill_count == 1 ? "" : "es") + "; the command " + ended;
    } else if (r.pids_max_hits > 0 && !succeeded(r)) {
        o.status = Status::pl;
        o.reason = "process limit";
        o.message = "the process limit" + (r.limits.pids ? " of " + std::to_string(r.limits.pids) : std::string()) +
                    " refused " + std::to_string(r.pids_max_hits) + " fork" + (r.pids_max_hits == 1 ? "" : "s") +
                    "; the command " + ended;
    } else if (!r.exited) {
        o.status = Status::sg;
        o.reason = "signal";
        o.message = "the command " + ended;
    } else if (r.exit_code != 0) {
        o.status = Status::re;
        o.reason = "nonzero exit";
        o.message = "the command " + ended;
    } else {
        o.status = Status::ok;
        o.reason = "exited";
        o.message = "the command exited with code 0";
    }
    return o;
}

int exit_status(const RunResult& r) {
    Outcome o = classify(r);
    if (o.status == Status::to) return 124;
    if (o.status == Status::ml) return 137;
    if (o.status == Status::xx) return 125;
    // As a shell reports a job ended by a signal, whatever the command made of it.
    if (r.stop_signal != 0) return 128 + r.stop_signal;
    return r.exited ? r.exit_code : 128 + r.term_signal;
}

namespace {
// What the run did with the workspace (docs/workspace.md); added in schema 1.
json workspace_json(const WorkspaceOutcome& w) {
    json j;
    j["mode"] = w.mode;
    j["run_id"] = w.run_id.empty() ? json(nullptr) : json(w.run_id);
    j["state_dir"] = w.state_dir.empty() ? json(nullptr) : json(w.state_dir);
    j["branch"] = w.branch.empty() ? json(nullptr) : json(w.branch);
    j["status"] = w.status.empty() ? json(nullptr) : json(w.status);
    j["message"] = w.message.empty() ? json(nullptr) : json(w.message);
    j["flags"] = w.flags;
    j["report"] = w.report_json.empty() ? json(nullptr) : json::parse(w.report_json, nullptr, false);
    j["placeholders"] = {{"made", w.placeholders_made},
                         {"removed", w.placeholders_removed},
                         {"kept", w.placeholders_kept}};
    json re = json::array();
    for (const auto& r : w.reapplied)
        re.push_back({{"name", r.name},
                      {"why", r.why},
                      {"action", r.action},
                      {"when", r.when},
                      {"window_ms", static_cast<double>(static_cast<long long>(r.window_ms * 1000 + 0.5)) / 1000}});
    j["reapplied"] = re;
    j["reapplied_count"] = w.reapplied_count;
    j["stopped"] = w.stopped.empty() ? json(nullptr) : json(w.stopped);
    json audit = json::array();
    for (const auto& f : w.audit) audit.push_back({{"path", f.path}, {"what", f.what}, {"action", f.action}});
    j["audit"] = std::move(audit);
    return j;
}
}  // namespace

namespace {

json refusals_array(const RunResult& r) {
    json a = json::array();
    for (const auto& f : r.refusals)
        a.push_back({{"kind", f.kind}, {"what", f.what}, {"why", f.why},
                     {"allow", f.allow.empty() ? json(nullptr) : json(f.allow)}, {"count", f.count},
                     {"policy", f.key.empty() ? json(nullptr) : json({{"key", f.key}, {"value", f.value}})}});
    return a;
}

}  // namespace

std::string refusals_json(const RunResult& r) { return dump(refusals_array(r), -1); }

std::vector<std::string> summary_lines(const RunResult& r) {
    std::vector<std::string> out;
    for (const auto& f : r.refusals) {
        std::string line = f.kind + " " + f.what;
        if (f.count > 1) line += " (" + std::to_string(f.count) + " times)";
        line += ": " + f.why;
        // The proxy's reasons name the flag already; said once.
        if (!f.allow.empty() && f.why.find(f.allow) == std::string::npos) line += "; to allow it: " + f.allow;
        out.push_back(std::move(line));
    }
    if (r.refusals_more > 0)
        out.push_back(std::to_string(r.refusals_more) + " more refusals of other kinds (--net-log and --seccomp-log "
                                                        "record each one)");
    const Outcome o = classify(r);
    if (o.status == Status::to)
        out.push_back("limit: " + o.message + " (exit 124; a longer one: --timeout or [limits] timeout)");
    else if (o.status == Status::ml)
        out.push_back("limit: " + o.message + " (exit 137; more memory: -m/--memory or [limits] memory)");
    else if (o.status == Status::pl)
        out.push_back("limit: " + o.message + " (more: --pids or [limits] pids)");
    for (const auto& d : r.degraded) out.push_back("degraded: " + d);
    return out;
}

std::string record_json(const RunResult& r, std::chrono::system_clock::time_point start, int indent) {
    Outcome o = classify(r);
    json j;
    j["schema_version"] = record_schema_version;
    j["status"] = status_code(o.status);
    j["reason"] = o.reason;
    j["message"] = o.message;
    j["exit_code"] = r.exited ? json(r.exit_code) : json(nullptr);
    j["signal"] = r.exited ? json(nullptr) : json(r.term_signal);
    j["exit_status"] = exit_status(r);
    j["wall_time_s"] = round_us(r.wall_time_s);
    j["cpu_user_s"] = round_us(r.cpu_user_s);
    j["cpu_system_s"] = round_us(r.cpu_system_s);
    j["memory_peak_bytes"] = r.memory_peak_bytes;
    j["oom_kill_count"] = r.oom_kill_count;
    j["pids_peak"] = r.pids_peak;
    j["pids_max_hits"] = r.pids_max_hits;
    j["cpu_throttled_us"] = r.cpu_throttled_us;
    j["cpu_nr_throttled"] = r.cpu_nr_throttled;
    j["limits"] = limits_json(r.limits);
    // A signal to agentjail ended the run (added in schema 1).
    j["stop"] = r.stop_signal == 0 ? json(nullptr)
                                   : json({{"signal", signal_name(r.stop_signal)}, {"killed", r.stop_killed}});
    j["layers"] = {{"cgroup", r.cgroup}, {"active", r.layers}, {"degraded", r.degraded}};
    // How the cgroup was had (added in schema 1: readers of older records see no key).
    j["layers"]["cgroup_via"] = r.cgroup_via.empty() ? json(nullptr) : json(r.cgroup_via);
    j["layers"]["cgroup_unit"] = r.cgroup_unit.empty() ? json(nullptr) : json(r.cgroup_unit);
    // Connections the network proxy refused, and (under "network") those it allowed.
    j["denials"] = {{"network", r.network_denials}, {"syscalls", r.seccomp_denials}};
    j["network"] = {{"allowed", r.network_allowed}, {"denied", r.network_denials}};
    // What was refused, by kind and target (added in schema 1).
    j["refusals"] = refusals_array(r);
    j["refusals_more"] = r.refusals_more;
    j["workspace"] = workspace_json(r.workspace);
    j["start_time"] = base::iso8601_utc(start);
    j["agentjail_version"] = agentjail::version();
    return dump(j, indent);
}

std::string error_record_json(const Error& e, std::chrono::system_clock::time_point start, double wall_time_s,
                              const std::optional<RunLimits>& limits, int indent) {
    json j;
    j["schema_version"] = record_schema_version;
    j["status"] = status_code(Status::xx);
    // The command never ran: XX, whether agentjail could not build the sandbox or the
    // command was not there to execute (the reason and exit status tell them apart).
    int status = 125;
    std::string reason = "agentjail error";
    if (e.kind() == ErrorKind::command_not_found) {
        status = 127;
        reason = "command not found";
    } else if (e.kind() == ErrorKind::command_not_executable) {
        status = 126;
        reason = "command not executable";
    }
    j["reason"] = reason;
    j["message"] = e.message();
    j["exit_code"] = nullptr;
    j["signal"] = nullptr;
    j["exit_status"] = status;
    j["wall_time_s"] = round_us(wall_time_s);
    j["cpu_user_s"] = 0;
    j["cpu_system_s"] = 0;
    j["memory_peak_bytes"] = 0;
    j["oom_kill_count"] = 0;
    j["pids_peak"] = 0;
    j["pids_max_hits"] = 0;
    j["cpu_throttled_us"] = 0;
    j["cpu_nr_throttled"] = 0;
    j["limits"] = limits ? limits_json(*limits) : json(nullptr);
    j["stop"] = nullptr;
    j["layers"] = {{"cgroup", "none"}, {"active", json::array()}, {"degraded", json::array()},
                   {"cgroup_via", nullptr}, {"cgroup_unit", nullptr}};
    j["denials"] = {{"network", 0}, {"syscalls", 0}};
    j["network"] = {{"allowed", 0}, {"denied", 0}};
    j["refusals"] = json::array();
    j["refusals_more"] = 0;
    j["workspace"] = nullptr;
    j["start_time"] = base::iso8601_utc(start);
    j["agentjail_version"] = agentjail::version();
    return dump(j, indent);
}

}  // namespace agentjail::run
