// SPDX-License-Identifier: Apache-2.0
// The one timestamp format of records and logs: ISO-8601 UTC with milliseconds,
// "2026-11-29T10:11:12.345Z".
#pragma once

#include <chrono>
#include <string>

namespace agentjail::base {

std::string iso8601_utc(std::chrono::system_clock::time_point t);
// iso8601_utc of now.
std::string iso8601_now();

}  // namespace agentjail::base
