package sshx

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"poolc.dev/poolc/internal/configschema"
)

// Settings is how an actuator's config block says to use SSH: the JSON
// attributes known_hosts, key_file, no_agent and ssh_user. A leading "~/"
// in a path is the home directory of the user running poolc.
type Settings struct {
	KnownHosts string `json:"known_hosts"`
	KeyFile    string `json:"key_file"`
	NoAgent    bool   `json:"no_agent"`
	User       string `json:"ssh_user"`
}

// DefaultKnownHosts is the known_hosts file when Settings names none.
const DefaultKnownHosts = "~/.ssh/known_hosts"

// SettingsSchema is the CUE of Settings, for a plugin's config schema.
const SettingsSchema = `known_hosts?: ` + configschema.LocalPath + `
	key_file?: ` + configschema.LocalPath + `
	no_agent?: bool
	ssh_user?: =~"^[a-z_][a-z0-9_-]*$"`

// Config returns the pool configuration Settings describe.
func (s Settings) Config() Config {
	kh := s.KnownHosts
	if kh == "" {
		kh = DefaultKnownHosts
	}
	return Config{KnownHostsFile: expandHome(kh), KeyFile: expandHome(s.KeyFile), NoAgent: s.NoAgent}
}

// LoginUser is the user to log in as: user when set, else Settings'
// ssh_user, else the user running poolc.
func (s Settings) LoginUser(user string) string {
	if user != "" {
		return user
	}
	if s.User != "" {
		return s.User
	}
	return currentUser()
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}
