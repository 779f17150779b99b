// SPDX-License-Identifier: Apache-2.0
// The library's version as the build named it ("1.4.0"), for records and messages.
#pragma once

namespace agentjail {

inline const char* version() noexcept { return AGENTJAIL_VERSION; }

}  // namespace agentjail
