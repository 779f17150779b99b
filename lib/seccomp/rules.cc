// SPDX-License-Identifier: Apache-2.0
// Resolving [seccomp]: actions, syscall names and groups, argument conditions
// (conditions.cc), and the layering (a later unconditional rule replaces earlier ones
// for its syscalls; overlapping rules with different actions are errors) into one
// decision table.
#include "seccomp/internal.hpp"
#include "seccomp/conditions.hpp"
#include "base/origin.hpp"
#include "base/text.hpp"

#include <linux/seccomp.h>
#include <seccomp.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

namespace agentjail::seccomp::detail {
namespace {

using policy::Located;
using policy::Origin;

// One rule's "argN & MASK" conditions multiply into one libseccomp rule per bit
// combination; beyond this the filter would grow without reason.
constexpr size_t max_alternatives = 64;
// The libseccomp rules one rule may compile to for one call, once its comparisons on
// int arguments are split into masked ones (narrowed_cubes).
constexpr size_t max_compiled = 128;

std::string where_of(const Origin& o) {
    if (o.line > 0) return o.file + ":" + std::to_string(o.line) + ":" + std::to_string(o.column);
    return o.file.empty() ? "built-in" : o.file;
}

// The closest known syscall name within distance 2 (for "did you mean").
std::string closest_syscall(std::string_view name) {
    std::string best;
    size_t best_d = 3;
    for (int nr = 0; nr < 1024; ++nr) {
        std::string s = native_name(nr);
        if (s.empty()) continue;
        size_t d = base::edit_distance(name, s);
        if (d < best_d) {
            best_d = d;
            best = s;
        }
    }
    return best;
}

// ---- actions ----

std::string action_choices() { return "expected allow, errno:NAME (e.g. errno:EPERM), kill, log or notify"; }

bool same_action(const Action& a, const Action& b) {
    return a.kind == b.kind && (a.kind != ActionKind::errno_ret || a.err == b.err);
}

Decider decider_for(std::string_view name) {
    return name == "personality" ? Decider::personality : Decider::none;
}

struct NamedCall {
    int nr;
    std::string name;
    const Located<std::string>* from;  // the syscalls element that named it
};

}  // namespace

std::optional<Action> parse_action(std::string_view text) {
    if (text == "allow") return Action{ActionKind::allow, 0};
    if (text == "kill") return Action{ActionKind::kill, 0};
    if (text == "log") return Action{ActionKind::log, 0};
    if (text == "notify") return Action{ActionKind::notify, 0};
    if (text.substr(0, 6) == "errno:") {
        auto e = errno_value(text.substr(6));
        if (e) return Action{ActionKind::errno_ret, *e};
    }
    return std::nullopt;
}

std::string action_text(const Action& a) {
    switch (a.kind) {
        case ActionKind::allow: return "allow";
        case ActionKind::errno_ret: return "errno:" + errno_text(a.err);
        case ActionKind::kill: return "kill";
        case ActionKind::log: return "log";
        case ActionKind::notify: return "notify";
    }
    return "?";
}

const std::vector<std::string_view>& forced_allow() {
    static const std::vector<std::string_view> names = {"execve", "sendmsg", "close",
                                                        "write",  "exit",    "exit_group"};
    return names;
}

namespace {

// The socket gate, in every filter whatever the rules say (docs/seccomp.md, "The
// socket gate"): a read-only bind does not stop a connect() to a Unix socket whose
// file it shows, so the supervisor makes every connect itself and refuses a Unix
// socket that nothing inside is listening on and the policy does not name
// ([filesystem] sockets). What would go around it is refused: Unix datagram sockets
// (each send names its own destination, in memory the filter cannot read) and
// io_uring (its connect and socket operations are not system calls).
// The rules the policy gives these calls stay where they refuse; where they allow,
// the gate decides. A policy rule that overlaps the gate's with an action the
// filter cannot tell apart from the gate's is an error.
Result<void> add_socket_gate(Resolved& r, std::map<int, SyscallTable>& table) {
    auto allowing = [](const Action& a) { return a.kind == ActionKind::allow || a.kind == ActionKind::log; };
    // The action a call gets when none of its conditional entries match.
    auto fallback = [&](const SyscallTable& t) {
        for (auto it = t.entries.rbegin(); it != t.entries.rend(); ++it)
            if (it->cmps.empty()) return it->action;
        return r.default_action;
    };
    auto add_rule = [&](std::string text, std::string why, Action action, std::vector<std::string> members) {
        ResolvedRule rr;
        rr.info.text = std::move(text);
        rr.info.why = std::move(why);
        rr.info.where = "built-in";
        rr.info.action = action;
        for (auto& m : members) rr.members.push_back(std::move(m));
        r.rules.push_back(std::move(rr));
        return static_cast<int>(r.rules.size()) - 1;
    };
    auto table_of = [&](std::string_view name) -> SyscallTable& {
        const int nr = native_nr(name);
        SyscallTable& t = table[nr];
        t.nr = nr;
        t.name = std::string(name);
        return t;
    };
    // Every call of `name` the policy lets through gets `action` instead: its allowing
    // entries take it, and where nothing unconditional is said and the default lets
    // the call through, an entry of the gate's does. Refusals stay the policy's.
    auto take_over = [&](std::string_view name, int rule, Action action, Decider decider) {
        SyscallTable& t = table_of(name);
        for (auto& e : t.entries)
            if (allowing(e.action)) e = Entry{rule, e.cmps, action, decider};
        if (allowing(r.default_action) &&
            std::none_of(t.entries.begin(), t.entries.end(), [](const Entry& e) { return e.cmps.empty(); }))
            t.entries.push_back(Entry{rule, {}, action, decider});
    };

    // connect: every call the policy lets through goes to the supervisor.
    {
        const int rule = add_rule(
            "connect -> notify (the socket gate)",
            "the supervisor makes every connect itself: one to a Unix socket only when a "
            "process inside listens on it or the policy names it ([filesystem] sockets, "
            "--allow-socket); a read-only bind does not stop connect()",
            Action{ActionKind::notify, 0}, {"connect"});
        take_over("connect", rule, Action{ActionKind::notify, 0}, Decider::connect);
    }

    // socket and socketpair of AF_UNIX, SOCK_DGRAM: refused. Where nothing else is said
    // of AF_UNIX, by a rule of the filter's own (a stream socket costs nothing);
    // otherwise the supervisor decides from the registers, as for personality.
    {
        const char* why =
            "a Unix datagram socket (SOCK_DGRAM, or SOCK_RAW, which AF_UNIX makes one) names "
            "its destination in each send (in memory, which the filter cannot read), past the "
            "gate on connect: refused with EACCES; stream and seqpacket sockets are allowed";
        int filter_rule = -1, notify_rule = -1;
        for (std::string_view name : {"socket", "socketpair"}) {
            auto widths = arg_widths(name);
            const unsigned bits0 = widths ? widths->bits[0] : 32, bits1 = widths ? widths->bits[1] : 32;
            const Cmp unix_family{0, CmpOp::eq, 1 /* AF_UNIX */, 0, bits0};
            // SOCK_DGRAM (2) and SOCK_RAW (3), which AF_UNIX makes a datagram socket.
            const Cmp datagram{1, CmpOp::masked_eq, 0xe, 2, bits1};
            SyscallTable& t = table_of(name);
            const bool plain = std::none_of(t.entries.begin(), t.entries.end(), [&](const Entry& e) {
                return e.cmps.empty() || overlap(e.cmps, {unix_family});
            });
            if (plain && allowing(r.default_action)) {
                if (filter_rule < 0)
                    filter_rule = add_rule(
                        "socket socketpair if arg0 == AF_UNIX && arg1 & 0xe == SOCK_DGRAM -> errno:EACCES (the socket gate: SOCK_DGRAM, SOCK_RAW)",
                        why, Action{ActionKind::errno_ret, EACCES}, {"socket", "socketpair"});
                t.entries.push_back(Entry{filter_rule, {unix_family, datagram}, Action{ActionKind::errno_ret, EACCES},
                                          Decider::none});
                continue;
            }
            if (notify_rule < 0)
                notify_rule = add_rule("socket socketpair if arg0 == AF_UNIX -> notify (the socket gate)", why,
                                       Action{ActionKind::notify, 0}, {"socket", "socketpair"});
            const int rule = notify_rule;
            for (auto& e : t.entries) {
                if (e.cmps.empty() || !overlap(e.cmps, {unix_family})) continue;  // the fallback: below
                const bool unix_only = e.cmps.size() == 1 && e.cmps[0].arg == 0 &&
                                       e.cmps[0].op == CmpOp::eq && e.cmps[0].a == unix_family.a;
                if (allowing(e.action) && unix_only) {
                    e = Entry{rule, e.cmps, Action{ActionKind::notify, 0}, Decider::unix_socket};
                    continue;
                }
                // A refusal the supervisor answers takes its calls before the gate; an
                // allow of AF_UNIX among other families, or a refusal the kernel answers
                // alone, could not be told from the gate's in the filter.
                if (allowing(e.action) || bpf_action(e.action) != SECCOMP_RET_USER_NOTIF)
                    return Error{ErrorKind::invalid_input, 0,
                                 r.rules[static_cast<size_t>(e.rule)].info.where + ": seccomp: " +
                                     std::string(name) +
                                     ": this rule overlaps the socket gate's arg0 == AF_UNIX "
                                     "(docs/seccomp.md): give AF_UNIX a rule of its own "
                                     "(args = [\"arg0 == AF_UNIX\"]), or keep it recorded"};
            }
            const bool gated = std::any_of(t.entries.begin(), t.entries.end(), [](const Entry& e) {
                return e.decider == Decider::unix_socket;
            });
            if (!gated && allowing(fallback(t)))
                t.entries.push_back(Entry{rule, {unix_family}, Action{ActionKind::notify, 0}, Decider::unix_socket});
        }
    }

    // fcntl(F_SETFL) and ioctl(FIONBIO) change a socket's blocking mode, which the
    // supervisor sets while it makes a connect on the sandbox's socket: through the
    // supervisor too, they wait until that connect is made (a thread clearing
    // O_NONBLOCK in that moment would have it block the run's loop). Allowed as
    // they are, answered from their registers.
    {
        int rule = -1;
        struct Gated {
            std::string_view name;
            Cmp cmp;
        };
        const Gated gated[] = {{"fcntl", Cmp{1, CmpOp::eq, 4 /* F_SETFL */, 0, 32}},
                               {"ioctl", Cmp{1, CmpOp::eq, 0x5421 /* FIONBIO */, 0, 32}}};
        for (const auto& g : gated) {
            SyscallTable& t = table_of(g.name);
            bool exact = false;
            for (auto& e : t.entries) {
                if (e.cmps.empty() || !overlap(e.cmps, {g.cmp})) continue;
                if (!allowing(e.action)) continue;  // refused before the gate
                if (e.cmps.size() != 1 || e.cmps[0].arg != 1 || e.cmps[0].op != CmpOp::eq || e.cmps[0].a != g.cmp.a)
                    return Error{ErrorKind::invalid_input, 0,
                                 r.rules[static_cast<size_t>(e.rule)].info.where + ": seccomp: " +
                                     std::string(g.name) + ": this rule overlaps the socket gate's arg1 == " +
                                     std::to_string(g.cmp.a) + " (docs/seccomp.md): give it a rule of its own"};
                exact = true;
            }
            if (!exact && !allowing(fallback(t))) continue;
            if (rule < 0)
                rule = add_rule("fcntl if arg1 == F_SETFL, ioctl if arg1 == FIONBIO -> notify (the socket gate)",
                                "a socket's blocking mode changes only between the supervisor's connects: "
                                "allowed, through the supervisor",
                                Action{ActionKind::notify, 0}, {"fcntl", "ioctl"});
            for (auto& e : t.entries)
                if (!e.cmps.empty() && allowing(e.action) && overlap(e.cmps, {g.cmp}))
                    e = Entry{rule, e.cmps, Action{ActionKind::notify, 0}, Decider::serialize};
            if (!exact) t.entries.push_back(Entry{rule, {g.cmp}, Action{ActionKind::notify, 0}, Decider::serialize});
        }
    }

    // io_uring: refused where the policy would let it through.
    {
        const Action refuse{ActionKind::errno_ret, EPERM};
        const int rule = add_rule(
            "io_uring_setup io_uring_enter io_uring_register -> errno:EPERM (the socket gate)",
            "io_uring's connect and socket operations are not system calls: they would go "
            "around the socket gate",
            refuse, {"io_uring_setup", "io_uring_enter", "io_uring_register"});
        for (std::string_view name : {"io_uring_setup", "io_uring_enter", "io_uring_register"})
            take_over(name, rule, refuse, Decider::none);
    }
    return {};
}

}  // namespace

Result<Resolved> resolve(const policy::Seccomp& p) {
    Resolved r;
    auto bad_action = [](const Located<std::string>& a) {
        std::string msg = action_choices() + ", got \"" + a.value + "\"";
        if (a.value.substr(0, 6) == "errno:")
            msg = "unknown errno name '" + a.value.substr(6) + "' (expected e.g. errno:EPERM)";
        return base::error_at(a.origin, msg);
    };
    auto def = parse_action(p.default_action.value);
    if (!def) return bad_action(p.default_action);
    if (def->kind == ActionKind::notify)
        return base::error_at(p.default_action.origin,
                        "notify is for rules whose syscall has a built-in decider, not a default");
    r.default_action = *def;
    r.default_where = where_of(p.default_action.origin);
    r.nested = p.nested.value;

    std::map<int, SyscallTable> table;
    std::set<std::string_view> forced(forced_allow().begin(), forced_allow().end());

    for (const auto& rule : p.rules) {
        std::string key = rule.origin.key;
        auto action = parse_action(rule.action.value);
        if (!action) return bad_action(rule.action);
        if (!rule.record) {
            if (action->kind != ActionKind::errno_ret)
                return base::error_at(rule.record_origin, "record = false goes only with an errno action");
            action->quiet = true;
        }
        auto declared = parse_action(rule.declared_default.value);
        if (!declared) return bad_action(rule.declared_default);

        // Names and groups, in order, each native call once.
        ResolvedRule rr;
        std::vector<NamedCall> calls;
        std::string names_text;
        for (const auto& s : rule.syscalls) {
            names_text += (names_text.empty() ? "" : " ") + s.value;
            std::vector<std::string_view> names;
            if (s.value[0] == '@') {
                const Group* g = find_group(s.value);
                if (g == nullptr) {
                    std::string list;
                    for (const auto& gg : groups()) list += (list.empty() ? "" : " ") + std::string(gg.name);
                    return base::error_at(s.origin, "unknown group '" + s.value + "' (groups: " + list + ")");
                }
                for (auto m : g->members) {
                    int nr = native_nr(m);
                    if (nr < 0) {
                        if (std::find(rr.not_native.begin(), rr.not_native.end(), m) == rr.not_native.end())
                            rr.not_native.emplace_back(m);
                        continue;
                    }
                    names.push_back(m);
                }
            } else {
                int nr = native_nr(s.value);
                if (nr == __NR_SCMP_ERROR)
                    return base::error_at(s.origin, "unknown system call '" + s.value + "'" +
                                                  did_you_mean(closest_syscall(s.value)));
                if (nr < 0)
                    return base::error_at(s.origin, "'" + s.value +
                                                  "' is not a system call on x86_64 (only other "
                                                  "architectures have it)");
                names.emplace_back(s.value);
            }
            for (auto n : names) {
                int nr = native_nr(n);
                bool dup = std::any_of(calls.begin(), calls.end(), [&](const NamedCall& c) { return c.nr == nr; });
                if (!dup) calls.push_back({nr, std::string(n), &s});
            }
        }

        // Conditions: one per argument (libseccomp's rule), then the "any bit" ones
        // multiplied out into alternatives.
        std::vector<Cond> conds;
        std::string cond_text;
        for (size_t i = 0; i < rule.args.size(); ++i) {
            const auto& a = rule.args[i];
            Cond c;
            std::string err = parse_condition(a.value, c);
            if (!err.empty()) return base::error_at(a.origin, err);
            for (size_t j = 0; j < conds.size(); ++j)
                if (conds[j].arg == c.arg)
                    return base::error_at(a.origin, "arg" + std::to_string(c.arg) +
                                                  " is already compared by " + key + ".args[" +
                                                  std::to_string(j) +
                                                  "] (one comparison per argument in a rule; "
                                                  "write a second rule)");
            cond_text += (cond_text.empty() ? "" : " && ") + c.text;
            conds.push_back(std::move(c));
        }
        std::vector<std::vector<Cmp>> alternatives{{}};
        for (const auto& c : conds) {
            std::vector<Cmp> options;
            if (c.any_bit) {
                for (int b = 0; b < 64; ++b) {
                    std::uint64_t bit = std::uint64_t{1} << b;
                    if (c.cmp.a & bit) options.push_back(Cmp{c.arg, CmpOp::masked_eq, bit, bit});
                }
            } else {
                options.push_back(c.cmp);
            }
            std::vector<std::vector<Cmp>> next;
            for (const auto& alt : alternatives)
                for (const auto& o : options) {
                    auto x = alt;
                    x.push_back(o);
                    next.push_back(std::move(x));
                }
            alternatives = std::move(next);
            if (alternatives.size() > max_alternatives)
                return base::error_at(rule.origin, "the conditions expand to more than " +
                                                 std::to_string(max_alternatives) +
                                                 " alternatives ('argN & MASK' makes one per bit)");
        }
        const bool conditional = !conds.empty();

        rr.info.text = names_text + (conditional ? " if " + cond_text : "") + " -> " +
                       action_text(*action) + (action->quiet ? " (not recorded)" : "");
        rr.info.why = rule.why;
        rr.info.where = where_of(rule.origin);
        rr.info.action = *action;
        rr.info.unless_nested = rule.unless_nested;
        for (const auto& c : calls) rr.members.push_back(c.name);
        if (calls.empty())
            return base::error_at(rule.syscalls.front().origin,
                            "names no system call that exists on x86_64");

        // Actions that only some calls can take.
        for (const auto& c : calls) {
            if (action->kind == ActionKind::notify && decider_for(c.name) == Decider::none)
                return base::error_at(c.from->origin,
                                "notify needs a built-in decider, and " + c.name +
                                    " has none (deciders exist for: personality)");
            if (action->kind != ActionKind::allow && forced.count(c.name))
                return base::error_at(c.from->origin,
                                c.name + " is always allowed: the launcher calls it after "
                                         "loading the filter and before execve");
        }

        // Checked like every rule (a typo must not hide here), then left out.
        if (rule.unless_nested && r.nested) {
            r.left_out.push_back(rr.info.text + "  (" + rr.info.where + ")");
            continue;
        }

        // A rule that only repeats the default does nothing, unless it resets calls that
        // earlier rules refused (the way a project re-allows ptrace), or carves an
        // exception out of an earlier unconditional rule ("allow ioctl, but not TIOCSTI").
        if (same_action(*action, *declared)) {
            bool effect = std::any_of(calls.begin(), calls.end(), [&](const NamedCall& c) {
                auto it = table.find(c.nr);
                if (it == table.end()) return false;
                if (!conditional) return !it->second.entries.empty();
                return std::any_of(it->second.entries.begin(), it->second.entries.end(), [&](const Entry& e) {
                    return e.cmps.empty() && !same_action(e.action, *action);
                });
            });
            if (!effect)
                return base::error_at(rule.action.origin,
                                "the rule does nothing: " + action_text(*action) +
                                    " is already the default (" +
                                    where_of(rule.declared_default.origin) + ")");
        }

        // Per call, the conditions narrowed to the widths of its parameters.
        std::vector<std::vector<std::vector<Cmp>>> narrowed(calls.size());
        for (size_t k = 0; k < calls.size() && conditional; ++k) {
            const auto& c = calls[k];
            auto widths = arg_widths(c.name);
            if (!widths)
                return base::error_at(c.from->origin,
                                "the parameters of " + c.name +
                                    " are not known to this agentjail: its arguments cannot "
                                    "be compared (write the rule without args)");
            std::string never_why;
            size_t cubes = 0;
            for (auto alt : alternatives) {
                bool drop = false;
                for (auto& x : alt) {
                    bool never = false;
                    std::string err = narrow(x, *widths, c.name, never);
                    if (!err.empty()) return base::error_at(rule.origin, err);
                    if (never) {
                        drop = true;
                        never_why = never_text(x, c.name);
                    }
                }
                if (drop) continue;
                size_t n = 1;
                for (const auto& x : alt) n *= std::max<size_t>(1, narrowed_cubes(x).size());
                cubes += n;
                narrowed[k].push_back(std::move(alt));
            }
            if (narrowed[k].empty()) return base::error_at(rule.origin, never_why);
            // An int compared with < or > becomes one masked comparison per bit: two
            // such in one rule multiply.
            if (cubes > max_compiled)
                return base::error_at(rule.origin,
                                "the conditions compile to " + std::to_string(cubes) +
                                    " comparisons for " + c.name +
                                    " (a < or > on an int argument is one per bit); at most " +
                                    std::to_string(max_compiled));
        }

        const int index = static_cast<int>(r.rules.size());
        for (size_t k = 0; k < calls.size(); ++k) {
            const auto& c = calls[k];
            const auto& call_alternatives = conditional ? narrowed[k] : alternatives;
            SyscallTable& t = table[c.nr];
            t.nr = c.nr;
            t.name = c.name;
            if (!conditional) {
                for (const auto& old : t.entries) {
                    auto& replaced = r.rules[static_cast<size_t>(old.rule)].replaced;
                    std::pair<std::string, std::string> note{c.name, rr.info.where};
                    if (std::find(replaced.begin(), replaced.end(), note) == replaced.end())
                        replaced.push_back(std::move(note));
                }
                t.entries.clear();
            } else {
                for (const auto& old : t.entries) {
                    if (same_action(old.action, *action)) continue;
                    const auto& other = r.rules[static_cast<size_t>(old.rule)].info;
                    if (old.cmps.empty()) continue;  // an exception to an unconditional rule
                    for (const auto& alt : call_alternatives)
                        if (overlap(old.cmps, alt))
                            return base::error_at(rule.origin,
                                            "contradicts the rule at " + other.where + " (" +
                                                other.text + "): both match some " + c.name +
                                                " calls but their actions differ");
                }
            }
            for (const auto& alt : call_alternatives)
                t.entries.push_back(Entry{index, alt, *action, decider_for(c.name)});
        }
        r.rules.push_back(std::move(rr));
    }

    // The launcher's own calls between loading the filter and execve.
    {
        ResolvedRule rr;
        std::string names;
        for (auto n : forced_allow()) names += (names.empty() ? "" : " ") + std::string(n);
        rr.info.text = names + " -> allow";
        rr.info.why =
            "always allowed: the launcher makes these calls after loading the filter and "
            "before execve, and refusing one would leave it waiting on its own listener";
        rr.info.where = "built-in";
        rr.info.action = Action{ActionKind::allow, 0};
        const int index = static_cast<int>(r.rules.size());
        for (auto n : forced_allow()) {
            int nr = native_nr(n);
            rr.members.emplace_back(n);
            SyscallTable& t = table[nr];
            t.nr = nr;
            t.name = std::string(n);
            bool has_unconditional_allow = std::any_of(t.entries.begin(), t.entries.end(), [](const Entry& e) {
                return e.cmps.empty() && e.action.kind == ActionKind::allow;
            });
            // Only allow rules can name these (checked above), so nothing is overridden.
            if (!has_unconditional_allow) {
                t.entries.clear();
                t.entries.push_back(Entry{index, {}, rr.info.action, Decider::none});
            }
        }
        r.rules.push_back(std::move(rr));
    }

    if (auto gated = add_socket_gate(r, table); !gated) return gated.error();

    for (auto& [nr, t] : table)
        if (!t.entries.empty()) r.table.push_back(std::move(t));
    return r;
}

}  // namespace agentjail::seccomp::detail
