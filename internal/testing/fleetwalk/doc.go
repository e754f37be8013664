// Package fleetwalk holds the fleet walk: an end-to-end test that walks a
// real fleet (three OpenSSH nodes on 127.0.0.2-4, HAProxy configured once
// by `poolc gateway config` and kept by poolc through the haproxy plugin's
// config_file and master_socket, the llama actuator with the README's
// defaults)
// through a seeded random series of pool changes and faults under
// streaming load, and after each checks from outside poolc that the apply
// converged in one run, that no request failed outside an interruption
// the plan reported, and that nothing runs, routes or lies on disk that no
// lane owns.
//
// It is behind the build tags e2e and walk:
//
//	go test -tags 'e2e walk' -count=1 -timeout 60m -run TestE2EFleetWalk ./internal/testing/fleetwalk
//
// Without them it runs the CI set (ciWalks: two seeds of 30 changes);
// POOLC_WALK_SEED=N runs one seed, 30 changes unless POOLC_WALK_STEPS=N
// says how many. .ci/run runs it after the e2e suite. POOLC_WALK_STATE_DIR=/abs/dir gives the llama
// actuator an absolute state_dir instead of the README's relative
// default: not what users have, only to walk by hand past a failure of
// that default.
package fleetwalk
