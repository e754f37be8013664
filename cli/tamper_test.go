package cli

import (
	"encoding/json"
	"os"

	"github.com/rogpeppe/go-internal/testscript"
)

// tamperings edit a saved plan the way a hand (or an attacker) might. Each
// works on the generic JSON form so it keeps every other field as poolc
// wrote it.
var tamperings = map[string]func(saved map[string]any){
	// add-lane copies the first start step as a start of a lane the
	// configuration does not have.
	"add-lane": func(saved map[string]any) {
		start := clone(firstStep(saved, "start"))
		start["id"], start["target"] = "start:extra@a", "extra"
		start["lane"].(map[string]any)["name"] = "extra"
		steps := saved["plan"].(map[string]any)["steps"].([]any)
		saved["plan"].(map[string]any)["steps"] = append(steps, start)
	},
	// other-node moves the first start to another node.
	"other-node": func(saved map[string]any) {
		start := firstStep(saved, "start")
		start["node"] = "b"
		start["lane"].(map[string]any)["node"] = "b"
	},
	// model-path points the first start at another weights file.
	"model-path": func(saved map[string]any) {
		firstStep(saved, "start")["lane"].(map[string]any)["path"] = "/etc/shadow"
	},
	// args gives the first start arguments the configuration does not.
	"args": func(saved map[string]any) {
		firstStep(saved, "start")["lane"].(map[string]any)["args"] = []any{"--api-key-file", "/root/.ssh/id_ed25519"}
	},
	// port changes the first start's port.
	"port": func(saved map[string]any) {
		firstStep(saved, "start")["lane"].(map[string]any)["port"] = 22
	},
	// no-depends removes every dependency, so nothing waits for weights.
	"no-depends": func(saved map[string]any) {
		for _, s := range saved["plan"].(map[string]any)["steps"].([]any) {
			s.(map[string]any)["depends_on"] = []any{}
		}
	},
	// start-to-stop turns the first start into a stop.
	"start-to-stop": func(saved map[string]any) {
		firstStep(saved, "start")["kind"] = "stop"
	},
	// route-target sends the first route to the cloud.
	"route-target": func(saved map[string]any) {
		route := firstStep(saved, "route")["route"].(map[string]any)
		route["lane"], route["node"] = "cloud", ""
	},
	// member-host points the first member-ensure at another SSH host.
	"member-host": func(saved map[string]any) {
		firstStep(saved, "member-ensure")["member"].(map[string]any)["ssh_host"] = "evil.example"
	},
	// prefetch-path copies weights to another path.
	"prefetch-path": func(saved map[string]any) {
		firstStep(saved, "prefetch")["prefetch"].(map[string]any)["path"] = "/etc/cron.d/x"
	},
	// drop-step removes the last step.
	"drop-step": func(saved map[string]any) {
		plan := saved["plan"].(map[string]any)
		steps := plan["steps"].([]any)
		plan["steps"] = steps[:len(steps)-1]
	},
	// swap-steps swaps the first two steps of the same kind.
	"swap-steps": func(saved map[string]any) {
		steps := saved["plan"].(map[string]any)["steps"].([]any)
		steps[0], steps[1] = steps[1], steps[0]
	},
	// state-hash claims the plan was made against another state content.
	"state-hash": func(saved map[string]any) {
		saved["state_hash"] = "0000000000000000000000000000000000000000000000000000000000000000"
	},
}

// firstStep returns the first step of the kind in a saved plan.
func firstStep(saved map[string]any, kind string) map[string]any {
	for _, s := range saved["plan"].(map[string]any)["steps"].([]any) {
		if step := s.(map[string]any); step["kind"] == kind {
			return step
		}
	}
	panic("the saved plan has no " + kind + " step")
}

func clone(v map[string]any) map[string]any {
	data, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return out
}

// tamperCmd is the script command "tamper KIND IN OUT": it writes OUT, the
// saved plan IN edited by the named tampering.
func tamperCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 || tamperings[args[0]] == nil {
		ts.Fatalf("usage: tamper KIND IN OUT")
	}
	data, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	var saved map[string]any
	ts.Check(json.Unmarshal(data, &saved))
	tamperings[args[0]](saved)
	out, err := json.MarshalIndent(saved, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), out, 0o644))
}
