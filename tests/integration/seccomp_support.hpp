// SPDX-License-Identifier: Apache-2.0
// Shared by the seccomp tests of the integration and escape tiers: running the
// sysprobe helper under a policy with a denial log, reading that log (JSON lines),
// the probe's "name=RESULT" and "NR RESULT" output, and libseccomp's syscall tables.
#pragma once

#include "common.hpp"

#include <seccomp.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ajsc {

// One line of a --seccomp-log file.
struct Denial {
    std::string syscall;
    long long nr = -1;
    std::string arch;
    std::vector<std::uint64_t> args;
    std::string rule;    // "default.toml:LINE:COL"
    std::string action;  // "errno:EPERM"
    std::string why;
    long long pid = -1;
    std::string line;  // as written, for messages
};

// Parses JSON lines; a line that is not an object with the documented fields is an
// error (the log is an interface: tools read it).
inline std::vector<Denial> parse_denials(const std::string& text, std::string* error) {
    std::vector<Denial> out;
    for (const auto& l : ajtest::lines(text)) {
        Denial d;
        d.line = l;
        try {
            auto j = nlohmann::json::parse(l);
            // A summary of lines the rate limit left out ("N more like this"): not a call.
            if (j.contains("more_like_this")) continue;
            d.syscall = j.at("syscall").get<std::string>();
            d.nr = j.at("nr").get<long long>();
            d.arch = j.at("arch").get<std::string>();
            d.rule = j.at("rule").get<std::string>();
            d.action = j.at("action").get<std::string>();
            d.pid = j.at("pid").get<long long>();
            (void)j.at("time");
            if (j.contains("why") && j["why"].is_string()) d.why = j["why"].get<std::string>();
            for (const auto& a : j.at("args")) {
                // The log writes each register as a hex string; accept plain numbers too.
                d.args.push_back(a.is_string()
                                     ? std::strtoull(a.get<std::string>().c_str(), nullptr, 0)
                                     : a.get<std::uint64_t>());
            }
        } catch (const std::exception& e) {
            if (error) *error += "bad log line (" + std::string(e.what()) + "): " + l + "\n";
            continue;
        }
        out.push_back(std::move(d));
    }
    return out;
}

// "name=value" lines of a probe's output.
inline std::map<std::string, std::string> results(const std::string& out) {
    std::map<std::string, std::string> m;
    for (const auto& l : ajtest::lines(out)) {
        auto eq = l.find('=');
        if (eq != std::string::npos && eq > 0 && l.find(' ') > eq)
            m[l.substr(0, eq)] = l.substr(eq + 1);
    }
    return m;
}

// "NR RESULT" lines of a sweep.
inline std::map<long, std::string> sweep_results(const std::string& out) {
    std::map<long, std::string> m;
    for (const auto& l : ajtest::lines(out)) {
        auto sp = l.find(' ');
        if (sp == std::string::npos || sp == 0) continue;
        char* end = nullptr;
        long nr = std::strtol(l.c_str(), &end, 10);
        if (end != l.c_str() + sp) continue;
        m[nr] = l.substr(sp + 1);
    }
    return m;
}

inline std::string value_or(const std::map<std::string, std::string>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? "<missing>" : it->second;
}

// libseccomp's tables: what a policy can name.
inline std::string syscall_name(std::uint32_t arch, int nr) {
    char* s = seccomp_syscall_resolve_num_arch(arch, nr);
    if (s == nullptr) return "";
    std::string r = s;
    std::free(s);
    return r;
}

inline int highest_known(std::uint32_t arch, int bit = 0) {
    int hi = -1;
    for (int nr = 0; nr < 2048; ++nr)
        if (!syscall_name(arch, nr | bit).empty()) hi = nr;
    return hi;
}

inline bool is_signal(const std::string& r) {
    return r.rfind("SIG", 0) == 0 || r.rfind("signal:", 0) == 0;
}

// How to run a probe: the policy flags and whether to keep a denial log.
enum class Mode { default_policy, minimal, strict };

inline const char* mode_name(Mode m) {
    switch (m) {
    case Mode::default_policy: return "default";
    case Mode::minimal: return "minimal";
    case Mode::strict: return "strict";
    }
    return "?";
}

struct ProbeRun {
    ajtest::RunOutput run;
    std::map<std::string, std::string> res;
    std::vector<Denial> denials;
    std::string log_error;  // empty when the log was read and every line parsed
    std::string log_text;

    // Records for a syscall (by name), optionally with a given first argument.
    std::vector<const Denial*> records(const std::string& name,
                                       std::optional<std::uint64_t> arg0 = std::nullopt) const {
        std::vector<const Denial*> v;
        for (const auto& d : denials)
            if (d.syscall == name && (!arg0 || (!d.args.empty() && d.args[0] == *arg0)))
                v.push_back(&d);
        return v;
    }
    bool logged(const std::string& name, std::optional<std::uint64_t> arg0 = std::nullopt) const {
        return !records(name, arg0).empty();
    }
};

// Runs `sysprobe ARGS...` (or another helper: cmd[0] is a full path) in a sandbox.
// The filter runs (default, strict) keep a denial log in a scratch file outside the
// workspace; the minimal run is a control and is not recorded for the canary sweep.
inline ProbeRun run_in(ajtest::Jail& jail, Mode mode, const std::vector<std::string>& cmd,
                       std::vector<std::string> extra_flags = {}, ajtest::RunOptions opts = {}) {
    ProbeRun p;
    ajtest::TempDir logdir("aj-sclog");
    std::string log = logdir.path() + "/denials.jsonl";
    std::vector<std::string> args;
    if (mode == Mode::minimal) {
        args = {"-p", "minimal", "--ro", AJ_HELPERS_DIR};
    } else {
        if (mode == Mode::strict) args = {"-p", "strict"};
        auto b = jail.base();
        args.insert(args.end(), b.begin(), b.end());
        args.insert(args.end(), {"--seccomp-log", log});
    }
    args.insert(args.end(), extra_flags.begin(), extra_flags.end());
    args.push_back("--");
    args.insert(args.end(), cmd.begin(), cmd.end());
    p.run = mode == Mode::minimal ? jail.control(args, opts) : jail.run(args, opts);
    p.res = results(p.run.out);
    if (mode != Mode::minimal) {
        if (!ajtest::exists(log)) {
            p.log_error = "no log file was written at " + log;
        } else {
            p.log_text = ajtest::read_file(log);
            p.denials = parse_denials(p.log_text, &p.log_error);
        }
    }
    return p;
}

inline std::vector<std::string> probe(std::vector<std::string> args) {
    args.insert(args.begin(), ajtest::helper("sysprobe"));
    return args;
}

inline std::string describe(const ProbeRun& p) {
    return ajit::describe(p.run) + "\n--- denial log:\n" + p.log_text +
           (p.log_error.empty() ? "" : "\n--- log problems:\n" + p.log_error);
}

// A refused call the filter must answer: the probe's name, the errno it must get,
// the syscall the log must name, optionally the first argument the record must show,
// and whether the kernel itself answers differently when reached (then the control
// run must show another result: the probe can tell the filter from the kernel).
struct Refusal {
    std::string probe;
    std::string want;
    std::string syscall;
    std::optional<std::uint64_t> arg0;
    bool control_differs = true;
};

// Runs the probes under the default policy (with a log) and under minimal (the
// control), and checks each: the errno, the record of the filter's answer, and the
// control. Returns a table of what was seen, for messages.
inline std::string check_refusals(ajtest::Jail& jail, const std::vector<Refusal>& want,
                                  const std::vector<std::string>& also_allowed = {}) {
    std::vector<std::string> names{"call"};
    for (const auto& w : want) names.push_back(w.probe);
    for (const auto& a : also_allowed) names.push_back(a);
    auto d = run_in(jail, Mode::default_policy, probe(names));
    auto c = run_in(jail, Mode::minimal, probe(names));
    std::string table = "probe: default / minimal (control) / logged\n";
    for (const auto& w : want) {
        std::string dv = value_or(d.res, w.probe), cv = value_or(c.res, w.probe);
        bool rec = d.logged(w.syscall, w.arg0);
        table += "  " + w.probe + ": " + dv + " / " + cv + " / " + (rec ? "yes" : "no") + "\n";
    }
    EXPECT_EQ(d.run.status, 0) << describe(d);
    EXPECT_EQ(c.run.status, 0) << ajit::describe(c.run);
    EXPECT_EQ(d.log_error, "") << describe(d);
    std::vector<std::string> problems;
    for (const auto& w : want) {
        std::string dv = value_or(d.res, w.probe), cv = value_or(c.res, w.probe);
        if (dv != w.want)
            problems.push_back(w.probe + ": got " + dv + ", the default policy must answer " +
                               w.want);
        // The errno alone could be the kernel's (no capabilities): the record shows the
        // filter answered.
        // clone3 is refused with record = false (glibc probes it before every thread):
        // its control (the kernel's own answer without a filter) differs, which shows
        // the filter answered; no record is expected.
        if (w.syscall != "clone3" && !d.logged(w.syscall, w.arg0)) {
            problems.push_back(w.probe + ": no denial record for " + w.syscall +
                               (w.arg0 ? " with arg0 " + std::to_string(*w.arg0) : std::string()) +
                               " (the kernel, not the filter, answered?)");
        }
        for (const auto* r : d.records(w.syscall, w.arg0))
            if (r->action != "errno:" + w.want)
                problems.push_back(w.probe + ": logged as " + r->action);
        if (w.control_differs && cv == w.want) {
            problems.push_back(w.probe + ": control: without a filter the kernel answers " + cv +
                               " too, so this probe cannot tell");
        }
        if (cv == "<missing>") problems.push_back(w.probe + ": the control did not run the probe");
    }
    for (const auto& a : also_allowed) {
        std::string dv = value_or(d.res, a), cv = value_or(c.res, a);
        table += "  " + a + " (allowed): " + dv + " / " + cv + "\n";
        if (dv != cv || dv == "<missing>")
            problems.push_back(a + ": must be allowed (the same result as without a filter), got " +
                               dv);
    }
    std::string all;
    for (const auto& p : problems) all += "  " + p + "\n";
    EXPECT_TRUE(problems.empty()) << problems.size() << " problems:\n"
                                  << all << table << "--- denial log:\n"
                                  << d.log_text;
    return table;
}

}  // namespace ajsc
