// ctest learns the Catch2 cases through catch_discover_tests, which splits a
// name at ',' and ';' and runs each piece as a filter that matches nothing —
// a test that then "passes" without running. Names must avoid the characters
// that Catch2's test specs or CMake lists treat specially.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace {

TEST_CASE("test names are safe for catch_discover_tests") {
  const std::filesystem::path root = std::filesystem::path(WEFT_SOURCE_DIR) / "tests";
  const std::regex test_case(R"re(TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+))re");
  const std::regex literal(R"re("((?:[^"\\]|\\.)*)")re");
  int seen = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".cc") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string source = text.str();
    for (auto it = std::sregex_iterator(source.begin(), source.end(), test_case);
         it != std::sregex_iterator(); ++it) {
      std::string literals = (*it)[1].str(), name;
      for (auto l = std::sregex_iterator(literals.begin(), literals.end(), literal);
           l != std::sregex_iterator(); ++l) {
        name += (*l)[1].str();
      }
      ++seen;
      INFO(entry.path().string() << ": \"" << name << "\"");
      CHECK(name.find_first_of(",;[]*~\\\"") == std::string::npos);
    }
  }
  CHECK(seen > 50);
}

}  // namespace
