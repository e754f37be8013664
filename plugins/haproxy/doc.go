// Package haproxy is poolc's gateway on HAProxy: it generates the HAProxy
// configuration for a pool's aliases and lanes (Config) and flips an
// alias's route at runtime through the admin socket (Gateway.Route), with
// no failed request.
//
// How requests are routed: the frontend buffers the request body and
// reads its "model" (req.body,json_query('$.model')), a map file sends
// that alias to a backend, and an alias the map does not know goes to the
// cloud backend. Each lane has a backend of ServerSlots servers: one where
// the lane runs, the other free (in maintenance) for the place it moves
// to.
//
// A route step is make-before-break: the new place's server is made ready
// first (`set server BE/S addr A port P`, `set server BE/S state ready`),
// the map is changed (`set map`, or `add map` for a new alias) so new
// requests go there, and the servers of the lane elsewhere go to `drain`
// (no new request, streams in flight continue), are waited on until
// `show stat` counts zero current sessions, and go to `maint`. Only then
// may the runtime plugin drain and stop the old llama-server, which cuts
// whatever it still serves. After every change the map file and the
// server state file (`show servers state`, read back by
// load-server-state-from-file) are rewritten atomically, so a restarted
// HAProxy serves the routes poolc set.
//
// Every lane server is health-checked (GET /health); while the backend an
// alias is sent to has no usable server, the frontend tries the alias's
// fallbacks in order from a second map (FallbackMapFile), so a dead lane's
// alias is served elsewhere without any change from poolc.
//
// HAProxy 2.6 restores a server's state and port from the server state
// file but not an address set at runtime, and has no `add backend`. So,
// given the configuration file (Options.ConfigFile) and the declared spec,
// the gateway rewrites the configuration after every change with every
// server's address, and reloads HAProxy through its master CLI when a lane
// needs a backend it lacks (declared.go). A route retires the live
// servers of lanes no declared alias uses any more.
//
// The admin socket is a local unix socket, or a TCP socket on the gateway
// host's loopback reached through an SSH tunnel (Tunnel), with the files
// written over the same connection (SSHFiles). Every word of a runtime
// command is checked against a strict pattern, since the runtime API gives
// ';' and newlines meanings.
package haproxy
