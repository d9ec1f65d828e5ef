// The Redis gate's URL parsing (redrive/redis/redis_client.h): what it accepts, what it refuses
// and why, and what it prints without the password. No server.
#include <gtest/gtest.h>

#include <string>

#include "redrive/redis/redis_client.h"

namespace replaygate::redrive::redis {
namespace {

RedisUrl parsed(const std::string& url) {
  std::string problem;
  const std::optional<RedisUrl> u = parse_redis_url(url, &problem);
  EXPECT_TRUE(u.has_value()) << url << ": " << problem;
  return u.value_or(RedisUrl());
}

std::string refused(const std::string& url) {
  std::string problem;
  EXPECT_FALSE(parse_redis_url(url, &problem).has_value()) << url;
  return problem;
}

TEST(RedisUrl, HostPortDatabaseAndCredentials) {
  const RedisUrl a = parsed("redis://127.0.0.1:6390/2");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 6390);
  EXPECT_EQ(a.db, 2);
  EXPECT_EQ(a.password, "");
  const RedisUrl b = parsed("redis://gate:s%40cret@redis.internal");
  EXPECT_EQ(b.user, "gate");
  EXPECT_EQ(b.password, "s@cret");
  EXPECT_EQ(b.port, 6379);
  EXPECT_EQ(b.db, 0);
  EXPECT_EQ(b.describe(), "redis://gate@redis.internal:6379/0");  // never the password
  const RedisUrl c = parsed("redis://:pw@[::1]:7000/0");
  EXPECT_EQ(c.host, "::1");
  EXPECT_EQ(c.port, 7000);
  EXPECT_EQ(c.user, "");
  EXPECT_EQ(c.password, "pw");
}

TEST(RedisUrl, UnixSockets) {
  const RedisUrl a = parsed("unix:///tmp/r.sock?db=3");
  EXPECT_EQ(a.socket_path, "/tmp/r.sock");
  EXPECT_EQ(a.db, 3);
  EXPECT_EQ(a.describe(), "unix:///tmp/r.sock?db=3");
  EXPECT_EQ(parsed("redis+unix://:pw@/run/redis.sock").password, "pw");
  EXPECT_NE(refused("unix://relative.sock").find("absolute path"), std::string::npos);
}

TEST(RedisUrl, TlsSentinelClusterAndNonsenseAreRefusedWithTheReason) {
  EXPECT_NE(refused("rediss://127.0.0.1:6379").find("no TLS"), std::string::npos);
  EXPECT_NE(refused("redis-sentinel://127.0.0.1:26379/mymaster").find("Sentinel"),
            std::string::npos);
  EXPECT_NE(refused("redis://10.0.0.1:7000,10.0.0.2:7000").find("Cluster"), std::string::npos);
  EXPECT_NE(refused("http://127.0.0.1").find("starts with redis://"), std::string::npos);
  EXPECT_NE(refused("redis://127.0.0.1:99999").find("port"), std::string::npos);
  EXPECT_NE(refused("redis://127.0.0.1:6379/x").find("database number"), std::string::npos);
  EXPECT_NE(refused("redis://").find("no host"), std::string::npos);
}

TEST(RedisUrl, InfoFields) {
  const std::string info = "# Persistence\r\nloading:0\r\naof_enabled:1\r\naof_rewrite:0\r\n";
  EXPECT_EQ(info_field(info, "aof_enabled"), "1");
  EXPECT_EQ(info_field(info, "aof"), "");
  EXPECT_EQ(info_field(info, "maxmemory_policy"), "");
}

}  // namespace
}  // namespace replaygate::redrive::redis
