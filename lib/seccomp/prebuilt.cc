// SPDX-License-Identifier: Apache-2.0
// The key a filter is found by among those compiled at build time: everything the
// BPF is made from, and the switch tests use to compile without them.
#include "seccomp/internal.hpp"

#include <seccomp.h>

#include <atomic>

namespace agentjail::seccomp::detail {

namespace {

std::atomic<bool> g_use_prebuilt{true};

void put(std::string& k, std::uint64_t v) {
    k += std::to_string(v);
    k += ' ';
}

void put_action(std::string& k, const Action& a) {
    put(k, static_cast<std::uint64_t>(a.kind));
    put(k, static_cast<std::uint64_t>(static_cast<std::uint32_t>(a.err)));
    put(k, a.quiet ? 1 : 0);
}

}  // namespace

std::string filter_key(const Resolved& r) {
    // Everything build() reads of the table is here; a field it starts to read must
    // come in too. The prebuilt programs and a run come from the same build (the
    // generator runs again whenever the core changes), so how build() compiles is
    // the same on both sides; libseccomp's version is here for the shared library,
    // which may meet another libseccomp at run time than the one it was built with.
    std::string k = "agentjail-bpf 1\nlibseccomp ";
    const scmp_version* v = seccomp_version();
    if (v != nullptr) {
        put(k, v->major);
        put(k, v->minor);
        put(k, v->micro);
    }
    k += "\ndefault ";
    put_action(k, r.default_action);
    k += '\n';
    for (const auto& t : r.table) {
        put(k, static_cast<std::uint64_t>(t.nr));
        for (const auto& e : t.entries) {
            k += '[';
            put_action(k, e.action);
            for (const auto& c : e.cmps) {
                k += '(';
                put(k, c.arg);
                put(k, static_cast<std::uint64_t>(c.op));
                put(k, c.a);
                put(k, c.b);
                put(k, c.bits);
                k += ')';
            }
            k += ']';
        }
        k += '\n';
    }
    return k;
}

void use_prebuilt(bool on) { g_use_prebuilt.store(on, std::memory_order_relaxed); }
bool prebuilt_enabled() { return g_use_prebuilt.load(std::memory_order_relaxed); }

}  // namespace agentjail::seccomp::detail
