// AUTO as a router above sibling engines (issue 15). The CPU engine and the GPU engine each run what
// they are given and nothing else; which one a request goes to is decided here, from the one policy
// table (auto_policy.h): the caller's named algorithm (CPU, or one of the GPU's), or AUTO's choice by
// method, size and options. The router says in each report which engine served (backend, device), so
// no engine has to speak for another. It is a Backend itself: the service sees one.
#pragma once

#include <memory>

#include "server/backend/auto_policy.h"
#include "server/backend/backend.h"

namespace gpusort {

// `gpu`: an engine whose algorithm lists do not hold CPU; `cpu`: the CPU engine. The router's lists are
// the GPU engine's and CPU; its kind and device are the GPU engine's (what the server serves from).
// `routing`: how AUTO picks between them (auto_policy.h).
std::unique_ptr<Backend> MakeAutoRouter(std::unique_ptr<Backend> cpu, std::unique_ptr<Backend> gpu,
                                        AutoRouting routing = AutoRouting::kSize);

}  // namespace gpusort
