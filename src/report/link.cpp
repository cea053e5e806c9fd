#include "report/link.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>

namespace rateline::report {

std::string LinkInfo::text() const {
  if (device.empty()) return "unknown interface";
  std::string t = device;
  if (speed_mbps) t += " " + std::to_string(static_cast<long long>(*speed_mbps)) + " Mbit/s";
  else t += " (no link speed)";
  if (nominal) t += " (nominal: virtual device)";
  return t;
}

std::string device_for_local_address(const std::string& local_ip) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  std::string found;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (i->ifa_addr->sa_family == AF_INET)
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    else if (i->ifa_addr->sa_family == AF_INET6)
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, buf, sizeof buf);
    else
      continue;
    if (local_ip == buf) {
      found = i->ifa_name;
      break;
    }
  }
  freeifaddrs(list);
  return found;
}

LinkInfo link_info(const std::string& device) {
  LinkInfo l;
  l.device = device;
  if (device.empty()) return l;
  const std::string base = "/sys/class/net/" + device;
  std::ifstream f(base + "/speed");
  long long speed = -1;
  if (f >> speed && speed > 0) l.speed_mbps = static_cast<double>(speed);
  // Physical NICs have a bus device behind them; veth, tap, lo, bridges do not.
  struct stat st;
  l.nominal = ::stat((base + "/device").c_str(), &st) != 0;
  return l;
}

}  // namespace rateline::report
