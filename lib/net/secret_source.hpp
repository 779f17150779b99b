// SPDX-License-Identifier: Apache-2.0
// A secret's value read for the proxy, once the sandbox exists: the source's file
// through sys::read_small_file, the value found by netrules/secret_value.hpp (the
// planner's probe of a source is plan::HostView::probe_secret).
#pragma once

#include "base/error.hpp"
#include "netrules/secret_value.hpp"

#include <string>

namespace agentjail::net {

// The value: one line, not empty. env: is read from this process's environment.
Result<std::string> read_source(const SourceSpec& spec, const std::string& secret_name);

}  // namespace agentjail::net
