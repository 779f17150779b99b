// SPDX-License-Identifier: Apache-2.0
// Buffers that are wiped before their memory is freed: for a secret's value and the
// text it was read from, so that neither is in the memory a sandbox cloned
// afterwards starts from (docs/network.md, "Where a secret comes from").
#pragma once

#include <string.h>

#include <memory>
#include <string>

namespace agentjail::base {

template <class T>
struct Wiping {
    using value_type = T;
    Wiping() = default;
    template <class U>
    Wiping(const Wiping<U>&) noexcept {}  // NOLINT: converting, as allocators are
    T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
    void deallocate(T* p, std::size_t n) noexcept {
        ::explicit_bzero(p, n * sizeof(T));
        std::allocator<T>().deallocate(p, n);
    }
    template <class U>
    bool operator==(const Wiping<U>&) const noexcept {
        return true;
    }
    template <class U>
    bool operator!=(const Wiping<U>&) const noexcept {
        return false;
    }
};

using wstring = std::basic_string<char, std::char_traits<char>, Wiping<char>>;

inline void wipe(void* p, std::size_t n) noexcept { ::explicit_bzero(p, n); }

// Wipes a short string's inline buffer too, which the allocator never sees.
template <class S>
struct WipeOnExit {
    S& s;
    ~WipeOnExit() {
        if (!s.empty()) ::explicit_bzero(s.data(), s.size());
    }
};

}  // namespace agentjail::base
