#include "agent/core/cli.h"

#include <gtest/gtest.h>

namespace warpscope {
namespace {

StatusOr<RecordOptions> Parse(std::vector<std::string> args) { return ParseRecordArgs(args); }

TEST(CliTest, IssueExamplesParse) {
  auto a = Parse({"--pid", "1234", "--duration", "10s", "--output", "cpu.pb.gz"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->pids, std::vector<uint32_t>{1234});
  EXPECT_EQ(a->duration, std::chrono::seconds(10));
  EXPECT_EQ(a->format, OutputFormat::kPprof);
  EXPECT_EQ(a->frequency_hz, 99u);

  auto b = Parse({"--all", "--duration", "30", "--frequency", "99", "--format", "collapsed", "--output", "cpu.folded"});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(b->all);
  EXPECT_EQ(b->duration, std::chrono::seconds(30));
  EXPECT_EQ(b->format, OutputFormat::kCollapsed);
  EXPECT_EQ(b->output, "cpu.folded");
}

TEST(CliTest, InlineValuesListsAndDefaults) {
  auto a = Parse({"--pid=1,2", "-p", "3", "--duration=500ms", "-F", "19"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->pids, (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(a->duration, std::chrono::milliseconds(500));
  EXPECT_EQ(a->frequency_hz, 19u);
  EXPECT_EQ(a->output, "cpu.pb.gz");
  auto c = Parse({"--all", "--format", "collapsed"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->output, "cpu.folded");
  auto d = Parse({"--all", "-o", "x.folded"});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->format, OutputFormat::kCollapsed);
}

TEST(CliTest, ClearErrors) {
  auto expect_error = [](std::vector<std::string> args, const std::string& needle) {
    auto r = ParseRecordArgs(args);
    ASSERT_FALSE(r.ok()) << "accepted bad args";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  expect_error({"--bogus"}, "unknown flag '--bogus'");
  expect_error({}, "--pid PID or --all");
  expect_error({"--all", "--pid", "1"}, "not both");
  expect_error({"--pid", "abc"}, "--pid expects a number");
  expect_error({"--pid", "0"}, "idle task");
  expect_error({"--all", "--duration", "ten"}, "--duration");
  expect_error({"--all", "--duration", "0"}, "positive");
  expect_error({"--all", "--frequency", "0"}, "at least 1 Hz");
  expect_error({"--all", "--frequency", "99999"}, "up to 10000");
  expect_error({"--all", "--format", "json"}, "pprof or collapsed");
  expect_error({"--all", "--output"}, "needs a value");
}

TEST(CliTest, ProfileTypes) {
  auto a = Parse({"--all"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->cpu);
  EXPECT_FALSE(a->off_cpu);
  auto b = Parse({"--all", "--type", "off_cpu", "--off-cpu-min", "1ms"});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_FALSE(b->cpu);
  EXPECT_TRUE(b->off_cpu);
  EXPECT_EQ(b->off_cpu_min_wait, std::chrono::milliseconds(1));
  EXPECT_EQ(b->output, "off_cpu.pb.gz");
  auto c = Parse({"--all", "-t", "cpu,off_cpu"});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->cpu && c->off_cpu);
  EXPECT_EQ(c->output, "cpu.pb.gz");
  auto d = Parse({"--all", "--type=off_cpu", "--format", "collapsed"});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->output, "off_cpu.folded");

  auto expect_error = [](std::vector<std::string> args, const std::string& needle) {
    auto r = ParseRecordArgs(args);
    ASSERT_FALSE(r.ok()) << "accepted bad args";
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  expect_error({"--all", "--type", "wall"}, "cpu, off_cpu or cpu,off_cpu");
  expect_error({"--all", "--type", "cpu,"}, "cpu, off_cpu or cpu,off_cpu");
  expect_error({"--all", "--type", "cpu,off_cpu", "-f", "collapsed"}, "choose one --type");
  expect_error({"--all", "--type", "off_cpu", "--frame-pointers"}, "leave out --frame-pointers");
  expect_error({"--all", "--off-cpu-min", "soon"}, "--off-cpu-min");
}

StatusOr<RunOptions> ParseRun(std::vector<std::string> args) { return ParseRunArgs(args); }

TEST(RunCliTest, OffCpuFlags) {
  auto a = ParseRun({"--server", "http://127.0.0.1:7070"});
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->off_cpu) << "off by default";
  auto b = ParseRun({"--server", "http://127.0.0.1:7070", "--off-cpu", "--off-cpu-min=100us"});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(b->off_cpu);
  EXPECT_EQ(b->off_cpu_min_wait, std::chrono::microseconds(100));
}

TEST(RunCliTest, DefaultsAndTheIssueExample) {
  auto a = ParseRun({"--server", "http://127.0.0.1:7070"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->server_url, "http://127.0.0.1:7070");
  EXPECT_EQ(a->frequency_hz, 19u);
  EXPECT_EQ(a->upload_interval, std::chrono::seconds(10));
  EXPECT_EQ(a->state_dir, "/var/lib/warpscope-agent");
  EXPECT_EQ(a->spool_dir, "/var/lib/warpscope-agent/spool");
  EXPECT_EQ(a->spool_max_bytes, 256ull << 20);
  EXPECT_EQ(a->upload_max_batch_bytes, 12ull << 20);
  EXPECT_TRUE(a->token.empty());
  EXPECT_TRUE(a->pids.empty());
  EXPECT_TRUE(a->python_frames);

  auto b = ParseRun({"--server=https://ws.example:7070/", "--token-file", "/etc/ws/token", "--frequency", "49",
                     "--upload-interval", "30s", "--spool-max-bytes", "1GiB", "--node-name", "gpu-7",
                     "--state-dir", "/tmp/st/", "--no-python", "--pid", "1,2", "-p", "3"});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->server_url, "https://ws.example:7070") << "trailing slash dropped";
  EXPECT_EQ(b->token_file, "/etc/ws/token");
  EXPECT_EQ(b->frequency_hz, 49u);
  EXPECT_EQ(b->upload_interval, std::chrono::seconds(30));
  EXPECT_EQ(b->spool_max_bytes, 1ull << 30);
  EXPECT_EQ(b->node_name, "gpu-7");
  EXPECT_EQ(b->state_dir, "/tmp/st");
  EXPECT_EQ(b->spool_dir, "/tmp/st/spool");
  EXPECT_FALSE(b->python_frames);
  EXPECT_EQ(b->pids, (std::vector<uint32_t>{1, 2, 3}));

  auto c = ParseRun({"--server", "http://s:1", "--spool-dir", "/data/spool", "--token", "abc",
                     "--upload-max-batch-bytes", "4MiB"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->spool_dir, "/data/spool");
  EXPECT_EQ(c->token, "abc");
  EXPECT_EQ(c->upload_max_batch_bytes, 4ull << 20);
  auto big = ParseRun({"--server", "http://s:1", "--upload-max-batch-bytes", "64MiB"});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("between 64KiB and 60MiB"), std::string::npos);
}

TEST(RunCliTest, GpuMetricsFlags) {
  auto d = ParseRun({"--server", "http://s:1"});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->gpu_metrics);
  EXPECT_TRUE(d->nvml_library.empty());
  EXPECT_EQ(d->gpu_metrics_interval, std::chrono::seconds(1));
  EXPECT_TRUE(d->metrics_listen.empty()) << "no Prometheus endpoint unless asked";
  auto a = ParseRun({"--server", "http://s:1", "--nvml-library", "/opt/nvml.so", "--gpu-metrics-interval", "500ms",
                     "--metrics-listen", "127.0.0.1:9400"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->nvml_library, "/opt/nvml.so");
  EXPECT_EQ(a->gpu_metrics_interval, std::chrono::milliseconds(500));
  EXPECT_EQ(a->metrics_listen, "127.0.0.1:9400");
  auto off = ParseRun({"--server", "http://s:1", "--no-gpu-metrics"});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->gpu_metrics);
  auto bad = ParseRun({"--server", "http://s:1", "--gpu-metrics-interval", "10ms"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("between 100ms and 1m"), std::string::npos);
}

TEST(RunCliTest, LabelsAndCpuWatts) {
  auto o = ParseRun({"--server", "http://s:1", "--label", "region=us-east-1", "--label", "team=ml",
                     "--cpu-watts-per-core", "4.5"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->labels, (std::vector<std::pair<std::string, std::string>>{{"region", "us-east-1"}, {"team", "ml"}}));
  EXPECT_EQ(o->cpu_watts_per_core, 4.5);
  EXPECT_FALSE(ParseRun({"--server", "http://s:1"})->cpu_watts_per_core.has_value());
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--label", "region"}, {"--label", "=x"}, {"--label", "1a=x"}, {"--label", "node=x"},
           {"--label", "a=x", "--label", "a=y"}, {"--label", "a="}, {"--cpu-watts-per-core", "0"},
           {"--cpu-watts-per-core", "x"}, {"--cpu-watts-per-core", "2000"}}) {
    std::vector<std::string> args = {"--server", "http://s:1"};
    args.insert(args.end(), bad.begin(), bad.end());
    EXPECT_FALSE(ParseRun(args).ok()) << bad.back();
  }
}

TEST(RunCliTest, PowercapRoot) {
  auto d = ParseRun({"--server", "http://s:1"});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->powercap_root, "/sys/class/powercap");
  auto fixture = ParseRun({"--server", "http://s:1", "--powercap-root", "/tmp/rapl/"});
  ASSERT_TRUE(fixture.ok());
  EXPECT_EQ(fixture->powercap_root, "/tmp/rapl");
  for (const std::vector<std::string>& off : std::vector<std::vector<std::string>>{
           {"--powercap-root", ""}, {"--powercap-root", "none"}, {"--powercap-root="}}) {
    std::vector<std::string> args = {"--server", "http://s:1"};
    args.insert(args.end(), off.begin(), off.end());
    auto o = ParseRun(args);
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    EXPECT_TRUE(o->powercap_root.empty()) << off.back();
  }
  EXPECT_FALSE(ParseRun({"--server", "http://s:1", "--powercap-root"}).ok()) << "needs a value";
}

TEST(RunCliTest, GpuTimeFlags) {
  auto d = ParseRun({"--server", "http://s:1"});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->gpu_time);
  EXPECT_EQ(d->cuda_socket, "/run/warpscope/cuda.sock");
  EXPECT_EQ(d->gpu_time_mode, RunOptions::GpuTimeMode::kAdaptive);
  EXPECT_EQ(d->gpu_overhead_budget_ppm, 10000u);
  EXPECT_EQ(d->gpu_launch_samples, 200u);
  EXPECT_EQ(d->gpu_trace_per_sec, 20000u);
  EXPECT_EQ(d->gpu_connections_per_uid, 64u);
  EXPECT_EQ(d->gpu_kernel_name_bytes, 64ull << 20);
  EXPECT_EQ(d->gpu_probe_files, 16u);
  EXPECT_EQ(d->cuda_library, "");
  EXPECT_EQ(d->cuda_library_dir, "");
  auto a = ParseRun({"--server", "http://s:1", "--cuda-socket", "/tmp/c.sock", "--gpu-time-mode", "duty", "--gpu-duty",
                     "50ms/2s", "--gpu-launch-samples", "50", "--gpu-trace-per-sec", "0",
                     "--gpu-connections-per-uid", "8", "--gpu-kernel-name-bytes", "8MiB",
                     "--gpu-probe-files", "4", "--cuda-library", "/opt/l.so", "--cuda-library-dir", "/run/w"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->cuda_socket, "/tmp/c.sock");
  EXPECT_EQ(a->cuda_library, "/opt/l.so");
  EXPECT_EQ(a->cuda_library_dir, "/run/w");
  EXPECT_EQ(a->gpu_time_mode, RunOptions::GpuTimeMode::kDuty);
  EXPECT_EQ(a->gpu_duty_on_ms, 50u);
  EXPECT_EQ(a->gpu_duty_period_ms, 2000u);
  EXPECT_EQ(a->gpu_launch_samples, 50u);
  EXPECT_EQ(a->gpu_trace_per_sec, 0u);
  EXPECT_EQ(a->gpu_connections_per_uid, 8u);
  EXPECT_EQ(a->gpu_kernel_name_bytes, 8ull << 20);
  EXPECT_EQ(a->gpu_probe_files, 4u);
  auto e = ParseRun({"--server", "http://s:1", "--gpu-time-mode", "exact", "--gpu-overhead-budget", "2.5%"});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->gpu_time_mode, RunOptions::GpuTimeMode::kExact);
  EXPECT_EQ(e->gpu_overhead_budget_ppm, 25000u);
  auto off = ParseRun({"--server", "http://s:1", "--no-gpu-time"});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->gpu_time);
  EXPECT_FALSE(off->gpu_pc_sampling);
  EXPECT_EQ(off->gpu_pc_period_log2, 20u);
  auto pc = ParseRun({"--server", "http://s:1", "--gpu-pc-sampling", "on", "--gpu-pc-period", "18", "--nvdisasm",
                      "/opt/cuda/bin/nvdisasm"});
  ASSERT_TRUE(pc.ok()) << pc.status().ToString();
  EXPECT_TRUE(pc->gpu_pc_sampling);
  EXPECT_EQ(pc->gpu_pc_period_log2, 18u);
  EXPECT_EQ(pc->nvdisasm, "/opt/cuda/bin/nvdisasm");
  auto message = [](std::vector<std::string> args) {
    auto r = ParseRunArgs(args);
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(message({"--server", "http://s:1", "--gpu-time-mode", "fast"}),
            "--gpu-time-mode is adaptive, exact or duty, got 'fast'");
  EXPECT_EQ(message({"--server", "http://s:1", "--gpu-pc-sampling", "yes"}), "--gpu-pc-sampling is on or off, got 'yes'");
  EXPECT_NE(message({"--server", "http://s:1", "--gpu-pc-period", "4"}).find("5 to 31"), std::string::npos);
  EXPECT_FALSE(message({"--server", "http://s:1", "--gpu-pc-period", "32"}).empty());
  EXPECT_NE(message({"--server", "http://s:1", "--gpu-overhead-budget", "0"}).find("percentage"), std::string::npos);
  EXPECT_NE(message({"--server", "http://s:1", "--gpu-overhead-budget", "1x"}).find("percentage"), std::string::npos);
  EXPECT_NE(message({"--server", "http://s:1", "--gpu-duty", "1s/100ms"}).find("ON/PERIOD"), std::string::npos);
  EXPECT_NE(message({"--server", "http://s:1", "--gpu-duty", "100ms"}).find("ON/PERIOD"), std::string::npos);
  EXPECT_EQ(message({"--server", "http://s:1", "--gpu-launch-samples", "0"}), "--gpu-launch-samples must be at least 1");
  EXPECT_EQ(message({"--server", "http://s:1", "--gpu-connections-per-uid", "0"}),
            "--gpu-connections-per-uid must be at least 1");
  EXPECT_NE(message({"--server", "http://s:1", "--gpu-kernel-name-bytes", "64K"}).find("between 1MiB"),
            std::string::npos);
  EXPECT_EQ(message({"--server", "http://s:1", "--gpu-probe-files", "0"}), "--gpu-probe-files must be at least 1");
  EXPECT_NE(message({"--server", "http://s:1", "--cuda-socket", std::string(120, 'x')}).find("100 characters"),
            std::string::npos);
}

TEST(RunCliTest, KubernetesFlags) {
  auto d = ParseRun({"--server", "http://s:1"});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kubernetes, RunOptions::KubernetesMode::kAuto);
  EXPECT_TRUE(d->kubernetes_pods_url.empty());
  EXPECT_EQ(d->kubernetes_token_file, "/var/run/secrets/kubernetes.io/serviceaccount/token");
  EXPECT_EQ(d->kubernetes_ca_file, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt");
  EXPECT_FALSE(d->kubernetes_insecure_tls);
  EXPECT_EQ(d->kubernetes_refresh, std::chrono::seconds(15));
  EXPECT_EQ(d->kubernetes_pod_grace, std::chrono::minutes(2));
  auto a = ParseRun({"--server", "http://s:1", "--kubernetes", "kubelet", "--kubernetes-pods-url",
                     "https://10.0.3.17:10250/pods", "--kubernetes-token-file", "/t", "--kubernetes-ca-file", "/ca",
                     "--kubernetes-insecure-tls", "--kubernetes-refresh", "30s", "--kubernetes-pod-grace=0s"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->kubernetes, RunOptions::KubernetesMode::kKubelet);
  EXPECT_EQ(a->kubernetes_pods_url, "https://10.0.3.17:10250/pods");
  EXPECT_EQ(a->kubernetes_token_file, "/t");
  EXPECT_EQ(a->kubernetes_ca_file, "/ca");
  EXPECT_TRUE(a->kubernetes_insecure_tls);
  EXPECT_EQ(a->kubernetes_refresh, std::chrono::seconds(30));
  EXPECT_EQ(a->kubernetes_pod_grace, std::chrono::seconds(0));
  EXPECT_EQ(ParseRun({"--server", "http://s:1", "--kubernetes", "off"})->kubernetes,
            RunOptions::KubernetesMode::kOff);
  EXPECT_EQ(ParseRun({"--server", "http://s:1", "--kubernetes=apiserver"})->kubernetes,
            RunOptions::KubernetesMode::kApiServer);
  auto message = [](std::vector<std::string> args) {
    auto r = ParseRunArgs(args);
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(message({"--server", "http://s:1", "--kubernetes", "on"}),
            "--kubernetes is auto, off, kubelet or apiserver, got 'on'");
  EXPECT_EQ(message({"--server", "http://s:1", "--kubernetes-pods-url", "10.0.3.17:10250/pods"}),
            "--kubernetes-pods-url expects a URL like https://10.0.0.5:10250/pods, got '10.0.3.17:10250/pods'");
  EXPECT_EQ(message({"--server", "http://s:1", "--kubernetes-token-file", ""}), "--kubernetes-token-file needs a path");
  EXPECT_EQ(message({"--server", "http://s:1", "--kubernetes-refresh", "500ms"}),
            "--kubernetes-refresh must be between 1s and 1h, got '500ms'");
  EXPECT_EQ(message({"--server", "http://s:1", "--kubernetes-pod-grace", "2h"}),
            "--kubernetes-pod-grace must be between 0s and 1h, got '2h'");
}

TEST(RunCliTest, ClearErrors) {
  auto message = [](std::vector<std::string> args) {
    auto r = ParseRunArgs(args);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(message({}), "--server is required, e.g. --server http://127.0.0.1:7070");
  EXPECT_EQ(message({"--server", "127.0.0.1:7070"}),
            "--server expects a URL like http://127.0.0.1:7070, got '127.0.0.1:7070'");
  EXPECT_NE(message({"--server", "http://s:1/api/v1/ingest"}).find("without a path"), std::string::npos);
  EXPECT_EQ(message({"--server"}), "--server needs a value");
  EXPECT_EQ(message({"--server", "http://s:1", "--token", "a", "--token-file", "f"}),
            "choose either --token or --token-file, not both");
  EXPECT_EQ(message({"--server", "http://s:1", "--token", ""}), "--token is empty");
  EXPECT_EQ(message({"--server", "http://s:1", "--frequency", "0"}), "--frequency must be at least 1 Hz");
  EXPECT_EQ(message({"--server", "http://s:1", "--upload-interval", "500ms"}),
            "--upload-interval must be between 1s and 10m, got '500ms'");
  EXPECT_EQ(message({"--server", "http://s:1", "--spool-max-bytes", "lots"}),
            "--spool-max-bytes expects a size like 256MiB, 1G or 1048576, got 'lots'");
  EXPECT_EQ(message({"--server", "http://s:1", "--spool-max-bytes", "1k"}), "--spool-max-bytes must be at least 64KiB");
  EXPECT_EQ(message({"--server", "http://s:1", "--pid", "0"}),
            "--pid 0 is the idle task; use --all for the whole machine");
  EXPECT_EQ(message({"--server", "http://s:1", "--all"}), "unknown flag '--all' (see: warpscope-agent run --help)");
  EXPECT_EQ(message({"--server", "http://s:1", "--drain-interval", "20s", "--upload-interval", "10s"}),
            "--drain-interval must not be longer than --upload-interval");
}

TEST(RunCliTest, ByteSizes) {
  EXPECT_EQ(*ParseByteSize("--x", "4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("--x", "64k"), 65536u);
  EXPECT_EQ(*ParseByteSize("--x", "256MiB"), 256ull << 20);
  EXPECT_EQ(*ParseByteSize("--x", "2G"), 2ull << 30);
  EXPECT_EQ(*ParseByteSize("--x", "3mb"), 3ull << 20);
  EXPECT_FALSE(ParseByteSize("--x", "").ok());
  EXPECT_FALSE(ParseByteSize("--x", "MiB").ok());
  EXPECT_FALSE(ParseByteSize("--x", "1.5G").ok());
  EXPECT_FALSE(ParseByteSize("--x", "99999999999999999999G").ok());
}

TEST(RunCliTest, TokenFileTextIsTrimmed) {
  EXPECT_EQ(*TokenFromFileText("s3cret\n"), "s3cret");
  EXPECT_EQ(*TokenFromFileText("  s3cret \r\n\n"), "s3cret");
  EXPECT_EQ(TokenFromFileText("\n \n").status().message(), "the token file is empty");
  auto two = TokenFromFileText("abc def\n");
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().message().find("abc"), std::string::npos) << "never echo the token";
}

}  // namespace
}  // namespace warpscope
