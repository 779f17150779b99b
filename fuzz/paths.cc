// SPDX-License-Identifier: Apache-2.0
// Path normalisation and the path and method rules: the input is "PATTERN\nPATH".
// Invariants: a normalised filesystem path is absolute, has no "." or ".."
// component and no doubled slash, and normalises to itself; a request path the
// proxy accepts normalises to itself; a valid path glob matches without crashing
// and a literal pattern matches itself.
#include "fuzz.hpp"

#include "netrules/http.hpp"
#include "netrules/rules.hpp"
#include "util/strings.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace agentjail;
    if (size > 4096) return 0;
    std::string_view in = ajfuzz::as_text(data, size);
    size_t nl = in.find('\n');
    std::string_view pattern = in.substr(0, nl);
    std::string_view path = nl == std::string_view::npos ? in : in.substr(nl + 1);

    if (!path.empty() && path[0] == '/') {
        std::string n = util::normalize_path(path);
        AJ_FUZZ_CHECK(!n.empty() && n[0] == '/');
        AJ_FUZZ_CHECK(n.find("//") == std::string::npos);
        AJ_FUZZ_CHECK(n.find("/./") == std::string::npos && n.find("/../") == std::string::npos);
        AJ_FUZZ_CHECK(n == "/" || (n.back() != '/' && !n.ends_with("/.") && !n.ends_with("/..")));
        AJ_FUZZ_CHECK(util::normalize_path(n) == n);
    }
    std::string p, q, why;
    if (net::normalize_path(path, p, q, why)) {
        std::string p2, q2;
        AJ_FUZZ_CHECK(net::normalize_path(p + q, p2, q2, why));
        AJ_FUZZ_CHECK(p2 == p && q2 == q);
    } else {
        AJ_FUZZ_CHECK(!why.empty());
    }
    (void)net::check_method_name(pattern);
    if (net::check_path_pattern(pattern).empty()) {
        (void)net::path_matches(pattern, path);
        (void)net::path_matches(pattern, path, true);
        if (pattern.find('*') == std::string_view::npos) AJ_FUZZ_CHECK(net::path_matches(pattern, pattern));
    }
    (void)util::glob_match(pattern, path);
    (void)util::glob_match_icase(pattern, path);
    return 0;
}
