// SPDX-License-Identifier: Apache-2.0
// The corpus replay: a fuzz target built without libFuzzer (any compiler) runs each
// file it is given, or each file in each directory it is given, once. CTest runs it
// over fuzz/corpus/<target>/ so every seed and every crash ever found stays a test.
#include "fuzz.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

int run_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
        return 1;
    }
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s FILE|DIR...: runs each input once\n", argv[0]);
        return 2;
    }
    int failed = 0, ran = 0;
    for (int i = 1; i < argc; ++i) {
        struct stat st {};
        if (::stat(argv[i], &st) != 0) {
            std::fprintf(stderr, "replay: %s does not exist\n", argv[i]);
            return 2;
        }
        std::vector<std::string> files;
        if (S_ISDIR(st.st_mode)) {
            DIR* d = ::opendir(argv[i]);
            if (d == nullptr) return 2;
            while (dirent* e = ::readdir(d))
                if (e->d_name[0] != '.') files.push_back(std::string(argv[i]) + "/" + e->d_name);
            ::closedir(d);
            std::sort(files.begin(), files.end());
        } else {
            files.emplace_back(argv[i]);
        }
        for (const auto& f : files) {
            failed += run_file(f);
            ++ran;
        }
    }
    if (ran == 0) {
        std::fprintf(stderr, "replay: no inputs found: an empty corpus proves nothing\n");
        return 1;
    }
    std::printf("replay: %d inputs run, %d unreadable\n", ran, failed);
    return failed == 0 ? 0 : 1;
}
