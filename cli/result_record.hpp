// SPDX-License-Identifier: Apache-2.0
// The result record on the command line: --result-file FILE and --json, written
// when the command ended and also when agentjail itself failed (status XX).
#pragma once

#include "api/api.hpp"

#include "policy/policy.hpp"
#include "sys/host_file.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace agentjail::cli {

// The line --json writes on stderr just before the record, which is then the last
// line of stderr. The command cannot write after it (agentjail writes it once the
// command's streams are closed), and a newline before it ends any line the
// command left open, so a record the command forged is never the last line.
inline constexpr const char* record_delimiter = "--- agentjail result ---";

struct RecordRequest {
    std::string file;  // empty: none
    bool json = false;
    int json_fd = -1;               // --json-fd N: the record alone, one line, on N; -1: none
    sys::HostFileRules file_rules;  // what the result file must stay clear of (the plan's)
    std::chrono::system_clock::time_point start = std::chrono::system_clock::now();
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    std::optional<RunLimits> limits;  // known once the policy loaded
    bool wanted() const { return json || json_fd >= 0 || !file.empty(); }
};

// --result-file and --json found among the options of args (before the command), so
// that a failure while parsing the rest (a bad policy) still gets its XX record.
RecordRequest prescan_record_flags(const std::vector<std::string>& args, const std::string& cwd);

// The record's flags of a parsed invocation; fails (exit 125) when --json-fd names
// no writable descriptor, before anything runs.
struct Invocation;
Result<void> prepare_record(RecordRequest& req, const Invocation& inv);
// The result file obeys the plan's rules like the logs, checked against the plan the
// run builds (SpawnOptions::check_plan), so "inside the sandbox" means what the run
// will bind read-write. Refused: the file is forgotten (no record goes there).
Result<void> check_result_file(RecordRequest& req, const plan::Plan& plan);

// The limits a loaded policy asks for, for the record of a run that failed.
RunLimits record_limits(const policy::Policy& p);

// Writes the record of a finished run; returns the exit status (124 timeout, 137 OOM
// kill, else the command's), or 125 when the record asked for cannot be written.
int finish_run(const RecordRequest& req, const RunResult& r);
// Reports e on stderr, writes the XX record; returns 125 (126/127).
int finish_error(const RecordRequest& req, const Error& e);

}  // namespace agentjail::cli
