#include "setup.hpp"

#include "net/iface.hpp"
#include "report/link.hpp"
#include "socket/port_guard.hpp"
#include "util/errors.hpp"

namespace rateline::rx {

Run set_up(const Config& cfg) {
  Run run;
  run.bind = drivers::make_address(cfg.bind, cfg.port);
  if (!cfg.port_checked) drivers::ensure_port_free(run.bind);
  // Raw backends tap an interface: --device, or the one that owns --bind.
  run.device = !cfg.device.empty() ? cfg.device : report::device_for_local_address(cfg.bind);
  std::string frames_why = run.device.empty() ? "--backend " + cfg.backend +
                                                    " receives on one interface: give --device IFACE (or --bind an address of it)"
                                              : "";
  drivers::RxOptions o;
  if (!run.device.empty()) {
    try {
      o.iface = net::interface_info(run.device);
    } catch (const std::exception& e) {
      frames_why = e.what();
    }
  }
  run.choice = drivers::choose_backend(cfg.backend, drivers::Direction::rx, frames_why.empty(), frames_why);
  const drivers::BackendDescriptor& desc = *run.choice.backend;
  if (!cfg.pcap_out.empty() && desc.rx_in_kernel)
    throw SetupError("--pcap-out: the " + std::string(desc.name) + " receiver counts in the kernel, no frame reaches rx: "
                     "give --backend afxdp, afpacket, socket, uring or dpdk");
  if (cfg.reflect_every && !desc.rx_reflects)
    throw SetupError("--reflect: the " + std::string(desc.name) + " receiver cannot send packets back: give --backend socket, uring, afpacket, afxdp, dpdk or xdp");
  if (cfg.tag_key && !desc.packet_tags) throw SetupError(key_counted_in_kernel(desc.name));
  const std::string cores = cfg.cores.empty() && desc.pins_workers ? "auto" : cfg.cores;
  run.placement = topo::place_workers(cfg.threads, cores, cores == "auto" ? topo::device_numa_node(run.device, cfg.dpdk_args) : -1);
  o.bind = run.bind;
  o.port = cfg.port;
  o.port_count = cfg.port_count;
  o.ipv6 = cfg.ipv6;
  o.device = cfg.device;
  o.slot_bytes = cfg.max_size + 1;  // one spare byte: a longer datagram shows up as truncated
  o.batch = cfg.batch;
  o.rcvbuf_bytes = cfg.rcvbuf_bytes;
  o.max_streams = cfg.max_streams;
  o.reflect_every = cfg.reflect_every;
  o.tag_key = cfg.tag_key;
  o.expect = cfg.expect;
  o.layers = cfg.layers;
  o.threads = cfg.threads;
  o.eal_args = cfg.dpdk_args;
  o.placement = run.placement;
  run.backend = desc.open_rx(o);
  run.iface_name = run.backend->tapped(o.iface.name);

  const unsigned workers = run.backend->workers(cfg.threads);
  for (unsigned i = 0; i < workers; ++i) {
    auto w = std::make_unique<Worker>();
    w->cpu = run.placement.worker_cpus[i];
    w->index = i;
    w->plan.batch = cfg.batch;
    w->plan.max_streams = cfg.max_streams;
    w->plan.events = w->events.get();
    w->plan.udp_port = cfg.port;
    w->plan.udp_port_count = cfg.port_count;
    w->plan.max_payload_bytes = cfg.max_size;
    w->plan.test_slow_ns = uint64_t{cfg.test_slow_us} * 1000;
    w->plan.reflect_every = cfg.reflect_every;
    w->plan.tag_key = cfg.tag_key;
    if (!cfg.pcap_out.empty()) {
      w->keeper = std::make_unique<engine::FrameKeeper>(cfg.pcap_max, cfg.kept_frame_bytes());
      w->plan.keep = w->keeper.get();
    }
    run.workers.push_back(std::move(w));
  }
  return run;
}

void start(Run& run, std::atomic<bool>& workers_stop) {
  drivers::RxBackend& backend = *run.backend;
  engine::start_workers(run.workers, run.choice.backend->capabilities(),
                        [&backend, &workers_stop](Worker& w, const std::function<void()>& ready) {
                          w.result = backend.run(w.index, w.plan, *w.snapshots, workers_stop, w.info, ready);
                        });
  std::string errors;
  for (auto& w : run.workers)
    if (w->done.load(std::memory_order_acquire) && !w->error.empty()) errors = w->error;
  if (!errors.empty()) {
    workers_stop.store(true);
    for (auto& w : run.workers) w->thread.join();
    throw SetupError(errors);
  }
  // Drop ledger: this namespace's counters now (before "listening" is printed) and at the end.
  run.ledger_scope = ledger::receiver_scope(run.device);
  run.ledger_start = ledger::read_counters(run.ledger_scope);
}

}  // namespace rateline::rx
