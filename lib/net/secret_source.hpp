// SPDX-License-Identifier: Apache-2.0
// A secret's value read for the proxy, once the sandbox exists: the source's file
// through sys::read_small_file, the value found by netrules/secret_value.hpp.
#pragma once

#include "base/error.hpp"
#include "netrules/secret_value.hpp"

#include <string>
#include <vector>

namespace agentjail::net {

// The value: one line, not empty. env: is read from this process's environment.
Result<std::string> read_source(const SourceSpec& spec, const std::string& secret_name);

// What a source holds now, without keeping the value; `environ`: NAME=VALUE lines.
SourceProbe probe_source(const SourceSpec& spec, const std::string& secret_name,
                         const std::vector<std::string>& environ, const std::string& expires = {});

// The host's small regular files, for find_source.
FileReader host_file_reader();

}  // namespace agentjail::net
