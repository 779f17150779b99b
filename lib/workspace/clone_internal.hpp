// SPDX-License-Identifier: Apache-2.0
// Helpers of clone mode shared by clone.cc (the clone made before the run) and
// clone_finish.cc (the clone audited and fetched after it); private to lib/workspace.
#pragma once

#include "base/error.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace agentjail::workspace::detail {

// s without its trailing newlines (and carriage returns).
std::string trim_nl(std::string s);
// A regular file below dirfd, never through a link and never blocking on a FIFO;
// reading stops once it holds more than `limit` bytes.
Result<std::string> read_small(int dirfd, const char* name, size_t limit = 1 << 20);
// Replaces the file name below dirfd with text (sys::replace_file_at).
Result<void> replace_at(int dirfd, const char* name, const std::string& text, unsigned mode = 0644);
// The parts of a NUL-separated list (git's -z output).
std::vector<std::string> split_nul(const std::string& s);
// The last component of a relative path.
std::string base_name(const std::string& rel);

}  // namespace agentjail::workspace::detail
