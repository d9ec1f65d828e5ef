// The console's escaping (a property over any bytes) and its session store and login limiter.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "common/utf8.h"
#include "console/html.h"
#include "console/sessions.h"

namespace replaygate::console {
namespace {

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

RC_GTEST_PROP(ConsoleEscape, AnyBytesComeOutAsOneSafeText, (const std::string& text)) {
  const std::string out = escape(text);
  RC_ASSERT(valid_utf8(out));
  for (const char c : std::string("<>\"'")) RC_ASSERT(out.find(c) == std::string::npos);
  // Every '&' starts one of the five references.
  for (size_t at = out.find('&'); at != std::string::npos; at = out.find('&', at + 1)) {
    const std::string rest = out.substr(at, 6);
    RC_ASSERT(rest.rfind("&amp;", 0) == 0 || rest.rfind("&lt;", 0) == 0 ||
              rest.rfind("&gt;", 0) == 0 || rest.rfind("&quot;", 0) == 0 ||
              rest.rfind("&#39;", 0) == 0);
  }
}

TEST(ConsoleEscape, Examples) {
  EXPECT_EQ(escape("<script>alert('x')</script>"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
  EXPECT_EQ(escape("\"><img onerror=x>"), "&quot;&gt;&lt;img onerror=x&gt;");
  EXPECT_EQ(escape("a\xff"
                   "b\x1b"
                   "c\td\n"),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD"
            "c\td\n");
  EXPECT_EQ(escape("caf\xC3\xA9 & co"), "caf\xC3\xA9 &amp; co");
}

TEST(ConsoleSessions, IdsAreRandomAndSessionsExpire) {
  SessionStore store(/*idle=*/60, /*max_age=*/300, /*max_sessions=*/3);
  const Session a = store.create("olga", "operator", 1000);
  const Session b = store.create("olga", "operator", 1000);
  EXPECT_EQ(a.id.size(), 64u);
  EXPECT_NE(a.id, b.id);
  EXPECT_NE(a.csrf, a.id);
  EXPECT_TRUE(store.touch(a.id, 1059).has_value());
  EXPECT_FALSE(store.touch(b.id, 1060).has_value());  // idle 60 s
  EXPECT_FALSE(store.touch(b.id, 1000).has_value());  // and gone
  for (int t = 1100; t < 1300; t += 50) EXPECT_TRUE(store.touch(a.id, t).has_value()) << t;
  EXPECT_FALSE(store.touch(a.id, 1300).has_value());  // 300 s after it began
  EXPECT_FALSE(store.touch("", 1300).has_value());
}

TEST(ConsoleSessions, AFloodOfAnonymousSessionsNeverPushesOutAUsers) {
  SessionStore store(60, 300, 3);
  const Session olga = store.create("olga", "operator", 1000);
  for (int i = 0; i < 10; ++i) store.create("", "", 1001 + i);
  EXPECT_EQ(store.size(), 3u);
  EXPECT_TRUE(store.touch(olga.id, 1020).has_value());
  const Session dan = store.create("dan", "operator", 1020);
  EXPECT_EQ(store.revoke_user("olga"), 1u);
  EXPECT_FALSE(store.touch(olga.id, 1021).has_value());
  EXPECT_TRUE(store.touch(dan.id, 1021).has_value());
  EXPECT_TRUE(tokens_equal(dan.csrf, dan.csrf));
  EXPECT_FALSE(tokens_equal(dan.csrf, olga.csrf));
  EXPECT_FALSE(tokens_equal("", ""));
}

TEST(ConsoleLoginLimiter, CountsPerNameAndPerAddressInAWindow) {
  LoginLimiter limiter(/*per_user=*/2, /*per_address=*/3, /*window=*/60);
  EXPECT_EQ(limiter.allowed("olga", "127.0.0.1", 0), "");
  limiter.failed("olga", "127.0.0.1", 0);
  limiter.failed("olga", "127.0.0.2", 10);
  EXPECT_EQ(limiter.allowed("olga", "127.0.0.3", 20),
            "too many failed logins for this name; try again later");
  EXPECT_EQ(limiter.allowed("dan", "127.0.0.1", 20), "");
  limiter.failed("dan", "127.0.0.1", 20);
  limiter.failed("vera", "127.0.0.1", 30);
  EXPECT_EQ(limiter.allowed("alice", "127.0.0.1", 40),
            "too many failed logins from this address; try again later");
  EXPECT_EQ(limiter.allowed("olga", "127.0.0.3", 70), "");  // the first failure left the window
}

}  // namespace
}  // namespace replaygate::console
