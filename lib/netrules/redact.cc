// SPDX-License-Identifier: Apache-2.0
// Secret placement in request headers and the reverse replacement in responses:
// a value goes out only in a credential header and never comes back in clear.
#include "netrules/redact.hpp"
#include "netrules/ascii.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace agentjail::net {

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
    if (from.empty()) return;
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
}

// The placeholder repeated and cut to n characters.
std::string mask_of(const std::string& placeholder, size_t n) {
    std::string m;
    const std::string& p = placeholder.empty() ? std::string("x") : placeholder;
    while (m.size() < n) m += p;
    m.resize(n);
    return m;
}

std::string base64(std::string_view in, bool url) {
    const char* abc = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                          : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (size_t i = 0; i < in.size(); i += 3) {
        unsigned v = static_cast<unsigned char>(in[i]) << 16;
        if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
        if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
        for (int k = 0; k < 4; ++k) out += abc[(v >> (18 - 6 * k)) & 63];
    }
    return out;
}

// The characters of base64(a bytes + value + ...) that depend on the value alone:
// character j holds bits [6j, 6j + 6), the value bits [8a, 8a + 8n).
std::string base64_middle(std::string_view value, size_t a, bool url) {
    std::string padded(a, '\0');
    padded.append(value);
    const std::string all = base64(padded, url);
    const size_t first = (8 * a + 5) / 6, end = (8 * (a + value.size())) / 6;
    return end > first ? all.substr(first, end - first) : std::string();
}

std::string percent_encoded(std::string_view value, const char* hex) {
    std::string out;
    for (unsigned char c : value) {
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

std::string json_escaped(std::string_view value, bool slash) {
    std::string out;
    for (unsigned char c : value) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '/': out += slash ? "\\/" : "/"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20) {
                char u[8];
                std::snprintf(u, sizeof u, "\\u%04x", c);
                out += u;
            } else {
                out += static_cast<char>(c);
            }
        }
    }
    return out;
}

}  // namespace

bool carries_credential(std::string_view header, const std::vector<std::string>& named) {
    // Proxy-Authorization is the client's word to the proxy and is never sent on;
    // these never carry a credential of the origin's even when a policy names them,
    // because origins reflect them into responses as a matter of course.
    for (std::string_view never : {"proxy-authorization", "origin", "referer", "cookie", "host"})
        if (iequals(header, never)) return false;
    if (iequals(header, "authorization") || iequals(header, "x-api-key")) return true;
    return std::any_of(named.begin(), named.end(),
                       [&](const std::string& n) { return iequals(header, n); });
}

std::string put_secrets(std::string_view name, std::string value,
                        const std::vector<SecretUse>& uses) {
    for (const auto& u : uses)
        if (carries_credential(name, u.headers)) replace_all(value, u.placeholder, u.value);
    return value;
}

std::string body_mask(const SecretUse& use) { return mask_of(use.placeholder, use.value.size()); }

std::vector<std::string> echo_forms(std::string_view value) {
    std::vector<std::string> forms;
    auto add = [&](std::string f) {
        // Shorter ones would match ordinary text (a 3-byte value's base64 middle is
        // two characters) and mangle it.
        if (f.size() < 8 || f == value) return;
        if (std::find(forms.begin(), forms.end(), f) == forms.end()) forms.push_back(std::move(f));
    };
    for (size_t a = 0; a < 3; ++a)
        for (bool url : {false, true}) add(base64_middle(value, a, url));
    add(percent_encoded(value, "0123456789ABCDEF"));
    add(percent_encoded(value, "0123456789abcdef"));
    add(json_escaped(value, false));
    add(json_escaped(value, true));
    return forms;
}

std::string redact_head(std::string head, const std::vector<SecretUse>& uses) {
    for (const auto& u : uses) {
        if (u.value.empty()) continue;
        replace_all(head, u.value, u.placeholder);
        for (const auto& f : echo_forms(u.value))
            replace_all(head, f, mask_of(u.placeholder, f.size()));
    }
    return head;
}

Redactor::Redactor(const std::vector<SecretUse>& uses) {
    size_t longest = 0;
    for (const auto& u : uses) {
        if (u.value.empty()) continue;
        values_.push_back(u.value);
        masks_.push_back(body_mask(u));
        for (auto& f : echo_forms(u.value)) {
            masks_.push_back(mask_of(u.placeholder, f.size()));
            values_.push_back(std::move(f));
        }
    }
    for (const auto& v : values_) longest = std::max(longest, v.size());
    if (longest > 0) window_ = longest - 1;
}

std::string Redactor::feed(std::string_view in) {
    if (values_.empty()) return std::string(in);
    pending_.append(in);
    // The same count whatever the bytes are: all but the last window_.
    return release(pending_.size() > window_ ? pending_.size() - window_ : 0);
}

std::string Redactor::finish() { return release(pending_.size()); }

std::string Redactor::release(size_t limit) {
    // A value that starts before `limit` ends within pending_ (limit + window_ <=
    // size), so it is there whole. One that starts in the held tail may still be
    // growing: a short value inside a longer one that is still arriving is never
    // replaced on its own (which would let the rest of the longer one through).
    size_t pos = scanned_;
    for (;;) {
        // The leftmost complete match of any value (the longest one at a tie).
        size_t best = std::string::npos, which = 0;
        for (size_t i = 0; i < values_.size(); ++i) {
            size_t at = pending_.find(values_[i], pos);
            if (at == std::string::npos || at >= limit) continue;
            if (best == std::string::npos || at < best ||
                (at == best && values_[i].size() > values_[which].size())) {
                best = at;
                which = i;
            }
        }
        if (best == std::string::npos) break;
        // In place: the mask is as long as the value, so what goes out now is still
        // exactly `limit` bytes, and a mask that reaches into the held tail goes later.
        pending_.replace(best, values_[which].size(), masks_[which]);
        pos = best + values_[which].size();
    }
    scanned_ = std::max(pos, limit) - limit;
    std::string out = pending_.substr(0, limit);
    pending_.erase(0, limit);
    return out;
}

}  // namespace agentjail::net
