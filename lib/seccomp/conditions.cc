// SPDX-License-Identifier: Apache-2.0
// The argument conditions of [seccomp] rules (conditions.hpp): "argN OP VALUE" and
// "argN & MASK [== VALUE]" parsed, whether two comparisons of one argument can both
// hold (for contradictions), each comparison fitted to the width the kernel reads of
// its argument, and matches() for decide().
#include "seccomp/conditions.hpp"
#include "base/text.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

namespace agentjail::seccomp::detail {
namespace {

constexpr std::uint64_t all_ones = ~std::uint64_t{0};

class CondParser {
public:
    explicit CondParser(std::string_view s) : s_(s) {}

    // Returns an error message ("" on success).
    std::string parse(Cond& out) {
        skip();
        if (!eat("arg")) return shape();
        if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) return shape();
        unsigned n = static_cast<unsigned>(s_[i_++] - '0');
        if (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
            return "argument index out of range (arg0 .. arg5)";
        if (n > 5) return "argument index out of range (arg0 .. arg5)";
        out.arg = n;
        out.cmp.arg = n;
        skip();
        std::string err;
        if (peek("&") && !peek("&&")) {
            ++i_;
            std::uint64_t mask = 0;
            if (!(err = value(mask)).empty()) return err;
            if (mask == 0) return "the mask is 0: the condition can never be true";
            skip();
            if (eat("==")) {
                std::uint64_t v = 0;
                if (!(err = value(v)).empty()) return err;
                if ((v & ~mask) != 0)
                    return "the value has bits outside the mask: the condition can never be true";
                out.cmp.op = CmpOp::masked_eq;
                out.cmp.a = mask;
                out.cmp.b = v;
                out.text = "arg" + std::to_string(n) + " & " + mask_text_ + " == " + value_text_;
            } else {
                if (i_ < s_.size()) return shape();
                out.any_bit = true;
                out.cmp.op = CmpOp::masked_eq;
                out.cmp.a = mask;
                out.text = "arg" + std::to_string(n) + " & " + mask_text_;
            }
        } else {
            static const std::pair<const char*, CmpOp> ops[] = {
                {"==", CmpOp::eq}, {"!=", CmpOp::ne}, {"<=", CmpOp::le},
                {">=", CmpOp::ge}, {"<", CmpOp::lt},  {">", CmpOp::gt}};
            const char* op_text = nullptr;
            for (const auto& [t, op] : ops) {
                if (eat(t)) {
                    out.cmp.op = op;
                    op_text = t;
                    break;
                }
            }
            if (op_text == nullptr) return shape();
            std::uint64_t v = 0;
            if (!(err = value(v)).empty()) return err;
            out.cmp.a = v;
            if ((out.cmp.op == CmpOp::lt && v == 0) || (out.cmp.op == CmpOp::gt && v == all_ones))
                return "the condition can never be true";
            if ((out.cmp.op == CmpOp::ge && v == 0) || (out.cmp.op == CmpOp::le && v == all_ones))
                return "the condition is always true (leave it out)";
            out.text = "arg" + std::to_string(n) + " " + op_text + " " + mask_text_;
        }
        skip();
        if (i_ < s_.size()) return shape();
        return {};
    }

private:
    static std::string shape() {
        return "expected 'argN OP VALUE' (OP: == != < <= > >=), 'argN & MASK' or "
               "'argN & MASK == VALUE', with N in 0..5";
    }
    void skip() {
        while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    bool peek(std::string_view t) const { return s_.substr(i_, t.size()) == t; }
    bool eat(std::string_view t) {
        if (!peek(t)) return false;
        i_ += t.size();
        return true;
    }
    // VALUE := TERM ('|' TERM)*; TERM := decimal | 0xHEX | NAME. Sets the last text seen
    // into mask_text_ the first time and value_text_ the second time.
    std::string value(std::uint64_t& out) {
        out = 0;
        std::string text;
        for (;;) {
            skip();
            size_t start = i_;
            while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) ||
                                      s_[i_] == '_' || s_[i_] == '-'))
                ++i_;
            std::string term(s_.substr(start, i_ - start));
            if (term.empty()) return "expected a number or a constant name";
            std::uint64_t v = 0;
            if (term[0] == '-')
                return "negative numbers are not supported (write an int's 32-bit value, "
                       "0xffffffff for -1: int arguments are compared on their low 32 bits)";
            if (std::isdigit(static_cast<unsigned char>(term[0]))) {
                bool hex = term.size() > 2 && term[0] == '0' && (term[1] == 'x' || term[1] == 'X');
                std::string digits = hex ? term.substr(2) : term;
                if (digits.empty() || digits.size() > (hex ? 16u : 20u)) return "bad number '" + term + "'";
                for (char c : digits) {
                    int d;
                    if (c >= '0' && c <= '9')
                        d = c - '0';
                    else if (hex && c >= 'a' && c <= 'f')
                        d = c - 'a' + 10;
                    else if (hex && c >= 'A' && c <= 'F')
                        d = c - 'A' + 10;
                    else
                        return "bad number '" + term + "'";
                    std::uint64_t base = hex ? 16 : 10;
                    if (v > (all_ones - static_cast<std::uint64_t>(d)) / base)
                        return "number '" + term + "' does not fit in 64 bits";
                    v = v * base + static_cast<std::uint64_t>(d);
                }
            } else {
                auto c = constant(term);
                if (!c) return "unknown constant '" + term + "'" + did_you_mean(closest_constant(term));
                v = *c;
            }
            out |= v;
            text += (text.empty() ? "" : "|") + term;
            skip();
            if (!eat("|")) break;
        }
        (seen_++ == 0 ? mask_text_ : value_text_) = text;
        return {};
    }
    static std::string closest_constant(std::string_view term);

    std::string_view s_;
    size_t i_ = 0;
    int seen_ = 0;
    std::string mask_text_;
    std::string value_text_;
};

// Only for the message: the constants are few enough to scan.
std::string CondParser::closest_constant(std::string_view term) {
    static const char* const candidates[] = {
        "TIOCSTI", "TIOCLINUX", "FIONREAD", "CLONE_NEWUSER", "CLONE_NEWNS", "CLONE_NEWPID",
        "CLONE_NEWNET", "CLONE_NEWUTS", "CLONE_NEWIPC", "CLONE_NEWCGROUP", "CLONE_NEWTIME",
        "AF_VSOCK", "AF_ALG", "AF_PACKET", "AF_NETLINK", "AF_INET", "AF_INET6", "AF_UNIX",
        "AF_KEY", "AF_CAN", "AF_BLUETOOTH", "NETLINK_AUDIT", "NETLINK_ROUTE", "PER_LINUX",
        "PER_LINUX32", "UNAME26", "ADDR_NO_RANDOMIZE", "READ_IMPLIES_EXEC", "SOCK_RAW",
        "SOCK_STREAM", "SOCK_DGRAM"};
    std::string best;
    size_t best_d = 3;
    for (const char* c : candidates) {
        size_t d = base::edit_distance(term, c);
        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    return best;
}

// ---- satisfiability of two comparisons of one argument (for contradictions) ----

// A comparison as a set of 64-bit values.
struct ValueSet {
    enum { cube, interval, not_one } kind = cube;
    std::uint64_t m = 0, v = 0;    // cube: x & m == v
    std::uint64_t lo = 0, hi = 0;  // interval [lo, hi]; not_one: x != lo
};

// On a narrow argument the set is taken within [0, 2^bits): the values the kernel can
// see there (a cube's upper bits forced to 0, an interval's top clipped).
ValueSet as_set(const Cmp& c) {
    ValueSet s;
    const std::uint64_t w = width_mask(c.bits);
    switch (c.op) {
        case CmpOp::eq: s.m = all_ones; s.v = c.a; break;
        case CmpOp::masked_eq: s.m = c.a | ~w; s.v = c.b; break;
        case CmpOp::ne: s.kind = ValueSet::not_one; s.lo = c.a; break;
        case CmpOp::lt: s.kind = ValueSet::interval; s.lo = 0; s.hi = c.a - 1; break;
        case CmpOp::le: s.kind = ValueSet::interval; s.lo = 0; s.hi = c.a; break;
        case CmpOp::gt: s.kind = ValueSet::interval; s.lo = c.a + 1; s.hi = w; break;
        case CmpOp::ge: s.kind = ValueSet::interval; s.lo = c.a; s.hi = w; break;
    }
    return s;
}

// The smallest x >= lo with x & m == v (v within m), if any.
std::optional<std::uint64_t> cube_min_at_least(std::uint64_t m, std::uint64_t v, std::uint64_t lo) {
    if (v >= lo) return v;
    // Members are v + s for s a submask of the free bits F; find the smallest s >= t.
    const std::uint64_t f = ~m;
    const std::uint64_t t = lo - v;
    if ((t & ~f) == 0) return v + t;
    int h = 63 - __builtin_clzll(t & ~f);
    for (int p = h + 1; p < 64; ++p) {
        std::uint64_t bit = std::uint64_t{1} << p;
        if ((f & bit) && !(t & bit)) {
            std::uint64_t above = p == 63 ? 0 : t & ~((bit << 1) - 1);
            return v + (above | bit);
        }
    }
    return std::nullopt;
}

bool intersects(const ValueSet& a, const ValueSet& b) {
    if (a.kind > b.kind) return intersects(b, a);  // cube < interval < not_one
    if (a.kind == ValueSet::cube && b.kind == ValueSet::cube)
        return ((a.v ^ b.v) & a.m & b.m) == 0;
    if (a.kind == ValueSet::cube && b.kind == ValueSet::interval) {
        auto x = cube_min_at_least(a.m, a.v, b.lo);
        return x && *x <= b.hi;
    }
    if (a.kind == ValueSet::cube) return !(a.m == all_ones && a.v == b.lo);
    if (a.kind == ValueSet::interval && b.kind == ValueSet::interval)
        return std::max(a.lo, b.lo) <= std::min(a.hi, b.hi);
    if (a.kind == ValueSet::interval) return !(a.lo == a.hi && a.lo == b.lo);
    return true;  // two "!=": 2^64 - 2 values remain
}

}  // namespace

std::string did_you_mean(const std::string& near) {
    return near.empty() ? std::string() : "; did you mean '" + near + "'?";
}

std::string parse_condition(std::string_view text, Cond& out) { return CondParser(text).parse(out); }

bool overlap(const std::vector<Cmp>& x, const std::vector<Cmp>& y) {
    for (const auto& cx : x)
        for (const auto& cy : y)
            if (cx.arg == cy.arg && !intersects(as_set(cx), as_set(cy))) return false;
    return true;
}

// Fits a comparison to the width the kernel reads of that argument of `call`
// (ArgWidths): the kernel truncates the register to the parameter's type, so only
// the low bits may decide. Returns an error message, or "" with `never` set when
// no value of that width can match (an "argN & MASK" bit above the width: that
// alternative is dropped).
std::string narrow(Cmp& c, const ArgWidths& w, const std::string& call, bool& never) {
    never = false;
    if (c.arg >= w.count)
        return call + " takes " + std::to_string(w.count) + " argument" +
               (w.count == 1 ? "" : "s") + ": arg" + std::to_string(c.arg) +
               " is not one of them (the kernel never reads that register)";
    c.bits = w.bits[c.arg];
    if (c.bits >= 64) return {};
    const std::uint64_t m = width_mask(c.bits);
    const std::string what = "arg" + std::to_string(c.arg) + " of " + call + " is a " +
                             std::to_string(c.bits) + "-bit value (the kernel ignores the bits " +
                             "above), so the condition ";
    bool always = false;
    switch (c.op) {
        case CmpOp::eq: never = c.a > m; break;
        case CmpOp::ne: always = c.a > m; break;
        case CmpOp::lt: always = c.a > m; break;
        case CmpOp::le: always = c.a >= m; break;
        case CmpOp::gt: never = c.a >= m; break;
        case CmpOp::ge: never = c.a > m; break;
        case CmpOp::masked_eq:
            never = (c.b & ~m) != 0;
            c.a &= m;
            always = !never && c.a == 0;
            break;
    }
    if (always) return what + "is always true (leave it out)";
    return {};
}

std::string never_text(const Cmp& c, const std::string& call) {
    return "arg" + std::to_string(c.arg) + " of " + call + " is a " + std::to_string(c.bits) +
           "-bit value (the kernel ignores the bits above): the condition can never be true";
}

bool matches(const Cmp& c, const std::uint64_t args[6]) {
    std::uint64_t x = args[c.arg] & width_mask(c.bits);
    switch (c.op) {
        case CmpOp::eq: return x == c.a;
        case CmpOp::ne: return x != c.a;
        case CmpOp::lt: return x < c.a;
        case CmpOp::le: return x <= c.a;
        case CmpOp::gt: return x > c.a;
        case CmpOp::ge: return x >= c.a;
        case CmpOp::masked_eq: return (x & c.a) == c.b;
    }
    return false;
}

}  // namespace agentjail::seccomp::detail
