// What a backend tells the service about how it served a request: the algorithm that ran and the time
// of each stage. The service copies it into ExecutionInfo and the stage metrics.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "server/core/spec.h"
#include "server/core/stage.h"

namespace gpusort {

struct StageTime {
  Stage stage;
  double seconds = 0;
};

struct ExecutionReport {
  Algorithm algorithm = Algorithm::kAuto;
  std::vector<StageTime> stages;
  // The engine that served the request, as the router (auto_router.h) sends it to one: the CPU engine
  // or the GPU's. Empty: the backend the service called (a server on the CPU engine alone).
  std::optional<BackendKind> backend;
  std::string device;

  // One entry per stage, in the order each first came: a stage met again (a stream's pieces, each
  // crossing on its own; a job's own copy after them) adds its time to the first entry.
  void AddStage(Stage stage, double seconds) {
    for (StageTime& s : stages) {
      if (s.stage == stage) {
        s.seconds += seconds;
        return;
      }
    }
    stages.push_back({stage, seconds});
  }
};

// Measures one stage: `StageClock c; ...; report.AddStage(Stage::kSort, c.Seconds());`
class StageClock {
 public:
  StageClock() : start_(std::chrono::steady_clock::now()) {}
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace gpusort
