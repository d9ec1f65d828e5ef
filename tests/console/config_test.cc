// console.yaml: paths resolved from its folder, limits as whole numbers, unknown keys refused.
#include "console/config.h"

#include <gtest/gtest.h>

namespace replaygate::console {
namespace {

constexpr const char* kMinimal = "ledger: l.db\nusers: u.json\npolicy: p.yaml\naudit: a.log\n";

TEST(ConsoleConfig, PathsAreResolvedFromTheFilesFolder) {
  Config c;
  ASSERT_EQ(parse_config(std::string(kMinimal) +
                             "ledger_scope: payments\naudit_logs: [g.log, /var/g2.log]\n"
                             "session_idle_minutes: 5\n",
                         "/etc/rg/console.yaml", &c),
            "");
  EXPECT_EQ(c.ledger, "/etc/rg/l.db");
  EXPECT_EQ(c.users, "/etc/rg/u.json");
  EXPECT_EQ(c.policy, "/etc/rg/p.yaml");
  EXPECT_EQ(c.audit, "/etc/rg/a.log");
  EXPECT_EQ(c.ledger_scope, "payments");
  EXPECT_EQ(c.audit_logs, (std::vector<std::string>{"/etc/rg/g.log", "/var/g2.log"}));
  EXPECT_EQ(c.session_idle_minutes, 5);
  EXPECT_EQ(c.session_max_hours, 8);
  ASSERT_EQ(parse_config("ledger: postgresql://h/db\nusers: u.json\npolicy: p\naudit: a\n",
                         "console.yaml", &c),
            "");
  EXPECT_EQ(c.ledger, "postgresql://h/db");
  EXPECT_EQ(c.users, "u.json");
}

TEST(ConsoleConfig, WhatIsRefused) {
  Config c;
  EXPECT_EQ(parse_config(std::string(kMinimal) + "sesion_idle_minutes: 5\n", "c.yaml", &c),
            "c.yaml: unknown setting 'sesion_idle_minutes' (docs/console.md lists them)");
  EXPECT_EQ(parse_config(std::string(kMinimal) + "session_idle_minutes: \"5\"\n", "c.yaml", &c),
            "c.yaml: 'session_idle_minutes' is not a whole number from 1 to 1000000");
  EXPECT_EQ(parse_config(std::string(kMinimal) + "login_failures_per_user: 0\n", "c.yaml", &c),
            "c.yaml: 'login_failures_per_user' is not a whole number from 1 to 1000000");
  EXPECT_EQ(parse_config("ledger: l.db\nusers: u.json\naudit: a.log\n", "c.yaml", &c),
            "c.yaml: 'policy' is required (the console redacts with the policy's sensitive "
            "list; a table alone does not carry it)");
  EXPECT_EQ(parse_config("users: u.json\npolicy: p\naudit: a.log\n", "c.yaml", &c),
            "c.yaml: 'ledger' is required");
  EXPECT_EQ(parse_config("- a\n", "c.yaml", &c), "c.yaml: not a mapping of settings");
  EXPECT_EQ(parse_config(std::string(kMinimal) + "audit_logs: a.log\n", "c.yaml", &c),
            "c.yaml: 'audit_logs' is not a list of paths");
  EXPECT_NE(parse_config("ledger: [\n", "c.yaml", &c).find("c.yaml: not YAML: "),
            std::string::npos);
  EXPECT_NE(read_config("/nonexistent/console.yaml", &c), "");
}

}  // namespace
}  // namespace replaygate::console
