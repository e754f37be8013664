package sshx

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSettingsConfig(t *testing.T) {
	home, _ := os.UserHomeDir()
	c := Settings{}.Config()
	if c.KnownHostsFile != filepath.Join(home, ".ssh/known_hosts") || c.KeyFile != "" {
		t.Errorf("%+v", c)
	}
	c = Settings{KnownHosts: "/etc/kh", KeyFile: "~/k", NoAgent: true}.Config()
	if c.KnownHostsFile != "/etc/kh" || c.KeyFile != filepath.Join(home, "k") || !c.NoAgent {
		t.Errorf("%+v", c)
	}
	s := Settings{User: "ops"}
	if s.LoginUser("node-user") != "node-user" || s.LoginUser("") != "ops" || (Settings{}).LoginUser("") == "" {
		t.Error("LoginUser")
	}
}
