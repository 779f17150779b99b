// SPDX-License-Identifier: Apache-2.0
// What every fuzz target shares: the libFuzzer entry point's signature and a check
// that turns a broken invariant into a crash libFuzzer keeps (and the corpus replay
// reports), with what was expected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

#define AJ_FUZZ_CHECK(cond)                                                                    \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            std::fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
            std::abort();                                                                      \
        }                                                                                      \
    } while (0)

namespace ajfuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// Reads the input as a sequence of fields split at `sep` (the first field may be
// a selector byte the target reads on its own).
template <class F>
void split(std::string_view s, char sep, F&& f) {
    for (;;) {
        size_t at = s.find(sep);
        f(s.substr(0, at));
        if (at == std::string_view::npos) return;
        s.remove_prefix(at + 1);
    }
}

}  // namespace ajfuzz
