// SPDX-License-Identifier: Apache-2.0
// The edit distance (one row of the Levenshtein table at a time) and the nearest
// candidate, for "did you mean" in policy, flag and system-call messages.
#include "base/text.hpp"

#include <algorithm>
#include <cctype>

namespace agentjail::base {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                              std::tolower(static_cast<unsigned char>(b[j - 1]));
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

std::string closest(std::string_view word, const std::vector<std::string_view>& candidates,
                    std::size_t max_distance) {
    std::string best;
    std::size_t best_d = max_distance + 1;
    for (auto c : candidates) {
        const std::size_t d = edit_distance(word, c);
        if (d < best_d) {
            best_d = d;
            best = std::string(c);
        }
    }
    return best;
}

std::vector<std::string> absolute_path_dirs(std::string_view list) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i <= list.size()) {
        std::size_t j = list.find(':', i);
        if (j == std::string_view::npos) j = list.size();
        std::string_view dir = list.substr(i, j - i);
        i = j + 1;
        if (!dir.empty() && dir[0] == '/') out.emplace_back(dir);
    }
    return out;
}

}  // namespace agentjail::base
