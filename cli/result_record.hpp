// SPDX-License-Identifier: Apache-2.0
// The result record on the command line: --result-file FILE and --json, written
// when the command ended and also when agentjail itself failed (status XX).
#pragma once

#include <agentjail/agentjail.hpp>

#include "policy/policy.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace agentjail::cli {

struct RecordRequest {
    std::string file;  // empty: none
    bool json = false;
    std::chrono::system_clock::time_point start = std::chrono::system_clock::now();
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    std::optional<RunLimits> limits;  // known once the policy loaded
    bool wanted() const { return json || !file.empty(); }
};

// --result-file and --json found among the options of args (before the command), so
// that a failure while parsing the rest (a bad policy) still gets its XX record.
RecordRequest prescan_record_flags(const std::vector<std::string>& args, const std::string& cwd);

// The limits a loaded policy asks for, for the record of a run that failed.
RunLimits record_limits(const policy::Policy& p);

// Writes the record of a finished run; returns the exit status (124 timeout, 137 OOM
// kill, else the command's), or 125 when the record asked for cannot be written.
int finish_run(const RecordRequest& req, const RunResult& r);
// Reports e on stderr, writes the XX record; returns 125 (126/127).
int finish_error(const RecordRequest& req, const Error& e);

}  // namespace agentjail::cli
