// SPDX-License-Identifier: Apache-2.0
// A classic-BPF interpreter that runs a seccomp program the way the kernel does
// (struct seccomp_data in, SECCOMP_RET_* out), for the unit tests and the seccomp
// fuzz target: what the compiled filter answers, checked against decide().
#pragma once

#include "seccomp/seccomp.hpp"

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace ajtest {

using agentjail::seccomp::Decision;
using agentjail::seccomp::Program;

constexpr std::uint32_t bad_program = 0xdeadbeef;  // the interpreter's "cannot run this"

// Runs a classic BPF program the way the kernel's seccomp does (no loops: jumps only
// go forward), on one struct seccomp_data. Returns the SECCOMP_RET_* value.
inline std::uint32_t run_bpf(const std::vector<sock_filter>& prog, const seccomp_data& data,
                      size_t* steps = nullptr) {
    std::uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {};
    if (steps) *steps = 0;
    unsigned char bytes[sizeof(seccomp_data)];
    std::memcpy(bytes, &data, sizeof bytes);
    for (size_t pc = 0; pc < prog.size(); ++pc) {
        const sock_filter& f = prog[pc];
        const std::uint32_t k = f.k;
        if (steps) ++*steps;
        switch (BPF_CLASS(f.code)) {
            case BPF_LD:
            case BPF_LDX: {
                std::uint32_t v = 0;
                switch (BPF_MODE(f.code)) {
                    case BPF_ABS:
                        if (BPF_SIZE(f.code) != BPF_W || k % 4 != 0 || k + 4 > sizeof bytes)
                            return bad_program;
                        std::memcpy(&v, bytes + k, 4);
                        break;
                    case BPF_IMM: v = k; break;
                    case BPF_MEM:
                        if (k >= BPF_MEMWORDS) return bad_program;
                        v = mem[k];
                        break;
                    case BPF_LEN: v = sizeof bytes; break;
                    default: return bad_program;
                }
                (BPF_CLASS(f.code) == BPF_LD ? a : x) = v;
                break;
            }
            case BPF_ST:
            case BPF_STX:
                if (k >= BPF_MEMWORDS) return bad_program;
                mem[k] = BPF_CLASS(f.code) == BPF_ST ? a : x;
                break;
            case BPF_ALU: {
                std::uint32_t src = BPF_SRC(f.code) == BPF_X ? x : k;
                switch (BPF_OP(f.code)) {
                    case BPF_ADD: a += src; break;
                    case BPF_SUB: a -= src; break;
                    case BPF_MUL: a *= src; break;
                    case BPF_DIV:
                        if (src == 0) return bad_program;
                        a /= src;
                        break;
                    case BPF_MOD:
                        if (src == 0) return bad_program;
                        a %= src;
                        break;
                    case BPF_OR: a |= src; break;
                    case BPF_AND: a &= src; break;
                    case BPF_XOR: a ^= src; break;
                    case BPF_LSH: a = src < 32 ? a << src : 0; break;
                    case BPF_RSH: a = src < 32 ? a >> src : 0; break;
                    case BPF_NEG: a = -a; break;
                    default: return bad_program;
                }
                break;
            }
            case BPF_JMP: {
                std::uint32_t src = BPF_SRC(f.code) == BPF_X ? x : k;
                bool taken;
                switch (BPF_OP(f.code)) {
                    case BPF_JA: pc += k; continue;
                    case BPF_JEQ: taken = a == src; break;
                    case BPF_JGT: taken = a > src; break;
                    case BPF_JGE: taken = a >= src; break;
                    case BPF_JSET: taken = (a & src) != 0; break;
                    default: return bad_program;
                }
                pc += taken ? f.jt : f.jf;
                break;
            }
            case BPF_RET: return BPF_RVAL(f.code) == BPF_A ? a : k;
            case BPF_MISC:
                if (BPF_MISCOP(f.code) == BPF_TAX)
                    x = a;
                else
                    a = x;
                break;
            default: return bad_program;
        }
    }
    return bad_program;  // fell off the end: the kernel rejects such a program
}

// What decide() implies the BPF returns: the matched rule's compiled action (a
// notify rule is a notification whatever its decider then answers), else its own.
inline std::uint32_t implied(const Program& p, const Decision& d) {
    if (d.rule >= 0) return agentjail::seccomp::bpf_action(p.rules().at(static_cast<size_t>(d.rule)).action);
    return agentjail::seccomp::bpf_action(d.action);
}

}  // namespace ajtest
