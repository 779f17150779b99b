// SPDX-License-Identifier: Apache-2.0
// ISO-8601 UTC timestamps with milliseconds (gmtime_r reads the zone files once, at
// most: it makes no system call per timestamp once loaded).
#include "base/time.hpp"

#include <cstdio>
#include <ctime>

namespace agentjail::base {

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[64];  // room for any int fields: GCC -O2 -Wformat-truncation counts their widest
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
    return buf;
}

std::string iso8601_now() { return iso8601_utc(std::chrono::system_clock::now()); }

}  // namespace agentjail::base
