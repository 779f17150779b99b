// SPDX-License-Identifier: Apache-2.0
// The result record: what happened to a run (status OK/RE/SG/TO/ML/PL/XX, times,
// memory, pids, cpu throttling, the limits and layers in force) as one JSON object
// for CI, modelled on isolate's meta file with explicit units.
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"
#include "sys/host_file.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace agentjail::run {

inline constexpr int record_schema_version = 1;

// The rules the result record is written under (sys::replace_host_file, once every
// process of the sandbox is gone): the plan's, but a path the sandbox can write is
// fine, since nothing of it is left to race the rename and what it planted at the
// name is replaced.
sys::HostFileRules result_file_rules(const sys::HostFileRules& plan_rules);

enum class Status { ok, re, sg, to, ml, pl, xx };
// "OK", "RE", "SG", "TO", "ML", "PL", "XX".
const char* status_code(Status s);

struct Outcome {
    Status status = Status::ok;
    std::string reason;   // short, stable: "exited", "nonzero exit", "signal", "timeout", ...
    std::string message;  // one sentence for people
};

// What a finished run amounts to. Precedence: the wall clock (TO) over an OOM kill
// (ML) over a refused fork (PL) over a signal (SG) over a non-zero exit (RE). ML and
// PL need the command to have failed: a build that survived one refused fork and
// still succeeded is OK.
Outcome classify(const RunResult& r);

// The CLI's exit status for a run: 124 on timeout, 137 on an OOM kill, otherwise the
// command's code or 128+N for signal N.
int exit_status(const RunResult& r);

// What the sandbox was refused and what ended or weakened the run, for people: one
// line each (without the "agentjail: " prefix), each with what would allow it where
// something would (a flag or a policy line). Empty when nothing was refused, no
// limit ended the run and no layer was missing. The CLI prints these after the run
// and `agentjail log` again (README.md, "What was refused").
std::vector<std::string> summary_lines(const RunResult& r);
// The refusals as the record has them: [{kind, what, why, allow, count}].
std::string refusals_json(const RunResult& r);

// The record of a run that ended, and of one agentjail could not run (XX). start is
// when agentjail started the run; limits are those asked for (known for XX when the
// policy loaded). indent < 0: one line.
std::string record_json(const RunResult& r, std::chrono::system_clock::time_point start, int indent = 2);
std::string error_record_json(const Error& e, std::chrono::system_clock::time_point start, double wall_time_s,
                              const std::optional<RunLimits>& limits, int indent = 2);

}  // namespace agentjail::run
