// Package llama runs llama.cpp's llama-server lanes on a node: it starts
// them, waits for them to serve, drains and stops them, prefetches their
// weights and observes what a node runs. A node is reached as a Host: over
// SSH (an sshx client, host keys verified against known_hosts) or, for
// tests and a single machine, locally.
//
// Every remote command is a constant shell program run as
// `sh -c PROGRAM sh ARG...` (scripts.go), so input only ever reaches the
// node as positional parameters, each quoted by sshx.Quote; nothing is
// ever spliced into a command line. File contents (a file:// model
// source) go by Host.WriteFrom: over SFTP on the node's connection, to a
// path checked against the schema, never through a shell.
//
// What llama-server does and the actuator relies on:
//
//   - /health answers 503 while the model loads and 200 after, also while
//     busy; a process that exits while loading fails the start, with the
//     end of its log.
//   - /v1/models lists the aliases as a set: the start checks membership.
//   - /props model_path says which file a process serves: a pidfile whose
//     process is gone, is another program (a reused pid) or serves another
//     file is drift, never a running lane.
//   - llama-server does not drain: SIGTERM cuts in-flight streams. Stop
//     therefore waits until no slot is processing and nothing is deferred
//     (the gateway must already route the lane's aliases elsewhere), with
//     Settings.DrainTimeout, then sends SIGTERM, then SIGKILL after
//     Settings.StopGrace. A probe that fails, times out or does not parse
//     is busy, unknown, never idle (drain.go). Probes never keep
//     connections open, since the server lingers on open connections
//     after SIGTERM.
//   - The router answers /slots and /metrics only with ?model=, and loads
//     the model named unless the query says autoload=false: its drain
//     sums its loaded models' probes, each with autoload=false.
//   - What runs is read on the node, never copied from the pool: a lane's
//     arguments from its process's own command line (cmdline.go), and
//     the process must be the one holding the lane's port (identity.go),
//     at the start and at every observe.
//   - Every remote command has a time bound (Settings.CommandTimeout,
//     more for a checksum or transfer in proportion to its size) and its
//     output read back a size bound; past either it is killed with its
//     process group.
//   - Always --port, since llama-server's default port is changing.
//
// On a node, a lane is a process started with setsid (nohup where there is
// none) with its log, pidfile and metadata under Settings.StateDir
// (".poolc/lanes" in the login's home by default), named by the lane and
// its port (LANE@PORT), so a lane replaced on its node runs its new
// process on a spare port beside the old one. A lock directory serialises
// two starts of one lane on one port, so a node never runs two processes
// of it there; a start finding it live succeeds without starting another.
// The metadata records the sha256 and source of the weights the process
// started with and its residency, which observe reports. With
// Settings.ServiceManager a lane's process runs as a systemd user unit or
// a LaunchAgent instead (units.go): poolc renders the unit, the start
// script writes it and starts it, and the pidfile holds the unit's main
// process, so observe and the drain are the same; the stop goes through
// the manager, which sends SIGTERM and SIGKILL after StopGrace.
//
// Keep-warm and preferred lanes run as their own processes. On-demand
// lanes are served by the node's router (RouterLane): one llama-server in
// router mode on the configured router port, whose preset poolc writes
// (EnsureRouter), so a lane really loads on its first request. A change
// of the node's on-demand lanes rewrites the preset and asks the running
// router GET /models?reload=1, on which llama-server's router rereads the
// preset: models whose section is unchanged keep serving, requests in
// flight and all, so the node's other on-demand lanes lose nothing; a
// model whose section goes or changes is drained, then unloaded by the
// router. Only --models-max, which the router reads at startup alone,
// needs a restart when it changes. A step's lane residency says which
// process it is about, so a residency change across on-demand runs
// make-before-break as start (as it will be), route, drain and stop (as
// it was); a residency step, between keep-warm and preferred only, keeps
// the process and records its new residency in its metadata, which
// observe reports (the pool's residency when none is recorded). The gateway
// reaches an on-demand lane at the router's port. The router evicts the
// least recently used idle model when --models-max are loaded: by count,
// blind to memory. poolc therefore passes --models-max 0 (no bound) while
// every on-demand model of the node fits at once in the room its budget
// leaves beside its reserved lanes, and otherwise, with ModelsMax, the
// largest k such that the k largest fit together, so no set of models
// the router may keep loaded can pass the budget; the price is that
// several small models may be evicted to respect a bound computed from
// large ones. A running router keeps its bound while that is still safe
// (keptBound), so only a change after which it no longer fits restarts
// the router.
package llama
