package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"poolc.dev/poolc/internal/testing/poolctest"
)

// A value of a plugin's config that the pool file itself marks sensitive
// (HCL sensitive("..."), CUE @poolc(sensitive)), here an env value whose
// name no key rule catches and which the plugin's schema does not mark:
// the plugin echoes it in a Configure warning, an Observe warning, its
// stderr, progress and a step failure, and apply (text and --json), plan,
// validate and state show never print it; no file poolc writes holds it.
func TestAnEnvValueThePoolMarksSensitiveIsNeverPrinted(t *testing.T) {
	bin := poolctest.Binary(t)
	const secret = "envval-Q7w9-e3r5"
	hcl := blindPool(t, "\n      env  = { MY_VAR = sensitive(\""+secret+"\") }\n      leak = true\n    ")
	cue := blindPool(t, "")
	os.Remove(filepath.Join(cue, "pool.hcl"))
	if err := os.WriteFile(filepath.Join(cue, "pool.cue"), []byte(`pool: blind: {
	node: a: {address: "a.lan", memory_gb: 64, runtime: "blind"}
	model: m: {path: "/models/m.gguf", size_gb: 2, memory_gb: 4}
	lane: chat: {model: "m", residency: "keep-warm", aliases: ["chat"], placement: ["a"], port: 8080}
	plugin: blind: config: {
		env: MY_VAR: "`+secret+`" @poolc(sensitive)
		leak: true
	}
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for lang, dir := range map[string]string{"HCL": hcl, "CUE": cue} {
		neverPrinted(t, bin, dir, secret, "  ", lang+": ")
	}
}

// A sensitive mark outside a plugin's config, where poolc would print the
// value all the same, is refused with its position.
func TestASensitiveMarkOutsideAPluginConfigIsRefused(t *testing.T) {
	bin := poolctest.Binary(t)
	dir := blindPool(t, "")
	pool, _ := os.ReadFile(filepath.Join(dir, "pool.hcl"))
	bad := strings.Replace(string(pool), `path      = "/models/m.gguf"`, `path      = sensitive("/models/m.gguf")`, 1)
	os.WriteFile(filepath.Join(dir, "pool.hcl"), []byte(bad), 0o644)
	out, err := exec.Command(bin, "validate", "--allow-unpinned", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "pool.hcl:8:27") || !strings.Contains(string(out), "only values in a plugin's config block may be marked sensitive") {
		t.Errorf("validate of a sensitive model path: %v\n%s", err, out)
	}
}
