// SPDX-License-Identifier: Apache-2.0
// The proxy's per-run bounds from the run's limits (pure arithmetic): how many
// connections at once, and how much kernel memory each may hold.
#include "netrules/settings.hpp"

#include <algorithm>

namespace agentjail::net {

Bounds bounds_for(std::optional<std::uint64_t> memory_limit, std::size_t policy_max_connections) {
    Bounds b;
    b.max_connections = std::max<std::size_t>(policy_max_connections, 1);
    if (memory_limit) {
        // ~1 MiB of socket buffers per connection at worst (4 x 2 x socket_buffer),
        // so one connection per 2 MiB keeps the total under half the limit.
        std::uint64_t by_memory = std::max<std::uint64_t>(*memory_limit / (2u << 20), 8);
        b.max_connections =
            static_cast<std::size_t>(std::min<std::uint64_t>(b.max_connections, by_memory));
    }
    // Two pipes per relayed tunnel, 128 at most: 512 pages for the whole run, a
    // small share of the user's pipe-user-pages-soft (16384 pages by default), so
    // that the user's other programs keep getting full-sized pipes.
    b.max_pipes = std::min<std::size_t>(2 * b.max_connections, 128);
    return b;
}

}  // namespace agentjail::net
