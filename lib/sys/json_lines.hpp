// SPDX-License-Identifier: Apache-2.0
// The one JSON-lines sink of agentjail's logs (refused system calls, the proxy's
// decisions): one inert line per record, one write per line, never a SIGPIPE.
#pragma once

#include <string_view>

namespace agentjail::sys {

// Writes json_text (one JSON value) as one line on fd: ASCII, every shell
// metacharacter in a string escaped (inert in whatever file or terminal the line
// ends up in), in one write (on an O_APPEND file, lines of concurrent runs never
// interleave). SIGPIPE is blocked on the calling thread around the write and taken
// if it came: a reader that went away costs the line, never the process. false:
// the line was not written whole.
bool write_json_line(int fd, std::string_view json_text);

// Takes a SIGPIPE pending on this thread (raised at a write into a pipe or socket
// whose reader went away while SIGPIPE was blocked), so it never fires later.
void drain_sigpipe();

}  // namespace agentjail::sys
