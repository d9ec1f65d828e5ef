// A queue's type and delivery limit from the management HTTP API (management.h).
#include "redrive/rabbitmq/management.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>

#include "inputs/decoding.h"

namespace replaygate::redrive::rabbitmq {
namespace {

constexpr size_t kMaxResponse = size_t{4} << 20;

std::optional<int64_t> integer_at(const nlohmann::json& j, const char* object, const char* key) {
  if (!j.contains(object) || !j[object].is_object() || !j[object].contains(key)) {
    return std::nullopt;
  }
  const nlohmann::json& v = j[object][key];
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

}  // namespace

std::optional<QueueInfo> queue_info(const std::string& base, const AmqpUrl& amqp,
                                    const std::string& queue, std::string* error) {
  std::string_view rest = base;
  if (!rest.starts_with("http://")) {
    *error = "--management '" + base + "' is not an http:// URL (http://HOST:15672)";
    return std::nullopt;
  }
  rest.remove_prefix(7);
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    rest = rest.substr(0, slash);
  }
  std::string user = amqp.user, password = amqp.password;
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    const size_t colon = userinfo.find(':');
    user = std::string(userinfo.substr(0, colon));
    password = colon == std::string_view::npos ? "" : std::string(userinfo.substr(colon + 1));
    rest = rest.substr(at + 1);
  }
  std::string host(rest), port = "80";
  if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = std::string(rest.substr(0, colon));
    port = std::string(rest.substr(colon + 1));
  }
  if (host.empty()) {
    *error = "--management '" + base + "' has no host";
    return std::nullopt;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    *error = "--management: cannot resolve " + host + ": " + gai_strerror(rc);
    return std::nullopt;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    *error = "--management: cannot connect to " + host + ":" + port + ": " + std::strerror(errno);
    return std::nullopt;
  }
  const std::string path =
      "/api/queues/" + percent_encode(amqp.vhost) + "/" + percent_encode(queue);
  const std::string request =
      "GET " + path + " HTTP/1.0\r\nHost: " + host + ":" + port + "\r\nAuthorization: Basic " +
      inputs::encode_base64(user + ":" + password) + "\r\nAccept: application/json\r\n\r\n";
  std::string response;
  bool ok = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size());
  char buffer[16384];
  while (ok) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    if (n <= 0) break;
    response.append(buffer, static_cast<size_t>(n));
    if (response.size() > kMaxResponse) ok = false;
  }
  ::close(fd);
  if (!ok) {
    *error = "--management: no complete answer from " + host + ":" + port;
    return std::nullopt;
  }
  const size_t header_end = response.find("\r\n\r\n");
  const size_t space = response.find(' ');
  if (header_end == std::string::npos || space == std::string::npos || space + 4 > header_end) {
    *error = "--management: " + host + ":" + port + " did not answer HTTP";
    return std::nullopt;
  }
  const std::string status = response.substr(space + 1, 3);
  if (status != "200") {
    *error = "--management: GET " + path + " answered " + status +
             (status == "401"   ? " (the user may not read the management API)"
              : status == "404" ? " (no such queue or vhost)"
                                : "");
    return std::nullopt;
  }
  const nlohmann::json j = nlohmann::json::parse(response.substr(header_end + 4), nullptr, false);
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    *error = "--management: GET " + path + " did not return a queue object";
    return std::nullopt;
  }
  QueueInfo info;
  info.type = j["type"].get<std::string>();
  info.delivery_limit = integer_at(j, "arguments", "x-delivery-limit");
  if (!info.delivery_limit) {
    info.delivery_limit = integer_at(j, "effective_policy_definition", "delivery-limit");
  }
  for (const auto& [object, keys] :
       {std::pair{"arguments", std::vector<std::string>{"x-max-length", "x-max-length-bytes",
                                                        "x-message-ttl", "x-expires"}},
        std::pair{"effective_policy_definition",
                  std::vector<std::string>{"max-length", "max-length-bytes", "message-ttl",
                                           "expires"}}}) {
    if (!j.contains(object) || !j[object].is_object()) continue;
    for (const std::string& key : keys) {
      if (j[object].contains(key)) info.dropping.push_back(std::string(object) + " " + key);
    }
  }
  if (j.contains("messages") && j["messages"].is_number_integer()) {
    info.messages = j["messages"].get<int64_t>();
  }
  return info;
}

std::string check_queues(const std::string& base, PortOptions* options) {
  PortOptions& g = *options;
  std::string problem;
  const std::optional<QueueInfo> info = queue_info(base, g.urls.front(), g.queue, &problem);
  if (!info) return problem + "; nothing was consumed";
  for (const std::string* q : {&g.park_queue, &g.hold_queue}) {
    std::string why;
    const std::optional<QueueInfo> target = queue_info(base, g.urls.front(), *q, &why);
    if (target && !target->dropping.empty()) {
      std::string list;
      for (const std::string& d : target->dropping) list += (list.empty() ? "" : ", ") + d;
      return *q + " drops messages on its own (" + list +
             "): a letter the gate moved there and acked could vanish; give it no length "
             "limit or TTL, or choose another --park-queue / --hold-queue";
    }
  }
  if (info->type == "stream") {
    return g.queue +
           " is a stream: a stream keeps its messages after an ack, so a gate "
           "cannot move letters out of it; dead-letter into a classic or quorum queue";
  }
  if (info->type == "quorum" && !g.apply && !g.allow_peek) {
    return "refusing a dry run on " + g.queue + ", a quorum queue" +
           (info->delivery_limit
                ? " with a delivery limit of " + std::to_string(*info->delivery_limit)
                : "") +
           ": each peek uses up one delivery attempt of every letter it sees, and a letter at "
           "its limit is dropped or dead-lettered by the broker. Give --allow-peek to accept "
           "that; nothing was consumed";
  }
  // Known only here: the port then never returns a letter it need not (rabbit_port.h).
  if (info->type == "quorum" && info->delivery_limit && *info->delivery_limit >= 0) {
    g.delivery_limit = info->delivery_limit;
  }
  return "";
}

}  // namespace replaygate::redrive::rabbitmq
