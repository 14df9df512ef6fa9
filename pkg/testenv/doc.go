// Package testenv starts the real services schemaq's tests run against,
// a file per service: an in-process NATS server with JetStream (nats.go),
// redis-server processes (redis.go), a throwaway PostgreSQL cluster
// (postgres.go) and a tmpfs that fills up (disk.go); and it finds the
// team's shared corpus and benchmarks beside the repository (shared.go).
// Tests skip when a service's binary is missing, unless CI's
// SCHEMAQ_REQUIRE_* variable makes that a failure.
package testenv
